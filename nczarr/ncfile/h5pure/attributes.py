"""Attribute messages and the decoding of their values.

Values are decoded for the types netCDF-4 attributes use: numbers, fixed and
variable-length strings, object references and variable-length sequences of
object references (``DIMENSION_LIST``). Any other type raises ``Unsupported``.
"""

from __future__ import annotations

import struct
from typing import Any, Protocol

from ...records import record
from .base import Cursor, Unsupported
from .datatypes import H5Type, decode_dataspace, decode_datatype
from .heaps import GlobalHeaps

__all__ = ["FileLike", "H5Attribute", "decode_attribute", "element_count"]


class FileLike(Protocol):
    """What decoding values needs of an ``H5File``: its global heap collections, read
    once each for the whole file (every ``DIMENSION_LIST`` of a group shares one)."""

    global_heaps: GlobalHeaps


_INT_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}
_FLOAT_CODES = {4: "f", 8: "d"}


@record
class H5Attribute:
    """One attribute: name, type, shape (None for a null dataspace) and stored bytes."""

    name: str
    datatype: H5Type
    shape: tuple[int, ...] | None
    raw: bytes

    def values(self, file: FileLike) -> list[Any]:
        """The values, flat, in C order (see the package docstring for the types)."""
        count = element_count(self.shape)
        t = self.datatype
        if t.cls in (0, 1):
            return list(struct.unpack(_struct_format(t, count), self.raw))
        if t.cls == 3:
            return [self.raw[i * t.size : (i + 1) * t.size] for i in range(count)]
        if t.cls == 7 and t.label == "object reference":
            return list(struct.unpack(f"<{count}Q", self.raw))
        heaps = file.global_heaps
        if t.vlen_string:
            return [_vlen_bytes(heaps, self.raw, i) for i in range(count)]
        if t.cls == 9 and t.base is not None and t.base.label == "object reference":
            out = []
            for i in range(count):
                data = _vlen_bytes(heaps, self.raw, i, 8)
                out.append(list(struct.unpack(f"<{len(data) // 8}Q", data)))
            return out
        raise Unsupported(f"attribute values of type {t.label}")


def element_count(shape: tuple[int, ...] | None) -> int:
    """Number of elements of a dataspace (0 for a null one)."""
    if shape is None:
        return 0
    count = 1
    for d in shape:
        count *= d
    return count


def _struct_format(t: H5Type, count: int) -> str:
    codes = _INT_CODES if t.cls == 0 else _FLOAT_CODES
    if t.size not in codes:
        raise Unsupported(f"number of {t.size} bytes")
    code = codes[t.size]
    if t.cls == 0 and not t.signed:
        code = code.upper()
    return (">" if t.big_endian else "<") + f"{count}{code}"


def _vlen_bytes(heaps: GlobalHeaps, raw: bytes, index: int, item: int = 1) -> bytes:
    """Element ``index`` of vlen data: ``length`` items of ``item`` bytes in the global heap."""
    length, address, obj = struct.unpack_from("<IQI", raw, 16 * index)
    if length == 0:
        return b""
    if address == 0:
        raise Unsupported("vlen data with no heap")
    data = heaps.get(address, obj)
    if len(data) < length * item:
        raise Unsupported("vlen data shorter than its length")
    return data[: length * item]


def decode_attribute(data: bytes) -> H5Attribute:
    """An attribute message (versions 1, 2, 3; shared type or space is Unsupported)."""
    cur = Cursor(data)
    version, flags = cur.u8(), cur.u8()
    name_size, type_size, space_size = cur.u16(), cur.u16(), cur.u16()
    if version not in (1, 2, 3) or (version > 1 and flags) or name_size == 0:
        raise Unsupported("attribute message version or shared parts")
    if version == 3 and cur.u8() > 1:
        raise Unsupported("attribute name encoding")

    def part(size: int) -> bytes:
        return cur.take((size + 7) & ~7 if version == 1 else size)[:size]

    raw_name, raw_type, raw_space = part(name_size), part(type_size), part(space_size)
    if raw_name[-1:] != b"\0" or b"\0" in raw_name[:-1]:
        raise Unsupported("attribute name")
    try:
        name = raw_name[:-1].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unsupported("attribute name") from exc
    datatype = decode_datatype(Cursor(raw_type))
    space = decode_dataspace(raw_space)
    shape = None if space is None else space[0]
    if space is not None and space[0] != space[1]:
        raise Unsupported("attribute with max dims")
    raw = cur.take(element_count(shape) * datatype.size)
    return H5Attribute(name, datatype, shape, raw)
