"""The superblock (versions 0 to 3): where the root group is and where the file ends.

Accepted only at offset 0 (no user block), with 8-byte offsets and lengths, base
address 0, clean consistency flags (a file open for writing, or not closed, is
left to h5py), no driver info block, and an end of file inside the file. A v2/v3
superblock extension is read to refuse what would change the meaning of the rest
(a shared message table, driver info).
"""

from __future__ import annotations

from .base import UNDEFINED, Cursor, Reader, Unsupported, verify_checksum
from .headers import read_header

__all__ = ["SIGNATURE", "read_superblock"]

SIGNATURE = b"\x89HDF\r\n\x1a\n"
_DRIVER_INFO = 20


def read_superblock(reader: Reader) -> tuple[int, int]:
    """``(root object header address, end of file address)``."""
    head = reader.read(0, min(96, reader.end))
    if head[:8] != SIGNATURE:
        raise Unsupported("no HDF5 signature at offset 0")
    cur = Cursor(head, 8)
    version = cur.u8()
    if version in (0, 1):
        return _v0(cur, version, reader)
    if version not in (2, 3):
        raise Unsupported(f"superblock version {version}")
    verify_checksum(head[:48])
    if cur.u8() != 8 or cur.u8() != 8 or cur.u8() != 0:
        raise Unsupported("superblock sizes or flags")
    base, extension, end, root = cur.u64(), cur.u64(), cur.u64(), cur.u64()
    _check(base, end, reader)
    if extension != UNDEFINED:
        for message in read_header(reader, extension).messages:
            if message.type == _DRIVER_INFO:
                raise Unsupported("superblock extension with driver info")
    return root, end


def _v0(cur: Cursor, version: int, reader: Reader) -> tuple[int, int]:
    freespace, symtab, _reserved, shared = cur.u8(), cur.u8(), cur.u8(), cur.u8()
    offsets, lengths, _reserved = cur.u8(), cur.u8(), cur.u8()
    if (freespace, symtab, shared, offsets, lengths) != (0, 0, 0, 8, 8):
        raise Unsupported("superblock v0/v1 fields")
    cur.skip(4)  # group B-tree K values
    if cur.u32() != 0:
        raise Unsupported("superblock consistency flags")
    if version == 1:
        cur.skip(4)
    base, _freespace, end, driver = cur.u64(), cur.u64(), cur.u64(), cur.u64()
    if driver != UNDEFINED:
        raise Unsupported("driver info block")
    _check(base, end, reader)
    cur.skip(8)  # root entry: link name offset
    return cur.u64(), end


def _check(base: int, end: int, reader: Reader) -> None:
    if base != 0:
        raise Unsupported("base address not 0")
    if end > reader.end:
        raise Unsupported("file truncated (end of file address past its size)")
