"""What netcdf-c's releases make of one array's Zarr data type, and the netcdf-c fill
value xarray and GDAL mask in its place: tests of :mod:`.compat_rules` entries.

``"<U1"``: netcdf-c 4.8.0 to 4.9.0 read it as char, one byte per character
(``libnczarr/zutil.c``, ``ncz_dtype2typeinfo``: ``case 'U': nctype = NC_CHAR``); 4.9.1
rewrote the function (``ncz_dtype2nctype``) without that case, so 4.9.1, 4.9.2, 4.9.3
and 4.10 refuse the dataset (NCZarr error -137). Measured with Debian's ncdump 4.9.0
and libnetcdf 4.10.1 in ``tests/test_check_u1_versions.py``.

netcdf-c writes netCDF's default double fill as ``9.96921e+36`` in ``.zarray``
(``"%g"``), which xarray and GDAL take for the missing value, while its chunks hold the
exact default that netCDF4 masks (``tests/test_double_default_fill.py``); nczarr's
written copies say the exact default (:mod:`~nczarr.translate.zarr2_fills`).
"""

from __future__ import annotations

from .compat_facts import ArrayFacts
from .conventions import LAYOUT_V2_KEYS, LEGACY_CHAR_DTYPES
from .zarr2_fills import ROUNDED_FILL_DOUBLE

__all__ = [
    "legacy_char",
    "netcdf_48_dtype",
    "netcdf_48_u1",
    "netcdf_49_dtype",
    "netcdf_410_dtype",
    "netcdf_c_dtype",
    "rounded_double_fill",
]


def legacy_char(facts: ArrayFacts) -> str | None:
    """The ``"<U1"`` char of netcdf-c 4.8/4.9.0 (NCZarr, or pure Zarr its
    ``_NCProperties`` names): one byte per character, not UTF-32."""
    version = facts.netcdf_version or ""
    if not (facts.nczarr_layout or version.startswith("4.8.") or version == "4.9.0"):
        return None
    found = [d for d in facts.dtypes if d in LEGACY_CHAR_DTYPES]
    return found[0] if found else None


def _u1(facts: ArrayFacts) -> str | None:
    """A ``"<U1"`` (``">U1"``, ``"|U1"``) dtype: netcdf-c 4.8.0-4.9.0 read it as char
    (``libnczarr/zutil.c``: ``case 'U': nctype = NC_CHAR`` for one-byte types); 4.9.1
    dropped that case, so 4.9.1, 4.9.2, 4.9.3 and 4.10 refuse the dataset (NCZarr error
    -137, measured with 4.10.1; Debian's ncdump 4.9.0 reads it)."""
    found = [d for d in facts.dtypes if d in LEGACY_CHAR_DTYPES]
    return found[0] if found else None


def _u1_as_bytes(dtype: str) -> str:
    return (
        f"reads {dtype!r} as char, one byte per character, but this array holds UTF-32 "
        "(four bytes per character): it reads the first quarter of each chunk's bytes "
        "(text 'abcd' as 'a' and NULs)"
    )


def netcdf_48_dtype(facts: ArrayFacts) -> str | None:
    """As :func:`netcdf_c_dtype`, but 4.8 reads ``"<U1"`` (see :func:`_u1`)."""
    return None if _u1(facts) else netcdf_c_dtype(facts)


def netcdf_48_u1(facts: ArrayFacts) -> str | None:
    """4.8 misreads a ``"<U1"`` that is not its own one-byte char (zarr-python's UTF-32)."""
    dtype = _u1(facts)
    return None if dtype is None or legacy_char(facts) else _u1_as_bytes(dtype)


def netcdf_49_dtype(facts: ArrayFacts) -> str | None:
    """As :func:`netcdf_c_dtype`, naming the 4.9 releases that refuse ``"<U1"``."""
    dtype = _u1(facts)
    if dtype is None or netcdf_c_dtype(facts) is None:
        return netcdf_c_dtype(facts)
    then = "right for netcdf-c 4.8/4.9.0's own char" if legacy_char(facts) else None
    read = f"reads it as char (one byte per character, {then})" if then else _u1_as_bytes(dtype)
    return (
        f"4.9.1, 4.9.2 and 4.9.3 fail to open the whole dataset on data type {dtype!r} "
        f"(NCZarr error -137); 4.9.0 (Debian's ncdump) {read}"
    )


def netcdf_410_dtype(facts: ArrayFacts) -> str | None:
    """As :func:`netcdf_c_dtype`, saying which releases read ``"<U1"``."""
    found = netcdf_c_dtype(facts)
    if found and _u1(facts):
        return f"{found} (NCZarr error -137; only netcdf-c 4.8.0-4.9.0 read '<U1', as char)"
    return found


def netcdf_c_dtype(facts: ArrayFacts) -> str | None:
    """A data type netcdf-c 4.9.1+ has no netCDF type for: it refuses the dataset."""
    if facts.nczarr_layout and facts.layout == LAYOUT_V2_KEYS and facts.uppercase_keys:
        return None
    for dtype in facts.dtypes:
        kind = dtype[1:2] if dtype[:1] in "<>|=" else dtype[:1]
        if kind in ("U", "O", "M", "m", "c", "b", "V") or dtype[1:] == "f2":
            return f"fails to open the whole dataset on data type {dtype!r}"
    return None


def rounded_double_fill(facts: ArrayFacts) -> str | None:
    """A netcdf-c double without ``_FillValue``: the v2 ``fill_value`` xarray and GDAL
    mask is netcdf-c's rounding of the default fill, not the default fill netCDF4 masks
    (tests/test_double_default_fill.py)."""
    if facts.zarr_format != 2 or facts.netcdf_version is None or "_FillValue" in facts.attrs:
        return None
    if not any(d.lstrip("<>|=") == "f8" for d in facts.dtypes):
        return None
    fill = facts.fill
    if isinstance(fill, float) and fill == ROUNDED_FILL_DOUBLE:
        return (
            "masks the fill_value 9.96921e+36 (netcdf-c's text of the default double fill; "
            "no _FillValue): the chunks netcdf-c never wrote, not the default fill values "
            "9.969209968386869e+36 of the written chunks, which netCDF4 masks (nczarr's "
            "copies write NC_FILL_DOUBLE 9.969209968386869e+36 as the fill_value)"
        )
    return None
