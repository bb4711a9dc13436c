"""The Zarr v2 ``fill_value`` of a netCDF variable, as xarray will read it.

xarray's zarr engine takes a v2 ``fill_value`` for the array's ``_FillValue`` and
masks it. netcdf-c writes a ``fill_value`` for every variable, ``_FillValue``
attribute or not (netCDF's default fill: ``""`` for text, ``-127`` for a byte), and
netCDF4 masks the default fill of a variable without ``_FillValue`` for every numeric
type, ncdump for every one except ``byte`` and ``ubyte`` ("too risky"), never for text. So a Zarr v2
copy that kept such a ``fill_value`` would show NaN in xarray where netcdf-c's
readers show data. Per variable without a ``_FillValue`` attribute:

* netCDF text (``char``, and ``string`` stored as bytes) whose fill is empty is
  written with ``fill_value`` null, as xarray writes its own text: xarray then masks
  nothing, and zarr-python and netcdf-c read the same values (an unwritten chunk is
  empty text with either fill);
* a ``byte`` (``ubyte``) variable keeps netCDF's default fill ``-127`` (``255``; with
  null netcdf-c would read the variable as unfilled, and zarr-python an unwritten
  chunk as 0), also as the Zarr v3 ``fill_value`` (GDAL's nodata), and a
  text variable a non-empty fill: the readers disagree, and a warning names the
  array and what xarray masks (``docs/conversion.md``, "Producers' conventions");
* a ``double`` variable whose fill is ``9.96921e+36``, the text netcdf-c writes for
  netCDF's default double fill (``"%g"``: another double than ``NC_FILL_DOUBLE``
  9.969209968386869e36, which netcdf-c writes into its chunks and netCDF4 masks), is
  written with the exact default fill (also as the Zarr v3 ``fill_value``, GDAL's
  nodata): xarray then masks the default fill values netCDF4 masks, where the
  rounded fill would mask none of them. A chunk netcdf-c never wrote reads as
  ``9.96921e+36`` in netcdf-c (data to netCDF4) and as the exact, masked default
  fill in the copy; a warning names the arrays. (``float`` needs nothing: ``9.96921e+36``
  rounds to ``NC_FILL_FLOAT`` in float32.)
"""

from __future__ import annotations

from typing import Any

from .conventions import FILLVALUE
from .model import Dataset, Variable

__all__ = [
    "NC_FILL_DOUBLE",
    "gdal_nodata_warnings",
    "masked_fill_warnings",
    "netcdf_c_fill",
    "rounded_fill_warnings",
    "zarr2_fill",
]

#: netCDF's default fill of ``byte`` (NC_FILL_BYTE), which ncdump never masks
NC_FILL_BYTE = -127
#: netCDF's default fills of the one-byte types (NC_FILL_BYTE, NC_FILL_UBYTE), which
#: ncdump never masks ("too risky"; measured with ncdump 4.9.0) and netCDF4 masks
BYTE_DEFAULT_FILLS = {"byte": NC_FILL_BYTE, "ubyte": 255}
#: netCDF's default fill of ``double`` (NC_FILL_DOUBLE, ``9.9692099683868690e+36``)
NC_FILL_DOUBLE = 9.9692099683868690e36
#: The double netcdf-c's ``.zarray`` text for NC_FILL_DOUBLE (``9.96921e+36``) reads as
NETCDF_C_FILL_DOUBLE = 9.96921e36


def _rounded_default(var: Variable) -> bool:
    """A double without ``_FillValue`` whose fill is netcdf-c's rounding of NC_FILL_DOUBLE."""
    return (
        var.type == "double"
        and var.logical is None
        and FILLVALUE not in var.attributes
        and isinstance(var.fill_value, float)
        and var.fill_value == NETCDF_C_FILL_DOUBLE
    )


def netcdf_c_fill(var: Variable) -> Any:
    """``var.fill_value``, but NC_FILL_DOUBLE where it is netcdf-c's rounding of it
    (see the module docstring): the fill a Zarr copy writes."""
    return NC_FILL_DOUBLE if _rounded_default(var) else var.fill_value


def _netcdf_text(var: Variable) -> bool:
    """A char or byte-stored string variable (not xarray's unicode, vlen or bytes)."""
    return var.type in ("char", "string") and var.text_storage is None and var.logical is None


