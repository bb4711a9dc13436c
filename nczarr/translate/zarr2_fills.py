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
* a ``double`` variable whose fill is ``9.96921e+36`` (netcdf-c's ``"%g"`` text of
  NC_FILL_DOUBLE, another double than the default fill its chunks hold and netCDF4
  masks) keeps it: xarray then masks the chunks netcdf-c never wrote, not the default
  fill values. Writing the exact default here would change the translated view the
  nczarr engine reads (and an append's metadata) too; ``nczarr check`` reports it on
  netcdf-c's stores (``compat_types.rounded_double_fill``).
"""

from __future__ import annotations

from typing import Any

from .conventions import FILLVALUE
from .model import Dataset, Variable

__all__ = ["gdal_nodata_warnings", "masked_fill_warnings", "zarr2_fill"]

#: netCDF's default fill of ``byte`` (NC_FILL_BYTE), which ncdump never masks
NC_FILL_BYTE = -127
#: netCDF's default fills of the one-byte types (NC_FILL_BYTE, NC_FILL_UBYTE), which
#: ncdump never masks ("too risky"; measured with ncdump 4.9.0) and netCDF4 masks
BYTE_DEFAULT_FILLS = {"byte": NC_FILL_BYTE, "ubyte": 255}


def _netcdf_text(var: Variable) -> bool:
    """A char or byte-stored string variable (not xarray's unicode, vlen or bytes)."""
    return var.type in ("char", "string") and var.text_storage is None and var.logical is None


def _empty_text(value: Any) -> bool:
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return isinstance(value, str) and value.strip("\0") == ""


def zarr2_fill(var: Variable) -> Any:
    """The model fill value a pure Zarr v2 ``.zarray`` says for ``var``: ``None`` for
    netCDF text without ``_FillValue`` whose fill is empty, else ``var.fill_value``."""
    if FILLVALUE not in var.attributes and _netcdf_text(var) and _empty_text(var.fill_value):
        return None
    return var.fill_value


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
    netcdf-c's readers show data (see the module docstring)."""
    found = (_masked_fill_warning(v) for v in dataset.root.all_variables())
    return [w for w in found if w is not None]
