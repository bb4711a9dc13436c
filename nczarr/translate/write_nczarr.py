"""Write the current NCZarr layout (netcdf-c 4.9.3+, "nczarr 2.0.0", all in ``.zattrs``).

What netcdf-c 4.10 writes (``docs/netcdf-c-layouts.md`` section 1.4),
with three improvements that netcdf-c reads back unchanged:

* floats (attributes and ``fill_value``) are exact: netcdf-c prints them with
  ``%lg`` (6 significant digits), which loses precision. Here a value is written
  as netcdf-c's own text whenever that text reads back as the same value of the
  recorded type (``-1`` for a double -1.0, ``9.96921e+36`` for the float fill
  ``9.96921e36f``), else as its shortest exact text (:func:`float_text`). The
  type is always recorded (``dtype``, ``_nczarr_attr.types``), so ``-1`` is still
  read as a double;
* a shuffle filter's ``elementsize`` is the real item size (the model carries the
  reader-normalised codecs), so zarr-python decodes the data too;
* ``char`` attributes come back as exactly the same text. netcdf-c stores a char
  attribute that parses as JSON as that JSON value and reads a number back as one
  character (``"17"`` -> ``"1"``). Here the text is stored as a JSON *string*,
  which netcdf-c reads verbatim, unless it is a JSON object or array whose
  netcdf-c serialisation is the text itself (netcdf-c's own JSON convention: Zarr
  readers see the structure, netcdf-c shows the same text).

One-byte numeric types use ``"|u1"``/``"|i1"`` (zarr-python rejects ``"<u1"``;
netcdf-c reads both); char is ``">S1"``, netcdf-c's marker for NC_CHAR.

netcdf-c rewriting our objects
------------------------------
netcdf-c 4.10.1 rewrites every ``.zgroup``, ``.zattrs`` and ``.zarray`` when it
closes a store opened for writing (even with nothing changed), in place and
without truncating the file. Its text must therefore never be shorter than ours.
It is not, for an unchanged object, when every value is one netcdf-c formats
exactly as we do, because these objects are written without whitespace
(:func:`~nczarr.translate.write_common.dumps` with ``compact=True``) and netcdf-c writes
``", "``/``": "``: ``2 * n - 1`` bytes more for every dict of ``n`` entries,
nested ones included.
What netcdf-c writes *shorter* than we do, and so eats into that slack:

* a float needing more than 6 significant digits (``9.969209968386869e36``, the
  double fill ``NC_FILL_DOUBLE``, becomes ``9.96921e+36``: 9 bytes; ``pi`` 10);
* a char attribute whose text is a JSON scalar: we write ``"17"``, netcdf-c
  ``17`` (2 bytes; 4 for ``"\"x\""`` -> ``"x"``);
* attributes netcdf-c drops: 4.10.1 drops the attributes of a group that it has
  not read yet (read them all before closing);
* an integral float attribute value we write ``1.0`` (for readers that ignore the
  recorded types) and netcdf-c ``1``: 2 bytes, spent only within the attribute's
  own 4 bytes of slack (:func:`typed_float_attribute`).

A metadata object survives netcdf-c's rewrite when those losses add up to no more
than that slack (at least 15 bytes in a ``.zarray``, ``4 * attributes + 10`` or
more in a variable's ``.zattrs``). Beyond that (for example an attribute
holding many full-precision doubles) the object ends in stale bytes after netcdf-c
writes to the store, and nothing a writer can put in the object prevents it:
trailing whitespace only helps when netcdf-c's text is at least as long as ours.
Values netcdf-c cannot write exactly are lost by netcdf-c in any case.
"""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

from ..keys import join_key
from .attrs import JSONFloat, encode_attribute, json_text
from .conventions import (
    ARRAY,
    ARRAY_DIMENSIONS,
    ATTR,
    DEFAULT_MAXSTRLEN,
    GROUP,
    HIDDEN_ATTRIBUTES,
    JSON_TYPE,
    NCPROPERTIES,
    NCZARR_FORMAT_VERSION,
    NETCDF_C_CODECS,
    SCALAR_DIM,
    SUPERBLOCK,
    TYPES_KEY,
    ZARRAY,
    ZATTRS,
    ZGROUP,
)
from .dtypes import encode_fill_value, to_float32
from .model import Attribute, Dataset, Group, Variable
from .target import Target
from .write_common import (
    WriteResult,
    dumps,
    group_key,
    ncproperties,
    user_attributes,
    zarray_document,
)

