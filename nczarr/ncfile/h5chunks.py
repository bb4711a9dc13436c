"""Where an HDF5 dataset's chunks are, and the bytes of a chunk that is re-encoded.

The chunk index is HDF5's own (``DatasetID.chunk_iter``: every stored chunk's
offset, size and filter mask in one B-tree walk); chunks never written have no
entry, so they stay absent in the target (except past the extent of a dataset
shorter than its dimension, where an absent chunk would not read netCDF's fill).
Contiguous data is cut into byte ranges along the first dimension; compact data
(inside the object header) and variable-length strings (heap references) have no
byte range of their own and are re-encoded from their values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

from ..translate.model import Variable
from .layout import DEFAULT_FILLS, ChunkRef, SourceArray, chunk_key, contiguous_index
from .values import text

__all__ = [
    "METADATA_CACHE_BYTES",
    "bound_metadata_cache",
    "encode_chunk",
    "index_chunked",
    "index_contiguous",
    "index_past_extent",
    "past_fill",
    "VLEN_REASON",
]

#: Why the chunks of a variable-length string variable are re-encoded.
VLEN_REASON = "variable-length strings are stored as heap references"


#: The HDF5 metadata cache a file is read with (bytes). The library's default starts
#: at 2 MB and may grow to 32 MB; walking a chunk B-tree of 100,000 chunks through it
#: raised the process's RSS by 16 MB (the cache's churn, not returned to the OS) where
#: 256 KB raised it by 2 MB at 10,000 and at 100,000 chunks, in the same time: each
#: B-tree node is read once per walk, so a bigger cache buys nothing here.
METADATA_CACHE_BYTES = 256 * 1024


def bound_metadata_cache(fid: Any, size: int = METADATA_CACHE_BYTES) -> None:
    """Fix the HDF5 metadata cache of open file ``fid`` (an h5py ``FileID``) at
    ``size`` bytes, so the peak memory of reading a chunk index does not grow with
    the number of chunks (see :data:`METADATA_CACHE_BYTES`)."""
    config = fid.get_mdc_config()
    config.set_initial_size = True
    config.initial_size = config.max_size = size
    config.min_size = min(config.min_size, size)
    config.incr_mode = config.flash_incr_mode = 0  # H5C_incr__off, H5C_flash_incr__off
    fid.set_mdc_config(config)


def index_chunked(
    ds: Any, source: SourceArray, chunks: tuple[int, ...], *, reencode_all: bool
) -> str | None:
    """Fill ``source`` with the stored chunks of a chunked dataset node; the reason some
    are re-encoded (a filter skipped by the filter mask), or None. With
    ``reencode_all`` every chunk is marked re-encoded (the caller knows why).

    HDF5's walk lists a variable written whole in grid order: each chunk's element
    offset is compared with the next one of that order (one tuple comparison), and
    only a chunk out of it has its grid position computed."""
    skipped = [0]
    index = source.chunks
    add, append = index.add, index.append_at
    in_order = _in_grid_order(index.grid, chunks)
    position = itertools.count()

    def visit(offset: tuple[int, ...], mask: int, byte_offset: Any, size: int) -> None:
        if byte_offset is None:
            return
        if offset == next(in_order, None):  # the chunk at the next grid position
            append(next(position), byte_offset, size, reencode_all or mask != 0)
        else:
            next(position)
            coords = tuple(o // c for o, c in zip(offset, chunks, strict=True))
            add(coords, byte_offset, size, reencode=reencode_all or mask != 0)
        if mask:
            skipped[0] += 1

    ds.each_chunk(visit)
    if skipped[0] and not reencode_all:
        return f"{skipped[0]} chunk(s) stored with a filter skipped (HDF5 filter mask)"
    return None


def _in_grid_order(grid: tuple[int, ...], chunks: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """The element offsets of the chunks of ``grid``, in C order, lazily: memory flat in
    the number of chunks (``itertools.product`` would hold every axis's values)."""
    axes = [range(0, n * c, c) for n, c in zip(grid, chunks, strict=True)]
    if not axes:
        return
    if math.prod(grid[1:]) <= 1024:  # the offsets past the first axis, held once
        inner = list(itertools.product(*axes[1:]))
        for first in axes[0]:
            for rest in inner:
                yield (first, *rest)
        return
    for first in axes[0]:
        for rest in _in_grid_order(grid[1:], chunks[1:]):
            yield (first, *rest)


def index_contiguous(
    ds: Any, source: SourceArray, chunks: tuple[int, ...], contiguous: bool, is_text: bool
) -> str | None:
    """Fill ``source`` with the chunks of a contiguous or compact dataset node: byte
    ranges of the file, or re-encoded pieces where there is no range; the reason
    for re-encoding strings, or None."""
    offset = ds.contiguous_offset
    stored = tuple(ds.shape)
    if is_text or offset is None or not contiguous:
        if offset is None and contiguous:
            return None  # a contiguous dataset never written: no chunks
        rows = chunks[0] if chunks else 1
        count = math.ceil(stored[0] / rows) if stored else 1
        tail = (0,) * (len(stored) - 1)
        for i in range(count if not stored or stored[0] else 0):
            key = chunk_key((i, *tail)) if stored else "0"
            source.chunks[key] = ChunkRef(-1, 0, reencode=True)
        return VLEN_REASON if is_text else None
    source.chunks = contiguous_index(
        source.chunks.grid, offset, stored, ds.type.itemsize, chunks[0] if chunks else 1
    )
    return None


def past_fill(var: Variable) -> Any:
    """What netcdf-c reads past a dataset's own extent (along a longer unlimited
    dimension): the variable's fill value, else netCDF's default fill for its type,
    even for a plain HDF5 dataset or a no-fill variable that reports no fill value."""
    return var.fill_value if var.fill_value is not None else DEFAULT_FILLS[var.type]


def index_past_extent(
    source: SourceArray,
    extent: tuple[int, ...],
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    *,
    padded: bool,
    absent_reads_fill: bool,
) -> int:
    """Mark the chunks of ``source`` that reach past the dataset's stored ``extent``
    (inside the variable's longer ``shape``) to be re-encoded with
    :func:`past_fill` there; the number marked.

    A stored chunk across the extent keeps its bytes only when HDF5 ``padded`` it
    with that same fill. A chunk wholly past it (or never written) stays absent when
    the target's readers read an absent chunk as that fill (``absent_reads_fill``:
    the variable has a fill value); else it is written, all fill."""
    if extent == shape or not shape:
        return 0
    counts = [math.ceil(s / c) for s, c in zip(shape, chunks, strict=True)]
    # the first chunk along each axis holding a position past the extent
    first_past = [
        e // c if e < s else n for e, s, c, n in zip(extent, shape, chunks, counts, strict=True)
    ]
    marked = 0
    for coords in _past_coords(counts, first_past):
        key = chunk_key(coords)
        ref = source.chunks.get(key)
        if ref is not None:
            if not (padded or ref.reencode):
                source.chunks[key] = ChunkRef(ref.offset, ref.length, ref.pad, reencode=True)
                marked += 1
        elif not absent_reads_fill:
            source.chunks[key] = ChunkRef(-1, 0, reencode=True)
            marked += 1
    return marked


def _past_coords(counts: list[int], first_past: list[int]) -> Iterator[tuple[int, ...]]:
    """Coordinates of every chunk at or after ``first_past`` along some axis, each
    once: those past along ``axis`` and before it along every earlier axis."""
    for axis in range(len(counts)):
        before = [range(first_past[a]) for a in range(axis)]
        after = [range(n) for n in counts[axis + 1 :]]
        yield from itertools.product(*before, range(first_past[axis], counts[axis]), *after)


def encode_chunk(ds: Any, var: Variable, coords: tuple[int, ...]) -> bytes:
    """The bytes of chunk ``coords`` of ``var`` in its declared codecs, from its
    values as HDF5 decodes them (padded with fill to a whole chunk); ``ds`` is an
    h5py dataset."""
    import numcodecs
    import numpy as np

    if not var.shape:
        block = np.asarray(ds[()]).reshape(())
    else:
        sel = tuple(
            slice(c * n, min((c + 1) * n, s))
            for c, n, s in zip(coords, var.chunks, ds.shape, strict=True)
        )
        values = ds[sel]
        dtype = object if var.type == "string" else ds.dtype
        fill = past_fill(var)  # what netcdf-c reads past the dataset's extent
        block = np.full(var.chunks, fill, dtype=dtype)
        block[tuple(slice(0, n) for n in values.shape)] = values
    if var.type == "string":
        block = np.vectorize(text, otypes=[object])(block) if block.size else block
    data: Any = block
    for config in var.filters:
        data = numcodecs.get_codec(dict(config)).encode(data)
    if var.compressor is not None:
        data = numcodecs.get_codec(dict(var.compressor)).encode(data)
    return bytes(data) if not isinstance(data, np.ndarray) else data.tobytes()
