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
  bytes of Zarr v2 ``|S<n>``, read as v2 reads that), ``string`` (variable-length
  UTF-8) and ``fixed_length_utf32`` (numpy ``<U``) -> netCDF ``string`` with
  ``text_storage`` saying how it is stored; everything else (float16, complex,
  datetimes, raw bits, extension types) is
  skipped with a warning, as v2 does;
* ``fill_value`` may be a number, ``"NaN"``/``"Infinity"``/``"-Infinity"``, a
  hex string of the IEEE bits (``"0x7fc00000"``) or a boolean;
* the codec chain must have a byte-identical Zarr v2 form
  (:func:`~nczarr.translate.codecs_v3.v2_pipeline`), else the array is skipped with
  a warning naming the codec; a ``sharding_indexed`` array is described by its inner
  chunks and codecs, with ``shards`` set (its chunks are re-encoded, see
  :mod:`nczarr.reencode`);
* xarray writes ``_FillValue`` as an attribute (base64 of the little-endian bytes
  for floats). It is xarray's missing value: netCDF has one fill value per
  variable, so it becomes the variable's fill value, and it is kept as the
  ``_FillValue`` attribute so that every reader of every output masks it; when it
  differs from the Zarr ``fill_value`` a warning says that chunks never written now
  read as it.
  Numeric arrays with ``dimension_names`` (xarray writes them on every array) but no
  ``_FillValue`` attribute have no missing value for xarray, while a v2 / netCDF
  fill value would mask data equal to it (an xarray time axis starting at 0 would
  read as NaT). Zarr's default fill value 0 therefore becomes ``None``: without a
  fill value zarr-python and netcdf-c read chunks never written as 0, the
  producer's value. Any other fill value (``-1`` from zarr-python) is what chunks
  never written hold, so it is kept as the fill value but is no missing value (no
  ``_FillValue`` attribute), with a warning saying which readers of the copies mask
  it (only xarray on a Zarr v2 copy). See docs/conversion.md, "Producers' conventions".

Chunk keys differ between v3 (``c/0/1``, ``c.0.1``, ``c`` for 0-d) and v2
(``0.1``, ``0`` for 0-d). :func:`chunk_key_encodings` gives each array's
:class:`ChunkKeys`, which maps one to the other; the translated view uses it.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import MetadataError, UnsupportedError
from ..keys import join_key
from .attrs import json_text_safe
from .codecs_v3 import codec_name, v2_pipeline
from .conventions import (
    ARRAY_DIMENSIONS,
    ATTR_KEYS,
    FILLVALUE,
    LAYOUT_ZARR,
    TYPES_KEY,
    ZARR_JSON,
    ZARRAY,
    ZGROUP,
)
from .detect import FormatInfo
from .dtypes import ZarrDtype, decode_fill_value, fill_value_note, to_float32
from .model import Attribute, Dataset, Group, Variable
from .tree import (
    ArraySpec,
    Node,
    TreeBuilder,
    check_extent,
    decode_attributes,
    discover_nodes,
    finish_dims,
    group_fqn,
    renamed_variable,
)

__all__ = [
    "read_zarr3",
    "ChunkKeys",
    "ShardIndex",
    "chunk_key_encodings",
    "parse_array_v3",
    "shard_index",
    "DATA_TYPES",
]

#: v3 ``data_type`` -> (netCDF type, item size).
DATA_TYPES: dict[str, tuple[str, int]] = {
    "bool": ("ubyte", 1),
    "int8": ("byte", 1),
    "uint8": ("ubyte", 1),
    "int16": ("short", 2),
    "uint16": ("ushort", 2),
    "int32": ("int", 4),
    "uint32": ("uint", 4),
    "int64": ("int64", 8),
    "uint64": ("uint64", 8),
    "float32": ("float", 4),
    "float64": ("double", 8),
}