def _empty_text(value: Any) -> bool:
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return isinstance(value, str) and value.strip("\0") == ""


def zarr2_fill(var: Variable) -> Any:
    """The model fill value a pure Zarr v2 ``.zarray`` says for ``var``: ``None`` for
    netCDF text without ``_FillValue`` whose fill is empty, else :func:`netcdf_c_fill`."""
    if FILLVALUE not in var.attributes and _netcdf_text(var) and _empty_text(var.fill_value):
        return None
    return netcdf_c_fill(var)


def _masked_fill_warning(var: Variable) -> str | None:
    if FILLVALUE in var.attributes or var.logical is not None:
        return None
    fill = zarr2_fill(var)
    if fill is None:
        return None
    if _unmasked_byte_default(var):
        return (
            f"{var.path!r}: the Zarr v2 fill_value {fill} (netCDF's default {var.type} "
            f"fill; there is no _FillValue attribute) is kept, so xarray masks the values "
            f"{fill} as missing (NaN), as netCDF4 does, where ncdump and xarray's "
            f"netcdf4 engine show them as data"
        )
    if _netcdf_text(var):
        return (
            f"{var.path!r}: the Zarr v2 fill_value {fill!r} (there is no _FillValue "
            f"attribute) is kept, so xarray masks the text {fill!r} as missing (NaN), "
            f"where netcdf-c's readers show it as text"
        )
    return None


def _unmasked_byte_default(var: Variable) -> bool:
    """A byte/ubyte without ``_FillValue`` whose fill is netCDF's default for its type:
    netCDF4 masks it, ncdump and xarray's netcdf4 engine do not."""
    if FILLVALUE in var.attributes or var.logical is not None:
        return False
    default = BYTE_DEFAULT_FILLS.get(var.type)
    return (
        default is not None and var.fill_value == default and not isinstance(var.fill_value, bool)
    )


def gdal_nodata_warnings(dataset: Dataset) -> list[str]:
    """Zarr v3: one warning per byte/ubyte whose default fill (no ``_FillValue``) is the
    v3 ``fill_value``, which GDAL takes as nodata: GDAL masks it, as netCDF4 does, where
    ncdump and xarray (which masks a v3 array by ``_FillValue`` only) show data. No v3
    ``fill_value`` agrees with every reader (another value would be GDAL's nodata)."""
    return [
        f"{v.path!r}: the Zarr v3 fill_value {v.fill_value} (netCDF's default {v.type} "
        f"fill; there is no _FillValue attribute) is GDAL's nodata, so GDAL masks the "
        f"values {v.fill_value}, as netCDF4 does, where ncdump, xarray and xarray's "
        f"netcdf4 engine show them as data"
        for v in dataset.root.all_variables()
        if _unmasked_byte_default(v)
    ]


def masked_fill_warnings(dataset: Dataset) -> list[str]:
    """One warning per variable whose kept v2 ``fill_value`` xarray masks where
    netcdf-c's readers show data, and one naming the doubles whose rounded default
    fill is written exact (see the module docstring)."""
    found = (_masked_fill_warning(v) for v in dataset.root.all_variables())
    return [w for w in found if w is not None] + rounded_fill_warnings(dataset)


def rounded_fill_warnings(dataset: Dataset, zarr_format: int = 2) -> list[str]:
    """The warning naming every double whose fill netcdf-c wrote as ``9.96921e+36``
    and a Zarr copy writes as NC_FILL_DOUBLE (none if there is no such double)."""
    paths = [v.path for v in dataset.root.all_variables() if _rounded_default(v)]
    if not paths:
        return []
    masked = (
        "xarray masks the default fill values, as netCDF4 does"
        if zarr_format == 2
        else "GDAL takes it as nodata and masks the default fill values, as netCDF4 does "
        "(xarray masks a Zarr v3 array by a _FillValue attribute only)"
    )
    return [
        f"{', '.join(map(repr, paths))}: the Zarr v{zarr_format} fill_value is netCDF's "
        f"default double fill {NC_FILL_DOUBLE!r}, not its rounding {NETCDF_C_FILL_DOUBLE!r} "
        f"that netcdf-c wrote (there is no _FillValue attribute): {masked}; a chunk "
        "netcdf-c never wrote reads as 9.96921e+36 there (data to netCDF4) and as the "
        "default fill here"
    ]
