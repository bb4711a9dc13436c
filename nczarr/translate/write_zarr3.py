"""Write a netCDF-4 model as pure Zarr v3 (one ``zarr.json`` per group and array).

What zarr-python 3 and xarray write by default, describing the *same chunk bytes*
as the Zarr v2 output (:mod:`~nczarr.translate.write_zarr`), so a conversion still
copies every chunk verbatim. Per array:

* ``data_type``: ``int8`` ... ``uint64``, ``float32``, ``float64``; char and
  netCDF strings (fixed width ``|S<n>`` in Zarr v2) are zarr-python's
  ``null_terminated_bytes`` of ``length_bytes`` n, whose chunks hold the same raw
  bytes as the v2 ``|S<n>`` chunks; strings stored as numpy unicode or variable-length
  UTF-8 (``Variable.text_storage``) keep zarr-python's own types,
  ``fixed_length_utf32`` and ``string`` with the ``vlen-utf8`` codec (same bytes);
* ``codecs`` from :func:`~nczarr.translate.codecs_v3.v3_codecs`: ``transpose`` for
  F order, ``bytes`` with the stored byte order (big-endian data stays
  big-endian, nothing is byte-swapped), then the v2 filters and compressor as v3
  codecs (core ``gzip``/``zstd``/``blosc``/``crc32c``, numcodecs' ``numcodecs.*``
  wrappers for netcdf-c's ``zlib``, ``shuffle``, ``fletcher32`` ...). An array
  whose codecs have no byte-identical v3 form is left out, with a warning (and
  ``convert`` refuses it unless ``exclude=`` names it);
* shards (a sharded Zarr v3 source, nothing else re-encoded): ``chunk_grid`` is the
  shard shape and the one codec ``sharding_indexed``, with the inner codecs as above
  and the source's ``index_codecs`` and ``index_location``, so that the shard objects
  are copied verbatim;
* ``chunk_key_encoding``: ``{"name": "v2", "configuration": {"separator": "."}}``
  (``"/"`` when the source used it). That is what zarr-python's own v2->v3
  migration (``zarr.metadata.migrate_v3``) writes: chunk keys stay ``0.1`` (``0``
  for a 0-d array), so chunks are copied under the very keys the source uses (an
  S3 server-side copy, a kernel copy), a killed conversion resumes by key, and
  zarr-python and xarray read them. The v3 ``default`` encoding (``c/0/1``) would
  rename every chunk for no reader's benefit;
* ``fill_value``: mandatory in v3. A model without fill value gets 0 (``""``
  for text), which is what zarr-python shows for chunks never written of a Zarr v2
  array without one;
* ``dimension_names`` from the same naming rules as ``_ARRAY_DIMENSIONS``
  (:mod:`~nczarr.translate.zarr_names`), omitted with ``noxarray``;
* ``attributes``: untyped JSON as in Zarr v2, plus xarray's ``_FillValue``
  attribute (base64 of the little-endian float64 for floats, an integer for
  integers). xarray masks missing values of a Zarr v3 array by that attribute
  only (``use_zarr_fill_value_as_mask`` is off for v3), so without it xarray
  would not show the NaNs it shows for the v2 output. Text arrays get no
  ``_FillValue`` attribute: xarray cannot decode one for fixed-width bytes
  (``FillValueCoder``), and a warning says their fill value is not a missing value
  for xarray (with the Zarr v2 output xarray masks it). ``null_terminated_bytes``
  is zarr-python's own data type, not yet in the Zarr v3 specification (zarr-python
  says so with an ``UnstableSpecificationWarning``); the warning says that too.
  netCDF strings need no re-encoding here: NCZarr stores them fixed-width, as these
  bytes already.

Groups are ``{"zarr_format": 3, "node_type": "group", "attributes": {...}}``;
``_NCProperties`` stays in the root group's attributes (not for a source without one,
``Dataset.xarray_conventions``, as in Zarr v2). With ``consolidated`` the
root ``zarr.json`` carries ``consolidated_metadata`` as
``zarr.consolidate_metadata`` writes it (``kind: "inline"``, every other node's
document by its path, nested groups with an empty ``consolidated_metadata``).

Why not call zarr-python's migration itself: it works on open zarr groups over a
store (I/O, not a pure translator), refuses bytes->bytes v2 filters such as
netcdf-c's ``shuffle`` and consolidated metadata, keeps ``_ARRAY_DIMENSIONS``
instead of writing ``dimension_names``, and knows nothing of netCDF fill values.
Its choices are followed (see :func:`~nczarr.translate.codecs_v3.v3_codecs`), and
``tests/test_zarr3_output.py`` checks that it agrees with it where it applies.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from ..errors import UnsupportedError
from ..keys import join_key
from .codecs_v3 import v3_codecs
from .conventions import DEFAULT_MAXSTRLEN, FILLVALUE, NCPROPERTIES, ZARR_JSON
from .dtypes import encode_fill_value, json_number
from .model import Dataset, Group, Variable
from .target import Target
from .write_common import WriteResult, group_key, ncproperties
from .xarray_forms import text_encoding
from .zarr2_fills import gdal_nodata_warnings
from .zarr_names import dimension_names, plain_attributes, utf8_json

__all__ = ["write_zarr3", "array_document", "data_type", "CHUNK_KEY_ENCODING"]

#: netCDF type -> Zarr v3 ``data_type`` (numbers).
_DATA_TYPES = {
    "byte": "int8",
    "ubyte": "uint8",
    "short": "int16",
    "ushort": "uint16",
    "int": "int32",
    "uint": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "float": "float32",
    "double": "float64",
}

#: The chunk key encoding written (zarr-python's v2->v3 migration uses it too).
CHUNK_KEY_ENCODING = "v2"


def data_type(var: Variable) -> tuple[Any, int, bool]:
    """``(data_type, itemsize, has byte order)`` of one variable in Zarr v3 terms."""
    if var.type == "char":
        return {"name": "null_terminated_bytes", "configuration": {"length_bytes": 1}}, 1, False
    if var.type == "string" and var.text_storage == "unicode":  # numpy "<U<n>", UTF-32
        width = 4 * (var.maxstrlen or DEFAULT_MAXSTRLEN)
        return {"name": "fixed_length_utf32", "configuration": {"length_bytes": width}}, 4, True
    if var.type == "string" and var.text_storage == "vlen-utf8":
        return "string", 1, False
    if var.type == "string":
        width = var.maxstrlen or DEFAULT_MAXSTRLEN
        return (
            {"name": "null_terminated_bytes", "configuration": {"length_bytes": width}},
            width,
            False,
        )
    if var.logical == "bool" and var.type in ("ubyte", "byte"):
        return "bool", 1, False
    name = _DATA_TYPES.get(var.type)
    if name is None:
        raise UnsupportedError(f"netCDF type {var.type!r} has no Zarr v3 data type")
    itemsize = int(name.removeprefix("uint").removeprefix("int").removeprefix("float")) // 8
    return name, itemsize, itemsize > 1


def _fill_value(var: Variable) -> Any:
    """The v3 ``fill_value``: numbers as JSON (NaN/Infinity as strings), text as
    base64 of its bytes (zarr-python's form for ``null_terminated_bytes``)."""
    if var.type in ("char", "string"):
        text = "" if var.fill_value is None else str(var.fill_value)
        if var.text_storage is not None:  # zarr-python's string types keep text as is
            return text
        return base64.b64encode(text.encode("utf-8")).decode("ascii")
    if var.absent_fill is not None:  # xarray's array: zarr's fill_value apart from _FillValue
        return encode_fill_value(var.absent_fill, var.type, nczarr=False)
    if var.fill_value is None:
        return 0.0 if var.type in ("float", "double") else 0
    return encode_fill_value(var.fill_value, var.type, nczarr=False)


def _missing_value(var: Variable) -> Any:
    """The value netCDF readers mask: the fill value, or else the ``_FillValue``
    attribute alone (netcdf-c 4.8/4.9 NCZarr with ``fill_value`` null: netCDF4 masks
    the attribute's value and reads chunks never written as 0, the v3 ``fill_value``)."""
    if var.fill_value is not None:
        return var.fill_value
    value = var.attributes[FILLVALUE].value
    return value[0] if isinstance(value, tuple | list) and len(value) == 1 else value


def _xarray_fill(var: Variable) -> Any:
    """xarray's ``_FillValue`` attribute for a v3 array (its ``FillValueCoder``)."""
    value = _missing_value(var)
    if var.type in ("float", "double"):
        return base64.b64encode(struct.pack("<d", float(value))).decode("ascii")
    return json_number(value, var.type)


def array_document(
    var: Variable, dims: list[str] | None, *, xarray_fill: bool = True
) -> dict[str, Any]:
    """The ``zarr.json`` of one variable (0-d for scalars).

    Parameters
    ----------
    var : Variable
        The model variable.
    dims : list of str or None
        ``dimension_names`` (``None``: omitted).
    xarray_fill : bool
        Write xarray's ``_FillValue`` attribute for a numeric fill value.

    Raises
    ------
    UnsupportedError
        The type or the codecs have no byte-identical Zarr v3 form.
    """
    dtype, itemsize, has_endian = data_type(var)
    shape = [] if var.scalar else list(var.shape)
    chunks = [] if var.scalar else list(var.chunks)
    vlen = var.text_storage == "vlen-utf8"  # its first filter is numcodecs' vlen-utf8
    codecs = v3_codecs(
        order=var.order,
        endian=var.endian if has_endian else None,
        filters=tuple(var.filters[1:] if vlen else var.filters),
        compressor=var.compressor,
        ndim=len(shape),
        itemsize=itemsize,
        data_type=dtype,
    )
    if vlen:  # zarr-python's vlen-utf8 writes the bytes numcodecs' VLenUTF8 writes
        codecs = [{"name": "vlen-utf8"} if c["name"] == "bytes" else c for c in codecs]
    if var.shards is not None and var.shard_index is not None and not var.scalar:
        codecs = [_sharding(chunks, codecs, var.shard_index)]
        chunks = list(var.shards)
    attributes = plain_attributes(var.attributes.values())
    attributes.pop(FILLVALUE, None)
    if (
        xarray_fill
        and FILLVALUE in var.attributes  # a missing value, not only a fill value
        and not isinstance(_missing_value(var), tuple | list | str | bytes | None)
        and var.type not in ("char", "string")
        and var.logical is None
    ):
        attributes[FILLVALUE] = _xarray_fill(var)
    doc: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {
            "name": CHUNK_KEY_ENCODING,
            "configuration": {"separator": var.dimension_separator},
        },
        "fill_value": _fill_value(var),
        "codecs": codecs,
        "attributes": attributes,
    }
    if dims is not None:
        doc["dimension_names"] = dims
    return doc


