"""Where an HDF5 dataset's chunks are, and the bytes of a chunk that is re-encoded.

The chunk index is HDF5's own (``DatasetID.chunk_iter``: every stored chunk's
offset, size and filter mask in one B-tree walk); chunks never written have no
entry, so they stay absent in the target. Contiguous data is cut into byte ranges
along the first dimension; compact data (inside the object header) and
variable-length strings (heap references) have no byte range of their own and are
re-encoded from their values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..translate.model import Variable
from .h5attrs import text
from .layout import ChunkRef, SourceArray, chunk_key, cut_contiguous

__all__ = ["encode_chunk", "index_chunked", "index_contiguous"]

#: Why the chunks of a variable-length string variable are re-encoded.
VLEN_REASON = "variable-length strings are stored as heap references"


def _stored_chunks(ds: Any) -> list[Any]:
    """HDF5's ``StoreInfo`` (``chunk_offset``, ``filter_mask``, ``byte_offset``,
    ``size``) of every stored chunk, in one B-tree walk."""
    found: list[Any] = []
    if hasattr(ds.id, "chunk_iter"):
        ds.id.chunk_iter(found.append)
    else:  # pragma: no cover - HDF5 older than 1.12.3
        found.extend(ds.id.get_chunk_info(i) for i in range(ds.id.get_num_chunks()))
    return found


def _key_of(chunks: tuple[int, ...]) -> Callable[[tuple[int, ...]], str]:
    """The Zarr chunk key of a chunk's element offset (as :func:`chunk_key` of its
    coordinates), specialised for one and two dimensions: every chunk asks."""
    if len(chunks) == 1:
        (c0,) = chunks
        return lambda offset: str(offset[0] // c0)
    if len(chunks) == 2:
        c0, c1 = chunks
        return lambda offset: f"{offset[0] // c0}.{offset[1] // c1}"
    return lambda offset: chunk_key(tuple(o // c for o, c in zip(offset, chunks, strict=True)))


def index_chunked(
    ds: Any, source: SourceArray, chunks: tuple[int, ...], *, reencode_all: bool
) -> str | None:
    """Fill ``source`` with the stored chunks of a chunked dataset; the reason some
    are re-encoded (a filter skipped by the filter mask), or None. With
    ``reencode_all`` every chunk is marked re-encoded (the caller knows why)."""
    skipped = 0
    refs = source.chunks
    key_of = _key_of(chunks)
    for info in _stored_chunks(ds):
        byte_offset = info.byte_offset
        if byte_offset is None:
            continue
        mask = info.filter_mask
        if mask or reencode_all:
            refs[key_of(info.chunk_offset)] = ChunkRef(byte_offset, info.size, 0, True)
            skipped += mask != 0
        else:
            refs[key_of(info.chunk_offset)] = ChunkRef(byte_offset, info.size)
    if skipped and not reencode_all:
        return f"{skipped} chunk(s) stored with a filter skipped (HDF5 filter mask)"
    return None


def index_contiguous(
    ds: Any, source: SourceArray, chunks: tuple[int, ...], contiguous: bool, is_text: bool
) -> str | None:
    """Fill ``source`` with the chunks of a contiguous or compact dataset: byte
    ranges of the file, or re-encoded pieces where there is no range; the reason
    for re-encoding strings, or None."""
    offset = ds.id.get_offset()
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
    source.chunks.update(
        cut_contiguous(offset, stored, ds.dtype.itemsize, chunks[0] if chunks else 1)
    )
    return None


def encode_chunk(ds: Any, var: Variable, coords: tuple[int, ...]) -> bytes:
    """The bytes of chunk ``coords`` of ``var`` in its declared codecs, from its
    values as HDF5 decodes them (padded with fill to a whole chunk)."""
    import numcodecs

    if not var.shape:
        block = np.asarray(ds[()]).reshape(())
    else:
        sel = tuple(
            slice(c * n, min((c + 1) * n, s))
            for c, n, s in zip(coords, var.chunks, ds.shape, strict=True)
        )
        values = ds[sel]
        dtype = object if var.type == "string" else ds.dtype
        fill = var.fill_value if var.fill_value is not None else 0
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
