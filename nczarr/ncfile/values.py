"""A netCDF value's stored bytes, by its netCDF type, with ``struct`` (no numpy).

Both file readers use it: netCDF-3 values are big-endian (:mod:`~nczarr.ncfile.classic`),
netCDF-4 values in the dataset's byte order (:mod:`~nczarr.ncfile.hdf5`). numpy is
imported only for a value ``struct`` refuses (numpy's cast, as netCDF4 writes it).
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["STRUCT_CODES", "pack_value", "text", "unpack_value", "unpack_values"]

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
    """The stored bytes of one value of netCDF type ``kind`` (numpy's cast for a value
    ``struct`` refuses, e.g. a float fill of an int variable)."""
    if kind == "char":
        return str(value).encode("latin-1", "replace")[:1].ljust(1, b"\x00")
    order = ">" if big_endian else "<"
    try:
        return struct.pack(order + STRUCT_CODES[kind], value)
    except (struct.error, OverflowError, TypeError):
        import numpy as np  # only for an odd value: numpy's cast, as netCDF4 writes it

        return np.array(value, dtype=f"{order}{STRUCT_CODES[kind]}").tobytes()


def unpack_values(raw: bytes, kind: str, big_endian: bool) -> tuple[Any, ...]:
    """Every value of numeric netCDF type ``kind`` in ``raw``."""
    code = STRUCT_CODES[kind]
    count = len(raw) // struct.calcsize(code)
    return struct.unpack(f"{'>' if big_endian else '<'}{count}{code}", raw)
