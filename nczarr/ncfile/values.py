"""A netCDF value's stored bytes, by its netCDF type, with ``struct`` (no numpy), and
whether a ``_FillValue`` is a value of its variable's type.

Both file readers use it: netCDF-3 values are big-endian (:mod:`~nczarr.ncfile.classic`),
netCDF-4 values in the dataset's byte order (:mod:`~nczarr.ncfile.hdf5`).
"""

from __future__ import annotations

import struct
from typing import Any

from ..translate.model import Attribute

__all__ = [
    "STRUCT_CODES",
    "fill_misfit",
    "fits",
    "pack_value",
    "text",
    "unpack_value",
    "unpack_values",
]

#: ``struct`` codes of the netCDF numeric types.
STRUCT_CODES = {
    "byte": "b",
    "ubyte": "B",
    "short": "h",
    "ushort": "H",
    "int": "i",
    "uint": "I",
    "int64": "q",
    "uint64": "Q",
    "float": "f",
    "double": "d",
}


def text(value: Any) -> str:
    """A stored string (bytes or str) as text."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "surrogateescape")
    return str(value)


def unpack_value(raw: bytes, kind: str, big_endian: bool) -> Any:
    """One value of netCDF type ``kind`` from its stored bytes (``char``: the text
    without trailing NULs)."""
    if kind == "char":
        return text(raw).rstrip("\x00")
    return struct.unpack((">" if big_endian else "<") + STRUCT_CODES[kind], raw)[0]


def pack_value(value: Any, kind: str, big_endian: bool) -> bytes:
    """The stored bytes of one value of netCDF type ``kind`` (a value of the type:
    :func:`fits`; an integral float is the integer, e.g. the fill 2.0 of an int)."""
    if kind == "char":
        return str(value).encode("latin-1", "replace")[:1].ljust(1, b"\x00")
    code = STRUCT_CODES[kind]
    if isinstance(value, float) and code not in "fd":
        value = int(value)
    return struct.pack((">" if big_endian else "<") + code, value)


def fits(value: Any, kind: str) -> bool:
    """Whether ``value`` is a value of the numeric netCDF type ``kind``, as
    netCDF4-python judges a ``_FillValue`` ("safely cast"): cast to the type, it equals
    itself (compared as doubles, as numpy compares them), or both are NaN. So an integer
    type takes integers (an integral float counts) in its range, ``float`` the values
    single precision holds exactly (not 0.1 given as a double, 16777217 or 1e-50;
    infinities and NaN are values), ``double`` any number a double holds."""
    if hasattr(value, "item"):  # a numpy scalar: its Python value
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    code = STRUCT_CODES[kind]
    try:
        if code in "fd":
            as_double = float(value)
            if code == "d":
                return True
            stored = struct.unpack("<f", struct.pack("<f", as_double))[0]
            return stored == as_double or (stored != stored and as_double != as_double)
        if isinstance(value, float):
            if not value.is_integer():  # a fraction, NaN or an infinity
                return False
            value = int(value)
        struct.pack("<" + code, value)
    except (struct.error, OverflowError):
        return False
    return True


def fill_misfit(attr: Attribute | None, kind: str) -> str | None:
    """Why a variable of netCDF type ``kind`` cannot have its ``_FillValue`` attribute
    ``attr`` as its fill, or None when it can (or has none): a number its type does
    not hold (300 for a ``byte``, 2.5 for an ``int``, 1e300 or 0.1 as a double for a
    ``float``: every value is judged), or a number for a text variable, or text for a
    numeric one. netCDF4-python reads such a variable without a fill, warning that the
    value "cannot be safely cast"; the file readers leave the variable out, saying why,
    rather than give a copy a fill no reader of the file shares."""
    if attr is None:
        return None
    text_fill = attr.type in ("char", "string")
    if kind in ("char", "string"):
        if text_fill:
            return None
        return (
            f"its _FillValue {attr.value!r} ({attr.type}) is not text, so it cannot be the "
            f"{kind} variable's fill (netCDF4-python ignores it: it cannot be safely cast)"
        )
    if not text_fill and all(fits(v, kind) for v in attr.value):
        return None
    one = not isinstance(attr.value, str) and len(attr.value) == 1
    shown = attr.value[0] if one else attr.value
    return (
        f"its _FillValue {shown!r} ({attr.type}) is not a {kind} value, so it cannot be "
        "the variable's fill (netCDF4-python ignores it: it cannot be safely cast)"
    )


def unpack_values(raw: bytes, kind: str, big_endian: bool) -> tuple[Any, ...]:
    """Every value of numeric netCDF type ``kind`` in ``raw``."""
    code = STRUCT_CODES[kind]
    count = len(raw) // struct.calcsize(code)
    return struct.unpack(f"{'>' if big_endian else '<'}{count}{code}", raw)
