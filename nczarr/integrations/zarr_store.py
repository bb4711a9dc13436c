"""``ZarrStore``: a zarr-python 3 ``Store`` over any zmap (``open_zarr`` is in
:mod:`~nczarr.integrations.shortcut`).

zarr-python does all of its I/O through an async :class:`zarr.abc.store.Store`.
:class:`ZarrStore` implements that contract on top of a :class:`~nczarr.maps.base.ZMap`,
so ``zarr.open_group(store=ZarrStore(m))`` reads and writes Zarr v2 and v3 hierarchies
in a directory, a zip archive, an S3 bucket or memory, through exactly the code that
reads NCZarr.

Map calls run in a worker thread (``asyncio.to_thread``) when the map does blocking I/O
(files, S3), so concurrent chunk requests overlap and the event loop stays free; maps
whose calls are cheap or serialized anyway (memory, zip) are called inline, which is
several times cheaper than a thread hop. The choice is per map (see :func:`blocking_io`).
Reads from a map over an fsspec async filesystem (S3, GCS, HTTP: the map's
``async_reads``) are awaited instead: the map hands its ``_cat_file`` to the
filesystem's event loop, so no worker thread blocks on the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from ..errors import ReadOnlyError
from ..maps.base import ZMap

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator


__all__ = ["ZarrStore", "blocking_io", "open_sharded"]

T = TypeVar("T")


def blocking_io(zmap: ZMap) -> bool:
    """Whether calls into ``zmap`` should leave the event loop (``asyncio.to_thread``).

    The map says so itself (:attr:`~nczarr.maps.base.ZMap.blocking_io`, per class or
    instance): :class:`~nczarr.maps.memory.MemoryMap` and
    :class:`~nczarr.maps.zip.ZipMap` (and their subclasses) are called inline and every
    other map in a worker thread. Measured with zarr 3.1 on 2 cores: a thread hop
    costs ~50 µs of CPU per call, seven times a MemoryMap read; a ZipMap serializes
    its reads on one lock and buffers its writes in memory, so threads buy it no
    overlap (zarr's own ``ZipStore`` is inline too); files and S3 objects do block, and
    threads let concurrent chunk requests overlap.
    """
    return bool(zmap.blocking_io)


class ZarrStore(Store):
    """A zarr-python ``Store`` doing all of its I/O through a zmap.

    Parameters
    ----------
    zmap
        The map to read and write. Its keys are the store's keys.
    read_only
        ``None`` (default): read-only exactly when the map is. ``True`` refuses
        writes even over a writable map (zarr's ``mode="r"`` uses this). ``False``
        over a read-only map raises :class:`~nczarr.errors.ReadOnlyError`.

    Notes
    -----
    * Missing keys read as ``None`` (zarr's contract); keys zarr never produces
      (``""``, ``"a//b"``, ``".."``) raise :class:`~nczarr.errors.InvalidKeyError`.
    * Writes obey the map's leaf rule: a key holding content is never a prefix of
      another key, so such a write raises :class:`~nczarr.errors.ObjectExistsError`.
    * :meth:`close` closes the map (a zip archive is written then). Stores made by
      :meth:`with_read_only` share the map.
    * Equality and pickling delegate to the map: two stores are equal when their maps
      name the same storage and their ``read_only`` flags agree.
    """

    supports_writes: bool = True
    supports_deletes: bool = True
    supports_listing: bool = True

    def __init__(self, zmap: ZMap, *, read_only: bool | None = None) -> None:
        if not isinstance(zmap, ZMap):
            raise TypeError(f"ZarrStore needs a ZMap, got {type(zmap).__name__}: {zmap!r}")
        if read_only is None:
            read_only = zmap.read_only
        elif not read_only and zmap.read_only:
            raise ReadOnlyError(
                f"cannot make a writable ZarrStore over {zmap!r}: the map is read-only "
                "(open it with mode 'r+' or 'a')"
            )
        super().__init__(read_only=read_only)
        self._zmap = zmap
        self._blocking = blocking_io(zmap)
        self._async_reads = bool(zmap.async_reads)
        # set_if_not_exists is check-then-write; serialize it within this process.
        self._create_lock = threading.Lock()

    # ------------------------------------------------------------------ identity
    @property
    def zmap(self) -> ZMap:
        """The map this store reads and writes."""
        return self._zmap

    @property
    def blocking(self) -> bool:
        """Whether map calls run in a worker thread (see :func:`blocking_io`)."""
        return self._blocking

    @property
    def async_reads(self) -> bool:
        """Whether reads await the map (:attr:`~nczarr.maps.base.ZMap.async_reads`, an
        fsspec async filesystem) instead of calling it in a worker thread."""
        return self._async_reads

    def __repr__(self) -> str:
        ro = ", read_only=True" if self._read_only and not self._zmap.read_only else ""
        return f"ZarrStore({self._zmap!r}{ro})"

    def __str__(self) -> str:
        return self._zmap.url

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ZarrStore):
            return NotImplemented
        return self._read_only == other._read_only and _same_storage(self._zmap, other._zmap)

    __hash__ = None  # type: ignore[assignment]  # mutable, like zarr's own stores

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._zmap, self._read_only))

    def with_read_only(self, read_only: bool = False) -> ZarrStore:
        """A new, unopened store over the same storage with another ``read_only`` flag.

        Over a read-only map, ``read_only=False`` reopens the storage with mode
        ``"r+"`` (not possible for a :class:`~nczarr.maps.memory.MemoryMap`, which
        raises :class:`~nczarr.errors.ReadOnlyError`).
        """
        zmap = self._zmap
        if not read_only and zmap.read_only:
            zmap = _reopen_writable(zmap)
        return type(self)(zmap, read_only=read_only)

    # ------------------------------------------------------------------ lifecycle
    async def _open(self) -> None:
        if self._zmap.closed:
            raise ValueError(f"cannot open {self!r}: its map is closed")
        await super()._open()

    def _open_sync(self) -> None:
        if not self._is_open:
            if self._zmap.closed:
                raise ValueError(f"cannot open {self!r}: its map is closed")
            self._is_open = True

    def close(self) -> None:
        """Close the store and its map (flushing pending writes, e.g. a zip archive)."""
        super().close()
        self._zmap.close()

    async def _call(self, func: Callable[..., T], *args: Any) -> T:
        if self._blocking:
            return await asyncio.to_thread(func, *args)
        return func(*args)

    # ----------------------------------------------------------- sync primitives
    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """Read ``key`` (or a byte range of it) without an event loop; ``None`` if absent."""
        self._open_sync()
        return self._get(key, prototype, byte_range)

    def set_sync(self, key: str, value: Buffer) -> None:
        """Write ``value`` at ``key`` without an event loop."""
        self._open_sync()
        self._check_writable()
        self._set(key, value)

    def delete_sync(self, key: str) -> None:
        """Delete ``key`` without an event loop; a missing key is not an error."""
        self._open_sync()
        self._check_writable()
        self._delete(key)

    def _get(
        self, key: str, prototype: BufferPrototype | None, byte_range: ByteRequest | None
    ) -> Buffer | None:
        if prototype is None:
            prototype = default_buffer_prototype()
        try:
            data = _read(self._zmap, key, byte_range)
        except KeyError:
            return None
        return prototype.buffer.from_bytes(data)

    def _set(self, key: str, value: Buffer) -> None:
        if not isinstance(value, Buffer):
            raise TypeError(
                f"ZarrStore.set({key!r}): value must be a zarr Buffer, got {type(value).__name__}"
            )
        self._zmap[key] = value.as_buffer_like()

    def _set_if_absent(self, key: str, value: Buffer) -> None:
        with self._create_lock:
            if key not in self._zmap:
                self._set(key, value)

    def _delete(self, key: str) -> None:
        with contextlib.suppress(KeyError):
            del self._zmap[key]

    def _getsize(self, key: str) -> int:
        try:
            return self._zmap.getsize(key)
        except KeyError:
            raise FileNotFoundError(key) from None

    def _delete_below(self, prefix: str) -> None:
        if not prefix.strip("/"):
            self._zmap.clear()
            return
        for key in list(self._zmap.keys_below(prefix)):
            self._delete(key)

    # ---------------------------------------------------------------- async API
    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """Read ``key`` or a byte range of it; ``None`` when the key is absent.

        ``prototype`` defaults to zarr's default buffer prototype, so
        ``await store.get(key)`` works.
        """
        await self._ensure_open()
        return await self._get_async(key, prototype, byte_range)

    async def _get_async(
        self, key: str, prototype: BufferPrototype | None, byte_range: ByteRequest | None
    ) -> Buffer | None:
        if not self._async_reads:
            return await self._call(self._get, key, prototype, byte_range)
        start, length = _window(key, byte_range)
        try:
            data = await self._zmap.aread(key, start, length)
        except KeyError:
            return None
        return (prototype or default_buffer_prototype()).buffer.from_bytes(data)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        """Read many ``(key, byte_range)`` pairs concurrently, in order."""
        await self._ensure_open()
        return list(
            await asyncio.gather(*(self._get_async(key, prototype, rng) for key, rng in key_ranges))
        )

    async def _get_many(
        self, requests: Iterable[tuple[str, BufferPrototype, ByteRequest | None]]
    ) -> AsyncGenerator[tuple[str, Buffer | None], None]:
        reqs = list(requests)
        values = await asyncio.gather(*(self.get(*req) for req in reqs))
        for req, value in zip(reqs, values, strict=True):
            yield req[0], value

    async def exists(self, key: str) -> bool:
        """Whether ``key`` holds content (a "directory" prefix does not)."""
        await self._ensure_open()
        return await self._call(self._zmap.__contains__, key)

    async def set(self, key: str, value: Buffer) -> None:
        """Write ``value`` at ``key``; the map's leaf rule applies."""
        await self._ensure_open()
        self._check_writable()
        await self._call(self._set, key, value)

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        """Write ``value`` at ``key`` unless ``key`` already holds content.

        Atomic among writers sharing this store; across processes it is
        check-then-write, as the map contract has no conditional put.
        """
        await self._ensure_open()
        self._check_writable()
        await self._call(self._set_if_absent, key, value)

    async def delete(self, key: str) -> None:
        """Delete ``key``; a missing key is not an error."""
        await self._ensure_open()
        self._check_writable()
        await self._call(self._delete, key)

    async def delete_dir(self, prefix: str) -> None:
        """Delete every key at or below ``prefix`` (by whole segments)."""
        await self._ensure_open()
        self._check_writable()
        await self._call(self._delete_below, prefix)

    async def clear(self) -> None:
        """Delete every key of the map."""
        await self._ensure_open()
        self._check_writable()
        await self._call(self._zmap.clear)

    async def getsize(self, key: str) -> int:
        """Size in bytes of ``key``; ``FileNotFoundError`` when absent."""
        await self._ensure_open()
        return await self._call(self._getsize, key)

    async def is_empty(self, prefix: str) -> bool:
        """Whether no key lies below ``prefix`` (``""``: the whole store)."""
        await self._ensure_open()
        return await self._call(self._is_empty, prefix)

    def _is_empty(self, prefix: str) -> bool:
        below = prefix.rstrip("/") if prefix.strip("/") else ""
        # zarr's prefixes are directories: a leaf at ``prefix`` itself does not count.
        return all(key == below for key in self._zmap.keys_below(below))

    async def list(self) -> AsyncIterator[str]:
        """Every key of the store."""
        for key in await self._call(_all_keys, self._zmap, ""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every key that starts with the string ``prefix`` (zarr semantics).

        ``"a/"`` lists the keys below ``a``; ``"a/b"`` also matches ``a/bc/...``.
        """
        for key in await self._call(_keys_with_prefix, self._zmap, prefix):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """Names of the immediate children of ``prefix``: leaves and sub-prefixes."""
        for name in await self._call(self._zmap.search, prefix):
            yield name


# --------------------------------------------------------------------------- helpers
def _read(zmap: ZMap, key: str, byte_range: ByteRequest | None) -> bytes:
    """Bytes of ``key`` for a zarr byte request, through ``zmap.getrange``."""
    start, length = _window(key, byte_range)
    if start is None:
        return zmap[key]
    return zmap.getrange(key, start, length)


def _window(key: str, byte_range: ByteRequest | None) -> tuple[int | None, int | None]:
    """``(start, length)`` of a zarr byte request as ``getrange`` takes them;
    ``(None, None)``: the whole object."""
    if byte_range is None:
        return None, None
    if isinstance(byte_range, RangeByteRequest):
        start, end = byte_range.start, byte_range.end
        if start < 0 or end < start:
            raise ValueError(f"invalid byte range for {key!r}: {byte_range}")
        return start, end - start
    if isinstance(byte_range, OffsetByteRequest):
        if byte_range.offset < 0:
            raise ValueError(f"invalid byte range for {key!r}: {byte_range}")
        return byte_range.offset, None
    if isinstance(byte_range, SuffixByteRequest):
        if byte_range.suffix < 0:
            raise ValueError(f"invalid byte range for {key!r}: {byte_range}")
        if byte_range.suffix == 0:  # getrange(key, -0) would be the whole object
            return 0, 0
        return -byte_range.suffix, None
    raise TypeError(f"Unexpected byte_range, got {byte_range!r} for {key!r}")


def _all_keys(zmap: ZMap, prefix: str) -> list[str]:
    return list(zmap.keys_below(prefix))


def _keys_with_prefix(zmap: ZMap, prefix: str) -> list[str]:
    if prefix.endswith("/") or not prefix:
        return list(zmap.keys_below(prefix))
    # A partial last segment: list its parent, keep string matches.
    parent = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
    return [k for k in zmap.keys_below(parent) if k.startswith(prefix)]


def _same_storage(a: ZMap, b: ZMap) -> bool:
    if a is b or a == b:
        return True
    # A pickled "w" map comes back as "r+": still the same storage.
    return a.same_storage(b)


def _reopen_writable(zmap: ZMap) -> ZMap:
    return zmap.reopen("r+")


async def open_sharded(zmap: ZMap, path: str) -> Any:
    """The Zarr v3 array at ``path`` of ``zmap``, opened read-only by zarr-python (the
    shard reader :mod:`nczarr.reencode` borrows through :mod:`nczarr.hooks`)."""
    from zarr.api.asynchronous import open_array

    store = ZarrStore(zmap, read_only=True)
    return await open_array(store=store, path=path, mode="r", zarr_format=3)


def _rebuild(zmap: ZMap, read_only: bool) -> ZarrStore:
    return ZarrStore(zmap, read_only=read_only)
