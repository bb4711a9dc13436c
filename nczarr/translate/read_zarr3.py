"""Pure Zarr v3 metadata (``zarr.json`` per node) -> the netCDF-4 model, read only.

The rules are those of :mod:`~nczarr.translate.read_zarr2` (same
:class:`~nczarr.translate.tree.TreeBuilder`, so dimension scoping,
anonymous dimensions and the bare-root-array case behave identically), with the
v3 spellings:

* nodes are ``zarr.json`` objects with ``node_type`` ``"group"`` or ``"array"``;
* dimension names come from ``dimension_names`` (a ``null`` entry, or no list at
  all, gives the anonymous ``_Anonymous_Dimension_<n>``); ``_ARRAY_DIMENSIONS`` in
  the attributes is honoured when ``dimension_names`` is absent;
* ``data_type`` names: ``bool`` -> ubyte, ``int8`` ... ``uint64``, ``float32``,
  ``float64``, zarr-python's fixed-width ``null_terminated_bytes`` (the chunk
  bytes of Zarr v2 ``|S<n>``, read as v2 reads that: numpy bytes,
  ``Variable.logical == "bytes"``, unless ``_NCProperties`` in the root attributes
  says netcdf-c or nczarr wrote it for netCDF text, or the array's xarray
  ``_Encoding`` attribute says UTF-8: xarray reads those as ``str``, so they are
  netCDF text, the attribute dropped from the model and written back by the pure
  Zarr writers, see :mod:`~nczarr.translate.xarray_forms`), ``string`` (variable-length
  UTF-8) and ``fixed_length_utf32`` (numpy ``<U``) -> netCDF ``string`` with
  ``text_storage`` saying how it is stored; everything else (float16, complex,
  datetimes, raw bits, extension types) is
  skipped with a warning, as v2 does;
* ``fill_value`` may be a number, ``"NaN"``/``"Infinity"``/``"-Infinity"``, a
  hex string of the IEEE bits (``"0x7fc00000"``) or a boolean;
* the codec chain must have a byte-identical Zarr v2 form
  (:func:`~nczarr.translate.codecs_v3.v2_pipeline`), else the array is skipped with
  a warning naming the codec; a ``sharding_indexed`` array is described by its inner
  chunks and codecs, with ``shards`` and ``shard_index`` set (its chunks are
  re-encoded for Zarr v2 and NCZarr, see :mod:`nczarr.reencode`; a Zarr v3 target
  keeps the shards);
* xarray writes ``_FillValue`` as an attribute (base64 of the little-endian bytes
  for floats). It is xarray's missing value: netCDF has one fill value per
  variable, so it becomes the variable's fill value, and it is kept as the
  ``_FillValue`` attribute so that every reader of every output masks it; when it
  differs from the Zarr ``fill_value`` a warning says that chunks never written now
  read as it.
  An invalid ``_FillValue`` attribute skips that array, with a warning (``convert``
  refuses it unless excluded): one odd array does not fail the whole dataset.
  Arrays with no ``_FillValue`` attribute have no missing value for zarr-python and
  xarray: :mod:`~nczarr.translate.zarr3_fills` says what fill value they keep
  (zarr's default 0 none, with or without ``dimension_names``) and warns of what the
  readers of each copy mask (xarray a Zarr v2 ``fill_value``, netCDF4 the type's
  default fill in an NCZarr copy). See docs/conversion.md, "Producers' conventions".

A ``zarr.json`` below the root that is no Zarr v3 node (not an object, another
``zarr_format``, an unknown ``node_type``) is skipped as an array, with a warning
naming it, or, when nodes lie below it, read as a group without attributes: one odd
node never fails the whole store (README, "Read any layout").

Chunk keys differ between v3 (``c/0/1``, ``c.0.1``, ``c`` for 0-d) and v2
(``0.1``, ``0`` for 0-d). :func:`chunk_key_encodings` gives each array's
:class:`ChunkKeys`, which maps one to the other; the translated view uses it.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError, UnsupportedError
from ..keys import join_key
from ..records import replace
from .attrs import json_text_safe
from .conventions import (
    ARRAY_DIMENSIONS,
    ATTR_KEYS,
    FILLVALUE,
    LAYOUT_ZARR,
    NCPROPERTIES,
    TEXT_ENCODING,
    TYPES_KEY,
    ZARR_JSON,
    ZARRAY,
    ZGROUP,
)
from .detect import FormatInfo
from .dtypes import ZarrDtype, decode_fill_value, to_float32
from .model import Attribute, Dataset, Group, Variable
from .tree import (
    Node,
    TreeBuilder,
    decode_attributes,
    discover_nodes,
    finish_dims,
    group_fqn,
    renamed_variable,
)
from .xarray_forms import bytes_as_bytes, utf8_marker
from .zarr3_arrays import (
    DATA_TYPES,
    ChunkKeys,
    ShardIndex,
    chunk_key_encodings,
    node_documents,
    parse_array_v3,
    shard_index,
)
from .zarr3_fills import without_missing_value

__all__ = [
    "read_zarr3",
    "ChunkKeys",
    "ShardIndex",
    "chunk_key_encodings",
    "parse_array_v3",
    "shard_index",
    "DATA_TYPES",
]


def _attributes(doc: dict[str, Any], key: str) -> dict[str, Any]:
    attrs = doc.get("attributes", {})
    if attrs is None:
        return {}
    if not isinstance(attrs, dict):
        raise MetadataError(f"{key!r}: 'attributes' must be a JSON object")
    return attrs


def _types(attrs: dict[str, Any]) -> dict[str, Any] | None:
    """netcdf-c's v3 drafts record attribute types in ``_nczarr_attr.types``."""
    for name in ATTR_KEYS:
        value = attrs.get(name)
        if isinstance(value, dict) and isinstance(value.get(TYPES_KEY), dict):
            return value[TYPES_KEY]
    return None


