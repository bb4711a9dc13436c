"""netCDF-style dataset URLs: :func:`parse_url` turns one into an :class:`NCZarrURL`.

netcdf-c names an NCZarr dataset with a URL whose fragment says how to read it
(``file:///x/ds.zip#mode=nczarr,zip``, ``s3://bucket/key#mode=zarr``). This module
understands the same URLs, plus plain local paths and any fsspec protocol, and
returns one normalized, immutable value. It is pure: it never touches storage.

Mode words and their implications
---------------------------------
The fragment's ``mode=`` list (and bare words such as ``#zarr``) may hold:

* format: ``nczarr``, ``zarr``, ``xarray``, ``noxarray``;
* storage: ``file`` (a directory), ``zip``, ``s3`` -- at most one;
* ``consolidated``, and the Zarr version ``v2`` or ``v3`` (not both).

nczarr applies netcdf-c's own inference rules, so a URL means the same thing to
both: ``xarray`` implies ``zarr``; ``noxarray`` implies ``zarr`` and removes
``xarray`` (``noxarray`` always means pure Zarr); ``zarr`` implies ``nczarr``
(which therefore reads "the Zarr family", and :attr:`NCZarrURL.format` says which
member). The storage word chosen by inference is always added to ``mode``, as
netcdf-c adds ``s3``. netcdf-c's ``bytes``, ``dap2``, ``dap4`` and ``gs3`` words
name other protocols and are rejected as unknown.

A bare fragment word that is a mode word is one (``#zarr`` is ``#mode=zarr``);
as in netcdf-c's macro table, a bare ``#s3`` also selects ``nczarr``. Any other
bare word is a parameter with an empty value (``#log``). Fragment keys and mode
words are case-insensitive; keys and values are percent-decoded; a repeated
``mode=`` adds words, a repeated other key keeps its last value.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import InvalidURLError
from ..keys import FORBIDDEN_CHARACTERS
from ..records import field, record
from .credentials import has_credentials, redact
from .urlhosts import (
    SCHEME,
    S3Place,
    aws_path_host,
    check_bucket,
    check_endpoint,
    check_key_prefix,
    check_port,
    parse_http_host,
    parse_s3_scheme,
    parse_s3_url,
)
from .urlmode import FORMAT_WORDS, MACROS, MODE_WORDS, STORAGE_WORDS, imply, parse_fragment

__all__ = [
    "NCZarrURL",
    "parse_url",
    "dataset_name",
    "parse_s3_url",
    "MODE_WORDS",
    "FORMAT_WORDS",
    "STORAGE_WORDS",
]

_CHAINED = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_PROTOCOL = re.compile(r"^[a-z][a-z0-9+.-]*$")
#: Characters left as they are in the path of a URL written by ``str()``.
_PATH_SAFE = "/!$&'()*+,;=:@~"
_FRAGMENT_SAFE = "!$'()*+,/:;@~"


class FragmentParams(Mapping[str, str]):
    """An immutable, hashable ``str -> str`` mapping: the non-mode fragment pairs.

    It compares equal to any mapping with the same items (a plain ``dict`` too).
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items = dict(items or {})

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items.items()))

    def __repr__(self) -> str:
        return repr(self._items)


