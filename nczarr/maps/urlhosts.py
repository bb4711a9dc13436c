"""Where an S3 dataset URL points: per-scheme host parsing for :mod:`nczarr.maps.url`.

Pure, like :func:`~nczarr.maps.url.parse_url`. Given the parts of a URL after its
scheme, it finds the bucket, key prefix, endpoint and region:

* ``s3://bucket/key``, and netcdf-c's ``s3://s3.<region>.amazonaws.com/bucket/key``;
* AWS ``https://`` URLs in path style (``s3.<region>.amazonaws.com/bucket/key``) and
  virtual-host style (``<bucket>.s3.<region>.amazonaws.com/key``);
* Google Cloud Storage's S3 host (``storage.googleapis.com/bucket/key``) and any
  S3-compatible endpoint (``http(s)://host[:port]/bucket/key`` with the ``s3`` word).

It also holds the checks of those parts (bucket names, key prefixes, endpoints,
ports) that :class:`~nczarr.maps.url.NCZarrURL` applies to every S3 value.
"""

from __future__ import annotations

import functools
import re
from collections import namedtuple
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidKeyError, InvalidURLError
from ..keys import normalize_prefix
from .credentials import redact

__all__ = [
    "SCHEME",
    "S3Place",
    "aws_path_host",
    "check_bucket",
    "check_endpoint",
    "check_key_prefix",
    "check_port",
    "parse_http_host",
    "parse_s3_scheme",
    "parse_s3_url",
    "split_host",
]

SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

_S3Patterns = namedtuple("_S3Patterns", "bucket aws_path_host aws_vhost hostname ipv6")


@functools.cache
def _s3_patterns() -> Any:
    """The patterns only S3 URLs need, compiled when one first does: compiled at import
    they were ~6 M instructions of every command's start."""
    return _S3Patterns(
        bucket=re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$"),
        # netcdf-c's and AWS's path-style host (``s3.<region>.amazonaws.com``)
        aws_path_host=re.compile(r"^s3(?:[.-](?P<region>[a-z0-9-]+))?\.amazonaws\.com$", re.I),
        aws_vhost=re.compile(
            r"^(?P<bucket>.+)\.s3(?:[.-](?P<region>[a-z0-9-]+))?\.amazonaws\.com$", re.I
        ),
        hostname=re.compile(
            r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$"
        ),
        ipv6=re.compile(r"^\[[0-9A-Fa-f:.]+\]$"),
    )


def aws_path_host(host: str) -> re.Match[str] | None:
    """The match of netcdf-c's and AWS's path-style S3 host
    (``s3.<region>.amazonaws.com``, region in group ``"region"``), or None."""
    return _s3_patterns().aws_path_host.match(host)


_GOOGLE_HOST = "storage.googleapis.com"


class S3Place(namedtuple("S3Place", "bucket key endpoint region")):
    """An S3 location read from a URL (checked): bucket, key prefix, endpoint
    (``None`` for AWS) and region (``None`` when the host does not say).
    (``collections.namedtuple``: see :class:`nczarr.ncfile.layout.ChunkRef`.)"""

    __slots__ = ()
    bucket: str
    key: str
    endpoint: str | None
    region: str | None


def parse_s3_scheme(
    netloc: str, path: str, query: str, params: Mapping[str, str], shown: str
) -> S3Place:
    """The place an ``s3://`` URL names (``netloc``/``path``/``query`` after the scheme)."""
    from urllib.parse import unquote  # with ipaddress: only S3 URLs need it

    if query:
        raise InvalidURLError(f"S3 URLs take no query string: {shown!r}")
    if not netloc:
        raise InvalidURLError(f"s3 URL without a bucket: {shown!r}")
    if aws_path_host(netloc):
        # netcdf-c's documented form: s3://s3.<region>.amazonaws.com/bucket/key (a
        # bucket that merely ends in .amazonaws.com stays a bucket)
        return _parse_aws(netloc, path, params, shown)
    if ":" in netloc:
        raise InvalidURLError(f"s3 URL bucket {netloc!r} has a port: {shown!r}")
    return _place(netloc, unquote(path.removeprefix("/")), None, None, params, shown)


def parse_http_host(
    scheme: str,
    netloc: str,
    path: str,
    query: str,
    mode: frozenset[str],
    params: Mapping[str, str],
    shown: str,
) -> S3Place | None:
    """The S3 place an ``http(s)://`` URL names: an AWS or Google host, or any host
    with the ``s3`` mode word (an S3-compatible endpoint); None for another web URL."""
    if not netloc:
        raise InvalidURLError(f"URL without a host: {shown!r}")
    hostname = netloc.rsplit(":", 1)[0].lower() if not netloc.endswith("]") else netloc
    is_aws = hostname.endswith(".amazonaws.com")
    if not (is_aws or "s3" in mode or hostname == _GOOGLE_HOST):
        return None
    host, port = split_host(netloc, shown)
    if query:
        raise InvalidURLError(f"S3 URLs take no query string: {shown!r}")
    if is_aws:
        if port is not None:
            raise InvalidURLError(f"AWS S3 URLs take no port: {shown!r}")
        return _parse_aws(host, path, params, shown)
    endpoint = f"{scheme}://{host.lower()}" + ("" if port is None else f":{port}")
    bucket, _, key = path.removeprefix("/").partition("/")
    from urllib.parse import unquote  # with ipaddress: only S3 URLs need it

    return _place(unquote(bucket), unquote(key), endpoint, None, params, shown)