@dataclass(frozen=True)
class ChunkKeys:
    """One array's v3 chunk key encoding and the v2 keys it is shown under.

    ``name`` is ``"default"`` (``c/0/1``; ``c`` for 0-d) or ``"v2"`` (``0.1``; ``0``
    for 0-d); ``separator`` is ``"/"`` or ``"."``. The v2 target uses
    ``target_separator`` (``"."`` for default-encoded arrays; the source's own for
    ``"v2"``, whose keys are then unchanged).
    """

    name: str
    separator: str
    ndim: int

    @property
    def target_separator(self) -> str:
        return self.separator if self.name == "v2" else "."

    @property
    def identical(self) -> bool:
        """Whether source and target keys are the same strings."""
        return self.name == "v2"

    def _parse(self, rest: str, separator: str, prefix: str | None) -> tuple[int, ...] | None:
        if prefix is not None:
            if self.ndim == 0:
                return () if rest == prefix else None
            if not rest.startswith(prefix + separator):
                return None
            rest = rest[len(prefix) + 1 :]
        elif self.ndim == 0:
            return () if rest == "0" else None
        parts = rest.split(separator)
        if len(parts) != self.ndim or not all(p.isdigit() and p.isascii() for p in parts):
            return None
        return tuple(int(p) for p in parts)

    def source_coords(self, rest: str) -> tuple[int, ...] | None:
        """Chunk coordinates of a source key relative to the array, or None."""
        prefix = "c" if self.name == "default" else None
        return self._parse(rest, self.separator, prefix)

    def target_coords(self, rest: str) -> tuple[int, ...] | None:
        """Chunk coordinates of a target (v2) key relative to the array, or None."""
        return self._parse(rest, self.target_separator, None)

    def source(self, coords: tuple[int, ...]) -> str:
        """The source key (relative to the array) of chunk ``coords``."""
        text = self.separator.join(str(c) for c in coords)
        if self.name == "default":
            return f"c{self.separator}{text}" if coords else "c"
        return text if coords else "0"

    def target(self, coords: tuple[int, ...]) -> str:
        """The target (v2) key (relative to the array) of chunk ``coords``."""
        return self.target_separator.join(str(c) for c in coords) if coords else "0"


def _chunk_keys(doc: dict[str, Any], key: str, ndim: int) -> ChunkKeys:
    encoding = doc.get("chunk_key_encoding", {"name": "default"})
    if isinstance(encoding, str):
        encoding = {"name": encoding}
    if not isinstance(encoding, dict):
        raise MetadataError(f"{key!r}: invalid chunk_key_encoding {json_text_safe(encoding)}")
    name = encoding.get("name")
    config = _configuration(encoding, "chunk_key_encoding", key)
    if name not in ("default", "v2"):
        raise UnsupportedError(f"chunk_key_encoding {name!r} is not supported")
    separator = config.get("separator", "/" if name == "default" else ".")
    if separator not in ("/", "."):
        raise MetadataError(f"{key!r}: chunk key separator must be '/' or '.', got {separator!r}")
    return ChunkKeys(name, separator, ndim)


def _configuration(entry: dict[str, Any], what: str, key: str) -> dict[str, Any]:
    """The ``configuration`` object of a named entry (``{}`` when absent or null)."""
    config = entry.get("configuration")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise MetadataError(
            f"{key!r}: {what}.configuration must be a JSON object, got {json_text_safe(config)}"
        )
    return config


def _int_tuple(value: Any, what: str, key: str, *, positive: bool) -> tuple[int, ...]:
    low = 1 if positive else 0
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value
    ):
        raise MetadataError(f"{key!r}: {what!r} must be a list of integers >= {low}, got {value!r}")
    check_extent(tuple(value), what, key)
    return tuple(value)


#: zarr-python's fixed-width bytes type (numpy ``S<n>``): the Zarr v2 ``|S<n>``.
BYTES_DATA_TYPE = "null_terminated_bytes"