@record
class NCZarrURL:
    """Where a dataset lives and how netcdf-c's fragment says to read it.

    Build one with :func:`parse_url`; constructing it directly normalizes and
    validates the fields the same way, so any value has one canonical form and
    ``parse_url(str(u)) == u``.

    Attributes
    ----------
    storage
        ``"file"`` (a directory tree), ``"zip"``, ``"s3"``, or another fsspec
        protocol (``"gs"``, ``"az"``, ``"memory"``, ``"http"``, ...).
    path
        For ``file``/``zip``: the absolute, normalized local path. For ``s3``: the
        key prefix inside the bucket, without leading or trailing ``/`` (may be
        ``""``). For other protocols: everything after ``protocol://``, verbatim.
    bucket
        The S3 bucket (case kept); ``None`` for every other storage.
    endpoint
        ``scheme://host[:port]`` of an S3-compatible server; ``None`` for AWS.
    region
        The S3 region, from the host name or the ``aws.region`` fragment key.
    mode
        The fragment's mode words after netcdf-c's implications (module docstring).
    params
        The other fragment pairs, keys lower-cased (``aws.profile``, ``log``, ...).
        For S3, ``aws.region`` is always present when :attr:`region` is known.
    scheme
        The scheme the URL was written with (``None`` for a plain path). It is
        informational and not part of equality.
    """

    storage: str
    path: str
    bucket: str | None = None
    endpoint: str | None = None
    region: str | None = None
    mode: frozenset[str] = frozenset()
    params: Mapping[str, str] = field(default_factory=FragmentParams)
    scheme: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        storage = self.storage
        if not isinstance(storage, str) or not _PROTOCOL.match(storage):
            raise InvalidURLError(f"invalid storage {storage!r}: expected a lower-case protocol")
        words = self.mode.split(",") if isinstance(self.mode, str) else self.mode
        mode = imply(frozenset(w for w in words if w), f"mode of storage {storage!r}")
        params = _check_params(self.params)
        if storage in ("file", "zip"):
            path = _check_local_path(self.path)
            _require_none(storage, bucket=self.bucket, endpoint=self.endpoint, region=self.region)
        elif storage == "s3":
            path = check_key_prefix(self.path, f"s3 key prefix {self.path!r}")
            check_bucket(self.bucket, f"bucket {self.bucket!r}")
            if self.endpoint is not None:
                check_endpoint(self.endpoint)
            region = self.region if self.region is not None else params.get("aws.region")
            if region is not None:
                _check_text(region, "region")
                if params.get("aws.region", region) != region:
                    raise InvalidURLError(
                        f"conflicting regions {region!r} and aws.region={params['aws.region']!r}"
                    )
                params = FragmentParams({**params, "aws.region": region})
            object.__setattr__(self, "region", region)
        else:
            path = _check_fsspec_path(storage, self.path)
            _require_none(storage, bucket=self.bucket, endpoint=self.endpoint, region=self.region)
        present = [w for w in STORAGE_WORDS if w in mode]
        if storage in STORAGE_WORDS:
            if present and present != [storage]:
                raise InvalidURLError(
                    f"storage word {present[0]!r} conflicts with storage {storage!r}"
                )
            mode = mode | {storage}
        elif present:
            raise InvalidURLError(
                f"storage word {present[0]!r} cannot be used with protocol {storage!r}"
            )
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "params", params)

    # ----------------------------------------------------------------- derived
    @property
    def format(self) -> str | None:
        """``"zarr"`` (pure Zarr), ``"nczarr"``, or ``None`` when the URL does not say."""
        if "zarr" in self.mode:
            return "zarr"
        if "nczarr" in self.mode:
            return "nczarr"
        return None

    @property
    def zarr_version(self) -> int | None:
        """2 or 3 when the fragment says ``v2``/``v3``, else ``None``."""
        if "v2" in self.mode:
            return 2
        if "v3" in self.mode:
            return 3
        return None

    @property
    def consolidated(self) -> bool:
        """Whether the fragment asks for consolidated metadata (``.zmetadata``)."""
        return "consolidated" in self.mode

    @property
    def xarray_dimensions(self) -> bool:
        """False when ``noxarray`` asks not to write ``_ARRAY_DIMENSIONS``."""
        return "noxarray" not in self.mode

    @property
    def profile(self) -> str | None:
        """The AWS profile: fragment key ``aws.profile``, else the documented ``awsprofile``."""
        return self.params.get("aws.profile", self.params.get("awsprofile"))

    @property
    def fsspec_url(self) -> str:
        """The URL to hand to fsspec, without the fragment (``s3://bucket/key`` for S3)."""
        from urllib.parse import quote  # with ipaddress: only when a URL is written out

        if self.storage in ("file", "zip"):
            return "file://" + quote(self.path, safe=_PATH_SAFE)
        if self.storage == "s3":
            key = quote(self.path, safe=_PATH_SAFE)
            return f"s3://{self.bucket}/{key}" if key else f"s3://{self.bucket}"
        return f"{self.storage}://{self.path}"

    # ----------------------------------------------------------------- output
    def __str__(self) -> str:
        """The canonical URL, fragment included: ``parse_url(str(u)) == u``."""
        from urllib.parse import quote  # with ipaddress: only when a URL is written out

        if self.endpoint is None and not (self.bucket and aws_path_host(self.bucket)):
            return self.fsspec_url + self._fragment()
        if self.endpoint is None:  # s3://<bucket> would read as netcdf-c's host form
            key = quote(self.path, safe=_PATH_SAFE)
            return f"https://s3.amazonaws.com/{self.bucket}/{key}" + self._fragment()
        # '@' after host:port would read as user:password@ (parse_url refuses it): %40
        key = quote(self.path, safe=_PATH_SAFE.replace("@", ""))
        return f"{self.endpoint}/{self.bucket}/{key}" + self._fragment()

    def _fragment(self) -> str:
        from urllib.parse import quote  # with ipaddress: only when a URL is written out

        parts = []
        words = [w for w in MODE_WORDS if w in self.mode]
        if words:
            parts.append("mode=" + ",".join(words))
        for key, value in self.params.items():
            qkey = quote(key, safe=_FRAGMENT_SAFE)
            if value == "" and key not in MACROS and key not in MODE_WORDS:
                parts.append(qkey)
            else:
                parts.append(f"{qkey}={quote(value, safe=_FRAGMENT_SAFE)}")
        return "#" + "&".join(parts) if parts else ""


