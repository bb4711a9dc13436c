"""The Zarr v2 ``fill_value`` of a netCDF variable, as xarray will read it.

xarray's zarr engine takes a v2 ``fill_value`` for the array's ``_FillValue`` and
masks it. netcdf-c writes a ``fill_value`` for every variable, ``_FillValue``
attribute or not (netCDF's default fill: ``""`` for text, ``-127`` for a byte), and
its readers mask the default fill of a variable without ``_FillValue`` for every
numeric type except ``byte`` (ncdump: "too risky"), never for text. So a Zarr v2
copy that kept such a ``fill_value`` would show NaN in xarray where netcdf-c's
readers show data. Per variable without a ``_FillValue`` attribute:

* netCDF text (``char``, and ``string`` stored as bytes) whose fill is empty is
  written with ``fill_value`` null, as xarray writes its own text: xarray then masks
  nothing, and zarr-python and netcdf-c read the same values (an unwritten chunk is
  empty text with either fill);
* a ``byte`` variable keeps netCDF's default fill ``-127`` (with null netcdf-c would
  read the variable as unfilled, and zarr-python an unwritten chunk as 0), and a
  text variable a non-empty fill: the readers disagree, and a warning names the
  array and what xarray masks (``docs/conversion.md``, "Producers' conventions").
"""

from __future__ import annotations

from typing import Any

from .conventions import FILLVALUE
from .model import Dataset, Variable

__all__ = ["zarr2_fill", "masked_fill_warnings"]

#: netCDF's default fill of ``byte`` (NC_FILL_BYTE), which ncdump never masks
NC_FILL_BYTE = -127


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
    if var.type == "byte" and fill == NC_FILL_BYTE:
        return (
            f"{var.path!r}: the Zarr v2 fill_value {NC_FILL_BYTE} (netCDF's default byte "
            f"fill; there is no _FillValue attribute) is kept, so xarray masks the values "
            f"{NC_FILL_BYTE} as missing (NaN), as netCDF4 does, where ncdump and xarray's "
            f"netcdf4 engine show them as data"
        )
    if _netcdf_text(var):
        return (
            f"{var.path!r}: the Zarr v2 fill_value {fill!r} (there is no _FillValue "
            f"attribute) is kept, so xarray masks the text {fill!r} as missing (NaN), "
            f"where netcdf-c's readers show it as text"
        )
    return None


def masked_fill_warnings(dataset: Dataset) -> list[str]:
    """One warning per variable whose kept v2 ``fill_value`` xarray masks where
    netcdf-c's readers show data (see the module docstring)."""
    found = (_masked_fill_warning(v) for v in dataset.root.all_variables())
    return [w for w in found if w is not None]
