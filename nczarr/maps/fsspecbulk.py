"""Many keys at once on an fsspec filesystem: :class:`BulkRequests`, the
``getitems``/``setitems`` of :class:`~nczarr.maps.fsspec.FsspecMap`.

On an async filesystem (s3fs, gcsfs, adlfs, http) the requests of a batch run
concurrently on the filesystem's event loop, at most :data:`MAX_CONCURRENCY` at once;
on a sync one they run one after another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..errors import ObjectExistsError
from ..keys import normalize_key, parent_keys
from .base import ZMap, as_bytes

__all__ = ["MAX_CONCURRENCY", "BulkRequests"]

T = TypeVar("T")

#: Concurrent requests issued by ``getitems``/``setitems`` on an async filesystem.
MAX_CONCURRENCY = 32


class BulkRequests(ZMap):
    """Batch reads and writes of :class:`~nczarr.maps.fsspec.FsspecMap` (a mixin: it
    uses the map's filesystem, ``_full``/``_acall``/``_run`` plumbing and known tree)."""

    _fs: Any
    _tree: Any

    @property
    def _concurrent(self) -> bool:
        return bool(getattr(self._fs, "async_impl", False))

    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read many keys; concurrent requests on an async filesystem; missing omitted."""
        if not self._concurrent:
            return super().getitems(keys)
        wanted = list(keys)
        normalized = [normalize_key(k) for k in wanted]

        async def one(nkey: str) -> bytes | None:
            try:
                return await self._acall("read", nkey, self._fs._cat_file(self._full(nkey)))
            except KeyError:
                return None

        values = self._gather(one, normalized)
        return {k: v for k, v in zip(wanted, values, strict=True) if v is not None}

    def _gather(self, fn: Callable[[str], Awaitable[T]], items: list[str]) -> list[T]:
        """``[await fn(i) for i in items]``, at most :data:`MAX_CONCURRENCY` at once."""
        if not items:
            return []

        async def run() -> list[T]:
            limit = asyncio.Semaphore(MAX_CONCURRENCY)

            async def bounded(item: str) -> T:
                async with limit:
                    return await fn(item)

            return await asyncio.gather(*(bounded(i) for i in items))

        return self._run(run)

    def setitems(self, items: Mapping[str, bytes]) -> None:
        """Write many keys, after checking the leaf rule for all of them.

        Nothing is written if any key conflicts with a stored key or with another key
        of ``items``. Inside :meth:`trusted_writes` only the batch itself is checked.
        The probes and the writes are concurrent on an async filesystem.
        """
        batch = {normalize_key(k): v for k, v in items.items()}
        for nkey in batch:
            self._check_writable(nkey)
        data = {k: as_bytes(v, k) for k, v in batch.items()}
        for nkey in data:
            for parent in parent_keys(nkey):
                if parent in data:
                    raise ObjectExistsError(
                        f"cannot write {nkey!r} and {parent!r} together: content-bearing "
                        "keys are leaves"
                    )
        if not self._trusted:
            probe = [k for k in data if not self._tree.settled(k)]
            if self._concurrent and len(probe) > 1:  # the probes' requests overlap
                with ThreadPoolExecutor(max_workers=min(MAX_CONCURRENCY, len(probe))) as pool:
                    list(pool.map(self._check_leaf_rule, probe))
            else:
                for nkey in probe:
                    self._check_leaf_rule(nkey)
        if not self._concurrent:
            for nkey, value in data.items():
                self._store(nkey, value)
            return

        async def put(nkey: str) -> None:
            path = self._full(nkey)
            try:
                await self._acall("write", nkey, self._fs._pipe_file(path, data[nkey]))
            finally:
                self._invalidate(nkey)
            self._tree.wrote(nkey)

        self._gather(put, list(data))