# ------------------------------------------------------------------ parsing
def parse_url(url: str | os.PathLike[str]) -> NCZarrURL:
    """Parse a netCDF-style dataset URL or a local path into an :class:`NCZarrURL`.

    Accepted forms: plain paths (relative ones made absolute; a ``#`` starts a
    fragment, as in a URL) and :class:`os.PathLike` objects (taken literally);
    ``file:///abs`` and ``file://localhost/abs``; ``s3://bucket/key``; AWS
    ``https://`` URLs in path style (``s3.<region>.amazonaws.com/bucket/key``) and
    virtual-host style (``<bucket>.s3.<region>.amazonaws.com/key``); any other
    ``http(s)://host[:port]/bucket/key`` with the ``s3`` mode word (an
    S3-compatible endpoint); and any other ``protocol://...`` (fsspec).

    Raises
    ------
    InvalidURLError
        The message names the part that is wrong. Credentials in the URL are
        rejected and never repeated in a message.

    Examples
    --------
    >>> u = parse_url("file:///data/ds.zip#mode=nczarr,zip")
    >>> u.storage, u.path, u.format
    ('zip', '/data/ds.zip', 'nczarr')
    >>> u = parse_url("https://mybucket.s3.us-west-2.amazonaws.com/root/ds#mode=zarr")
    >>> u.storage, u.bucket, u.path, u.region, u.endpoint, u.format
    ('s3', 'mybucket', 'root/ds', 'us-west-2', None, 'zarr')
    >>> str(u)
    's3://mybucket/root/ds#mode=nczarr,zarr,s3&aws.region=us-west-2'
    >>> u = parse_url("http://127.0.0.1:9000/bucket/key#mode=nczarr,s3&aws.profile=dev")
    >>> u.endpoint, u.bucket, u.path, u.profile
    ('http://127.0.0.1:9000', 'bucket', 'key', 'dev')
    >>> parse_url("gs://bucket/ds.zarr#xarray").mode == {"nczarr", "zarr", "xarray"}
    True
    >>> parse_url("file:///x#mode=zar")
    Traceback (most recent call last):
    ...
    nczarr.errors.InvalidURLError: unknown mode word 'zar' in fragment of 'file:///x#mode=zar'
    """
    if isinstance(url, os.PathLike):
        raw = os.fspath(url)
        if not isinstance(raw, str):
            raise InvalidURLError(f"expected a str path, got bytes {raw!r}")
        return NCZarrURL("zip" if _is_zip_name(raw) else "file", _abspath(raw), scheme=None)
    if not isinstance(url, str):
        raise InvalidURLError(f"expected a URL or path, got {type(url).__name__}")
    if not url or url.startswith("#"):
        raise InvalidURLError(f"empty URL {url!r}")
    if FORBIDDEN_CHARACTERS.search(url):
        raise InvalidURLError(f"control or surrogate characters in URL {redact(url)!r}")
    shown = redact(url)
    scheme_match = SCHEME.match(url)
    if scheme_match is not None and has_credentials(url[scheme_match.end() :]):
        raise InvalidURLError(
            f"credentials are not accepted in URLs: {shown!r} (use a profile or storage "
            "options; write an '@' in a key as %40)"
        )
    if _CHAINED.match(url):
        raise InvalidURLError(
            f"chained fsspec URLs are not supported: {shown!r} is no single location; "
            "open_map() opens zip::<URL of a zip archive> read-only"
        )
    body, _, fragment = url.partition("#")
    mode, params = parse_fragment(fragment, shown)
    match = SCHEME.match(body)
    if match is None:
        if body[:5].lower() == "file:":
            raise InvalidURLError(f"file URLs are written file:///absolute/path, got {shown!r}")
        return _local(_abspath(body), None, mode, params, shown)
    scheme = match.group(1).lower()
    rest = body[match.end() :]
    netloc, path, query = _split_rest(rest)
    if "@" in netloc:
        raise InvalidURLError(
            f"credentials are not accepted in URLs: {shown!r} (use a profile or storage options)"
        )
    try:
        if scheme == "file":
            return _parse_file(netloc, path, query, mode, params, shown)
        if scheme == "s3":
            place = parse_s3_scheme(netloc, path, query, params, shown)
            return _s3(place, mode, params, scheme)
        if scheme in ("http", "https"):
            http = parse_http_host(scheme, netloc, path, query, mode, params, shown)
            if http is None:  # a web URL, not S3: fsspec's http(s) filesystem
                if {"file", "zip"} & mode:
                    word = "file" if "file" in mode else "zip"
                    raise InvalidURLError(f"storage word {word!r} cannot be used with {shown!r}")
                return NCZarrURL(scheme, rest, mode=mode, params=params, scheme=scheme)
            return _s3(http, mode, params, scheme)
        if not _PROTOCOL.match(scheme):
            raise InvalidURLError(f"invalid scheme {scheme!r}")
        return NCZarrURL(scheme, rest, mode=mode, params=params, scheme=scheme)
    except InvalidURLError as exc:
        if repr(shown) in str(exc):
            raise
        raise InvalidURLError(f"{exc} in {shown!r}") from None


