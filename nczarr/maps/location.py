"""Where a map's storage really lives: the value overlap checks compare.

A map answers :meth:`~nczarr.maps.base.ZMap.location` itself, so code above
``maps/`` (``conversion/overlap.py``) never asks which class it holds. The comparison
rules (real paths, inodes, S3 key prefixes) are :mod:`nczarr.conversion.overlap`'s.
"""

from __future__ import annotations

from ..records import record

__all__ = ["Location", "norm_endpoint"]

#: Default ports of the endpoint schemes, so ``http://h`` and ``http://h:80`` are one service.
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Host names that all mean "this machine".
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"})


@record
class Location:
    """The real place of a store.

    Attributes
    ----------
    kind
        ``"local"`` (a directory or archive on this machine), ``"s3"``, ``"memory"``
        or another fsspec protocol.
    service
        For S3 the normalized endpoint (``""`` for AWS); for memory maps the object
        id; ``""`` otherwise.
    container
        For S3 the bucket; ``""`` otherwise.
    path
        For ``local`` the absolute path as the map opens it; for S3 the key prefix;
        for fsspec protocols the path.
    """

    kind: str
    path: str
    service: str = ""
    container: str = ""


def norm_endpoint(endpoint: str | None) -> str:
    """An S3 endpoint as ``host:port`` (loopback names merged, default ports filled);
    ``""`` for none (AWS)."""
    if not endpoint:
        return ""
    from urllib.parse import urlsplit  # with ipaddress: only an S3 endpoint needs them

    parts = urlsplit(endpoint)
    host = (parts.hostname or "").lower()
    if host in _LOOPBACK:
        host = "localhost"
    try:
        port = parts.port
    except ValueError:
        port = None
    scheme = parts.scheme.lower()
    return f"{host}:{port or _DEFAULT_PORTS.get(scheme, 0)}"
