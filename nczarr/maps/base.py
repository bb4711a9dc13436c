"""The zmap contract: a ``MutableMapping[str, bytes]`` over a tree of keys, plus ``search``.

A *zmap* is the storage abstraction of netcdf-c's NCZarr (``zmap.h``) and the
key/value model of the NCZarr storage spec:

* Keys are ``/``-separated paths relative to the map's root. A leading ``/`` is
  accepted and means the same key, so ``"/g/.zattrs" == "g/.zattrs"``. Every key is
  checked by :func:`normalize_key`.
* Only *content-bearing* objects exist, and they are always leaves: a key holding
  content is never a prefix (by whole segments) of another key.
* :meth:`ZMap.search` lists the immediate child names below a prefix that lead to
  stored objects; it is all a reader of pure Zarr needs to walk a hierarchy.

Backends implement five primitives (``_load``, ``_store``, ``_remove``,
``_list`` and ``_describe``); everything else has a correct default and may be
overridden for speed. The keys, the leaf rule and the mapping protocol are
:class:`~nczarr.maps.mapcore.MapCore`'s; this module adds what callers ask of a map
and its identity (``repr``, ``==``, pickling).

What callers need to know about a backend is asked of the map, never decided by its
class (as zarr's ``Store.supports_*``): :attr:`ZMap.kind`, :meth:`ZMap.location`,
:attr:`ZMap.supports_shared_writes`, :attr:`ZMap.blocking_io`, :attr:`ZMap.async_reads`,
:attr:`ZMap.real_root`, :meth:`ZMap.copy_support` / :meth:`ZMap.copy_from`,
:meth:`ZMap.copy_threads`, :meth:`ZMap.remove_temporaries`,
:meth:`ZMap.discard`, :meth:`ZMap.describe`, :meth:`ZMap.same_storage`, :meth:`ZMap.reopen`,
:attr:`ZMap.source`, :meth:`ZMap.chunk_map`, :meth:`ZMap.search_reading` and
:meth:`ZMap.park`. Each has a safe default here; a backend overrides what it can do better.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ..keys import join_key
from .common import (
    MODES,
    NOT_SUPPORTED,
    CopySupport,
    NotSupportedType,
    as_bytes,
    check_mode,
)
from .location import Location
from .mapcore import MapCore

__all__ = [
    "ZMap",
    "MODES",
    "NOT_SUPPORTED",
    "CopySupport",
    "NotSupportedType",
    "as_bytes",
    "check_mode",
]


class ZMap(MapCore):
    """Abstract zmap: a mutable mapping of normalized keys to ``bytes`` with ``search``
    (the contract is :class:`~nczarr.maps.mapcore.MapCore`'s), plus what callers may
    ask of the storage behind it: its capabilities, each with a safe default here.
    """

    #: A short public description of the storage kind, for messages ("a directory").
    kind: str = "a store"
    #: Whether several processes may write into the store at once (a cluster's workers).
    supports_shared_writes: bool = False
    #: Whether calls block on I/O (files, network), so an event loop should run them in
    #: a worker thread; ``False`` for maps whose calls are cheap or serialized on one lock.
    blocking_io: bool = True
    #: Whether each request is a network round trip (S3, HTTP, a remote fsspec
    #: filesystem), so a caller reading many stores overlaps their requests instead of
    #: waiting for each store's in turn.
    round_trips: bool = False
    #: Whether :meth:`aread` awaits the storage itself (an fsspec async filesystem's
    #: ``_cat_file``), so an event loop reads through it without a worker thread.
    async_reads: bool = False
    #: Whether writes reach storage only as one whole when the map is flushed or
    #: closed (a zip archive, rewritten atomically): a writer killed before that leaves
    #: the old content, so it needs no mark of an unfinished write.
    writes_on_flush: bool = False
    #: ``os.path.realpath`` of a local store's root as resolved when the map was opened
    #: (an overlap check or a journal uses it instead of resolving again); ``None``:
    #: not a local store, or not resolved.
    real_root: str | None = None

    # ------------------------------------------------------------- capabilities
    def location(self) -> Location:
        """Where the storage really lives, for overlap checks (two names of one store,
        or one store inside another). The default is the map's URL."""
        return Location("url", self.url.rstrip("/"))

    def copy_support(self, other: ZMap) -> CopySupport | None:
        """How :meth:`copy_from` can copy objects of ``other`` without the caller
        reading them (see :data:`CopySupport`), or ``None``: it cannot."""
        return None

    def copy_from(
        self,
        other: ZMap,
        src_key: str,
        dst_key: str,
        size: int | None = None,
        *,
        atomic: bool = True,
    ) -> int | NotSupportedType | None:
        """Copy ``other[src_key]`` to ``self[dst_key]`` the map's own way; return the
        bytes copied (``None`` if not known), or :data:`NOT_SUPPORTED` (the default):
        nothing was done and the caller copies the bytes itself.

        ``size`` is the source object's size if a listing gave it. With
        ``atomic=False`` a map may create a new object in place, visible short until
        the call returns (a chunk copier that writes metadata last and resumes by size
        allows it). A missing ``src_key`` raises ``KeyError(src_key)``.
        """
        return NOT_SUPPORTED

    def copy_many(
        self, other: ZMap, keys: Iterable[str]
    ) -> Iterator[tuple[str, int | NotSupportedType | None]]:
        """``(key, copy_from(other, key, key, atomic=False))`` for each of ``keys``, in
        order, lazily (the caller handles each result before the next copy starts).

        A chunk copier's loop over :meth:`copy_from`; a map may override it to pay
        per-directory work once per run of keys (a directory map does)."""
        for key in keys:
            yield key, self.copy_from(other, key, key, None, atomic=False)

    def copy_pairs(
        self, other: ZMap, pairs: Iterable[tuple[str, str]]
    ) -> Iterator[tuple[str, str, int | NotSupportedType | None]]:
        """``(src_key, dst_key, copy_from(other, src_key, dst_key, atomic=False))`` for
        each ``(src_key, dst_key)`` of ``pairs``, in order, lazily.

        :meth:`copy_many` copies a key to the same key; a combine copies each source's
        chunks under other keys (shifted along the concatenated dimension), so it needs
        the pairs. A map may override it as it overrides :meth:`copy_many`."""
        for src_key, dst_key in pairs:
            yield src_key, dst_key, self.copy_from(other, src_key, dst_key, None, atomic=False)

    def copy_chunk_to(self, dst: ZMap, key: str) -> int | NotSupportedType:
        """Write ``self[key]`` into ``dst`` the source's own way (a netCDF file source
        copies a byte range of its file kernel-side, :meth:`copy_range`); return the
        bytes written, or :data:`NOT_SUPPORTED` (the default): the caller copies."""
        return NOT_SUPPORTED

    def copy_threads(self, dst: ZMap, workers: int) -> int:
        """How many threads should copy this map's chunks into ``dst`` when ``workers``
        are allowed. The default: ``workers`` (each copy waits on I/O or encodes). A
        source whose copies into ``dst`` are kernel copies says fewer: one for small
        chunks, at most one a core for large ones
        (:func:`~nczarr.maps.kernelcopy.copy_threads`)."""
        return workers

    def copy_range(
        self,
        fd_in: int,
        offset: int,
        length: int,
        key: str,
        *,
        tail: bytes = b"",
        atomic: bool = True,
    ) -> int | NotSupportedType:
        """Make ``key`` hold ``length`` bytes of the open file ``fd_in`` from ``offset``,
        then ``tail``, without the caller reading them; return the bytes written, or
        :data:`NOT_SUPPORTED` (the default): the caller writes the bytes itself."""
        return NOT_SUPPORTED

    async def aread(self, key: str, start: int | None = None, length: int | None = None) -> bytes:
        """``self[key]`` (``start=None``) or ``self.getrange(key, start, length)``,
        awaitable. The default calls the map in a worker thread; a map with
        :attr:`async_reads` awaits its storage instead."""
        import asyncio

        if start is None:
            return await asyncio.to_thread(self.__getitem__, key)
        return await asyncio.to_thread(self.getrange, key, start, length)

    def search_reading(
        self, prefix: str, names: Sequence[str], cap: int, *, likely: Collection[str] = ()
    ) -> tuple[list[str] | None, dict[str, bytes]]:
        """``(search(prefix) or None, {key: content})`` for a reader looking for a few
        optional objects ``names`` directly below ``prefix`` (a store's root metadata):
        the content, at most ``cap`` bytes each, of those that exist, under their keys.

        The default reads every one of ``names`` (on a network map, a request each,
        answered "missing" for most) and gives ``None`` for the listing. A map whose
        one listing request costs about what one read costs (an object store) lists the
        level once, reading the ``likely`` names meanwhile, then only the other names
        the listing shows, and gives the listing (what :meth:`search` gives, so a
        walker need not list the level again); ``None`` and every name read when the
        level does not fit one listing page or cannot be listed.
        """
        keys = [join_key(prefix, name) for name in names]
        return None, self.getitems_capped(keys, cap)

    def file_format(self) -> Any | None:
        """What a map serving a whole dataset file is (a netCDF file,
        :mod:`nczarr.ncfile`): its ``FormatInfo``, read from the file's own header, not
        from metadata objects. ``None`` (the default): a store of metadata objects."""
        return None

    @property
    def reencoded(self) -> Mapping[str, str]:
        """Key prefixes of arrays whose chunks this map serves re-encoded, and why
        (a netCDF file source re-encodes what no Zarr codec decodes); none by default."""
        return {}

    def reencodes(self, key: str) -> bool:
        """Whether ``self[key]`` is made by encoding decoded values again rather than
        served as stored (a chunk of one of :attr:`reencoded`'s arrays; with an HDF5
        filter mask, only some of an array's chunks are). ``convert`` counts these in
        ``report.chunks_reencoded``. False by default."""
        return False

    def chunk_location(self, key: str) -> tuple[str] | tuple[str, int, int] | None:
        """Where a reader without nczarr finds the bytes of ``self[key]``: ``(url,)``,
        the whole object; ``(url, offset, length)``, a byte range of ``url``; ``None``
        (the default), nowhere it can range into (reference sets inline or refuse)."""
        return None

    def chunk_locations(
        self, keys: Iterable[str]
    ) -> list[tuple[str] | tuple[str, int, int] | None]:
        """:meth:`chunk_location` of many keys, in order. ``keys`` are normalized keys
        as this map lists them (not normalized again). Maps override it to answer a
        batch without per-key work: a reference set asks it of every chunk."""
        return [self.chunk_location(key) for key in keys]

    def unreferenceable_reason(self) -> str:
        """Why an object :meth:`chunk_location` gives no place for cannot be pointed at."""
        return "not a verbatim byte range of the source (re-encoded or padded by it)"

    @property
    def source(self) -> ZMap | None:
        """The map this one shows translated (a view's source: the storage a reader
        really reads), or ``None`` (the default): the map is its own storage."""
        return None

    def chunk_map(self, array: str) -> ZMap:
        """The map to read the chunks of ``array`` (its path as shown) from, under the
        keys this map shows: the map itself by default; a view passing that array's
        chunks through unchanged answers its source, so a reader skips the view."""
        return self

    def each_stored_chunk(
        self, prefix: str, visit: Callable[[tuple[int, ...], str, int, int, int], None]
    ) -> bool:
        """Call ``visit(coords, url, offset, size, filter mask)`` for every stored chunk
        of array ``prefix`` (bytes ``offset`` to ``offset + size`` of the object at
        ``url``), in one walk of the source's own chunk index, holding none; a chunk
        with a non-zero filter mask must be re-encoded, not pointed at. False, with
        nothing visited, when the map cannot (the default): list the array's keys
        instead. A netCDF-4 file's map can (:mod:`nczarr.ncfile.streamed`)."""
        return False

    def session(self) -> AbstractContextManager[object]:
        """A block (one convert's copy) during which the map may keep resources across
        calls, e.g. a directory map its verified directories open. Nothing by default."""
        return nullcontext()

    def remove_temporaries(self, directories: Iterable[str] | None = None) -> int:
        """Delete what killed writes of this map left behind (temporary files);
        return how many were removed. ``directories`` (keys of directories, ``""``
        for the root): only what lies directly in them, not below (a caller that
        knows where its writes went need not list every chunk); ``None``: all.
        Maps whose writes leave nothing return 0."""
        return 0

    def discard(self) -> None:
        """Abandon the writes made through the map and close it (a failed replacement
        in ``to_nczarr`` leaves the old store as it was). A map that stages its writes
        drops them (a zip archive: the archive on disk stays as last committed); the
        default, for maps that write through, closes the map; a failure to flush is
        ignored (what it would flush is abandoned) and the map is closed all the same."""
        try:
            self.close()
        except Exception:
            self._closed = True

    def park(self) -> bool:
        """Release what the map holds open between uses (an OS file handle, a library's
        handles on the file) and keep what it read when it was opened, so that a caller
        holding many maps it reads later keeps open files and memory flat without
        paying the open again; the next read takes the handles back (cheaply: no
        metadata read again) and refuses a file changed meanwhile, naming it.

        Return whether the map parked (then the caller keeps it rather than closing
        and opening it again). Call it only while no read of the map is in flight.
        The default holds nothing worth releasing so, and parks nothing: False."""
        return False

    def describe(self) -> tuple[str, dict[str, Any]]:
        """``(location, options)``: a credential-free URL and the options to reopen with."""
        return self._describe()

    def same_storage(self, other: ZMap) -> bool:
        """Whether ``other`` is a map over the same storage (whatever its mode)."""
        return other is self or (
            type(self) is type(other) and self._describe() == other._describe()
        )

    def reopen(self, mode: str) -> ZMap:
        """A new map over the same storage opened with ``mode``."""
        location, options = self._describe()
        return type(self)(location, mode=mode, **options)  # type: ignore[call-arg]

    # ------------------------------------------------------- identity & pickling
    @property
    def url(self) -> str:
        """A URL naming the store, without credentials."""
        return self._describe()[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, mode={self._mode!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ZMap):
            return NotImplemented
        return (
            type(self) is type(other)
            and self._describe() == other._describe()
            and self._mode == other._mode
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._describe()[0], self._mode))

    def __reduce__(self) -> tuple[Any, ...]:
        location, options = self._describe()
        mode = "r+" if self._mode in ("w", "w-") else self._mode
        return (_reopen, (type(self), location, mode, options))


def _reopen(cls: type[ZMap], location: str, mode: str, options: dict[str, Any]) -> ZMap:
    return cls(location, mode=mode, **options)  # type: ignore[call-arg]
