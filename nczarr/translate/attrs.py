"""Typed netCDF attributes <-> Zarr JSON attribute values (NCZarr Appendix C).

Decode side (readers): :func:`decode_attribute` turns one ``.zattrs`` entry, plus
the type recorded in ``_nczarr_attr.types`` when there is one, into a model
:class:`~nczarr.translate.model.Attribute`; without a recorded type the type is
inferred as netcdf-c 4.10 does (:func:`infer_type`), with the improvements listed
there.

Encode side (writers): :func:`encode_attribute` gives the JSON value and the type
code to record for a model attribute; :func:`attribute_type_code` gives just the
code.

JSON helpers: :func:`parse_json` is the lenient loader every reader uses (accepts
netcdf-c's ``NaN`` and ``[0.,1.]`` forms and remembers the exact text of every
real number), :func:`json_text` serialises a JSON value the way netcdf-c does,
which is the text netCDF shows for a JSON-valued ``char`` attribute.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..errors import MetadataError, UnsupportedError
from .conventions import DEFAULT_MAXSTRLEN, LEGACY_CHAR_DTYPES, V1_TYPE_CODES
from .dtypes import (
    INT_RANGES,
    coerce_float,
    coerce_int,
    json_number,
    nc_to_zarr_dtype,
    parse_dtype,
    to_float32,
)
from .jsontext import JSONFloat, json_text, parse_json
from .model import NUMERIC_TYPES, Attribute

__all__ = [
    "JSONFloat",
    "parse_json",
    "json_text",
    "attribute_nc_type",
    "attribute_type_code",
    "infer_type",
    "decode_attribute",
    "encode_attribute",
    "json_text_safe",
    "exact_doubles",
    "json_reading_warnings",
]

#: Pseudo type of ``"|J0"``: an arbitrary JSON value, shown in netCDF as char text.
JSON_PSEUDO_TYPE = "json"


def attribute_nc_type(code: Any) -> str:
    """The netCDF type named by an ``_nczarr_attr`` type code.

    Accepts dtype strings of every generation (``"<i4"``, ``">S1"`` = char,
    ``"|S<n>"`` = string, legacy ``"<U1"`` = char), V1 decimal ``nc_type`` codes
    (``"4"`` or ``4``), and ``"|J0"`` (returned as ``"json"``: char text).

    Raises
    ------
    ValueError
        The code names no netCDF type.
    """
    if isinstance(code, int) and not isinstance(code, bool):
        code = str(code)
    if not isinstance(code, str):
        raise ValueError(f"attribute type {code!r} is not a string")
    if code in V1_TYPE_CODES:
        return V1_TYPE_CODES[code]
    if code.endswith("J0"):
        return JSON_PSEUDO_TYPE
    if code in LEGACY_CHAR_DTYPES:
        return "char"
    try:
        return parse_dtype(code, nczarr=True).nc_type
    except (UnsupportedError, MetadataError):
        raise ValueError(f"attribute type {code!r} names no netCDF type") from None


def attribute_type_code(nc_type: str, maxstrlen: int = DEFAULT_MAXSTRLEN) -> str:
    """The ``_nczarr_attr.types`` code netcdf-c records for an attribute of ``nc_type``.

    Numeric types use little-endian dtype strings (``"<i4"``; ``"|i1"`` for 1-byte
    types), char is ``">S1"``, string is ``"|S<maxstrlen>"``.
    """
    if nc_type == "string":
        return f"|S{maxstrlen}"
    return nc_to_zarr_dtype(nc_type, "little", nczarr=True)


def _smallest_int_type(values: list[int]) -> str | None:
    low, high = min(values), max(values)
    for candidate in ("int", "uint", "int64", "uint64"):
        lo, hi = INT_RANGES[candidate]
        if lo <= low and high <= hi:
            return candidate
    return None


def _is_atom(value: Any) -> bool:
    return isinstance(value, bool | int | float | str)


#: How netcdf-c spells non-finite doubles inside a pure-Zarr attribute list.
_NONFINITE_TEXT = frozenset({"NaN", "Infinity", "-Infinity"})


def infer_type(value: Any) -> str:
    """The netCDF type of an untyped JSON attribute value (pure Zarr).

    netcdf-c 4.10's rules (Appendix C), with three deliberate improvements:

    * integers -> the smallest of int, uint, int64, uint64 holding *every* element
      (netcdf-c looks at the first element only and wraps the rest); larger -> double;
    * a numeric list mixing ints and reals -> double (netcdf-c truncates to int);
    * a list mixing numbers and strings -> char holding the JSON text (netcdf-c
      fails to convert), except numbers mixed with ``"NaN"``/``"Infinity"``/
      ``"-Infinity"`` only: that is how netcdf-c writes a double list with non-finite
      values to pure Zarr, and it reads it back as double, so does nczarr.

    Reals -> double; booleans -> ubyte; a string -> char; a list of strings ->
    string; dicts, ``null``, nested or empty lists -> char holding the JSON text.
    """
    if isinstance(value, bool):
        return "ubyte"
    if isinstance(value, int):
        return _smallest_int_type([value]) or "double"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "char"
    if isinstance(value, list) and value and all(_is_atom(v) for v in value):
        if all(isinstance(v, str) for v in value):
            return "string"
        if any(isinstance(v, str) for v in value):
            if all(not isinstance(v, str) or v in _NONFINITE_TEXT for v in value):
                return "double"  # netcdf-c's own spelling of [1.5, NaN, -Inf] in pure Zarr
            return "char"
        if all(isinstance(v, bool) for v in value):
            return "ubyte"
        if any(isinstance(v, float) for v in value):
            return "double"
        return _smallest_int_type([int(v) for v in value]) or "double"
    return "char"


def _decode_as(nc_type: str, value: Any) -> Any:
    """Convert a JSON value to the model value of ``nc_type`` (ValueError if impossible)."""
    if nc_type in ("char", JSON_PSEUDO_TYPE):
        return value if isinstance(value, str) else json_text(value)
    if nc_type == "string":
        items = value if isinstance(value, list) else [value]
        return tuple(v if isinstance(v, str) else json_text(v) for v in items)
    if nc_type not in NUMERIC_TYPES:
        raise ValueError(f"unknown type {nc_type!r}")
    items = value if isinstance(value, list) else [value]
    if nc_type == "float":
        return tuple(to_float32(_checked_float(v)) for v in items)
    if nc_type == "double":
        return tuple(_checked_float(v) for v in items)
    return tuple(coerce_int(v, nc_type) for v in items)


def _checked_float(value: Any) -> float:
    if not _is_atom(value):
        raise ValueError(f"{json_text(value)} is not a number")
    return coerce_float(value)


def decode_attribute(
    name: str,
    value: Any,
    type_code: Any = None,
    *,
    default_type: str | None = None,
    key: str = "",
) -> Attribute:
    """Decode one Zarr attribute into a typed model attribute.

    Parameters
    ----------
    name, value : str, Any
        The ``.zattrs`` entry.
    type_code : Any, optional
        The entry of ``_nczarr_attr.types`` (or V1 ``.nczattr``) for ``name``.
    default_type : str, optional
        Type to use when ``type_code`` is absent (a variable's type for its
        ``_FillValue``, as netcdf-c does).
    key : str
        The ``.zattrs`` key, for error messages.

    Returns
    -------
    Attribute
        ``char`` -> ``str``; ``string`` -> ``tuple[str, ...]``; numeric -> tuple of
        ``int``/``float``. A char attribute stored as a JSON number, boolean, list or
        dict (netcdf-c's JSON convention) becomes its JSON text (``17`` -> ``"17"``,
        where netcdf-c keeps one character). ``"|J0"`` user attributes become char
        text too.

    Raises
    ------
    MetadataError
        The type code is unknown, or the value cannot be converted to the type.
    """
    where = f"{key!r}: attribute {name!r}" if key else f"attribute {name!r}"
    if type_code is not None:
        try:
            nc_type = attribute_nc_type(type_code)
        except ValueError as exc:
            raise MetadataError(f"{where}: {exc}") from None
    elif default_type is not None:
        nc_type = default_type
    else:
        nc_type = infer_type(value)
    try:
        decoded = _decode_as(nc_type, value)
    except (ValueError, TypeError, OverflowError) as exc:
        raise MetadataError(
            f"{where}: cannot read {json_text_safe(value)} as {nc_type}: {exc}"
        ) from None
    if nc_type == JSON_PSEUDO_TYPE:
        nc_type = "char"
    if type_code is None and default_type is None and not _netcdf_typed(value):
        return Attribute(name, nc_type, decoded, json=(value,))
    return Attribute(name, nc_type, decoded)


def _netcdf_typed(value: Any) -> bool:
    """Whether an untyped JSON value reads back as written from its inferred netCDF
    type: a number (an integer within 64 bits), a string, or a non-empty flat list of
    numbers or of two or more strings (a pure Zarr writer writes a one-valued string
    attribute as a plain string: ``["x"]`` would come back as ``"x"``)."""
    if isinstance(value, bool) or value is None or isinstance(value, dict):
        return False
    if isinstance(value, int):
        return _smallest_int_type([value]) is not None  # beyond 64 bits: a double
    if isinstance(value, float | str):
        return True
    if not isinstance(value, list) or not value:
        return False
    if all(isinstance(v, str) for v in value):
        return len(value) > 1
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return False
    ints = [v for v in value if isinstance(v, int)]
    if ints and _smallest_int_type(ints) is None:
        return False
    return len({isinstance(v, float) for v in value}) == 1


def exact_doubles(value: object) -> bool:
    """A flat list of ints and reals that netCDF's double holds exactly (an integer
    beyond 2**53, such as one beyond 64 bits, does not)."""
    return isinstance(value, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and (float(v) == v or v != v)
        for v in value
    )


def json_reading_warnings(attributes: Iterable[Attribute], where: str) -> list[str]:
    """One warning per attribute whose JSON value (``Attribute.json``: ``true``, an
    object, ``null``, a mixed list, an integer beyond 64 bits, ``["x"]``) a netCDF
    reading shows otherwise (the xarray engine shows attributes as netCDF reads
    them; xarray's zarr engine shows the JSON value). Lists of numbers a double holds
    exactly are not warned about."""
    out = []
    for attr in attributes:
        if attr.json is None or exact_doubles(attr.json[0]):
            continue
        # as netCDF4's getncattr gives it: one value is a scalar, not a list
        shown = attr.value if attr.type == "char" else list(attr.value)
        if isinstance(shown, list) and len(shown) == 1:
            shown = shown[0]
        out.append(
            f"attribute {attr.name!r} of {where!r}: the JSON value "
            f"{json_text_safe(attr.json[0])} is shown as netCDF reads it, {attr.type} "
            f"{json_text_safe(shown)} (xarray's zarr engine shows the JSON value)"
        )
    return out


def json_text_safe(value: Any, limit: int = 80) -> str:
    """``json_text`` for messages: never raises, truncated to ``limit`` characters."""
    try:
        text = json_text(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def encode_attribute(
    attr: Attribute, *, typed: bool = True, maxstrlen: int = DEFAULT_MAXSTRLEN
) -> tuple[Any, str]:
    """The JSON value to store for ``attr`` and the type code to record for it.

    Parameters
    ----------
    attr : Attribute
        A model attribute.
    typed : bool
        True for NCZarr (the type code is recorded in ``_nczarr_attr``): a char
        value that parses as a JSON object or array is stored as that JSON
        (netcdf-c's convention, so Zarr readers see structure); NaN and infinities
        are the strings ``"NaN"``/``"Infinity"``/``"-Infinity"``, as netcdf-c writes
        them (the recorded type makes them numbers again). False for pure Zarr,
        written as zarr-python and xarray write attributes: NaN and infinities are
        the bare JSON tokens ``NaN``/``Infinity``/``-Infinity`` (Python floats here;
        zarr-python, xarray and netcdf-c read them as numbers, while netcdf-c reads
        the strings of an untyped attribute as text).
        Either way a one-element string attribute is stored as a plain JSON string
        (for pure Zarr that is what xarray needs to decode ``units`` and what
        netcdf-c reads as the text; a reader infers char for it).
    maxstrlen : int
        Width recorded for string attributes (``"|S<maxstrlen>"``).

    Returns
    -------
    (json_value, type_code)
    """
    code = attribute_type_code(attr.type, maxstrlen)
    if attr.type == "char":
        text = attr.value if isinstance(attr.value, str) else str(attr.value)
        if typed:
            try:
                parsed = json.loads(text, parse_float=JSONFloat, parse_constant=_reject)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, dict | list):
                return parsed, code
        return text, code
    if attr.type == "string":
        values = [attr.value] if isinstance(attr.value, str) else list(attr.value)
        if len(values) == 1:
            return values[0], code
        return values, code
    values = list(attr.value) if isinstance(attr.value, tuple | list) else [attr.value]
    if typed:
        encoded = [json_number(v, attr.type) for v in values]
    else:
        encoded = [_bare_number(v, attr.type) for v in values]
    return (encoded[0] if len(encoded) == 1 else encoded), code


def _bare_number(value: Any, nc_type: str) -> Any:
    """One numeric value for untyped JSON: NaN and infinities stay floats, which
    :func:`json_text` writes as the bare tokens zarr-python and xarray write."""
    if nc_type in ("float", "double"):
        return float(value)
    return json_number(value, nc_type)


def _reject(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")