def _parse_aws(host: str, path: str, params: Mapping[str, str], shown: str) -> S3Place:
    from urllib.parse import unquote  # with ipaddress: only S3 URLs need it

    if m := aws_path_host(host):
        bucket, _, key = path.removeprefix("/").partition("/")
        bucket = unquote(bucket)
    elif m := _s3_patterns().aws_vhost.match(host):
        bucket, key = m.group("bucket"), path.removeprefix("/")
    else:
        raise InvalidURLError(f"unrecognized AWS S3 host {host!r} in {shown!r}")
    region = m.group("region")
    region = region.lower() if region else None
    return _place(bucket, unquote(key), None, region, params, shown)


def _place(
    bucket: str,
    key: str,
    endpoint: str | None,
    region: str | None,
    params: Mapping[str, str],
    shown: str,
) -> S3Place:
    if not bucket:
        raise InvalidURLError(f"S3 URL without a bucket: {shown!r}")
    check_bucket(bucket, f"bucket name {bucket!r} in {shown!r}")
    given = params.get("aws.region")
    if region is not None and given is not None and given != region:
        raise InvalidURLError(
            f"region {region!r} from the host conflicts with aws.region={given!r} in {shown!r}"
        )
    prefix = check_key_prefix(key, f"key {key!r} in {shown!r}")
    return S3Place(bucket, prefix, endpoint, region)


def split_host(netloc: str, shown: str) -> tuple[str, int | None]:
    """``(host, port or None)`` of ``host[:port]`` or ``[ipv6][:port]``, checked."""
    if not netloc:
        raise InvalidURLError(f"URL without a host: {shown!r}")
    if netloc.startswith("["):
        end = netloc.find("]")
        host, tail = netloc[: end + 1], netloc[end + 1 :]
        if end < 0 or not _s3_patterns().ipv6.match(host) or (tail and not tail.startswith(":")):
            raise InvalidURLError(f"invalid host {netloc!r} in {shown!r}")
        port_text = tail[1:] if tail else None
    else:
        host, colon, port_text_ = netloc.partition(":")
        port_text = port_text_ if colon else None
        if not _s3_patterns().hostname.match(host):
            raise InvalidURLError(f"invalid host {host!r} in {shown!r}")
    return host, None if port_text is None else check_port(port_text, shown)


def check_port(port_text: str, shown: str) -> int:
    """A port number 1-65535, or :class:`InvalidURLError` naming ``shown``."""
    if not re.fullmatch(r"[0-9]{1,5}", port_text) or not 0 < int(port_text) < 65536:
        raise InvalidURLError(f"invalid port {port_text!r} in {shown!r}: expected 1-65535")
    return int(port_text)


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket/root/prefix`` into ``(bucket, root)``; ``root`` may be ``""``.

    Raises :class:`InvalidURLError` naming the URL for another scheme, a missing or
    malformed bucket name, or a root with empty, ``.`` or ``..`` segments.

    >>> parse_s3_url("s3://bucket/a/b/")
    ('bucket', 'a/b')
    """
    if not isinstance(url, str) or not url.startswith("s3://"):
        raise InvalidURLError(f"not an S3 URL (expected s3://bucket/prefix): {url!r}")
    bucket, _, root = url[len("s3://") :].partition("/")
    if not _s3_patterns().bucket.match(bucket) or ".." in bucket:
        raise InvalidURLError(f"invalid bucket name {bucket!r} in S3 URL {url!r}")
    try:
        return bucket, normalize_prefix(root)
    except InvalidKeyError as exc:
        raise InvalidURLError(f"invalid key prefix in S3 URL {url!r}: {exc}") from None


def check_key_prefix(key: Any, what: str) -> str:
    """An S3 key prefix normalized (no leading/trailing ``/``), or InvalidURLError."""
    if not isinstance(key, str):
        raise InvalidURLError(f"invalid {what}")
    try:
        return normalize_prefix(key.strip("/"))
    except InvalidKeyError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise InvalidURLError(f"invalid {what}: {reason}") from None


def check_bucket(bucket: Any, what: str) -> None:
    """Raise InvalidURLError unless ``bucket`` is a valid S3 bucket name."""
    if not isinstance(bucket, str) or not _s3_patterns().bucket.match(bucket) or ".." in bucket:
        raise InvalidURLError(
            f"invalid {what}: S3 buckets are 3-63 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )


def check_endpoint(endpoint: Any) -> None:
    """Raise InvalidURLError unless ``endpoint`` is ``http(s)://host[:port]``."""
    match = SCHEME.match(endpoint) if isinstance(endpoint, str) else None
    if match is None or match.group(1) not in ("http", "https"):
        shown = redact(endpoint) if isinstance(endpoint, str) else endpoint
        raise InvalidURLError(f"invalid endpoint {shown!r}: expected http(s)://host[:port]")
    netloc = endpoint[match.end() :]
    if "/" in netloc or "@" in netloc or "?" in netloc or "#" in netloc:
        raise InvalidURLError(
            f"invalid endpoint {redact(endpoint)!r}: expected http(s)://host[:port]"
        )
    split_host(netloc, redact(endpoint))
