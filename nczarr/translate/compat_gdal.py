"""GDAL 3.12's Zarr driver: the codecs and data types it cannot read (rules of
:mod:`nczarr.translate.compat_rules`, kept apart to keep that table short).

Measured with the libgdal the ``pyogrio`` wheel bundles (``tests/test_check_gdal_codecs.py``,
``tests/test_producers_gdal312.py``).
"""

from __future__ import annotations

from .compat_facts import ArrayFacts

__all__ = [
    "gdal_v2_codec",
    "gdal_v2_type",
    "gdal_v3_codec",
    "gdal_v3_dimension_names",
    "gdal_v3_type",
]

#: The v3 codecs GDAL 3.12's Zarr driver decodes (it refuses ``crc32c``,
#: ``sharding_indexed`` and zarr-python's ``numcodecs.*`` wrappers).
_GDAL_V3_CODECS = frozenset({"bytes", "endian", "transpose", "gzip", "blosc", "zstd"})

#: v3 data types GDAL 3.12 cannot open an array of.
_GDAL_V3_REFUSED_TYPES = frozenset(
    {"string", "null_terminated_bytes", "fixed_length_utf32", "variable_length_bytes", "bytes"}
)


def gdal_v3_codec(facts: ArrayFacts) -> str | None:
    """A Zarr v3 codec GDAL has no decoder for."""
    unknown = sorted({name for name, _ in facts.v3_codecs if name not in _GDAL_V3_CODECS})
    if unknown:
        return f"has no decoder for codec {', '.join(unknown)}: the array cannot be opened"
    return None


def gdal_v3_type(facts: ArrayFacts) -> str | None:
    """A Zarr v3 data type GDAL cannot open."""
    dtype = facts.data_type
    name = dtype.get("name") if isinstance(dtype, dict) else dtype
    if isinstance(name, str) and name in _GDAL_V3_REFUSED_TYPES:
        return f"has no data type {name!r}: the array cannot be opened"
    return None


def gdal_v3_dimension_names(facts: ArrayFacts) -> str | None:
    """``dimension_names`` that are no list (zarr-python takes a text of one character
    per axis for the names; GDAL refuses the array)."""
    names = facts.doc.get("dimension_names")
    if names is not None and not isinstance(names, list):
        return "dimension_names is no list: the array cannot be opened"
    return None


#: The v2 numcodecs ids GDAL 3.12's Zarr driver decodes (its documented compressors;
#: ``delta``, ``shuffle``, ``quantize`` measured in tests/test_check_gdal_codecs.py).
_GDAL_V2_CODECS = frozenset(
    {"blosc", "zlib", "gzip", "lzma", "zstd", "lz4", "delta", "shuffle", "quantize"}
)


def gdal_v2_codec(facts: ArrayFacts) -> str | None:
    """A Zarr v2 codec GDAL cannot decode, or a delta GDAL's filter fails on."""
    if facts.object_dtype:  # an object array fails on its type already
        return None
    unknown = sorted({i for i in facts.codec_ids if i not in _GDAL_V2_CODECS | {"None"}})
    if unknown:
        return f"cannot decode codec {', '.join(unknown)}: the array cannot be read"
    if any(_delta_casts(c) for c in facts.codecs):
        return "GDAL's delta filter fails on a delta whose astype differs from its dtype"
    return None


def _delta_casts(config: dict) -> bool:
    return config.get("id") == "delta" and config.get("astype", config.get("dtype")) != config.get(
        "dtype"
    )


def gdal_v2_type(facts: ArrayFacts) -> str | None:
    """A Zarr v2 dtype GDAL has no data type for (objects, datetimes)."""
    for dtype in facts.dtypes:
        kind = dtype.lstrip("<>|=")[:1]
        if kind in ("O", "M", "m"):
            return f"has no data type for {dtype!r}: the array cannot be opened"
    return None