__all__ = [
    "write_nczarr",
    "encode_char_attribute",
    "zarray_nczarr",
    "float_text",
    "integer_float_attribute_warnings",
]


def unreadable_codec_warnings(dataset: Dataset) -> list[str]:
    """One warning per variable whose codecs netcdf-c cannot decode.

    The NCZarr metadata is still written (zarr-python, and nczarr, read the data);
    the warning tells the user that netcdf-c will open the dataset but fail to read
    that variable's values (NC_ENOFILTER).
    """
    warnings = []
    for var in dataset.root.all_variables():
        codecs = [*var.filters, *([var.compressor] if var.compressor else [])]
        unknown = [c.get("id", "?") for c in codecs if c.get("id") not in NETCDF_C_CODECS]
        if unknown:
            warnings.append(
                f"variable {var.path}: codec {', '.join(map(repr, unknown))} has no netcdf-c "
                "filter; netcdf-c will not read its values (zarr-python and nczarr will)"
            )
    return warnings


def write_nczarr(dataset: Dataset, target: Target | None = None) -> WriteResult:
    """Every metadata object of ``dataset`` in the current NCZarr layout.

    Parameters
    ----------
    dataset : Dataset
        The model to write (in netCDF's forms: :func:`nczarr.translate.netcdf_forms.nczarr_forms`,
        which the dispatcher applies first).
    target : Target
        Its options: ``noxarray`` omits ``_ARRAY_DIMENSIONS`` (netcdf-c still reads
        the dimensions from ``_nczarr_array.dimension_references``);
        ``consolidated`` is the dispatcher's (:mod:`~nczarr.translate.writer`).

    Returns
    -------
    WriteResult
        ``.zgroup`` and ``.zattrs`` per group, ``.zarray`` and ``.zattrs`` per
        variable, parents before children; a warning per codec netcdf-c lacks.
    """
    noxarray = (target or Target("nczarr")).noxarray
    out: dict[str, bytes] = {}
    for group in dataset.root.walk():
        prefix = group_key(group)
        out[join_key(prefix, ZGROUP)] = dumps({"zarr_format": 2}, compact=True)
        out[join_key(prefix, ZATTRS)] = dumps(_group_zattrs(dataset, group), compact=True)
        for var in group.variables.values():
            vprefix = join_key(prefix, var.name)
            out[join_key(vprefix, ZARRAY)] = dumps(zarray_nczarr(var), compact=True)
            out[join_key(vprefix, ZATTRS)] = dumps(
                _variable_zattrs(var, noxarray=noxarray), compact=True
            )
    return WriteResult(out, tuple(unreadable_codec_warnings(dataset)))


def zarray_nczarr(var: Variable) -> dict[str, Any]:
    """The ``.zarray`` document of one variable, in netcdf-c's key order.

    Scalars are shape ``[1]``, chunks ``[1]``; text fill values are raw text (what
    netcdf-c reads); float fill values as :func:`float_text`;
    ``dimension_separator`` only when it is ``"/"``.
    """
    fill = encode_fill_value(var.fill_value, var.type, nczarr=True)
    return zarray_document(var, nczarr=True, fill_value=_exact_floats(fill, var.type))


_EXPONENT = re.compile(r"e([+-])0*(\d)")


