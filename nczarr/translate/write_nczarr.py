"""Write the current NCZarr layout (netcdf-c 4.9.3+, "nczarr 2.0.0", all in ``.zattrs``).

What netcdf-c 4.10 writes (``shared/reference/netcdf-c-layouts.md`` section 1.4),
with three improvements that netcdf-c reads back unchanged:

* floats (attributes and ``fill_value``) at full precision, not ``%lg``;
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
"""

from __future__ import annotations

import json
from typing import Any

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
    SCALAR_DIM,
    SUPERBLOCK,
    TYPES_KEY,
    ZARRAY,
    ZATTRS,
    ZGROUP,
)
from .dtypes import encode_fill_value, nc_to_zarr_dtype
from .model import Attribute, Dataset, Group, Variable
from .writer import dumps, group_key, join, ncproperties

__all__ = ["write_nczarr", "encode_char_attribute", "zarray_nczarr"]


def write_nczarr(dataset: Dataset, *, noxarray: bool = False) -> dict[str, bytes]:
    """Every metadata object of ``dataset`` in the current NCZarr layout.

    Parameters
    ----------
    dataset : Dataset
        The model to write.
    noxarray : bool
        Omit ``_ARRAY_DIMENSIONS`` (netcdf-c still reads the dimensions from
        ``_nczarr_array.dimension_references``).

    Returns
    -------
    dict[str, bytes]
        ``.zgroup`` and ``.zattrs`` per group, ``.zarray`` and ``.zattrs`` per
        variable, parents before children.
    """
    out: dict[str, bytes] = {}
    for group in dataset.root.walk():
        prefix = group_key(group)
        out[join(prefix, ZGROUP)] = dumps({"zarr_format": 2})
        out[join(prefix, ZATTRS)] = dumps(_group_zattrs(dataset, group))
        for var in group.variables.values():
            vprefix = join(prefix, var.name)
            out[join(vprefix, ZARRAY)] = dumps(zarray_nczarr(var))
            out[join(vprefix, ZATTRS)] = dumps(_variable_zattrs(var, noxarray=noxarray))
    return out


def zarray_nczarr(var: Variable) -> dict[str, Any]:
    """The ``.zarray`` document of one variable, in netcdf-c's key order.

    Scalars are shape ``[1]``, chunks ``[1]``; text fill values are raw text (what
    netcdf-c reads); ``dimension_separator`` only when it is ``"/"``.
    """
    doc: dict[str, Any] = {
        "zarr_format": 2,
        "shape": [1] if var.scalar else list(var.shape),
        "dtype": nc_to_zarr_dtype(var.type, var.endian, var.maxstrlen, nczarr=True),
        "chunks": [1] if var.scalar else list(var.chunks),
        "fill_value": encode_fill_value(var.fill_value, var.type, nczarr=True),
        "order": var.order,
        "compressor": var.compressor,
        "filters": list(var.filters) if var.filters else None,
    }
    if var.dimension_separator == "/":
        doc["dimension_separator"] = "/"
    return doc


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
