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
from typing import Any

import numpy as np

from ..translate.model import Variable
from .h5attrs import text
from .layout import ChunkRef, SourceArray, chunk_key, cut_contiguous

__all__ = ["encode_chunk", "index_chunked", "index_contiguous"]

#: Why the chunks of a variable-length string variable are re-encoded.
VLEN_REASON = "variable-length strings are stored as heap references"

_Stored = tuple[tuple[int, ...], int, int | None, int]


def _stored_chunks(ds: Any) -> list[_Stored]:
    """``(element offset, filter mask, byte offset, size)`` of every stored chunk."""
    found: list[_Stored] = []
    if hasattr(ds.id, "chunk_iter"):
        ds.id.chunk_iter(
            lambda info: found.append(
                (info.chunk_offset, info.filter_mask, info.byte_offset, info.size)
            )
        )
    else:  # pragma: no cover - HDF5 older than 1.12.3
        for i in range(ds.id.get_num_chunks()):
            info = ds.id.get_chunk_info(i)
            found.append((info.chunk_offset, info.filter_mask, info.byte_offset, info.size))
    return found


def index_chunked(
    ds: Any, source: SourceArray, chunks: tuple[int, ...], *, reencode_all: bool
) -> str | None:
    """Fill ``source`` with the stored chunks of a chunked dataset; the reason some
    are re-encoded (a filter skipped by the filter mask), or None. With
    ``reencode_all`` every chunk is marked re-encoded (the caller knows why)."""
    skipped = 0
    for offset, mask, byte_offset, size in _stored_chunks(ds):
        if byte_offset is None:
            continue
        coords = tuple(o // c for o, c in zip(offset, chunks, strict=True))
        reencode = reencode_all or mask != 0
        source.chunks[chunk_key(coords)] = ChunkRef(byte_offset, size, reencode=reencode)
        skipped += mask != 0
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
