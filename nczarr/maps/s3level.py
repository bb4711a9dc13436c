"""One level of an S3 prefix listed and read together: :class:`LevelReads`, the
:meth:`~nczarr.maps.base.ZMap.search_reading` of :class:`~nczarr.maps.s3.S3Map`.

Opening a store looks for eleven optional objects at its root (``.zmetadata``,
``zarr.json``, ``.zgroup``, ``.zattrs``, ``.zarray``, NCZarr V1's ``.ncz*`` objects and
the append journal); a store holds two or three. Asked for one by one, each is a
request (about 4-5 ms of botocore CPU, and a round trip on S3) even when the answer is
404. Here one ``ListObjectsV2`` of the level (delimited: objects and child prefixes,
at most :data:`PAGE` names) says which exist, while the names the caller calls
likely are read at the same time: a store holding only likely objects costs one round
trip, as before, in four requests instead of eleven; one holding others costs a second
round trip for those. A level that does not fit one page, or that the credentials
may not list (a public bucket that allows ``GetObject`` only), falls back to reading
every name, as the default does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar

from ..keys import join_key, normalize_prefix
from .base import ZMap

__all__ = ["LevelReads", "PAGE"]

T = TypeVar("T")

#: Names one listing page holds (S3's maximum): a level with more is not listed here.
PAGE = 1000


class LevelReads(ZMap):
    """:meth:`search_reading` on s3fs (a mixin of :class:`~nczarr.maps.s3.S3Map`: it
    uses the map's filesystem, bucket and ``_full``/``_acall``/``_run`` plumbing)."""

    _fs: Any
    _bucket: str
    _full: Callable[[str], str]
    _acall: Callable[..., Awaitable[Any]]
    _run: Callable[..., Any]

    def search_reading(
        self, prefix: str, names: Sequence[str], cap: int, *, likely: Collection[str] = ()
    ) -> tuple[list[str] | None, dict[str, bytes]]:
        """One listing of ``prefix`` with reads of the ``likely`` names, then reads of
        the other names the listing shows (all of them if it cannot list the level)."""
        if cap < 0:
            raise ValueError(f"cap must be >= 0, got {cap}")
        prefix = normalize_prefix(prefix)
        keys = {name: join_key(prefix, name) for name in names}
        first = [keys[name] for name in keys if name in likely]

        async def run() -> tuple[set[str] | None, list[bytes | None]]:
            listing, *values = await asyncio.gather(
                self._level(prefix), *(self._read(key) for key in first)
            )
            return listing, values

        listed, values = self._run(run)
        got = dict(zip(first, values, strict=True))
        rest = [keys[n] for n in keys if n not in likely and (listed is None or n in listed)]
        if rest:
            got.update(self.getitems(rest))
        found = {key: got[key][:cap] for key in keys.values() if got.get(key) is not None}
        return (sorted(listed) if listed is not None else None), found

    async def _read(self, key: str) -> bytes | None:
        try:
            return await self._acall("read", key, self._fs._cat_file(self._full(key)))
        except KeyError:
            return None

    async def _level(self, prefix: str) -> set[str] | None:
        """The names directly below ``prefix`` (objects and child prefixes) from one
        listing request, or None: more than one page, or the listing failed (the reads
        that follow report a real failure)."""
        path = self._full(prefix)[len(self._bucket) + 1 :]
        start = f"{path}/" if path else ""
        try:
            page = await self._fs._call_s3(
                "list_objects_v2", Bucket=self._bucket, Prefix=start, Delimiter="/", MaxKeys=PAGE
            )
        except Exception:  # refused (no ListBucket) or failing: read every name instead
            return None
        if page.get("IsTruncated"):
            return None
        found = [item["Key"] for item in page.get("Contents", ())]
        found += [item["Prefix"] for item in page.get("CommonPrefixes", ())]
        names = {name[len(start) :].split("/", 1)[0] for name in found}
        names.discard("")
        return names