def float_text(value: float, nc_type: str) -> str:
    """The JSON number text for a finite ``float``/``double`` value in NCZarr metadata.

    netcdf-c's own text (``"%.6g"``: ``-1``, ``0.25``, ``9.96921e+36``) when it reads
    back as exactly ``value`` in ``nc_type`` (a ``float`` is compared as an IEEE
    single), so netcdf-c rewrites the value with the same length. Otherwise the
    shortest text that reads back exactly (fewest significant digits, then the
    shortest of positional and exponent form, exponent without ``+`` or leading
    zeros):
    ``3.141592653589793``, ``9.969209968386869e36``. netcdf-c writes such a value
    shorter, with 6 digits (see the module docstring). Negative zero is ``-0.0``.

    Parameters
    ----------
    value : float
        A finite number (NaN and infinities are JSON strings, not numbers).
    nc_type : {"float", "double"}
        The recorded type; for ``"float"`` the value is rounded to single first.

    Returns
    -------
    str
    """
    single = nc_type == "float"
    if single:
        value = to_float32(value)
    if value == 0 and math.copysign(1.0, value) < 0:
        return "-0.0"  # "-0" is read as the integer 0 by JSON parsers that keep ints
    netcdf = f"{value:.6g}"
    if _reads_back(netcdf, value, single):
        return netcdf
    for digits in range(7, 18):
        general = f"{value:.{digits}g}"
        if _reads_back(general, value, single):
            break
    scientific = f"{value:.{digits - 1}e}"
    candidates = [_EXPONENT.sub(_short_exponent, t) for t in (general, scientific)]
    if abs(value) < 1e18:  # positional integers beyond int64 may not parse everywhere
        candidates.append(_fixed(scientific))
    return min(candidates, key=len)


def _fixed(scientific: str) -> str:
    """The positional form of ``"<d>.<ddd>e<exp>"`` (the same digits, no exponent)."""
    mantissa, exponent = scientific.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "")
    shift = int(exponent)
    if shift >= len(digits) - 1:
        return sign + digits + "0" * (shift - len(digits) + 1)
    if shift >= 0:
        return sign + digits[: shift + 1] + "." + digits[shift + 1 :]
    return sign + "0." + "0" * (-shift - 1) + digits


def _short_exponent(match: re.Match[str]) -> str:
    return "e" + ("-" if match.group(1) == "-" else "") + match.group(2)


def _reads_back(text: str, value: float, single: bool) -> bool:
    """``float(text)`` is bit for bit ``value`` (as a single when ``single``)."""
    number = float(text)
    fmt = "<f" if single else "<d"
    try:
        return struct.pack(fmt, number) == struct.pack(fmt, value)
    except OverflowError:  # rounded beyond the single range
        return False


def _exact_floats(value: Any, nc_type: str) -> Any:
    """``value`` (a JSON number or list of them) with floats as :func:`float_text`."""
    if nc_type not in ("float", "double"):
        return value
    if isinstance(value, list):
        return [_exact_floats(v, nc_type) for v in value]
    if isinstance(value, float) and math.isfinite(value):
        text = float_text(value, nc_type)
        return JSONFloat(text)
    return value


#: What netcdf-c's in-place rewrite of a ``.zattrs`` adds per user attribute: ``": "``
#: and ``", "`` where we write ``":"`` and ``","``, in the attribute's entry and in
#: its ``_nczarr_attr`` type entry. An attribute may spend these bytes on its own text.
_ATTRIBUTE_SLACK = 4

_INTEGER_TEXT = re.compile(r"-?\d+")


def _netcdf_c_float_text(value: float, nc_type: str) -> str:
    return f"{to_float32(value) if nc_type == 'float' else value:.6g}"


def typed_float_attribute(value: Any, nc_type: str) -> tuple[Any, bool]:
    """A float/double attribute's JSON value, integral values written ``1.0``.

    zarr-python, xarray and GDAL ignore NCZarr's recorded types: a double ``1``
    written as netcdf-c writes it (``"%.6g"``) reads as an integer there, ``1.0``
    as a float, for netcdf-c both are the double 1. netcdf-c's in-place rewrite
    writes ``1`` again, 2 bytes shorter, so the ``.0`` is spent only within the
    attribute's own slack (:data:`_ATTRIBUTE_SLACK`, less what its other values
    already lose to netcdf-c's 6 digits): a scalar or two integral values always.

    Returns
    -------
    (value, bool)
        The JSON value, and whether integral values were left as integers (a reader
        ignoring the types sees integers: the caller warns).
    """
    exact = _exact_floats(value, nc_type)
    if nc_type not in ("float", "double"):
        return exact, False
    items = exact if isinstance(exact, list) else [exact]
    floats = [v for v in items if isinstance(v, JSONFloat)]
    integral = [v for v in floats if _INTEGER_TEXT.fullmatch(v.text)]
    if not integral:
        return exact, False
    loss = sum(len(v.text) - len(_netcdf_c_float_text(float(v), nc_type)) for v in floats)
    if loss + 2 * len(integral) > _ATTRIBUTE_SLACK:
        return exact, True
    marked = {id(v) for v in integral}
    dotted = [JSONFloat(v.text + ".0") if id(v) in marked else v for v in items]
    return (dotted if isinstance(exact, list) else dotted[0]), False


