"""A netCDF-4 file whose chunk index is read per variable when asked, for writers that
walk one variable's chunks at a time (the Parquet reference writer).

:class:`~nczarr.ncfile.source.NetCDFFileMap` reads every variable's chunk index when
the file is opened (~33 bytes a chunk, :class:`~nczarr.ncfile.layout.ChunkIndex`), so
a writer's peak memory grows with the file's chunk count even when it writes one
variable at a time. :class:`StreamedNetCDFFileMap` defers the index of each chunked
variable whose chunks are all carried verbatim (no filter without a Zarr codec, no
variable-length strings, not shorter than its unlimited dimension: those are read at
open, as before) until something asks for it, and :meth:`StreamedNetCDFFileMap.each_stored_chunk`
walks a deferred variable's HDF5 chunk B-tree once (``chunk_iter``) handing each chunk
to a callback, with no index at all. A chunk whose filter mask says a filter was skipped
is only known during that walk; it is then re-encoded, as in the eager map.

netCDF-3 files are read as :class:`NetCDFFileMap` reads them (their index is the
header's layout).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from ..errors import MetadataError
from ..maps.base import ZMap
from .h5chunks import index_chunked
from .h5filters import codecs, split_codecs
from .hdf5 import HDF5Reader
from .layout import ChunkIndex, SourceArray, chunk_grid
from .source import NetCDFFileMap, local_path

__all__ = ["DeferredChunkIndex", "StreamedNetCDFFileMap", "open_streamed"]

#: ``visit(coords, url, byte offset, size, filter mask)`` of one stored chunk.
Visit = Callable[[tuple[int, ...], str, int, int, int], None]


class DeferredChunkIndex(ChunkIndex):
    """A :class:`ChunkIndex` filled by ``load(self)`` the first time it is read."""

    def __init__(self, grid: tuple[int, ...], load: Callable[[ChunkIndex], None]) -> None:
        super().__init__(grid)
        self._load = load
        self.loaded = False
        self._loading = threading.Lock()

    def _sort(self) -> None:
        if not self.loaded:
            with self._loading:
                if not self.loaded:
                    self.loaded = True  # before: the loader appends through add()
                    self._load(self)
        super()._sort()


class _StreamedHDF5Reader(HDF5Reader):
    """:class:`HDF5Reader` deferring the chunk index of verbatim chunked variables."""

    def _reset(self) -> None:
        super()._reset()
        #: Key prefix -> dataset node of each variable whose index is deferred.
        self.deferred: dict[str, Any] = {}

    def _storage(
        self, ds: Any, source: SourceArray, kind: str, shape: tuple[int, ...]
    ) -> tuple[tuple[int, ...], tuple[dict[str, Any], ...], dict[str, Any] | None, str | None]:
        if (
            ds.layout != "chunked"
            or kind == "string"
            or tuple(ds.shape) != tuple(shape)  # past the extent: marked at open
        ):
            return super()._storage(ds, source, kind, shape)
        configs, problem = codecs(ds.filters, ds.type.itemsize)
        if problem is not None:
            return super()._storage(ds, source, kind, shape)
        filters, compressor = split_codecs(configs)
        source.chunks = DeferredChunkIndex(
            chunk_grid(shape, ds.chunks), partial(self._index, ds, source)
        )
        self.deferred[source.path] = ds
        return ds.chunks, filters, compressor, None

    def _index(self, ds: Any, source: SourceArray, index: ChunkIndex) -> None:
        """Read one deferred variable's chunk index (as the eager reader does at open)."""
        reason = index_chunked(ds, source, ds.chunks, reencode_all=False)
        if reason is not None:
            source.reason = reason
            self.reencoded[source.path] = reason


class StreamedNetCDFFileMap(NetCDFFileMap):
    """:class:`NetCDFFileMap` whose netCDF-4 chunk index is read per variable, when
    first asked (see the module doc); it serves the same keys and bytes."""

    def _hdf5_reader(self, what: str) -> Any:
        io = self._io
        return _StreamedHDF5Reader(io.fileobj(), what, io.read_metadata, io.size, io.fileobj)

    def park(self) -> bool:
        """Nothing parked: a deferred chunk index reads the open file."""
        return False

    @property
    def chunk_url(self) -> str:
        """The URL chunk locations name (a local path, or the file's URL)."""
        local = local_path(self._location)
        return local if local is not None else self._location

    def each_stored_chunk(self, prefix: str, visit: Visit) -> bool:
        """:meth:`~nczarr.maps.base.ZMap.each_stored_chunk`: one walk of the variable's
        HDF5 chunk B-tree (usually in grid order, not promised), ``url`` always
        :attr:`chunk_url`; False when ``prefix`` is not a deferred variable whose
        index is still unread."""
        ds = None if self._hdf5 is None else self._hdf5.deferred.get(prefix)
        if ds is None or self._arrays[prefix].chunks.loaded:  # type: ignore[attr-defined]
            return False
        chunks = ds.chunks
        grid = self._arrays[prefix].chunks.grid
        url = self.chunk_url

        def each(offset: tuple[int, ...], mask: int, byte_offset: int | None, size: int) -> None:
            if byte_offset is None:
                return
            coords = tuple(o // c for o, c in zip(offset, chunks, strict=True))
            if not all(0 <= c < n for c, n in zip(coords, grid, strict=True)):
                raise MetadataError(  # as the eager index refuses it
                    f"{self.url}: variable {'/' + prefix!r}: corrupt netCDF-4/HDF5 chunk "
                    f"index: chunk {coords} is not in a grid of {grid} chunks"
                )
            visit(coords, url, byte_offset, size, mask)

        ds.each_chunk(each)
        return True


def open_streamed(src: Any, storage_options: dict[str, Any] | None = None) -> ZMap | None:
    """``src`` opened as a :class:`StreamedNetCDFFileMap` when it names a netCDF file
    that :func:`nczarr.maps.open.open_map` would open as one, else None."""
    from ..errors import InvalidURLError
    from ..maps.chained import is_chained
    from ..maps.url import parse_url
    from .source import open_file_source

    if isinstance(src, ZMap) or is_chained(src):
        return None
    try:
        url = parse_url(src)
    except InvalidURLError:
        return None  # the caller's open reports it
    return open_file_source(url, "r", dict(storage_options or {}), StreamedNetCDFFileMap)