def _xarray_fill(value: Any, nc_type: str) -> Any:
    """Decode xarray's ``_FillValue`` attribute (base64 bytes for floats)."""
    if nc_type in ("float", "double") and isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) in (4, 8):
            number = struct.unpack("<f" if len(raw) == 4 else "<d", raw)[0]
            return to_float32(number) if nc_type == "float" else number
    return decode_fill_value(value, ZarrDtype(nc_type, "little", 8), raw_text=False)


def _dimensions(
    builder: TreeBuilder,
    group: str,
    doc: dict[str, Any],
    attrs: dict[str, Any],
    shape: tuple,
    key: str,
) -> tuple[str, ...]:
    what = "dimension_names"
    names = doc.get(what)
    if names is None:
        what, names = ARRAY_DIMENSIONS, attrs.get(ARRAY_DIMENSIONS)
    if names is not None:
        names = builder.usable_names(key.rpartition("/")[0], names, shape, what, nulls=True)
    if names is None:
        names = [None] * len(shape)
    return tuple(
        builder.anonymous(size, key=key)
        if name is None or name == ""
        else builder.named(group, name, size, key=key)
        for name, size in zip(names, shape, strict=True)
    )


def _replaced_fill(fqn: str, fill: Any, zarr_fill: Any) -> str:
    """The warning for an array whose ``_FillValue`` replaces a Zarr ``fill_value`` that
    is NaN or text (:func:`_absent_fill` keeps the others): chunks not stored read as
    ``fill``, which xarray shows as missing too."""
    return (
        f"array {fqn!r}: its _FillValue attribute {fill!r} is the netCDF fill value; the "
        f"Zarr fill_value {zarr_fill!r} is replaced, so chunks not stored read as {fill!r}"
    )


