"""Where a store really lives, and whether two stores overlap.

``convert`` must never write into (or, with ``overwrite``, delete) its own source.
Comparing URLs as text is not enough: a symbolic link, a bind mount, a ``..``
spelling or a hard link gives one directory or archive many names. This module
compares *real* locations:

* local directories and zip archives: the device and inode of the location and of
  each of its existing ancestors (after resolving symbolic links), so a target
  inside the source, a source inside the target and two names for one object are
  all found, whatever the spelling, on every platform where ``os.stat`` gives file
  identities (``st_ino`` is a real file id on Windows too); the resolved paths are
  also compared as text, for file systems that report no inode numbers;
* S3: the service (endpoint, ``None`` for AWS), the bucket, and the key prefixes
  compared segment by segment;
* other fsspec protocols: protocol and path prefix; memory maps: identity.

The check needs no write and no listing: it runs before anything is opened for
writing, so a refused convert has touched nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InvalidModeError
from .location import Location, norm_endpoint

__all__ = [
    "Location",
    "RealPaths",
    "location_of",
    "overlap",
    "DistinctTarget",
    "check_distinct",
    "check_distinct_all",
]


def location_of(store: Any, options: Mapping[str, Any] | None = None) -> Location:
    """The :class:`Location` of an open map, or of a URL/path (with its storage options)."""
    from .base import ZMap

    if isinstance(store, ZMap):
        return store.location()
    from .chainurl import is_chained
    from .url import parse_url

    if is_chained(store):  # zip::<URL of an archive>: the archive is the location
        return location_of(os.fspath(store).split("::", 1)[1], options)
    url = parse_url(store)
    if url.storage in ("file", "zip"):
        return Location("local", url.path)
    if url.storage == "s3":
        endpoint = (options or {}).get("endpoint_url", url.endpoint)
        return Location("s3", url.path, norm_endpoint(endpoint), url.bucket or "")
    if url.storage == "memory":
        return Location("memory", url.path.strip("/"))
    return Location(url.storage, url.path.rstrip("/"))


class RealPaths:
    """``os.path.realpath`` of many paths side by side (a combine's 365 sources in one
    directory): each parent directory is resolved once, then a path costs one
    ``lstat`` (``realpath`` takes one per component, and Python work for each). The
    same answer as ``os.path.realpath``: a path that is a symbolic link, or whose last
    component is not a plain name, is resolved by it; elsewhere than POSIX every path
    is. Only parents are remembered (memory flat in the paths)."""

    def __init__(self) -> None:
        self._parents: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        if os.name != "posix" or not os.path.isabs(path):
            return os.path.realpath(path)
        parent, name = os.path.split(path)
        if name in ("", ".", "..") or parent == path:
            return os.path.realpath(path)
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return os.path.realpath(path)
        except (OSError, ValueError):
            pass  # missing: realpath keeps the name as it is, so do we
        real = self._parents.get(parent)
        if real is None:
            real = self._parents[parent] = os.path.realpath(parent)
        return os.path.join(real, name)


# ------------------------------------------------------------------ comparing
def _below(inner: str, outer: str, sep: str = "/") -> bool:
    """Whether key/path ``inner`` is ``outer`` or lies below it (segment-wise)."""
    if not outer:
        return True
    return inner == outer or inner.startswith(outer.rstrip(sep) + sep)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if st.st_ino == 0:  # a file system without file ids: rely on the paths
        return None
    return st.st_dev, st.st_ino


def _chain(path: str) -> list[tuple[int, int]]:
    """Identities of ``path`` (resolved) and of each of its existing ancestors."""
    out = []
    current = os.path.realpath(path)
    while True:
        ident = _identity(current)
        if ident is not None:
            out.append(ident)
        parent = os.path.dirname(current)
        if parent == current:
            return out
        current = parent


def _resolved(path: str) -> tuple[str, str, tuple[int, int] | None, list[tuple[int, int]]]:
    """``(path, real path, identity, chain)``: what comparing ``path`` needs, once."""
    real = os.path.realpath(path)
    ident = _identity(real)
    return path, real, ident, _chain(real)


def _local_overlap(
    a: str,
    b: str,
    resolved_b: Any = None,
    chains: dict[str, list[Any]] | None = None,
    realpath: Callable[[str], str] = os.path.realpath,
) -> bool:
    """``chains``: the chains of parent directories found so far in one check of many
    sources (sources side by side share theirs: one ``stat`` per source, not one per
    ancestor); ``realpath``: how ``a`` is resolved (:class:`RealPaths` there)."""
    b, real_b, ident_b, chain_b = resolved_b or _resolved(b)
    real_a = realpath(a)
    if _below(real_a, real_b, os.sep) or _below(real_b, real_a, os.sep):
        return True
    if _below(a, b, os.sep) or _below(b, a, os.sep):
        return True
    ident_a = _identity(real_a)
    if ident_a is not None and ident_a in chain_b:
        return True
    if ident_b is None:
        return False
    if chains is None:
        return ident_b in _chain(real_a)
    parent = os.path.dirname(real_a)
    if parent not in chains:
        chains[parent] = _chain(parent) if parent != real_a else []
    return ident_b == ident_a or ident_b in chains[parent]


def overlap(a: Location, b: Location) -> bool:
    """Whether two locations are the same store or one lies inside the other."""
    if a.kind != b.kind:
        return False
    if a.kind == "local":
        return _local_overlap(a.path, b.path)
    if (a.service, a.container) != (b.service, b.container):
        return False
    return _below(a.path, b.path) or _below(b.path, a.path)


def check_distinct(
    src: Any,
    dst: Any,
    *,
    src_options: Mapping[str, Any] | None = None,
    dst_options: Mapping[str, Any] | None = None,
    src_name: str | None = None,
    dst_name: str | None = None,
) -> None:
    """Raise :class:`InvalidModeError` if ``src`` and ``dst`` overlap.

    ``src`` and ``dst`` are open maps or URLs/paths (with the storage options they
    are opened with). Overlap means the same store under any name, the target inside
    the source, or the source inside the target.
    """
    if src is dst or overlap(location_of(src, src_options), location_of(dst, dst_options)):
        shown_src = src_name if src_name is not None else _shown(src)
        shown_dst = dst_name if dst_name is not None else _shown(dst)
        raise InvalidModeError(
            f"source {shown_src!r} and target {shown_dst!r} overlap; use migrate() to "
            "rewrite a store in place (they are the same store, or one lies inside the "
            "other, after resolving links and mounts; nothing was changed)"
        )


def check_distinct_all(
    sources: Sequence[Any],
    dst: Any,
    *,
    src_options: Mapping[str, Any] | None = None,
    dst_options: Mapping[str, Any] | None = None,
    realpath: Callable[[str], str] | None = None,
) -> None:
    """:func:`check_distinct` of every source and one target, the target's real
    location resolved once (365 sources: 365 resolutions saved), the sources' through
    ``realpath`` (default: a :class:`RealPaths` of this check)."""
    target = DistinctTarget(dst, dst_options, realpath)
    for src in sources:
        target.check(src, src_options)


class DistinctTarget:
    """:func:`check_distinct` of one target and many sources, each checked when it
    comes (a combine checks each source as it opens it, and keeps nothing of it): the
    target's real location resolved once, the sources' through ``realpath`` (default:
    a :class:`RealPaths`), the chains of parent directories of sources side by side
    shared (one ``stat`` per source). Remembers parents only (memory flat)."""

    def __init__(
        self,
        dst: Any,
        dst_options: Mapping[str, Any] | None = None,
        realpath: Callable[[str], str] | None = None,
    ) -> None:
        self._dst = dst
        self._dst_options = dst_options
        self._target = location_of(dst, dst_options)
        local = self._target.kind == "local"
        self._resolved = _resolved(self._target.path) if local else None
        self._chains: dict[str, list[Any]] = {}
        self._real = realpath or RealPaths()

    def check(
        self, src: Any, src_options: Mapping[str, Any] | None = None, real: str | None = None
    ) -> None:
        """Raise :class:`InvalidModeError` if ``src`` and the target overlap. ``real``:
        the real path of ``src``'s location, resolved already (an open directory map's
        :attr:`~nczarr.maps.file.FileMap.real_root`)."""
        if self._resolved is None:
            check_distinct(src, self._dst, src_options=src_options, dst_options=self._dst_options)
            return
        where = location_of(src, src_options)
        resolve = self._real if real is None else (lambda _: real)
        if src is self._dst or (
            where.kind == "local"
            and _local_overlap(where.path, self._target.path, self._resolved, self._chains, resolve)
        ):
            check_distinct(src, self._dst, src_options=src_options, dst_options=self._dst_options)


def _shown(store: Any) -> str:
    from .base import ZMap

    if isinstance(store, ZMap):
        return store.url
    from .credentials import redact

    return redact(os.fspath(store))
