"""Reader quirks on one array: a table, one rule per entry.

Each :class:`Rule` says which readers get an array wrong, how badly, and when: its
``test`` looks at the array's :class:`~nczarr.translate.compat_facts.ArrayFacts` and
returns the problem in one sentence, or None when the rule does not apply. Every
rule is a fact measured with the real reader where it runs here (libnetcdf 4.10
through netCDF4, zarr-python 3, xarray, GDAL through the libgdal that the
``pyogrio`` wheel bundles; ``tests/test_check.py`` and ``tests/test_check_readers.py``
open the same stores with them), or read in netcdf-c's code for older releases
(``docs/netcdf-c-layouts.md``). Adding a quirk is adding an entry to :data:`RULES`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from ..records import record
from .compat_base import GDAL, NC48, NC49, NC410, XARRAY, ZARR_PYTHON
from .compat_facts import ArrayFacts
from .compat_gdal import (
    gdal_v2_codec,
    gdal_v2_type,
    gdal_v3_codec,
    gdal_v3_dimension_names,
    gdal_v3_type,
)
from .compat_types import (
    legacy_char,
    netcdf_48_dtype,
    netcdf_48_u1,
    netcdf_49_dtype,
    netcdf_410_dtype,
    rounded_double_fill,
)
from .conventions import (
    LAYOUT_V2,
    LAYOUT_V2_KEYS,
    LAYOUT_ZARR,
    NETCDF_C_CODECS,
    SCALAR_DIM,
)

__all__ = ["RULES", "Rule"]

TO_ZARR = "nczarr convert URL OUT --mode zarr"
TO_NCZARR = "nczarr convert URL OUT --mode nczarr"
TO_ZARR2 = "nczarr convert URL OUT --mode zarr --zarr-format 2"
TO_ZARR3 = "nczarr convert URL OUT --mode zarr --zarr-format 3"


@record
class Rule:
    """One reader quirk on one array.

    Attributes
    ----------
    readers : tuple of str
        The readers that get it wrong (each gets one finding).
    severity : str
        One of :data:`~nczarr.translate.compat_base.SEVERITIES`.
    test : callable
        ``ArrayFacts -> problem text or None``.
    fix : str or None
        The nczarr command that makes the store right for those readers.
    formats : tuple of int
        The Zarr versions the rule applies to.
    translates : bool
        nczarr's translated view reads such an array right for zarr-python (so
        :func:`~nczarr.translate.compat.needs_translation` counts it).
    """

    readers: tuple[str, ...]
    severity: str
    test: Callable[[ArrayFacts], str | None]
    fix: str | None = None
    formats: tuple[int, ...] = (2,)
    translates: bool = False


# ------------------------------------------------------------------ tests
#: Data types zarr-python 3 has no data type for (an explicit byte order on one-byte
#: types, netcdf-c's ``>S1`` char); one such array also breaks listing its group.
_ZARR_PYTHON_REJECTS = frozenset({">S1", "<S1", "<u1", ">u1", "<i1", ">i1", "<b1", ">b1"})

#: The object codecs zarr-python 3 reads (an object array encoded otherwise, with
#: ``json2``, ``categorize``, ``pickle`` ..., has no data type there: it cannot list
#: the group holding it).
_OBJECT_CODECS_READ = frozenset({"vlen-utf8", "vlen-bytes"})


def _rejected(facts: ArrayFacts) -> str | None:
    found = [d for d in facts.dtypes if d in _ZARR_PYTHON_REJECTS]
    return found[0] if found else None


def _zarr_python_no_dtype(facts: ArrayFacts) -> str | None:
    dtype = _rejected(facts)
    if dtype is None:
        return None
    return f"has no data type for {dtype!r}: the array cannot be read and listing its group fails"


def _xarray_no_dtype(facts: ArrayFacts) -> str | None:
    dtype = _rejected(facts)
    if dtype is None:
        return None
    return f"cannot open the group holding this array (zarr-python rejects {dtype!r})"


def _zarr_python_legacy_char(facts: ArrayFacts) -> str | None:
    dtype = legacy_char(facts)
    if dtype is None:
        return None
    return (
        f"dtype {dtype!r} holds one byte per character here (netcdf-c 4.8/4.9.0 char): "
        "zarr-python expects four and fails on every chunk"
    )


def _list_fill(facts: ArrayFacts) -> str | None:
    if facts.zarr_format == 2 and isinstance(facts.fill, list):
        return f"fill_value {facts.fill!r} is a one-element list (netcdf-c 4.8.0, issue 2008)"
    return None


def _zarr_python_list_fill(facts: ArrayFacts) -> str | None:
    found = _list_fill(facts)
    if found is None:
        return None
    return f"{found}: zarr-python raises TypeError, the array cannot be opened"


def _xarray_list_fill(facts: ArrayFacts) -> str | None:
    found = _list_fill(facts)
    if found is None:
        return None
    return (
        f"cannot open the group holding this array (zarr-python rejects its one-element "
        f"list fill_value {facts.fill!r}, netcdf-c 4.8.0)"
    )


def _shuffle_sizes(facts: ArrayFacts) -> list[object]:
    return [
        c["elementsize"] for c in facts.codecs if c.get("id") == "shuffle" and "elementsize" in c
    ]


def _shuffle_text(facts: ArrayFacts) -> str | None:
    for size in _shuffle_sizes(facts):
        if isinstance(size, str):
            return (
                f"shuffle elementsize given as text {size!r} (netcdf-c 4.9): numcodecs raises "
                "TypeError"
            )
    return None


def _shuffle_text_xarray(facts: ArrayFacts) -> str | None:
    return "cannot decode this array" if _shuffle_text(facts) else None


def _shuffle_zero(facts: ArrayFacts) -> str | None:
    if any(size == 0 and not isinstance(size, bool) for size in _shuffle_sizes(facts)):
        return (
            "shuffle elementsize 0 means 'the item size' to netcdf-c and 'no shuffle' to "
            "numcodecs: returns wrong numbers, silently"
        )
    return None


def _no_netcdf_c_filter(facts: ArrayFacts) -> str | None:
    unknown = sorted({i for i in facts.codec_ids if i not in NETCDF_C_CODECS})
    if not unknown:
        return None
    return f"has no filter for codec {', '.join(unknown)}: reading the data fails (NC_ENOFILTER)"


def _netcdf_48_codecs(facts: ArrayFacts) -> str | None:
    if facts.codecs:
        return "4.8 ignores codecs: compressed or filtered chunks are read as raw values"
    return None


def _swapped_fill(facts: ArrayFacts) -> str | None:
    swapped = [d for d in facts.dtypes if d[:1] == ">" and d[-1:] not in ("1", "")]
    if swapped and facts.fill is not None:
        return (
            f"returns the fill value byte-swapped where a chunk of this {swapped[0]!r} array "
            "was never written (a netcdf-c 4.10 bug, also in files it wrote itself)"
        )
    return None


def _blosc_scalar(facts: ArrayFacts) -> str | None:
    if facts.nczarr_layout and facts.nczarr_scalar and "blosc" in facts.codec_ids:
        return "fails to open the whole dataset on a blosc-compressed scalar (Filter error -132)"
    return None


def _zero_d(facts: ArrayFacts) -> str | None:
    if facts.shape == []:
        return "drops a 0-d array (shape []) with only a log message: the scalar is missing"
    return None


def _netcdf_490_zero_d(facts: ArrayFacts) -> str | None:
    """Measured with Debian's ncdump 4.9.0 (``tests/test_check_netcdf49.py``): the
    header lists the 0-d array as a scalar, reading its value crashes."""
    if facts.shape == []:
        return (
            "4.9.0 (Debian's ncdump, nccopy) lists a 0-d array (shape []) as a scalar but "
            "crashes (segmentation fault) reading its value: ncdump of the store dies"
        )
    return None


def _netcdf_490_own_scalar(facts: ArrayFacts) -> str | None:
    """Measured with Debian's ncgen and ncdump 4.9.0 (``tests/test_check_netcdf49.py``):
    even ``ncdump -h`` of a store ncgen 4.9.0 wrote with a scalar crashes."""
    storage = (facts.nczarr_array or {}).get("storage")
    if facts.layout == LAYOUT_V2_KEYS and facts.uppercase_keys and storage == "scalar":
        return (
            "4.9.0 (Debian's ncdump, nccopy) crashes (segmentation fault) opening a "
            "4.8.1/4.9.0 store holding a scalar ('storage': 'scalar'), even one its own "
            "ncgen wrote; the migrated store opens"
        )
    return None


def _netcdf_scalar(facts: ArrayFacts) -> str | None:
    """A netCDF scalar stored as shape ``[1]`` (an NCZarr ``"scalar"`` flag on more
    values than one is no scalar to these readers: netcdf-c's misreading is
    :mod:`~nczarr.translate.compat_dimrefs`')."""
    if facts.shape != [1]:
        return None
    if (facts.nczarr_layout and facts.nczarr_scalar) or facts.dims == [SCALAR_DIM]:
        return "shows a netCDF scalar as a 1-element 1-D array (dimension _scalar_)"
    return None


def _ranked(facts: ArrayFacts) -> bool:
    shape = facts.shape
    return (
        isinstance(shape, list)
        and bool(shape)
        and not (facts.nczarr_scalar and facts.nczarr_layout)
    )


def _no_array_dimensions(facts: ArrayFacts) -> str | None:
    if not _ranked(facts) or facts.dims is not None:
        return None
    legacy = facts.nczarr_array is not None and facts.layout == LAYOUT_V2_KEYS
    if legacy and facts.uppercase_keys:
        return None
    return "no _ARRAY_DIMENSIONS: xarray cannot name the array's dimensions"


def _named_axes(facts: ArrayFacts) -> tuple[int, int] | None:
    """(names, rank) of an array whose ``_ARRAY_DIMENSIONS`` is a list (0-d arrays
    included: ``ref_noshape`` names one dimension of a shape ``[]``)."""
    shape, dims = facts.shape, facts.dims
    if not isinstance(shape, list) or not isinstance(dims, list):
        return None
    if facts.nczarr_scalar and facts.nczarr_layout:
        return None
    return len(dims), len(shape)


def _dims_mismatch(facts: ArrayFacts) -> str | None:
    counts = _named_axes(facts)
    if counts is not None and counts[0] != counts[1]:
        return f"_ARRAY_DIMENSIONS has {counts[0]} names for {counts[1]} dimensions"
    return None


def _dims_short(facts: ArrayFacts) -> str | None:
    if _ranked(facts) and isinstance(facts.dims, list) and len(facts.dims) < len(facts.shape):
        return "crashes (segfault in 4.10.1) on _ARRAY_DIMENSIONS shorter than the rank"
    return None


def _dims_long(facts: ArrayFacts) -> str | None:
    if _ranked(facts) and isinstance(facts.dims, list) and len(facts.dims) > len(facts.shape):
        extra = ", ".join(str(name) for name in facts.dims[len(facts.shape) :])
        return (
            f"_ARRAY_DIMENSIONS longer than the rank: shows {extra} as dimension(s) of "
            "arbitrary length (read past the shape)"
        )
    return None


def _raw_text_fill(facts: ArrayFacts) -> str | None:
    fill = facts.fill
    if not (isinstance(fill, str) and fill):
        return None
    if not any(d.lstrip("<>|").startswith("S") for d in facts.dtypes):
        return None
    try:
        base64.b64decode(fill, validate=True)
    except (binascii.Error, ValueError):
        return f"fill_value {fill!r} is raw text (netcdf-c's way), not base64 as Zarr v2 requires"
    return None


# ---------------------------------------------------------------- new quirks
def _fortran_order(facts: ArrayFacts) -> str | None:
    if facts.order == "F" and isinstance(facts.shape, list) and len(facts.shape) > 1:
        return "ignores order 'F': reads the array transposed (values in the wrong places)"
    return None


def _object_codec(facts: ArrayFacts) -> str | None:
    if not facts.object_dtype:
        return None
    ids = facts.codec_ids
    if ids and ids[0] in _OBJECT_CODECS_READ:
        return None
    codec = repr(ids[0]) if ids else "no object codec"
    return (
        f"has no data type for an object array encoded with {codec}: the array cannot be "
        "read and listing its group fails"
    )


def _string_categorize(facts: ArrayFacts) -> bool:
    labels = facts.codecs[0].get("labels") if facts.codecs else None
    return (
        facts.object_dtype
        and facts.codec_ids[:1] == ["categorize"]
        and isinstance(labels, list)
        and all(isinstance(label, str) for label in labels)
    )


def _object_codec_viewed(facts: ArrayFacts) -> str | None:
    """Categoricals of strings: nczarr's translated view shows them as strings."""
    return _object_codec(facts) if _string_categorize(facts) else None


def _object_codec_other(facts: ArrayFacts) -> str | None:
    return None if _string_categorize(facts) else _object_codec(facts)


def _object_codec_xarray(facts: ArrayFacts) -> str | None:
    if _object_codec(facts) is None:
        return None
    codec = facts.codec_ids[0] if facts.codec_ids else "no object codec"
    return (
        f"cannot open the group holding this array (zarr-python has no data type for an "
        f"object array encoded with {codec!r})"
    )


def _netcdf_490_char(facts: ArrayFacts) -> str | None:
    if facts.layout not in (LAYOUT_V2, LAYOUT_ZARR):
        return None
    if any(d.lstrip("<>|=")[:1] == "S" for d in facts.dtypes):
        return (
            "4.9.0 (Debian's ncdump, nccopy) crashes (segmentation fault) opening a store "
            "with a char or fixed-width bytes array (S1, S5 ...) in the current NCZarr or "
            "pure Zarr layout; 4.9.3+ reads it"
        )
    return None


def _lzma_delta(facts: ArrayFacts) -> str | None:
    for codec in facts.codecs:
        if codec.get("id") == "lzma" and "delta" in codec:
            return (
                "the lzma compressor carries GDAL 3.6's non-standard 'delta' key: numcodecs' "
                "LZMA raises TypeError, the array cannot be read"
            )
    return None


def _v3_no_dimension_names(facts: ArrayFacts) -> str | None:
    if isinstance(facts.shape, list) and facts.shape and facts.dims is None:
        return (
            "no dimension_names (nor _ARRAY_DIMENSIONS): xarray cannot open the group "
            "holding this array"
        )
    return None


def _v3_null_fill(facts: ArrayFacts) -> str | None:
    if facts.has_fill and facts.fill is None:
        return (
            "fill_value null (GDAL writes it; Zarr v3 requires a value): zarr-python cannot "
            "open the array"
        )
    return None


def _v3_gdal_nodata_unmasked(facts: ArrayFacts) -> str | None:
    fill = facts.fill
    if (
        isinstance(facts.attrs.get("_CRS"), dict)
        and "_FillValue" not in facts.attrs
        and isinstance(fill, int | float)
        and not isinstance(fill, bool)
        and fill == fill
    ):
        return (
            f"does not mask GDAL's nodata {fill!r} (the v3 fill_value; GDAL writes no "
            "_FillValue attribute): nodata reads as data"
        )
    return None


# ------------------------------------------------------------ GDAL 3.12 quirks
def _gdal_shuffle_zero(facts: ArrayFacts) -> str | None:
    if any(size == 0 and not isinstance(size, bool) for size in _shuffle_sizes(facts)):
        return "netcdf-c's shuffle elementsize 0 ('the item size'): GDAL's shuffle filter fails"
    return None


def _bool_as_uint8(facts: ArrayFacts) -> str | None:
    """GDAL shows bool as uint8 and takes a fill_value as nodata, as for numbers: a
    bool's fill is one of its two values, so every ``true`` (or every ``false``) is
    missing to GDAL, where zarr-python shows it as data (measured: GDAL 3.12, v2
    and v3, fill ``true`` -> nodata 1, ``false`` -> 0, v2 ``null`` -> none)."""
    name = facts.data_type.get("name") if isinstance(facts.data_type, dict) else facts.data_type
    if not (name == "bool" or any(d.lstrip("<>|=") == "b1" for d in facts.dtypes)):
        return None
    if isinstance(facts.fill, bool | int) and facts.fill in (0, 1):
        value = "true" if facts.fill else "false"
        return (
            f"shows a bool array as uint8 (0/1) with its fill_value {value} as nodata "
            f"{int(facts.fill)}: every {value} value is missing to GDAL"
        )
    return "shows a bool array as uint8 (0/1)"


# --------------------------------------------------------------------- table
RULES: tuple[Rule, ...] = (
    Rule((ZARR_PYTHON,), "fails", _zarr_python_no_dtype, TO_ZARR, translates=True),
    Rule((XARRAY,), "refuses", _xarray_no_dtype, TO_ZARR),
    Rule((NC410,), "refuses", netcdf_410_dtype, TO_NCZARR),
    Rule((NC49,), "refuses", netcdf_49_dtype, TO_NCZARR),
    Rule((NC48,), "refuses", netcdf_48_dtype, TO_NCZARR),
    Rule((NC48,), "misreads", netcdf_48_u1, TO_NCZARR),
    Rule((ZARR_PYTHON,), "fails", _zarr_python_list_fill, TO_ZARR, translates=True),
    Rule((XARRAY,), "refuses", _xarray_list_fill, TO_ZARR),
    Rule((ZARR_PYTHON,), "fails", _zarr_python_legacy_char, TO_ZARR, translates=True),
    Rule((ZARR_PYTHON,), "fails", _shuffle_text, TO_ZARR, translates=True),
    Rule((XARRAY,), "fails", _shuffle_text_xarray, TO_ZARR),
    Rule((ZARR_PYTHON,), "misreads", _shuffle_zero, TO_ZARR, translates=True),
    Rule((XARRAY,), "misreads", _shuffle_zero, TO_ZARR),
    Rule((NC49, NC410), "fails", _no_netcdf_c_filter, TO_NCZARR),
    Rule((NC48,), "misreads", _netcdf_48_codecs),
    Rule((NC410,), "misreads", _swapped_fill),
    Rule((NC410,), "refuses", _blosc_scalar, f"{TO_NCZARR} (re-encodes the scalar)"),
    Rule((NC48, NC410), "ignores", _zero_d, f"{TO_ZARR} --netcdf-scalars"),
    Rule((NC49,), "fails", _netcdf_490_zero_d, f"{TO_ZARR} --netcdf-scalars"),
    Rule((NC49,), "refuses", _netcdf_490_own_scalar, "nczarr migrate URL"),
    Rule((ZARR_PYTHON,), "misreads", _netcdf_scalar, TO_ZARR, translates=True),
    Rule((XARRAY, GDAL), "misreads", _netcdf_scalar, TO_ZARR),
    Rule((XARRAY,), "refuses", _no_array_dimensions, TO_ZARR),
    Rule((XARRAY,), "refuses", _dims_mismatch, TO_ZARR),  # the copy names its axes
    Rule((NC410,), "refuses", _dims_short, TO_ZARR),
    Rule((NC410,), "misreads", _dims_long, TO_ZARR),
    Rule((ZARR_PYTHON,), "fails", _raw_text_fill, TO_ZARR, translates=True),
    # measured in tests/test_check_readers.py
    Rule((NC410,), "misreads", _fortran_order, TO_NCZARR),
    Rule((ZARR_PYTHON,), "fails", _object_codec_viewed, TO_ZARR, translates=True),
    Rule((ZARR_PYTHON,), "fails", _object_codec_other),
    Rule((XARRAY,), "refuses", _object_codec_xarray, TO_ZARR),
    Rule((ZARR_PYTHON, XARRAY), "fails", _lzma_delta, TO_ZARR),
    Rule((NC49,), "refuses", _netcdf_490_char),
    Rule((XARRAY,), "refuses", _v3_no_dimension_names, formats=(3,)),
    Rule((ZARR_PYTHON, XARRAY), "fails", _v3_null_fill, formats=(3,)),
    Rule((XARRAY,), "ignores", _v3_gdal_nodata_unmasked, TO_ZARR, formats=(3,)),
    Rule((XARRAY, GDAL), "misreads", rounded_double_fill, TO_ZARR),
    Rule((GDAL,), "fails", _gdal_shuffle_zero, TO_ZARR),
    Rule((GDAL,), "fails", gdal_v3_codec, TO_ZARR2, formats=(3,)),
    Rule((GDAL,), "fails", gdal_v3_type, TO_ZARR2, formats=(3,)),
    Rule((GDAL,), "fails", gdal_v3_dimension_names, TO_ZARR3, formats=(3,)),
    Rule((GDAL,), "fails", gdal_v2_type),
    Rule((GDAL,), "fails", gdal_v2_codec),
    Rule((GDAL,), "misreads", _bool_as_uint8, formats=(2, 3)),
)
