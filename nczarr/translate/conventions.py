"""Every reserved NCZarr name and JSON shape, per format generation, in one table.

Readers of every generation and the writers share these constants instead of
scattering string literals. Generations (see ``docs/netcdf-c-layouts.md``):

* ``nczarr-v1``: netcdf-c 4.8.0 and 2021 development builds, separate objects
  (``/.nczarr``, ``.nczgroup``, ``.nczvar``/``.nczarray``, ``.nczattr``/``.nczattrs``),
  attribute types as decimal ``nc_type`` codes.
* ``nczarr-v2-keys``: netcdf-c 4.8.1-4.9.2, ``_NCZARR_*``/``_nczarr_*`` keys inside
  ``.zgroup``/``.zarray`` (``dims``, ``vars``, ``dimrefs``).
* ``nczarr-v2``: netcdf-c 4.9.3+, everything in ``.zattrs`` (current).
* ``zarr``: pure Zarr.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "LAYOUT_V1",
    "LAYOUT_V2_KEYS",
    "LAYOUT_V2",
    "LAYOUT_ZARR",
    "LAYOUT_NETCDF4",
    "DEFAULT_FILLS",
    "LAYOUTS",
    "ZGROUP",
    "ZARRAY",
    "ZATTRS",
    "ZMETADATA",
    "ZARR_JSON",
    "ZARR_METADATA_NAMES",
    "RESERVED_NODE_NAMES",
    "V1_SUPERBLOCK",
    "V1_GROUP",
    "V1_ARRAY_NAMES",
    "V1_ATTR_NAMES",
    "V1_OBJECT_NAMES",
    "V1_TYPE_CODES",
    "SUPERBLOCK_KEYS",
    "GROUP_KEYS",
    "ARRAY_KEYS",
    "ATTR_KEYS",
    "DIMENSIONS_ALT",
    "ARRAYS_ALT",
    "GROUPS_ALT",
    "DIMREFS_ALT",
    "TYPES_KEY",
    "SUPERBLOCK",
    "GROUP",
    "ARRAY",
    "ATTR",
    "NCZARR_FORMAT_VERSION",
    "JSON_TYPE",
    "ARRAY_DIMENSIONS",
    "NCPROPERTIES",
    "NETCDF4_BOOKKEEPING",
    "FILLVALUE",
    "TEXT_ENCODING",
    "DEFAULT_MAXSTRLEN",
    "SCALAR_DIM",
    "ANONYMOUS_DIM_PREFIX",
    "HIDDEN_ATTRIBUTES",
    "NC_TO_DTYPE",
    "DTYPE_TO_NC",
    "CHAR_DTYPE_NCZARR",
    "CHAR_DTYPE_ZARR",
    "LEGACY_CHAR_DTYPES",
    "NETCDF_C_CODECS",
    "FORMATS",
]

# ----------------------------------------------------------------- layouts
LAYOUT_V1: Final = "nczarr-v1"
LAYOUT_V2_KEYS: Final = "nczarr-v2-keys"
LAYOUT_V2: Final = "nczarr-v2"
LAYOUT_ZARR: Final = "zarr"
LAYOUTS: Final = (LAYOUT_V1, LAYOUT_V2_KEYS, LAYOUT_V2, LAYOUT_ZARR)
#: The layout of a netCDF-4 (HDF5) file read as a source (``nczarr.ncfile``; not a store).
LAYOUT_NETCDF4: Final = "netcdf4"

#: netCDF's default fill values (netcdf.h ``NC_FILL_*``), used when a variable has no
#: ``_FillValue``; float's is the float32 nearest 9.9692099683868690e+36.
DEFAULT_FILLS: dict[str, object] = {
    "byte": -127,
    "ubyte": 255,
    "short": -32767,
    "ushort": 65535,
    "int": -2147483647,
    "uint": 4294967295,
    "int64": -9223372036854775806,
    "uint64": 18446744073709551614,
    "float": 9.969209968386869e36,
    "double": 9.969209968386869e36,
    "char": "",
    "string": "",
}

# ------------------------------------------------------------ zarr v2 objects
ZGROUP: Final = ".zgroup"
ZARRAY: Final = ".zarray"
ZATTRS: Final = ".zattrs"
ZMETADATA: Final = ".zmetadata"
ZARR_JSON: Final = "zarr.json"
ZARR_METADATA_NAMES: Final = frozenset({ZGROUP, ZARRAY, ZATTRS, ZMETADATA})

# ------------------------------------------------------- V1 separate objects
V1_SUPERBLOCK: Final = ".nczarr"  # at the root only
V1_GROUP: Final = ".nczgroup"
V1_ARRAY_NAMES: Final = (".nczvar", ".nczarray")  # 4.8.0, then 2021 dev builds
V1_ATTR_NAMES: Final = (".nczattr", ".nczattrs")
V1_OBJECT_NAMES: Final = frozenset({V1_SUPERBLOCK, V1_GROUP, *V1_ARRAY_NAMES, *V1_ATTR_NAMES})

#: Zarr version of a target -> the names no group or array of it may have: its metadata
#: objects live under the same key as such a node (``zarr.json`` beside ``zarr.json/``),
#: so one of the two could not be written. Zarr v2 and NCZarr also reserve netcdf-c's
#: legacy objects, which netcdf-c 4.10 still looks for.
RESERVED_NODE_NAMES: Final = {
    2: frozenset({*ZARR_METADATA_NAMES, *V1_OBJECT_NAMES}),
    3: frozenset({ZARR_JSON}),
}

#: V1 attribute type table: decimal nc_type ids.
V1_TYPE_CODES: Final = {
    "1": "byte",
    "2": "char",
    "3": "short",
    "4": "int",
    "5": "float",
    "6": "double",
    "7": "ubyte",
    "8": "ushort",
    "9": "uint",
    "10": "int64",
    "11": "uint64",
    "12": "string",
}

# --------------------------------------------------- V2 keys (both placements)
SUPERBLOCK_KEYS: Final = ("_nczarr_superblock", "_NCZARR_SUPERBLOCK")
GROUP_KEYS: Final = ("_nczarr_group", "_NCZARR_GROUP")
ARRAY_KEYS: Final = ("_nczarr_array", "_NCZARR_ARRAY")
ATTR_KEYS: Final = ("_nczarr_attr", "_NCZARR_ATTR")

# Alternative spellings of the keys inside those dicts (current first).
DIMENSIONS_ALT: Final = ("dimensions", "dims")
ARRAYS_ALT: Final = ("arrays", "vars")
GROUPS_ALT: Final = ("groups",)
DIMREFS_ALT: Final = ("dimension_references", "dimrefs")
TYPES_KEY: Final = "types"

# What the current writer emits.
SUPERBLOCK: Final = "_nczarr_superblock"
GROUP: Final = "_nczarr_group"
ARRAY: Final = "_nczarr_array"
ATTR: Final = "_nczarr_attr"
NCZARR_FORMAT_VERSION: Final = "2.0.0"
JSON_TYPE: Final = "|J0"  # type code of the _nczarr_* dicts themselves

# ----------------------------------------------------------- xarray / netCDF
ARRAY_DIMENSIONS: Final = "_ARRAY_DIMENSIONS"
NCPROPERTIES: Final = "_NCProperties"
FILLVALUE: Final = "_FillValue"
#: xarray's attribute naming the text encoding of fixed-width bytes (its
#: ``EncodedStringCoder``): ``"utf-8"`` makes xarray read ``|S<n>`` as ``str``.
TEXT_ENCODING: Final = "_Encoding"
DEFAULT_MAXSTRLEN: Final = 128
SCALAR_DIM: Final = "_scalar_"

#: Our name for anonymous dimensions of pure Zarr (the spec's; netcdf-c 4.10 says
#: ``_Anonymous_Dim_<n>``).
ANONYMOUS_DIM_PREFIX: Final = "_Anonymous_Dimension_"

#: netcdf-c's dimension bookkeeping in a netCDF-4 (HDF5) file, and its provenance.
_NETCDF4_DIMENSIONS = frozenset(
    {
        NCPROPERTIES,
        "_Netcdf4Dimid",
        "_Netcdf4Coordinates",
        "DIMENSION_LIST",
        "REFERENCE_LIST",
        "CLASS",
        "NAME",
    }
)
#: The attributes netcdf-c keeps in a netCDF-4 (HDF5) file for its own bookkeeping:
#: dimension ids and scales, provenance, the classic model's marks.
NETCDF4_BOOKKEEPING: Final = _NETCDF4_DIMENSIONS | {
    "_nc3_strict",
    "_IsNetcdf4",
    "_SuperblockVersion",
}

#: Attribute names that never become netCDF attributes (hidden/reserved on read).
HIDDEN_ATTRIBUTES: Final = frozenset(
    {
        *SUPERBLOCK_KEYS,
        *GROUP_KEYS,
        *ARRAY_KEYS,
        *ATTR_KEYS,
        ARRAY_DIMENSIONS,
        *_NETCDF4_DIMENSIONS,
    }
)

# -------------------------------------------------------------------- types
#: netCDF type -> (numpy kind+size without byte order, item size)
NC_TO_DTYPE: Final = {
    "byte": "i1",
    "ubyte": "u1",
    "short": "i2",
    "ushort": "u2",
    "int": "i4",
    "uint": "u4",
    "int64": "i8",
    "uint64": "u8",
    "float": "f4",
    "double": "f8",
}
DTYPE_TO_NC: Final = {v: k for k, v in NC_TO_DTYPE.items()}

#: Zarr dtype of a netCDF char variable (NCZarr) and its pure-Zarr spelling.
CHAR_DTYPE_NCZARR: Final = ">S1"
CHAR_DTYPE_ZARR: Final = "|S1"
LEGACY_CHAR_DTYPES: Final = frozenset({"<U1", ">U1", "|U1"})

#: Codec ids netcdf-c 4.10 can decode (its standard filter plugins: deflate, shuffle,
#: fletcher32, szip, bzip2, zstd, blosc). Data under any other codec is invisible to
#: netcdf-c (NC_ENOFILTER), however correct the metadata is.
NETCDF_C_CODECS: Final = frozenset(
    {"zlib", "shuffle", "fletcher32", "szip", "bz2", "zstd", "blosc"}
)

#: Formats nczarr writes: current NCZarr (netcdf-c 4.9.3+ layout) and pure Zarr.
FORMATS: Final = ("nczarr", "zarr")