def _sharding(
    inner: list[int], codecs: list[dict[str, Any]], index: dict[str, Any]
) -> dict[str, Any]:
    """The ``sharding_indexed`` codec of shards copied verbatim: inner chunks of shape
    ``inner`` encoded with ``codecs``, and the source's own index (location, codecs)."""
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": inner,
            "codecs": codecs,
            "index_codecs": index["index_codecs"],
            "index_location": index["index_location"],
        },
    }


def _group_document(dataset: Dataset, group: Group) -> dict[str, Any]:
    attributes = plain_attributes(group.attributes.values())
    if group.path in ("", "/") and not dataset.xarray_conventions:
        attributes[NCPROPERTIES] = ncproperties(dataset)
    return {"zarr_format": 3, "node_type": "group", "attributes": attributes}


def write_zarr3(dataset: Dataset, target: Target | None = None) -> WriteResult:
    """Every ``zarr.json`` of ``dataset`` as pure Zarr v3.

    Parameters
    ----------
    dataset : Dataset
        The model to write.
    target : Target
        Its options: ``noxarray`` omits ``dimension_names`` and xarray's
        ``_FillValue`` attribute; ``consolidated`` puts every node's document into the
        root's ``consolidated_metadata``.

    Returns
    -------
    WriteResult
        The objects (parents before children), the warnings (renamed dimensions,
        arrays left out and why, text fill values xarray will not mask), and the
        key prefixes of the arrays left out (their chunks must not be copied).
    """
    target = target or Target("zarr", zarr_format=3)
    noxarray, consolidated = target.noxarray, target.write_consolidated
    docs: dict[str, dict[str, Any]] = {}
    warnings = gdal_nodata_warnings(dataset)
    skipped: list[str] = []
    for group in dataset.root.walk():
        prefix = group_key(group)
        docs[prefix] = _group_document(dataset, group)
        names, group_warnings = dimension_names(dataset, group)
        warnings.extend(group_warnings)
        for var in group.variables.values():
            vprefix = join_key(prefix, var.name)
            dims = None if noxarray else [names[d] for d in var.dimensions]
            try:
                docs[vprefix] = array_document(var, dims, xarray_fill=not noxarray)
                if not noxarray:  # xarray decodes netCDF's string bytes by it
                    docs[vprefix]["attributes"] |= text_encoding(var)
            except UnsupportedError as exc:
                skipped.append(vprefix)
                warnings.append(f"array {var.path!r} left out of the Zarr v3 output: {exc}")
                continue
            text_warning = _text_warning(var, noxarray) if var.type in ("char", "string") else None
            if text_warning is not None:
                warnings.append(text_warning)
    if consolidated:
        root = docs[""]
        inner = {}
        for prefix, doc in docs.items():
            if not prefix:
                continue
            entry = dict(doc)
            if doc["node_type"] == "group":
                entry["consolidated_metadata"] = _empty_consolidated()
            inner[prefix] = entry
        root["consolidated_metadata"] = {**_empty_consolidated(), "metadata": inner}
    out = {}
    for prefix, doc in docs.items():
        key = join_key(prefix, ZARR_JSON)
        out[key] = utf8_json(key, doc, warnings)
    return WriteResult(out, tuple(warnings), tuple(skipped))