def integer_float_attribute_warnings(dataset: Dataset) -> list[str]:
    """One warning per float/double attribute whose integral values NCZarr output
    keeps as integers (see :func:`typed_float_attribute`)."""
    out = []
    for where, name, attr in user_attributes(dataset):
        if attr.type not in ("float", "double"):
            continue
        value, _ = encode_attribute(attr, typed=True)
        if typed_float_attribute(value, attr.type)[1]:
            out.append(
                f"attribute {name!r} of {where!r} ({attr.type}) keeps netcdf-c's "
                "integer text for its integral values: zarr-python, xarray and "
                "GDAL (which ignore NCZarr's types) read them as integers"
            )
    return out


def encode_char_attribute(text: str) -> Any:
    """The JSON value that makes netcdf-c 4.10 read a char attribute back as ``text``.

    A JSON object or array whose netcdf-c serialisation is ``text`` itself is stored
    as that structure (``{"key1": [1,2,3]}``); anything else as a JSON string.
    """
    try:
        parsed = json.loads(text, parse_float=JSONFloat, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return text
    if isinstance(parsed, dict | list) and parsed and _json_text_or_none(parsed) == text:
        return parsed
    return text


def _json_text_or_none(value: Any) -> str | None:
    try:
        return json_text(value)
    except (TypeError, ValueError, RecursionError):
        return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _user_attributes(
    attributes: dict[str, Attribute], maxstrlen: int
) -> tuple[dict[str, Any], dict[str, str]]:
    """(values, type codes) of the user attributes, reserved names left out."""
    values: dict[str, Any] = {}
    types: dict[str, str] = {}
    for name, attr in attributes.items():
        if name in HIDDEN_ATTRIBUTES:
            continue
        value, code = encode_attribute(attr, typed=True, maxstrlen=maxstrlen)
        if attr.type == "char":
            value = encode_char_attribute(attr.value)
        else:
            value, _ = typed_float_attribute(value, attr.type)
        values[name] = value
        types[name] = code
    return values, types


def _group_zattrs(dataset: Dataset, group: Group) -> dict[str, Any]:
    doc, types = _user_attributes(group.attributes, DEFAULT_MAXSTRLEN)
    is_root = group.path in ("", "/")
    if is_root:
        doc[NCPROPERTIES] = ncproperties(dataset)
        types[NCPROPERTIES] = ">S1"
    doc[GROUP] = {
        "dimensions": {
            dim.name: ({"size": dim.size, "unlimited": 1} if dim.unlimited else dim.size)
            for dim in group.dimensions.values()
        },
        "arrays": list(group.variables),
        "groups": list(group.groups),
    }
    types[GROUP] = JSON_TYPE
    if is_root:
        doc[SUPERBLOCK] = {"version": NCZARR_FORMAT_VERSION}
        types[SUPERBLOCK] = JSON_TYPE
    types[ATTR] = JSON_TYPE
    doc[ATTR] = {TYPES_KEY: types}
    return doc


def _variable_zattrs(var: Variable, *, noxarray: bool) -> dict[str, Any]:
    doc, types = _user_attributes(var.attributes, var.maxstrlen or DEFAULT_MAXSTRLEN)
    if not noxarray:
        doc[ARRAY_DIMENSIONS] = (
            [SCALAR_DIM] if var.scalar else [d.rsplit("/", 1)[-1] for d in var.dimensions]
        )
    array: dict[str, Any] = {"dimension_references": list(var.dimensions)}
    if var.scalar:
        array["scalar"] = 1
    array["storage"] = "chunked"
    doc[ARRAY] = array
    types[ARRAY] = JSON_TYPE
    types[ATTR] = JSON_TYPE
    doc[ATTR] = {TYPES_KEY: types}
    return doc