def _split_rest(rest: str) -> tuple[str, str, str]:
    """Split ``host/path?query`` (after ``scheme://``, fragment removed)."""
    netloc, slash, tail = rest.partition("/")
    if "?" in netloc:
        netloc, _, q = netloc.partition("?")
        return netloc, "", q + slash + tail
    path, _, query = (slash + tail).partition("?")
    return netloc, path, query


def _abspath(path: str) -> str:
    if not path:
        raise InvalidURLError("empty path")
    return os.path.abspath(path)


def _is_zip_name(path: str) -> bool:
    return path.lower().endswith(".zip")


def _local(
    path: str, scheme: str | None, mode: frozenset[str], params: dict[str, str], shown: str
) -> NCZarrURL:
    if "s3" in mode:
        raise InvalidURLError(f"storage word 's3' needs an s3:// or http(s):// URL, not {shown!r}")
    zipped = "zip" in mode or ("file" not in mode and _is_zip_name(path))
    storage = "zip" if zipped else "file"
    return NCZarrURL(storage, path, mode=mode, params=params, scheme=scheme)


def _parse_file(
    netloc: str, path: str, query: str, mode: frozenset[str], params: dict[str, str], shown: str
) -> NCZarrURL:
    if netloc not in ("", "localhost"):
        raise InvalidURLError(
            f"file URL host must be empty or 'localhost', got {netloc!r} in {shown!r}"
        )
    if query:
        raise InvalidURLError(f"file URLs take no query string: {shown!r}")
    from urllib.parse import unquote  # with ipaddress: only for a file:// URL

    local = unquote(path)
    if not local.startswith("/"):
        raise InvalidURLError(f"file URL without an absolute path: {shown!r}")
    return _local(posixpath.normpath(local), "file", mode, params, shown)


