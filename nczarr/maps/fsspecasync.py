"""Reads awaited on an fsspec async filesystem: :class:`AsyncReads`, the
``async_reads``/``aread`` of :class:`~nczarr.maps.fsspec.FsspecMap`.

zarr-python reads through an event loop of its own; a map whose filesystem is async (S3,
GCS, HTTP) lets that loop await the request (``_cat_file`` on the filesystem's loop)
rather than block a worker thread on it (:class:`~nczarr.integrations.zarr_store.ZarrStore`
asks :attr:`~nczarr.maps.base.ZMap.async_reads`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from ..errors import StorageError
from ..keys import normalize_key
from .base import ZMap

__all__ = ["AsyncReads"]

T = TypeVar("T")


class AsyncReads(ZMap):
    """Awaitable reads of :class:`~nczarr.maps.fsspec.FsspecMap` (a mixin: it uses the
    map's filesystem and its ``_full``/``_acall`` plumbing)."""

    _fs: Any

    @property
    def async_reads(self) -> bool:  # type: ignore[override]
        """True on an fsspec async filesystem (S3, GCS, HTTP ...): :meth:`aread` awaits
        its ``_cat_file`` on the filesystem's event loop, no worker thread blocks on it."""
        return bool(getattr(self._fs, "async_impl", False))

    async def aread(self, key: str, start: int | None = None, length: int | None = None) -> bytes:
        """``self[key]`` or ``self.getrange(key, start, length)``, awaitable: on an async
        filesystem one ``_cat_file`` awaited on the filesystem's event loop (from
        another loop, such as zarr-python's, handed over with
        ``asyncio.run_coroutine_threadsafe``: no worker thread). What the synchronous
        path settles with the object's size (a window counted from the end, a range
        the service refuses) goes to it in a worker thread."""
        nkey = normalize_key(key)
        plain = start is None or (start < 0 and length is None) or (start >= 0 and length != 0)
        if not self.async_reads or not plain or (length is not None and length < 0):
            return await super().aread(nkey, start, length)
        end = None if start is None or length is None else start + length
        read = self._acall("read", nkey, self._fs._cat_file(self._full(nkey), start=start, end=end))
        try:
            data = await self._on_fs_loop(read)
        except StorageError:
            if start is not None and start >= 0:  # past the end? the sync path tells
                return await super().aread(nkey, start, length)
            raise
        if length is not None and len(data) > length:  # a server that ignores Range
            data = data[start:end]
        return data

    async def _on_fs_loop(self, coro: Awaitable[T]) -> T:
        """Await ``coro`` on the filesystem's event loop, from whichever loop runs."""
        loop = self._fs.loop
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))  # type: ignore[arg-type]