def _absent_fill(zarr_fill: Any, nc_type: str) -> Any:
    """What chunks the store does not hold read as, where ``_FillValue`` replaced the
    Zarr ``fill_value`` as the netCDF fill value (None: nothing to keep).

    Not only chunks never written are missing from the store: zarr-python (3, and 2
    with ``write_empty_chunks=False``) stores no chunk whose values all equal the
    ``fill_value``, and reads it back as those values (xarray then masks
    ``_FillValue``). Found by a differential hunt on int16 arrays with ``_FillValue``
    -7 and chunks of zeros, which read as missing before. A NaN ``fill_value`` is not
    kept: xarray shows NaN as missing, as the netCDF fill value is shown.
    """
    if zarr_fill is None or nc_type in ("char", "string"):
        return None
    if isinstance(zarr_fill, float) and zarr_fill != zarr_fill:
        return None
    return zarr_fill


def _variable(builder: TreeBuilder, group: str, prefix: str, name: str, doc: dict[str, Any]):
    key = join_key(prefix, ZARR_JSON)
    try:
        spec, _ = parse_array_v3(doc, key)
    except UnsupportedError as exc:
        builder.skip(prefix, str(exc))
        return None
    attrs = dict(_attributes(doc, key))
    if builder.xarray_conventions and not utf8_marker(attrs.get(TEXT_ENCODING)):
        # zarr-python's / xarray's null_terminated_bytes hold numpy bytes, as Zarr v2
        # "|S<n>" of theirs does (found by a differential hunt: read as text, silently);
        # with xarray's _Encoding "utf-8" (nczarr's copies of netCDF strings) it is text
        spec = bytes_as_bytes(spec)
    nc_type = spec.dtype.nc_type
    missing = FILLVALUE in attrs
    if missing:
        raw = attrs.pop(FILLVALUE)
        try:
            fill = None if raw is None else _xarray_fill(raw, nc_type)
        except ValueError as exc:
            # one odd array must not fail the whole dataset (convert refuses it unless
            # excluded): found by a differential hunt
            builder.skip(prefix, f"invalid _FillValue attribute {json_text_safe(raw)}: {exc}")
            return None
        absent = None
        if not _same(fill, spec.fill_value):
            absent = _absent_fill(spec.fill_value, nc_type)
            if absent is None:
                builder.warnings.append(_replaced_fill(group_fqn(prefix), fill, spec.fill_value))
        spec = replace(spec, fill_value=fill, absent_fill=absent)
    elif _gdal_nodata(attrs, spec.fill_value, nc_type):
        # GDAL (its _CRS georeferencing says so) keeps nodata as the v3 fill_value
        # only, and masks it: the producer's missing value (docs/conversion.md)
        missing = True
    else:
        # no missing value for zarr-python and xarray: see nczarr.translate.zarr3_fills
        spec, warning, unmasked = without_missing_value(spec, group_fqn(prefix))
        if warning is not None:
            builder.warnings.append(warning)
        if unmasked:
            builder.unmasked_defaults.append(group_fqn(prefix))
    dims = _dimensions(builder, group, doc, attrs, spec.shape, key)
    attributes: dict[str, Attribute] = decode_attributes(
        attrs, _types(attrs), key=key, var_type=nc_type
    )
    if missing and spec.fill_value is not None and nc_type not in ("char", "string"):
        # xarray's missing value: every reader of every output masks it (docs/conversion.md)
        attributes[FILLVALUE] = Attribute(FILLVALUE, nc_type, (spec.fill_value,))
    return builder.make_variable(name, prefix, spec, dims, not spec.shape, attributes)


#: The attribute GDAL's Zarr driver keeps an array's spatial reference in.
GDAL_CRS = "_CRS"


def _gdal_nodata(attrs: dict[str, Any], fill: Any, nc_type: str) -> bool:
    """A numeric fill value of an array GDAL wrote (a ``_CRS`` object): GDAL's nodata."""
    return (
        isinstance(attrs.get(GDAL_CRS), dict)
        and fill is not None
        and nc_type not in ("char", "string")
    )


def _same(a: Any, b: Any) -> bool:
    from .model import same_value

    if {type(a), type(b)} == {int, float}:
        return float(a) == float(b)
    return same_value(a, b)