def _s3(place: S3Place, mode: frozenset[str], params: dict[str, str], scheme: str) -> NCZarrURL:
    return NCZarrURL(
        "s3",
        place.key,
        bucket=place.bucket,
        endpoint=place.endpoint,
        region=place.region,
        mode=mode,
        params=params,
        scheme=scheme,
    )


# ------------------------------------------------------------- validation
def _check_params(params: Mapping[str, str]) -> FragmentParams:
    out: dict[str, str] = {}
    for key, value in dict(params).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidURLError(f"fragment keys and values are str, got {key!r}={value!r}")
        lower = key.lower()
        if (
            not lower
            or lower == "mode"
            or FORBIDDEN_CHARACTERS.search(lower)
            or FORBIDDEN_CHARACTERS.search(value)
        ):
            raise InvalidURLError(f"invalid fragment key {key!r}")
        out[lower] = value
    return FragmentParams(out)


def _check_local_path(path: Any) -> str:
    if not isinstance(path, str) or not path.startswith("/") or FORBIDDEN_CHARACTERS.search(path):
        raise InvalidURLError(f"local path {path!r} is not absolute")
    return posixpath.normpath(path)


def _check_fsspec_path(storage: str, path: Any) -> str:
    if not isinstance(path, str) or "#" in path or FORBIDDEN_CHARACTERS.search(path):
        shown = redact(f"{storage}://{path}")[len(storage) + 3 :] if isinstance(path, str) else path
        raise InvalidURLError(f"invalid {storage} path {shown!r}")
    netloc = re.split(r"[/?]", path, maxsplit=1)[0]
    if "@" in netloc:
        raise InvalidURLError(
            f"credentials are not accepted in URLs: {storage}://***@... "
            "(use a profile or storage options)"
        )
    if storage in ("http", "https"):
        if not netloc:
            raise InvalidURLError(f"{storage} path {path!r} does not start with a host")
        tail = netloc.rsplit("]", 1)[-1] if netloc.startswith("[") else netloc
        if ":" in tail:
            check_port(tail.rsplit(":", 1)[1], f"{storage}://{path}")
    return path


def _check_text(value: Any, what: str) -> None:
    if not isinstance(value, str) or not value or FORBIDDEN_CHARACTERS.search(value):
        raise InvalidURLError(f"invalid {what} {value!r}")


def _require_none(storage: str, **fields: object) -> None:
    for name, value in fields.items():
        if value is not None:
            raise InvalidURLError(f"{name} {value!r} is only meaningful for s3, not {storage!r}")


def dataset_name(url: str) -> str:
    """A dataset's name from its URL, as ncdump names it: the last path segment up to
    its first ``.`` (``file:///d/ref_byte.zarr.zip#mode=zarr,zip`` -> ``ref_byte``);
    ``data`` when the URL has no path (a memory map).

    >>> dataset_name("s3://bucket/runs/era5.zarr#mode=zarr,s3")
    'era5'
    """
    from urllib.parse import unquote, urlsplit  # with ipaddress: only nczarr dump names one

    parts = urlsplit(url)
    if parts.scheme == "memory":
        return "data"
    base = posixpath.basename(unquote(parts.path).rstrip("/"))
    return base.split(".", 1)[0] or base or "data"
