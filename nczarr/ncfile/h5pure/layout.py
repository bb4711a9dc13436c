"""The data layout message: compact, contiguous or chunked.

Version 3 (what netcdf-c and h5py's default write), 4 and 5 are read (HDF5 2.0's
version 5 is version 4 with filtered chunk sizes always 8 bytes wide in the
index, a width the readers here take from the index's entry size). Their chunk
indexes: a single chunk, a fixed array, an extensible array and a v2 B-tree
are read; the implicit index is Unsupported. Versions 1 and 2 (HDF5 before
1.6) are Unsupported: their sizes are derived in ways nothing here could test
against a writer. The stored sizes are checked against the dataspace and
datatype (HDF5 refuses a mismatch too).
"""

from __future__ import annotations

from ...records import record
from .base import UNDEFINED, Cursor, Unsupported

__all__ = [
    "BTREE_V1",
    "BTREE_V2",
    "EXTENSIBLE_ARRAY",
    "FIXED_ARRAY",
    "SINGLE_CHUNK",
    "Layout",
    "decode_layout",
]

BTREE_V1 = 0  # chunk index types (the v1 B-tree: a version 3 message)
SINGLE_CHUNK = 1
FIXED_ARRAY = 3
EXTENSIBLE_ARRAY = 4
BTREE_V2 = 5


@record
class Layout:
    """Where a dataset's data is: ``kind`` and the fields that kind uses.

    ``index`` is the chunk index type (``BTREE_V1`` for a version 3 message),
    ``filtered_size`` and ``filter_mask`` a filtered single chunk's, and ``page_bits``
    a fixed array's.
    """

    kind: str
    address: int | None = None
    size: int = 0
    chunks: tuple[int, ...] | None = None
    data: bytes | None = None
    index: int = BTREE_V1
    filtered_size: int | None = None
    filter_mask: int = 0
    page_bits: int = 0


def decode_layout(data: bytes, shape: tuple[int, ...], item_size: int) -> Layout:
    """A version 3, 4 or 5 layout message for a dataset of ``shape`` and ``item_size``."""
    cur = Cursor(data)
    version, kind = cur.u8(), cur.u8()
    if version not in (3, 4, 5):
        raise Unsupported(f"data layout message version {version}")
    nbytes = item_size
    for n in shape:
        nbytes *= n
    if kind == 0:
        size = cur.u16()
        if size != nbytes:
            raise Unsupported("compact data size")
        return Layout("compact", size=size, data=cur.take(size))
    if kind == 1:
        address, size = cur.u64(), cur.u64()
        if size != nbytes:
            raise Unsupported("contiguous data size")
        return Layout("contiguous", None if address == UNDEFINED else address, size)
    if kind != 2:
        raise Unsupported(f"layout class {kind}")
    if version >= 4:
        return _chunked_v4(cur, shape, item_size)
    ndims, address = cur.u8(), cur.u64()
    dims = tuple(cur.u32() for _ in range(ndims))
    _check_chunks(dims, shape, item_size)
    return Layout("chunked", None if address == UNDEFINED else address, chunks=dims[:-1])


def _check_chunks(dims: tuple[int, ...], shape: tuple[int, ...], item_size: int) -> None:
    if len(dims) != len(shape) + 1 or dims[-1] != item_size or 0 in dims:
        raise Unsupported("chunk dimensions")


def _chunked_v4(cur: Cursor, shape: tuple[int, ...], item_size: int) -> Layout:
    flags, ndims, width = cur.u8(), cur.u8(), cur.u8()
    if flags & ~2 or not 1 <= width <= 8:
        raise Unsupported("chunked layout flags")
    dims = tuple(cur.uint(width) for _ in range(ndims))
    _check_chunks(dims, shape, item_size)
    index = cur.u8()
    filtered_size, mask, page_bits = None, 0, 0
    if index == SINGLE_CHUNK:
        if flags & 2:
            filtered_size, mask = cur.u64(), cur.u32()
    elif index == BTREE_V2:
        cur.skip(6)  # node size, split and merge percentages: the tree's header has them
        if flags & 2:
            raise Unsupported("v2 B-tree index flags")
    elif index == FIXED_ARRAY:
        page_bits = cur.u8()
        if not 0 < page_bits < 32 or flags & 2:
            raise Unsupported("fixed array parameters")
    elif index == EXTENSIBLE_ARRAY:
        cur.skip(5)  # the array's header repeats these parameters
        if flags & 2:
            raise Unsupported("extensible array flags")
    else:
        raise Unsupported(f"chunk index type {index}")
    address = cur.u64()
    return Layout(
        "chunked",
        None if address == UNDEFINED else address,
        chunks=dims[:-1],
        index=index,
        filtered_size=filtered_size,
        filter_mask=mask,
        page_bits=page_bits,
    )
