"""What every part of the reader shares: the error, bounded reads and the checksum.

``Unsupported`` is the one exception the reader raises on purpose: for anything it
does not read, and for any inconsistency in the bytes (so a damaged file never
yields a silently different answer). ``Reader`` is the only way bytes come in: it
refuses reads outside the file. ``Cursor`` decodes little-endian fields from a
block and refuses to run past its end. ``lookup3`` is Bob Jenkins' hashlittle,
the checksum of HDF5's version-2 metadata.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

__all__ = [
    "MAX_BLOCK",
    "UNDEFINED",
    "Cursor",
    "Reader",
    "Unsupported",
    "check_address",
    "limit_size",
    "lookup3",
    "verify_checksum",
]

UNDEFINED = 0xFFFFFFFFFFFFFFFF
"""HDF5's undefined address (all bits set) for 8-byte offsets."""

MAX_BLOCK = 64 * 1024 * 1024
"""No metadata block this reader reads is larger: a larger size is a damaged field."""

_MASK = 0xFFFFFFFF


def limit_size(limit: int) -> int:
    """Bytes HDF5 encodes a count of at most ``limit`` in (``H5VM_limit_enc_size``:
    floor(log2(limit)) // 8 + 1; one more than ``bit_length() // 8`` at a multiple of 8)."""
    return (max(limit, 1).bit_length() - 1) // 8 + 1


class Unsupported(Exception):
    """The file uses something this reader does not read (or is inconsistent): use h5py."""


class Reader:
    """Bounded reads: every block must lie inside ``[0, end)``."""

    def __init__(self, read_at: Callable[[int, int], bytes], end: int) -> None:
        self.read_at = read_at
        self.end = end

    def read(self, address: int, length: int) -> bytes:
        """Exactly ``length`` bytes at ``address``, or Unsupported."""
        if address == UNDEFINED or address < 0 or length < 0 or length > MAX_BLOCK:
            raise Unsupported(f"bad block ({address}, {length})")
        if address + length > self.end:
            raise Unsupported(f"block ({address}, {length}) past the end of the file")
        data = self.read_at(address, length)
        if len(data) != length:
            raise Unsupported(f"short read at {address}")
        return bytes(data)

    def signed(self, address: int, length: int, signature: bytes) -> bytes:
        """A block that must begin with ``signature``."""
        data = self.read(address, length)
        if data[: len(signature)] != signature:
            raise Unsupported(f"no {signature!r} signature at {address}")
        return data


class Cursor:
    """Sequential little-endian decoding of one block, bounds-checked."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise Unsupported("structure runs past its block")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "little")

    def u8(self) -> int:
        return self.uint(1)

    def u16(self) -> int:
        return self.uint(2)

    def u32(self) -> int:
        return self.uint(4)

    def u64(self) -> int:
        return self.uint(8)

    def skip(self, n: int) -> None:
        self.take(n)

    def remaining(self) -> int:
        return len(self.data) - self.pos


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _MASK


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = ((a - c) & _MASK) ^ _rot(c, 4)
    c = (c + b) & _MASK
    b = ((b - a) & _MASK) ^ _rot(a, 6)
    a = (a + c) & _MASK
    c = ((c - b) & _MASK) ^ _rot(b, 8)
    b = (b + a) & _MASK
    a = ((a - c) & _MASK) ^ _rot(c, 16)
    c = (c + b) & _MASK
    b = ((b - a) & _MASK) ^ _rot(a, 19)
    a = (a + c) & _MASK
    c = ((c - b) & _MASK) ^ _rot(b, 4)
    b = (b + a) & _MASK
    return a, b, c


def _final(a: int, b: int, c: int) -> int:
    c = ((c ^ b) - _rot(b, 14)) & _MASK
    a = ((a ^ c) - _rot(c, 11)) & _MASK
    b = ((b ^ a) - _rot(a, 25)) & _MASK
    c = ((c ^ b) - _rot(b, 16)) & _MASK
    a = ((a ^ c) - _rot(c, 4)) & _MASK
    b = ((b ^ a) - _rot(a, 14)) & _MASK
    return ((c ^ b) - _rot(b, 24)) & _MASK


def lookup3(data: bytes, initval: int = 0) -> int:
    """Bob Jenkins' lookup3 ``hashlittle`` of ``data`` (HDF5's metadata checksum)."""
    length = len(data)
    a = b = c = (0xDEADBEEF + length + initval) & _MASK
    if length == 0:
        return c
    pos = 0
    while length - pos > 12:
        x, y, z = struct.unpack_from("<3I", data, pos)
        a, b, c = _mix((a + x) & _MASK, (b + y) & _MASK, (c + z) & _MASK)
        pos += 12
    x, y, z = struct.unpack("<3I", data[pos:].ljust(12, b"\0"))
    return _final((a + x) & _MASK, (b + y) & _MASK, (c + z) & _MASK)


def verify_checksum(block: bytes) -> None:
    """The block's last 4 bytes must be the lookup3 checksum of the rest."""
    if len(block) < 4 or lookup3(block[:-4]) != int.from_bytes(block[-4:], "little"):
        raise Unsupported("metadata checksum mismatch")


def check_address(address: int, end: int) -> None:
    """A defined address inside the file."""
    if address == UNDEFINED or address >= end:
        raise Unsupported(f"address {address} outside the file")
