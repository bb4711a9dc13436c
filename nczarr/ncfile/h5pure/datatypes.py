"""Datatype, dataspace, filter pipeline and fill value messages, decoded.

Only the encodings netcdf-c and h5py write are accepted: integers and IEEE
floats without bit offsets or odd precisions, strings, vlen strings and
sequences, object references, and (described only) opaque, bitfield, enum,
array and compound types. Anything else raises ``Unsupported``.
"""

from __future__ import annotations

from ...records import record
from .base import UNDEFINED, Cursor, Unsupported

__all__ = [
    "H5Fill",
    "H5Filter",
    "H5Type",
    "decode_dataspace",
    "decode_datatype",
    "decode_fill",
    "decode_filters",
]

# (precision, exponent location, exponent size, mantissa size, bias) of IEEE floats
_IEEE = {2: (16, 10, 5, 10, 15), 4: (32, 23, 8, 23, 127), 8: (64, 52, 11, 52, 1023)}


@record
class H5Type:
    """One HDF5 datatype, as far as nczarr needs it."""

    cls: int
    size: int
    big_endian: bool = False
    signed: bool = False
    vlen_string: bool = False
    padding: int = 0
    charset: int = 0
    base: H5Type | None = None
    label: str = ""


@record
class H5Filter:
    """One entry of a filter pipeline message."""

    code: int
    flags: int
    values: tuple[int, ...]
    name: str


@record
class H5Fill:
    """A dataset's fill value settings, as H5Pfill_value_defined / get_fill_time see them."""

    defined: str
    time: str
    value: bytes | None


def decode_datatype(cur: Cursor, depth: int = 0) -> H5Type:
    """The datatype at the cursor (a datatype message, or one nested ``depth`` deep)."""
    if depth > 8:
        raise Unsupported("datatypes nested too deep")
    head = cur.u8()
    cls, version = head & 0x0F, head >> 4
    bits = cur.uint(3)
    size = cur.u32()
    if version not in (1, 2, 3) or size == 0:
        raise Unsupported(f"datatype version {version}, size {size}")
    if cls == 0:
        return _fixed_point(cur, bits, size)
    if cls == 1:
        return _float(cur, bits, size)
    if cls == 3:
        return _string(bits, size)
    if cls in (4, 5, 6):
        return H5Type(cls, size, label={4: "bitfield", 5: "opaque", 6: "compound"}[cls])
    if cls == 7:
        return _reference(bits, size)
    if cls == 8:
        base = decode_datatype(cur, depth + 1)
        if base.cls != 0 or base.size != size:
            raise Unsupported("enum base type")
        return H5Type(8, size, base=base, label=f"enum {base.label}")
    if cls == 9:
        return _vlen(cur, bits, size, depth)
    if cls == 10:
        return _array(cur, version, size, depth)
    raise Unsupported(f"datatype class {cls}")


def _fixed_point(cur: Cursor, bits: int, size: int) -> H5Type:
    offset, precision = cur.u16(), cur.u16()
    if bits & ~0x0F or offset != 0 or precision != 8 * size or size not in (1, 2, 4, 8):
        raise Unsupported("fixed-point layout")
    big, signed = bool(bits & 1), bool(bits & 8)
    label = (">" if big else "") + ("" if signed else "u") + f"int{8 * size}"
    return H5Type(0, size, big_endian=big, signed=signed, label=label)


def _float(cur: Cursor, bits: int, size: int) -> H5Type:
    offset, precision = cur.u16(), cur.u16()
    exp_loc, exp_size, mant_loc, mant_size = cur.u8(), cur.u8(), cur.u8(), cur.u8()
    bias = cur.u32()
    if size not in _IEEE or bits & ~0xFF31 or (bits >> 4) & 3 != 2:
        raise Unsupported("float layout")
    expect = _IEEE[size]
    found = (precision, exp_loc, exp_size, mant_size, bias)
    if offset != 0 or mant_loc != 0 or found != expect or bits >> 8 != precision - 1:
        raise Unsupported("not an IEEE float")
    big = bool(bits & 1)
    return H5Type(1, size, big_endian=big, label=(">" if big else "") + f"f{size}")


def _string(bits: int, size: int) -> H5Type:
    padding, charset = bits & 0x0F, (bits >> 4) & 0x0F
    if padding > 2 or charset > 1 or bits >> 8:
        raise Unsupported("string type bits")
    return H5Type(3, size, padding=padding, charset=charset, label=f"|S{size}")


def _reference(bits: int, size: int) -> H5Type:
    kind = bits & 0x0F
    if kind == 0 and size == 8 and not bits >> 4:
        return H5Type(7, size, label="object reference")
    if kind == 1 and size == 12 and not bits >> 4:
        return H5Type(7, size, label="region reference")
    raise Unsupported(f"reference type {kind}")


