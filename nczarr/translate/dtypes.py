"""Zarr v2 dtype strings <-> netCDF types, byte order, and fill value decoding.

Pure functions shared by the readers and the writers. The mapping follows
``docs/netcdf-c-layouts.md`` section 4:

* ``"<i4"``, ``">f8"``, ``"|u1"`` ... -> the numeric netCDF type, byte order kept;
* ``">S1"`` -> ``char`` in NCZarr layouts (netcdf-c's marker), otherwise a string
  of maximum length 1; ``"|S<n>"`` -> ``string`` with ``maxstrlen`` n;
* ``"<U1"`` -> ``char`` in NCZarr layouts only (netcdf-c 4.8/4.9.0 wrote it);
* ``"|b1"`` -> ``ubyte`` (0/1);
* ``"<U<n>"`` (numpy's fixed-width unicode, what xarray writes for text) ->
  ``string`` with ``maxstrlen`` n and ``text_storage`` ``"unicode"`` (NCZarr output
  re-encodes it as UTF-8 bytes, see :mod:`nczarr.reencode`);
* complex, datetime, timedelta, object, structured and ``f2`` have no netCDF-4
  equivalent: :class:`~nczarr.errors.UnsupportedError` (``"|O"`` with a
  ``vlen-utf8`` filter is read as a string by the array parser, which sees the filters).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import struct
from typing import Any, Literal

from ..errors import MetadataError, UnsupportedError
from ..records import record
from .conventions import (
    CHAR_DTYPE_NCZARR,
    CHAR_DTYPE_ZARR,
    DEFAULT_MAXSTRLEN,
    DTYPE_TO_NC,
    NC_TO_DTYPE,
)

__all__ = [
    "json_number",
    "ZarrDtype",
    "INT_RANGES",
    "parse_dtype",
    "nc_to_zarr_dtype",
    "decode_fill_value",
    "fill_value_note",
    "encode_fill_value",
    "coerce_int",
    "coerce_float",
    "to_float32",
]

_DTYPE_RE = re.compile(r"^([<>|=]?)([a-zA-Z])(\d*)(\[[^\]]*\])?$")

#: Inclusive value range of every integer netCDF type.
INT_RANGES: dict[str, tuple[int, int]] = {
    "byte": (-(2**7), 2**7 - 1),
    "ubyte": (0, 2**8 - 1),
    "short": (-(2**15), 2**15 - 1),
    "ushort": (0, 2**16 - 1),
    "int": (-(2**31), 2**31 - 1),
    "uint": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}

_NO_EQUIVALENT = {
    "c": "complex",
    "M": "datetime64",
    "m": "timedelta64",
    "O": "object",
    "V": "void/structured",
    "U": "unicode",
}


@record
class ZarrDtype:
    """What a Zarr dtype string means in the netCDF-4 model.

    Attributes
    ----------
    nc_type : str
        One of :data:`nczarr.translate.model.NC_TYPES`.
    endian : {"little", "big"}
        Byte order of the stored elements (``"little"`` for 1-byte and text types).
    itemsize : int
        Bytes per element as stored (what a shuffle filter must use).
    maxstrlen : int or None
        For ``string``: the fixed width ``n`` of ``"|S<n>"`` or ``"<U<n>"``.
    text_storage : {"unicode", "vlen-utf8"} or None
        For ``string``: how the values are stored when not as UTF-8 bytes
        (see :class:`~nczarr.translate.model.Variable`).
    logical : {"bool", "bytes"} or None
        What zarr-python and xarray show where the netCDF type alone says otherwise:
        ``"bool"`` for ``"|b1"`` (stored as ``ubyte`` 0/1), ``"bytes"`` for fixed-width
        ``"|S<n>"`` that a producer other than netcdf-c wrote (numpy bytes, not text).
    """

    nc_type: str
    endian: Literal["little", "big"]
    itemsize: int
    maxstrlen: int | None = None
    text_storage: Literal["unicode", "vlen-utf8"] | None = None
    logical: Literal["bool", "bytes"] | None = None


def parse_dtype(dtype: Any, *, nczarr: bool) -> ZarrDtype:
    """Map a Zarr v2 ``dtype`` to a netCDF type.

    Parameters
    ----------
    dtype : Any
        The ``dtype`` value of a ``.zarray`` (normally a string; a list means a
        structured dtype).
    nczarr : bool
        True when the dataset is NCZarr (any generation): then ``">S1"`` and the
        legacy ``"<U1"`` mean ``char``. In pure Zarr ``">S1"`` is a 1-character string
        and ``"<U1"`` has no netCDF equivalent (as in netcdf-c's pure mode).

    Raises
    ------
    UnsupportedError
        A valid dtype without a netCDF-4 equivalent (the reader skips the array).
    MetadataError
        ``dtype`` is not a dtype at all.
    """
    if isinstance(dtype, list):
        raise UnsupportedError(f"structured dtype {dtype!r} has no netCDF-4 equivalent")
    if not isinstance(dtype, str):
        raise MetadataError(f"dtype must be a string, got {type(dtype).__name__} {dtype!r}")
    match = _DTYPE_RE.match(dtype)
    if not match:
        raise MetadataError(f"invalid dtype {dtype!r}")
    order, kind, size_text, unit = match.groups()
    size = int(size_text) if size_text else 0
    endian: Literal["little", "big"] = "big" if order == ">" else "little"
    if unit or kind in ("M", "m"):
        raise UnsupportedError(f"dtype {dtype!r} ({_NO_EQUIVALENT.get(kind, 'datetime')})")
    if kind == "S":
        if size < 1:
            raise UnsupportedError(f"dtype {dtype!r}: zero-width strings have no equivalent")
        if nczarr and dtype == CHAR_DTYPE_NCZARR:
            return ZarrDtype("char", "little", 1)
        return ZarrDtype("string", "little", size, maxstrlen=size)
    if kind == "U":
        if nczarr and size == 1:
            return ZarrDtype("char", "little", 4)
        if size < 1:
            raise UnsupportedError(f"dtype {dtype!r}: zero-width strings have no equivalent")
        return ZarrDtype("string", endian, 4 * size, maxstrlen=size, text_storage="unicode")
    if kind == "b" and size == 1:
        return ZarrDtype("ubyte", "little", 1, logical="bool")
    if kind in _NO_EQUIVALENT:
        raise UnsupportedError(
            f"dtype {dtype!r} ({_NO_EQUIVALENT[kind]}) has no netCDF-4 equivalent"
        )
    nc_type = DTYPE_TO_NC.get(f"{kind}{size}")
    if nc_type is None:
        if kind in "iufb":
            raise UnsupportedError(f"dtype {dtype!r} has no netCDF-4 equivalent")
        raise MetadataError(f"invalid dtype {dtype!r}")
    return ZarrDtype(nc_type, endian, size)


def nc_to_zarr_dtype(
    nc_type: str,
    endian: Literal["little", "big"] = "little",
    maxstrlen: int | None = None,
    *,
    nczarr: bool = True,
    text_storage: str | None = None,
    logical: str | None = None,
) -> str:
    """The Zarr v2 dtype string for a netCDF type (the writer's direction).

    1-byte types use ``"|"`` (zarr-python and tensorstore reject ``"<u1"`` and
    ``">u1"``, and cannot even list a group holding one; netcdf-c reads any prefix),
    except big-endian ones in NCZarr, which keep ``">"`` so that netcdf-c's endianness
    flag survives a round trip. ``char`` is ``">S1"`` in NCZarr and ``"|S1"`` in pure Zarr;
    ``string`` is ``"|S<maxstrlen>"`` (default 128), or with ``text_storage``
    ``"<U<maxstrlen>"`` (``"unicode"``) and ``"|O"`` (``"vlen-utf8"``). In pure Zarr a
    ``logical`` ``"bool"`` is ``"|b1"`` again (the same bytes as ``"|u1"`` 0/1).
    """
    if logical == "bool" and not nczarr and nc_type in ("ubyte", "byte"):
        return "|b1"
    if nc_type == "char":
        return CHAR_DTYPE_NCZARR if nczarr else CHAR_DTYPE_ZARR
    if nc_type == "string":
        if text_storage == "unicode":
            return f"{'>' if endian == 'big' else '<'}U{maxstrlen or DEFAULT_MAXSTRLEN}"
        if text_storage == "vlen-utf8":
            return "|O"
        return f"|S{maxstrlen or DEFAULT_MAXSTRLEN}"
    code = NC_TO_DTYPE.get(nc_type)
    if code is None:
        raise UnsupportedError(f"netCDF type {nc_type!r} has no Zarr dtype")
    if code.endswith("1") and not (nczarr and endian == "big"):
        return f"|{code}"
    return f">{code}" if endian == "big" else f"<{code}"


def coerce_int(value: Any, nc_type: str) -> int:
    """Convert one JSON atom to an integer of ``nc_type``, checking the range.

    Accepts ints, bools, integral floats, finite floats (truncated toward zero, as C
    does) and numeric strings. Raises ``ValueError`` with a message otherwise.
    """
    if isinstance(value, bool):
        result = int(value)
    elif isinstance(value, int):
        result = value
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite number")
        result = int(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            result = int(text)
        except ValueError:
            try:
                result = int(float(text))
            except (ValueError, OverflowError):
                raise ValueError(f"{value!r} is not a number") from None
    else:
        raise ValueError(f"{value!r} is not a number")
    low, high = INT_RANGES[nc_type]
    if not low <= result <= high:
        raise ValueError(f"{value!r} is out of range for {nc_type}")
    return result


_SPECIAL_FLOATS = {
    "nan": math.nan,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-infinity": -math.inf,
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
}


def coerce_float(value: Any) -> float:
    """Convert one JSON atom to a Python float (``"NaN"``, ``"Infinity"`` accepted)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    if isinstance(value, str):
        special = _SPECIAL_FLOATS.get(value.strip().lower())
        if special is not None:
            return special
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    raise ValueError(f"{value!r} is not a number")


def to_float32(value: float) -> float:
    """``value`` rounded to the nearest IEEE single (what a netCDF float holds).

    Values beyond the float32 range become infinities, NaN stays NaN.
    """
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def decode_fill_value(value: Any, info: ZarrDtype, *, raw_text: bool) -> Any:
    """Decode a ``.zarray`` ``fill_value`` into the model's Python value.

    Parameters
    ----------
    value : Any
        The JSON value (``None`` means no fill).
    info : ZarrDtype
        The array's parsed dtype.
    raw_text : bool
        How to read a text fill of a ``char``/``string`` array: netcdf-c (every
        NCZarr layout) writes the raw text; zarr-python writes base64 of the bytes.
        With ``raw_text=False`` a value that is valid base64 of UTF-8 text is decoded,
        anything else is kept as raw text (lenient, because netcdf-c also writes pure
        Zarr).

    Returns
    -------
    None, int, float or str

    Raises
    ------
    ValueError
        The value cannot be converted (the caller names the key in a MetadataError).
    """
    if isinstance(value, list) and len(value) == 1:  # netcdf-c 4.8.0 (netcdf-c issue 2008)
        value = value[0]
    if value is None:
        return None
    nc_type = info.nc_type
    if nc_type in ("char", "string"):
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a text fill value")
        if isinstance(value, int):
            if not 0 <= value < 0x110000:
                raise ValueError(f"{value!r} is not a character code")
            return chr(value)
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a text fill value")
        if raw_text or not value:
            return value
        return _maybe_base64(value)
    if nc_type == "float":
        return to_float32(coerce_float(value))
    if nc_type == "double":
        return coerce_float(value)
    if info.nc_type == "ubyte" and isinstance(value, bool):
        return int(value)
    return coerce_int(value, nc_type)


def fill_value_note(value: Any, info: ZarrDtype, decoded: Any) -> str | None:
    """Why a JSON ``fill_value`` was read leniently, or ``None`` if it was exact.

    A boolean, or a real number with a fractional part, for an integer type is read
    as netcdf-c reads it (``true`` -> 1, ``1.5`` -> 1, ``-1.5`` -> -1: truncated
    toward zero); the value changed, so callers warn.
    """
    if isinstance(value, list):
        return (
            f"fill_value {json.dumps(value)} is a one-element list (netcdf-c 4.8.0 wrote it so, "
            f"netcdf-c issue 2008): read as its element, {decoded!r}"
        )
    if info.nc_type in ("char", "string", "float", "double") or decoded is None:
        return None
    if isinstance(value, bool) and info.nc_type != "ubyte":  # ubyte: also Zarr's bool
        return (
            f"fill_value {json.dumps(value)} is a boolean, not an integer of {info.nc_type}: read "
            f"as {decoded}, as netcdf-c does"
        )
    if isinstance(value, float) and value != decoded:
        return (
            f"fill_value {value!r} is not an integer of {info.nc_type}: read as {decoded} "
            "(truncated toward zero, as netcdf-c does)"
        )
    return None


def _maybe_base64(text: str) -> str:
    try:
        raw = base64.b64decode(text, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return text
    return decoded.rstrip("\x00")


def encode_fill_value(value: Any, nc_type: str, *, nczarr: bool) -> Any:
    """The JSON ``fill_value`` for a model fill value (the writer's direction).

    NaN and infinities become ``"NaN"``/``"Infinity"``/``"-Infinity"`` (Zarr v2
    spec); text fills are raw text for NCZarr (what netcdf-c reads) and base64 of the
    UTF-8 bytes for pure Zarr (what zarr-python reads).
    """
    if value is None:
        return None
    if nc_type in ("char", "string"):
        text = value if isinstance(value, str) else str(value)
        if nczarr:
            return text
        return base64.b64encode(text.encode("utf-8")).decode("ascii")
    return json_number(value, nc_type)


def json_number(value: Any, nc_type: str) -> Any:
    """The JSON form of one numeric value of ``nc_type``: an int, a float, or for
    floats that JSON cannot hold the strings ``"NaN"``/``"Infinity"``/``"-Infinity"``
    (Zarr v2 spec; netcdf-c reads them back too)."""
    if nc_type in ("float", "double"):
        number = float(value)
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return number
    return int(value)