def _group(
    builder: TreeBuilder,
    nodes: dict[str, Node],
    docs: dict[str, dict[str, Any]],
    prefix: str,
    odd: dict[str, str],
) -> Group:
    """The group at ``prefix``; ``odd``: nodes whose document is no Zarr v3 node
    (:func:`~nczarr.translate.zarr3_arrays.node_documents`), skipped as arrays."""
    node = nodes.get(prefix, Node(prefix, "group"))
    fqn = group_fqn(prefix)
    builder.dims.setdefault(fqn, {})
    key = join_key(prefix, ZARR_JSON)
    attrs = _attributes(docs.get(prefix, {}), key)
    attributes = decode_attributes(attrs, _types(attrs), key=key)
    variables: dict[str, Variable] = {}
    child_groups = []
    for child in node.children:
        child_prefix = join_key(prefix, child)
        if child_prefix in odd:
            builder.skip(child_prefix, odd[child_prefix])
        elif nodes[child_prefix].kind == "array":
            variable = builder.isolated(
                child_prefix, _variable, builder, fqn, child_prefix, child, docs[child_prefix]
            )
            if variable is not None:
                variables[child] = variable
        else:
            child_groups.append(child)
    groups = {c: _group(builder, nodes, docs, join_key(prefix, c), odd) for c in child_groups}
    name = prefix.rsplit("/", 1)[-1] if prefix else "/"
    return Group(name, fqn, {}, attributes, variables, groups)


def read_zarr3(
    meta: Mapping[str, Any], info: FormatInfo | None = None, *, name: str = "data"
) -> Dataset:
    """Read Zarr v3 metadata into the netCDF-4 model.

    Parameters
    ----------
    meta : Mapping
        Loaded metadata (:func:`nczarr.load.load_metadata`): ``zarr.json``
        objects keyed ``"zarr.json"``, ``"g/v/zarr.json"`` ...; not modified.
    info : FormatInfo, optional
        Detection result; only its layout is recorded.
    name : str
        Variable name used when the store's root is a bare array.

    Raises
    ------
    MetadataError, DimensionConflictError
    """
    odd: dict[str, str] = {}
    docs = node_documents(meta, odd)
    if "" not in docs:
        raise MetadataError(f"no root {ZARR_JSON}")
    builder = TreeBuilder(meta, nczarr=False)
    # as for Zarr v2 (read_zarr2.written_by_netcdf_c): netcdf-c and nczarr write char
    # and strings as null_terminated_bytes, and say so by _NCProperties
    root_attrs = docs[""].get("attributes")
    builder.xarray_conventions = not (isinstance(root_attrs, dict) and NCPROPERTIES in root_attrs)
    stand_in = {
        join_key(p, ZARRAY if d["node_type"] == "array" else ZGROUP): {} for p, d in docs.items()
    }
    for prefix, problem in list(odd.items()):
        if any(p.startswith(prefix + "/") for p in docs):  # a group's: its nodes are read
            del odd[prefix]
            builder.warnings.append(
                f"group {group_fqn(prefix)!r}: {problem}: read as a group without attributes"
            )
        else:  # one odd array (or empty group) never fails a whole store: skipped
            stand_in[join_key(prefix, ZARRAY)] = {}
    nodes, warnings = discover_nodes(stand_in)
    builder.warnings.extend(warnings)
    layout = info.layout if info is not None else LAYOUT_ZARR
    if docs[""]["node_type"] == "array":
        builder.warnings.append(
            f"the store's root is a bare Zarr array, not a group: exposed as variable {name!r} "
            "of the root group"
        )
        variable = _variable(builder, "/", "", name, docs[""])
        builder.unmasked_defaults = [f"/{name}" for _ in builder.unmasked_defaults]
        variables = {name: renamed_variable(variable, name)} if variable is not None else {}
        root = Group("/", "/", dict(builder.dims.get("/", {})), {}, variables, {})
        return builder.dataset(root, layout)
    root = finish_dims(_group(builder, nodes, docs, "", odd), builder)
    return builder.dataset(root, layout)
