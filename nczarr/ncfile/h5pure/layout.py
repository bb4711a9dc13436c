"""The data layout message: compact, contiguous or chunked (v1 B-tree index).

Only version 3 is read: HDF5 1.6 and later write it unless the file asks for the
new chunk indexes (version 4, Unsupported), and versions 1 and 2 compute sizes in
ways nothing here could test against a writer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import UNDEFINED, Cursor, Unsupported

__all__ = ["Layout", "decode_layout"]


@dataclass(frozen=True)
class Layout:
    """Where a dataset's data is: ``kind`` and the fields that kind uses."""

    kind: str
    address: int | None = None
    size: int = 0
    chunks: tuple[int, ...] | None = None
    data: bytes | None = None


def decode_layout(data: bytes, rank: int, item_size: int) -> Layout:
    """A version 3 layout message for a dataset of ``rank`` dims and ``item_size`` elements."""
    cur = Cursor(data)
    version, kind = cur.u8(), cur.u8()
    if version != 3:
        raise Unsupported(f"data layout message version {version}")
    if kind == 0:
        size = cur.u16()
        return Layout("compact", size=size, data=cur.take(size))
    if kind == 1:
        address, size = cur.u64(), cur.u64()
        return Layout("contiguous", None if address == UNDEFINED else address, size)
    if kind != 2:
        raise Unsupported(f"layout class {kind}")
    ndims, address = cur.u8(), cur.u64()
    dims = tuple(cur.u32() for _ in range(ndims))
    if ndims != rank + 1 or dims[-1] != item_size or 0 in dims:
        raise Unsupported("chunk dimensions")
    return Layout("chunked", None if address == UNDEFINED else address, chunks=dims[:-1])