def _data_type(value: Any) -> ZarrDtype:
    """The data type (byte order still little: the ``bytes`` codec decides)."""
    config: Any = {}
    if isinstance(value, dict):
        value, config = value.get("name"), value.get("configuration") or {}
    if not isinstance(value, str):
        raise MetadataError(f"data_type must be a name, got {json_text_safe(value)}")
    if value == BYTES_DATA_TYPE:
        # Fixed-width bytes, the same chunk bytes as Zarr v2 "|S<n>" (what nczarr's
        # v3 writer emits for char and strings): read as pure Zarr v2 reads "|S<n>".
        width = config.get("length_bytes") if isinstance(config, dict) else None
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise MetadataError(f"data_type {value!r}: invalid length_bytes {width!r}")
        return ZarrDtype("string", "little", width, maxstrlen=width)
    if value == "string":  # zarr-python 3's variable-length UTF-8 strings
        return ZarrDtype("string", "little", 1, text_storage="vlen-utf8")
    if value == "fixed_length_utf32":  # numpy "<U<n>" (what xarray writes for text)
        size = config.get("length_bytes") if isinstance(config, dict) else None
        if isinstance(size, bool) or not isinstance(size, int) or size < 4 or size % 4:
            raise MetadataError(f"data_type {value!r}: invalid length_bytes {size!r}")
        return ZarrDtype("string", "little", size, maxstrlen=size // 4, text_storage="unicode")
    found = DATA_TYPES.get(value)
    if found is None:
        raise UnsupportedError(f"data_type {value!r} has no netCDF-4 equivalent")
    return ZarrDtype(found[0], "little", found[1], logical="bool" if value == "bool" else None)


def _sharding(codecs: Any, key: str) -> tuple[tuple[int, ...], Any] | None:
    """``(inner chunk shape, inner codecs)`` of an array sharded with ``sharding_indexed``
    (its only array->bytes codec), or None when the array is not sharded."""
    if not isinstance(codecs, list) or not codecs:
        return None
    name, config = codec_name(codecs[0])
    if name != "sharding_indexed":
        return None
    if len(codecs) != 1:
        raise UnsupportedError("codecs after 'sharding_indexed' are not supported")
    inner = _int_tuple(config.get("chunk_shape"), "sharding chunk_shape", key, positive=True)
    shard_index(config)  # the index must be one zarr-python and the re-encoder read
    codecs = config.get("codecs", [{"name": "bytes"}])
    if not isinstance(codecs, list) or not codecs:
        raise MetadataError(f"sharding 'codecs' must be a non-empty list, got {codecs!r}")
    return inner, codecs


@dataclass(frozen=True)
class ShardIndex:
    """Where and how a ``sharding_indexed`` shard stores its index.

    Attributes
    ----------
    location : {"start", "end"}
    endian : {"little", "big"}
        Byte order of the ``(offset, nbytes)`` pairs (unsigned 64-bit).
    checksum : bool
        Whether a crc32c of the pairs follows them (4 bytes, little-endian).
    """

    location: str
    endian: str
    checksum: bool

    def size(self, chunks: int) -> int:
        """Bytes of the index of a shard of ``chunks`` inner chunks."""
        return 16 * chunks + (4 if self.checksum else 0)


def shard_index(config: Mapping[str, Any]) -> ShardIndex:
    """The index of a ``sharding_indexed`` configuration, validated.

    Only what the Zarr v3 sharding specification allows: ``index_location`` ``"start"``
    or ``"end"`` (default), ``index_codecs`` a ``bytes`` codec optionally followed by
    ``crc32c``.

    Raises
    ------
    MetadataError
        Anything else, saying what.
    """
    location = config.get("index_location", "end")
    if location not in ("start", "end"):
        raise MetadataError(
            f"sharding index_location must be 'start' or 'end', got {json_text_safe(location)}"
        )
    codecs = config.get("index_codecs", [{"name": "bytes"}, {"name": "crc32c"}])
    if not isinstance(codecs, list) or not codecs:
        raise MetadataError(
            f"sharding index_codecs must be a non-empty list, got {json_text_safe(codecs)}"
        )
    names = [codec_name(c) for c in codecs]
    first, config0 = names[0]
    endian = config0.get("endian", "little")
    if first != "bytes" or endian not in ("little", "big"):
        raise MetadataError(
            "sharding index_codecs must start with the 'bytes' codec (endian 'little' or "
            f"'big'), got {json_text_safe(codecs[0])}"
        )
    rest = [name for name, _ in names[1:]]
    if rest not in ([], ["crc32c"]):
        raise MetadataError(
            f"sharding index_codecs after 'bytes' may only be 'crc32c', got {rest!r}"
        )
    return ShardIndex(location, endian, bool(rest))


def _fill_value(value: Any, dtype: ZarrDtype) -> Any:
    if (
        isinstance(value, str)
        and value.lower().startswith("0x")
        and dtype.nc_type in ("float", "double")
    ):
        try:
            raw = int(value, 16).to_bytes(dtype.itemsize, "big")
        except (ValueError, OverflowError):
            raise ValueError(f"{value!r} is not {dtype.itemsize} bytes of hex") from None
        number = struct.unpack(">f" if dtype.itemsize == 4 else ">d", raw)[0]
        return to_float32(number) if dtype.nc_type == "float" else number
    # zarr-python writes the fill value of its string data types as plain text
    return decode_fill_value(value, dtype, raw_text=dtype.text_storage is not None)


def parse_array_v3(doc: Any, key: str) -> tuple[ArraySpec, ChunkKeys]:
    """Validate one array ``zarr.json`` and describe it in v2 terms.

    Raises
    ------
    UnsupportedError
        Data type, chunk grid, storage transformer or codec without a netCDF /
        byte-identical Zarr v2 equivalent (callers skip the array).
    MetadataError
        Anything malformed, naming ``key``.
    """
    for required in ("shape", "data_type", "chunk_grid", "codecs"):
        if required not in doc:
            raise MetadataError(f"{key!r}: missing {required!r}")
    shape = _int_tuple(doc["shape"], "shape", key, positive=False)
    grid = doc["chunk_grid"]
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        name = grid.get("name") if isinstance(grid, dict) else grid
        raise UnsupportedError(f"chunk_grid {name!r} is not supported (only 'regular')")
    chunks = _int_tuple(
        _configuration(grid, "chunk_grid", key).get("chunk_shape"),
        "chunk_shape",
        key,
        positive=True,
    )
    if len(chunks) != len(shape):
        raise MetadataError(f"{key!r}: chunk_shape {list(chunks)} and shape {list(shape)} differ")
    if doc.get("storage_transformers"):
        raise UnsupportedError("storage_transformers are not supported")
    shards: tuple[int, ...] | None = None
    try:
        dtype = _data_type(doc["data_type"])
        codecs = doc["codecs"]
        sharded = _sharding(codecs, key)
        if sharded is not None:
            shards, (chunks, codecs) = chunks, sharded
            if len(chunks) != len(shape) or any(s % c for s, c in zip(shards, chunks, strict=True)):
                raise MetadataError(
                    f"sharding chunk_shape {list(chunks)} does not divide the shard shape "
                    f"{list(shards)}"
                )
        pipeline = v2_pipeline(codecs, ndim=len(shape), itemsize=dtype.itemsize)
    except MetadataError as exc:
        raise MetadataError(f"{key!r}: {exc}") from None
    vlen = bool(pipeline.filters) and pipeline.filters[0]["id"] == "vlen-utf8"
    if vlen != (dtype.text_storage == "vlen-utf8"):
        raise UnsupportedError(
            "data_type 'string' needs the array->bytes codec 'vlen-utf8'"
            if not vlen
            else f"codec 'vlen-utf8' is for data_type 'string', not {doc['data_type']!r}"
        )
    # byte order matters for numbers and UTF-32 text, not for bytes
    ordered = dtype.nc_type != "string" or dtype.text_storage == "unicode"
    dtype = replace(dtype, endian=pipeline.endian if ordered else "little")
    try:
        fill = _fill_value(doc.get("fill_value"), dtype)
    except ValueError as exc:
        raise MetadataError(
            f"{key!r}: invalid fill_value {json_text_safe(doc.get('fill_value'))} "
            f"for data_type {doc['data_type']!r}: {exc}"
        ) from None
    keys = _chunk_keys(doc, key, len(shape))
    note = fill_value_note(doc.get("fill_value"), dtype, fill)
    spec = ArraySpec(
        shape=shape,
        chunks=chunks,
        dtype=dtype,
        fill_value=fill,
        compressor=pipeline.compressor,
        filters=pipeline.filters,
        order=pipeline.order,
        dimension_separator=keys.target_separator,
        shards=shards,
        warnings=() if note is None else (f"{key!r}: {note}",),
    )
    return spec, keys


def _docs(meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every node: prefix -> its ``zarr.json`` object."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in meta.items():
        prefix, _, base = key.rpartition("/")
        if base != ZARR_JSON:
            continue
        if not isinstance(value, dict):
            raise MetadataError(f"{key!r} must hold a JSON object, got {type(value).__name__}")
        if value.get("zarr_format") != 3:
            raise MetadataError(f"{key!r}: zarr_format must be 3, got {value.get('zarr_format')!r}")
        if value.get("node_type") not in ("group", "array"):
            raise MetadataError(
                f"{key!r}: node_type must be 'group' or 'array', got {value.get('node_type')!r}"
            )
        out[prefix] = value
    return out


def chunk_key_encodings(meta: Mapping[str, Any]) -> dict[str, ChunkKeys]:
    """Array prefix -> :class:`ChunkKeys` for every v3 array whose encoding is understood."""
    out: dict[str, ChunkKeys] = {}
    for prefix, doc in _docs(meta).items():
        if doc["node_type"] != "array" or not isinstance(doc.get("shape"), list):
            continue
        try:
            out[prefix] = _chunk_keys(doc, join_key(prefix, ZARR_JSON), len(doc["shape"]))
        except (UnsupportedError, MetadataError):
            continue
    return out


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
    names = doc.get("dimension_names")
    if names is None:
        names = attrs.get(ARRAY_DIMENSIONS)
    if names is None:
        names = [None] * len(shape)
    if not isinstance(names, list) or len(names) != len(shape):
        raise MetadataError(
            f"{key!r}: dimension_names {json_text_safe(names)} must list one name (or null) "
            f"per dimension of shape {list(shape)}"
        )
    out = []
    for name, size in zip(names, shape, strict=True):
        if name is None or name == "":
            out.append(builder.anonymous(size, key=key))
        elif isinstance(name, str) and "/" not in name:
            out.append(builder.named(group, name, size, key=key))
        else:
            raise MetadataError(f"{key!r}: invalid dimension name {json_text_safe(name)}")
    return tuple(out)


def _variable(builder: TreeBuilder, group: str, prefix: str, name: str, doc: dict[str, Any]):
    key = join_key(prefix, ZARR_JSON)
    try:
        spec, _ = parse_array_v3(doc, key)
    except UnsupportedError as exc:
        builder.skip(prefix, str(exc))
        return None
    attrs = dict(_attributes(doc, key))
    nc_type = spec.dtype.nc_type
    missing = FILLVALUE in attrs
    if missing:
        raw = attrs.pop(FILLVALUE)
        try:
            fill = None if raw is None else _xarray_fill(raw, nc_type)
        except ValueError as exc:
            raise MetadataError(
                f"{key!r}: invalid _FillValue attribute {json_text_safe(raw)}: {exc}"
            ) from None
        if not _same(fill, spec.fill_value):
            builder.warnings.append(
                f"array {group_fqn(prefix)!r}: its _FillValue attribute {fill!r} is the netCDF "
                f"fill value; the Zarr fill_value {spec.fill_value!r} is replaced, so chunks "
                f"never written read as {fill!r}"
            )
        spec = replace(spec, fill_value=fill)
    elif _gdal_nodata(attrs, spec.fill_value, nc_type):
        # GDAL (its _CRS georeferencing says so) keeps nodata as the v3 fill_value
        # only, and masks it: the producer's missing value (docs/conversion.md)
        missing = True
    elif doc.get("dimension_names") is not None and (
        (nc_type != "string" and _is_zero(spec.fill_value))
        # zarr-python's default for its own string types ("<U", variable-length)
        or (spec.dtype.text_storage is not None and spec.fill_value == "")
    ):
        # xarray (which always writes dimension_names) keeps its missing value in the
        # _FillValue attribute and leaves zarr's default fill_value 0 otherwise. A v2 /
        # netCDF fill value *is* a missing value (an xarray time axis starting at 0
        # would read as NaT), and no fill value reads chunks never written as 0 in
        # zarr-python and netcdf-c alike: the same values, without the mask.
        spec = replace(spec, fill_value=None)
    elif (
        doc.get("dimension_names") is not None
        and nc_type != "string"
        and spec.fill_value is not None
        and not _is_nan(spec.fill_value)
    ):
        builder.warnings.append(
            f"array {group_fqn(prefix)!r}: its Zarr v3 fill_value {spec.fill_value!r} (no "
            f"_FillValue attribute) is not a missing value for zarr-python and xarray; it "
            f"is kept as the fill value, so chunks never written read as {spec.fill_value!r}. "
            f"netCDF readers of an NCZarr copy and xarray reading a Zarr v3 copy do not mask "
            f"it either, but xarray masks the fill_value of a Zarr v2 copy, and GDAL reads "
            f"it as nodata (masked)"
        )
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


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _is_zero(value: Any) -> bool:
    """Zarr's default fill value: 0, 0.0 (not -0.0) or False."""
    if isinstance(value, float):
        return value == 0 and math.copysign(1.0, value) > 0
    return isinstance(value, int) and value == 0


def _same(a: Any, b: Any) -> bool:
    from .model import same_value

    if {type(a), type(b)} == {int, float}:
        return float(a) == float(b)
    return same_value(a, b)


def _group(
    builder: TreeBuilder, nodes: dict[str, Node], docs: dict[str, dict[str, Any]], prefix: str
) -> Group:
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
        if nodes[child_prefix].kind == "array":
            variable = _variable(builder, fqn, child_prefix, child, docs[child_prefix])
            if variable is not None:
                variables[child] = variable
        else:
            child_groups.append(child)
    groups = {c: _group(builder, nodes, docs, join_key(prefix, c)) for c in child_groups}
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
    docs = _docs(meta)
    if "" not in docs:
        raise MetadataError(f"no root {ZARR_JSON}")
    builder = TreeBuilder(meta, nczarr=False)
    stand_in = {
        join_key(p, ZARRAY if d["node_type"] == "array" else ZGROUP): {} for p, d in docs.items()
    }
    nodes, warnings = discover_nodes(stand_in)
    builder.warnings.extend(warnings)
    layout = info.layout if info is not None else LAYOUT_ZARR
    if docs[""]["node_type"] == "array":
        builder.warnings.append(
            f"the store's root is a bare Zarr array, not a group: exposed as variable {name!r} "
            "of the root group"
        )
        variable = _variable(builder, "/", "", name, docs[""])
        variables = {name: renamed_variable(variable, name)} if variable is not None else {}
        root = Group("/", "/", dict(builder.dims.get("/", {})), {}, variables, {})
        return Dataset(root, layout, tuple(builder.warnings), tuple(builder.skipped))
    root = finish_dims(_group(builder, nodes, docs, ""), builder)
    return Dataset(root, layout, tuple(builder.warnings), tuple(builder.skipped))