def _vlen(cur: Cursor, bits: int, size: int, depth: int) -> H5Type:
    kind, padding, charset = bits & 0x0F, (bits >> 4) & 0x0F, (bits >> 8) & 0x0F
    base = decode_datatype(cur, depth + 1)
    if size != 16 or kind > 1 or padding > 2 or charset > 1 or bits >> 12:
        raise Unsupported("vlen type bits")
    if kind == 1:
        return H5Type(9, size, vlen_string=True, padding=padding, charset=charset, label="vlen str")
    return H5Type(9, size, base=base, label=f"vlen {base.label}")


def _array(cur: Cursor, version: int, size: int, depth: int) -> H5Type:
    rank = cur.u8()
    if version == 2:
        cur.skip(3)
    elif version != 3:
        raise Unsupported("array type version")
    dims = [cur.u32() for _ in range(rank)]
    if version == 2:
        cur.skip(4 * rank)
    base = decode_datatype(cur, depth + 1)
    count = 1
    for d in dims:
        count *= d
    if count * base.size != size:
        raise Unsupported("array type size")
    return H5Type(10, size, base=base, label="array")


def decode_dataspace(
    data: bytes,
) -> tuple[tuple[int, ...], tuple[int | None, ...]] | None:
    """``(dims, maxdims)`` of a dataspace message (an unlimited max dim: None); None
    for a null dataspace."""
    cur = Cursor(data)
    version, rank, flags = cur.u8(), cur.u8(), cur.u8()
    if version == 1:
        cur.skip(5)
        kind = 1 if rank else 0
    elif version == 2:
        kind = cur.u8()
    else:
        raise Unsupported(f"dataspace version {version}")
    if flags & ~1 or rank > 32 or kind > 2 or (kind != 1 and rank):
        raise Unsupported("dataspace flags")
    if kind == 2:
        return None
    dims = tuple(cur.u64() for _ in range(rank))
    stored = tuple(cur.u64() for _ in range(rank)) if flags & 1 else dims
    maxdims = tuple(None if m == UNDEFINED else m for m in stored)
    if any(m is not None and m < d for d, m in zip(dims, maxdims, strict=True)):
        raise Unsupported("dataspace max smaller than size")
    return dims, maxdims


def decode_filters(data: bytes) -> list[H5Filter]:
    """The filter pipeline message (versions 1 and 2)."""
    cur = Cursor(data)
    version, count = cur.u8(), cur.u8()
    if version not in (1, 2) or count > 32:
        raise Unsupported(f"filter pipeline version {version}")
    if version == 1:
        cur.skip(6)
    filters = []
    for _ in range(count):
        code = cur.u16()
        name_len = cur.u16() if version == 1 or code >= 256 else 0
        flags, nvalues = cur.u16(), cur.u16()
        if flags & ~1:
            raise Unsupported("filter flags")
        raw = cur.take((name_len + 7) & ~7 if version == 1 else name_len)
        values = tuple(cur.u32() for _ in range(nvalues))
        if version == 1 and nvalues % 2:
            cur.skip(4)
        name = raw[:name_len].split(b"\0", 1)[0]
        try:
            filters.append(H5Filter(code, flags, values, name.decode("ascii")))
        except UnicodeDecodeError as exc:
            raise Unsupported("filter name") from exc
    return filters


_ALLOC = (1, 2, 3)  # early, late, incremental
_TIMES = {0: "alloc", 1: "never", 2: "ifset"}


def decode_fill(data: bytes) -> H5Fill:
    """The fill value message (versions 2 and 3; version 1 is Unsupported)."""
    cur = Cursor(data)
    version = cur.u8()
    if version == 2:
        alloc, time, defined = cur.u8(), cur.u8(), cur.u8()
        if defined > 1:
            raise Unsupported("fill value defined byte")
    elif version == 3:
        flags = cur.u8()
        alloc, time = flags & 3, (flags >> 2) & 3
        if flags & ~0x3F or (flags & 0x30) == 0x30:
            raise Unsupported("fill value flags")
        defined = 1 if flags & 0x20 else (-1 if flags & 0x10 else 0)
    else:
        raise Unsupported(f"fill value message version {version}")
    if alloc not in _ALLOC or time not in _TIMES:
        raise Unsupported("fill value times")
    if version == 2 and not defined:
        return H5Fill("undefined", _TIMES[time], None)
    if version == 3 and defined <= 0:
        return H5Fill("undefined" if defined < 0 else "default", _TIMES[time], None)
    size = cur.u32()
    if size == 0:
        return H5Fill("default", _TIMES[time], None)
    return H5Fill("user", _TIMES[time], cur.take(size))
