"""One Zarr v3 array document: its netCDF type, codecs, fill value, chunk keys, shards (pure).

:func:`parse_array_v3` turns a ``zarr.json`` of ``node_type`` ``"array"`` into the
:class:`~nczarr.translate.tree.ArraySpec` the readers share, and its chunk key
encoding (:class:`ChunkKeys`: v3 ``c/0/1``, ``c.0.1``, ``c`` for 0-d, to v2 ``0.1``,
``0``); :func:`shard_index` reads a sharding codec's index layout. The tree (groups,
dimensions, attributes) is :mod:`~nczarr.translate.read_zarr3`'s.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError, UnsupportedError
from ..keys import join_key
from ..records import record, replace
from .attrs import json_text_safe
from .codecs_v3 import codec_name, v2_pipeline
from .conventions import (
    ZARR_JSON,
)
from .dtypes import ZarrDtype, decode_fill_value, fill_value_note, to_float32
from .jsontext import kind_of
from .tree import (
    ArraySpec,
    check_extent,
)

__all__ = [
    "BYTES_DATA_TYPE",
    "ChunkKeys",
    "DATA_TYPES",
    "ShardIndex",
    "chunk_key_encodings",
    "node_documents",
    "parse_array_v3",
    "shard_index",
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


@record
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


def _sharding(codecs: Any, key: str) -> tuple[tuple[int, ...], Any, dict[str, Any]] | None:
    """``(inner chunk shape, inner codecs, index)`` of an array sharded with
    ``sharding_indexed`` (its only array->bytes codec), or None when the array is not
    sharded. ``index``: its ``index_location`` and ``index_codecs``, defaults filled in."""
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
    index = {
        "index_location": config.get("index_location", "end"),
        "index_codecs": config.get("index_codecs", [{"name": "bytes"}, {"name": "crc32c"}]),
    }
    return inner, codecs, index


@record
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
    index: dict[str, Any] | None = None
    try:
        dtype = _data_type(doc["data_type"])
        codecs = doc["codecs"]
        sharded = _sharding(codecs, key)
        if sharded is not None:
            shards, (chunks, codecs, index) = chunks, sharded
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
        shard_index=index,
        warnings=() if note is None else (f"{key!r}: {note}",),
    )
    return spec, keys


def node_documents(
    meta: Mapping[str, Any], odd: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Every node: prefix -> its ``zarr.json`` object.

    ``odd``: where a node other than the root whose document is not a Zarr v3 node
    (not an object, another ``zarr_format``, a ``node_type`` neither ``"group"`` nor
    ``"array"``) is recorded (prefix -> what is wrong) and left out, instead of
    failing the whole store (the reader skips it with a warning naming it).

    Raises
    ------
    MetadataError
        Such a document, at the root, or anywhere without ``odd``.
    """
    out: dict[str, dict[str, Any]] = {}
    for key, value in meta.items():
        prefix, _, base = key.rpartition("/")
        if base != ZARR_JSON:
            continue
        problem = _node_problem(value, key)
        if problem is None:
            out[prefix] = value
        elif odd is not None and prefix:
            odd[prefix] = problem
        else:
            raise MetadataError(problem)
    return out


def _node_problem(value: Any, key: str) -> str | None:
    """What makes ``value``, the object at ``key``, no Zarr v3 node document (None: it
    is one)."""
    if not isinstance(value, dict):
        return f"{key!r} must hold a JSON object, got {kind_of(value)}"
    if value.get("zarr_format") != 3:
        return f"{key!r}: zarr_format must be 3, got {value.get('zarr_format')!r}"
    if value.get("node_type") not in ("group", "array"):
        return f"{key!r}: node_type must be 'group' or 'array', got {value.get('node_type')!r}"
    return None


def chunk_key_encodings(meta: Mapping[str, Any]) -> dict[str, ChunkKeys]:
    """Array prefix -> :class:`ChunkKeys` for every v3 array whose encoding is understood."""
    out: dict[str, ChunkKeys] = {}
    for prefix, doc in node_documents(meta, {}).items():
        if doc["node_type"] != "array" or not isinstance(doc.get("shape"), list):
            continue
        try:
            out[prefix] = _chunk_keys(doc, join_key(prefix, ZARR_JSON), len(doc["shape"]))
        except (UnsupportedError, MetadataError):
            continue
    return out