def _empty_consolidated() -> dict[str, Any]:
    return {"kind": "inline", "must_understand": False, "metadata": {}}


def _text_warning(var: Variable, noxarray: bool) -> str | None:
    """What a reader of a char/string array in Zarr v3 should know (None: nothing).

    Only arrays written as ``null_terminated_bytes`` are told that type is not in
    the specification; ``string`` and ``fixed_length_utf32`` are.
    """
    dtype, _, _ = data_type(var)
    unstable = isinstance(dtype, dict) and dtype.get("name") == "null_terminated_bytes"
    parts = []
    if unstable:
        parts.append(
            "written with zarr-python's fixed-width data type 'null_terminated_bytes', which "
            "is not (yet) in the Zarr v3 specification: other Zarr v3 libraries may not read it"
        )
    if var.fill_value is not None and not noxarray:
        parts.append(
            f"its fill value {var.fill_value!r} is the Zarr fill_value, but xarray masks "
            "Zarr v3 arrays by a _FillValue attribute it cannot decode for bytes, so xarray "
            "shows fill values as data"
            if unstable
            else f"its fill value {var.fill_value!r} is the Zarr fill_value, but xarray masks "
            "Zarr v3 arrays by a _FillValue attribute, which is not written for text, so "
            "xarray shows fill values as data"
        )
    return f"array {var.path!r}: " + "; ".join(parts) if parts else None
