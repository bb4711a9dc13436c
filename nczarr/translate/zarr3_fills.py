"""The fill value of a Zarr v3 array with no missing value, and what its copies' readers mask.

zarr-python 3 and xarray (Zarr v3) mask nothing but a ``_FillValue`` attribute:
the v3 ``fill_value`` is only what chunks never written hold. Per array without
``_FillValue`` (and not GDAL's nodata, see :mod:`~nczarr.translate.read_zarr3`):

* zarr's default fill value (``0``, ``0.0``, ``False``; ``""`` for zarr-python's own
  string and bytes types) becomes ``None``: zarr-python and netcdf-c read chunks never written
  as 0 (empty text) without a fill value too, and no reader of any copy masks it
  (an empty bytes ``fill_value`` kept in a Zarr v2 copy made xarray mask the bytes
  array and read it as objects). That holds with or without ``dimension_names``
  (xarray always writes them; zarr-python alone may not, and masks nothing either);
* any other fill value is what chunks never written hold, so it is kept as the fill
  value, and a warning names the array and which readers of the copies mask it:
  xarray masks a Zarr v2 ``fill_value`` (a Zarr v2 copy or reference set; for text
  also where it was written as data), GDAL takes a numeric one as nodata;
* netCDF4-python masks the type's default fill (``-32767`` for ``short`` ...) of a
  numeric variable without ``_FillValue``, whatever the NCZarr metadata says: a
  ``fill_value`` null (netcdf-c's no-fill) stops it for ``byte``/``ubyte`` only, and
  the only other way, a ``_FillValue`` attribute, masks its own value instead (what
  the producer does not). So a warning says that netCDF4 reading an NCZarr copy masks
  those values, which zarr-python and xarray show as data (found by a differential
  hunt: an xarray int32 ``-2147483647`` read masked there, silently): the kept fill
  value's warning, or, for the arrays without one (most of xarray's integers), a
  warning of the NCZarr translation only (:func:`nczarr_default_warnings`; reading
  and the other copies show the producer's values).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from ..records import replace
from .arrayspec import ArraySpec
from .conventions import DEFAULT_FILLS, FILLVALUE
from .model import NUMERIC_TYPES, Dataset

__all__ = ["is_nan", "nczarr_default_warnings", "without_missing_value"]


def is_nan(value: Any) -> bool:
    """A float NaN (a fill value xarray shows as missing anyway)."""
    return isinstance(value, float) and value != value


def _is_zero(value: Any) -> bool:
    """Zarr's default fill value: 0, 0.0 (not -0.0) or False."""
    if isinstance(value, float):
        return value == 0 and math.copysign(1.0, value) > 0
    return isinstance(value, int) and value == 0


def _netcdf4_default(nc_type: str, logical: str | None, fill: Any) -> int | float | None:
    """The default fill netCDF4-python masks in an NCZarr copy of an array without
    ``_FillValue``: every numeric type's, bar a byte/ubyte without fill value
    (netcdf-c's no-fill, which netCDF4 honours for one-byte types only) and bool."""
    if logical is not None or (nc_type in ("byte", "ubyte") and fill is None):
        return None
    default = DEFAULT_FILLS.get(nc_type) if nc_type in NUMERIC_TYPES else None
    return default  # type: ignore[return-value]


#: How the warnings end: why nothing better is written.
_NO_WAY = (
    ", which zarr-python and xarray show as data (no NCZarr metadata stops that: only a "
    "_FillValue attribute would, masking its own value instead)"
)


def _kept_fill(fqn: str, fill: Any, text: bool, default: int | float | None) -> str:
    """The warning for a kept fill value that is not zarr's default (see the module)."""
    head = (
        f"array {fqn!r}: its Zarr v3 fill_value {fill!r} (no _FillValue attribute) is not a "
        f"missing value for zarr-python and xarray; it is kept as the fill value, so chunks "
        f"never written read as {fill!r}. "
    )
    if text:
        return head + (
            f"xarray masks the text {fill!r} as missing (NaN) in a Zarr v2 copy or reference "
            f"set, also where it was written as data; zarr-python, netCDF4 on an NCZarr copy "
            f"and xarray on a Zarr v3 copy read it as text"
        )
    head += (
        "xarray reading a Zarr v3 copy does not mask it, but xarray masks the fill_value of "
        "a Zarr v2 copy or reference set, and GDAL reads it as nodata (masked); "
    )
    if default is None:
        return head + "netCDF4 reading an NCZarr copy does not mask it"
    if fill == default:
        return head + (
            f"netCDF4 reading an NCZarr copy masks it too (netCDF's default fill){_NO_WAY}"
        )
    return head + (
        f"netCDF4 reading an NCZarr copy does not mask it, but masks the values {default!r} "
        f"(netCDF's default fill){_NO_WAY}"
    )


def without_missing_value(spec: ArraySpec, fqn: str) -> tuple[ArraySpec, str | None, bool]:
    """``spec`` of array ``fqn`` (no ``_FillValue`` attribute, not GDAL's) with the fill
    value its copies keep; the warning saying which readers of the copies mask what the
    producer shows as data (None: none, or only netCDF4 on an NCZarr copy); and whether
    netCDF4 masks the type's default fill in an NCZarr copy without the warning saying
    so (:func:`nczarr_default_warnings` says it when such a copy is written)."""
    fill = spec.fill_value
    text = spec.dtype.nc_type == "string"
    own_text = spec.dtype.text_storage is not None or spec.dtype.logical == "bytes"
    if (not text and _is_zero(fill)) or (own_text and fill in ("", b"")):
        spec = replace(spec, fill_value=None)
        fill = None
    if text:
        if spec.dtype.text_storage is not None and fill is not None:
            return spec, _kept_fill(fqn, fill, True, None), False
        return spec, None, False
    default = _netcdf4_default(spec.dtype.nc_type, spec.dtype.logical, fill)
    if fill is not None and not is_nan(fill):
        return spec, _kept_fill(fqn, fill, False, default), False
    return spec, None, default is not None


def nczarr_default_warnings(dataset: Dataset, paths: Collection[str]) -> list[str]:
    """The warning (one, naming each array) for the arrays of ``paths`` (the source's
    :attr:`Dataset.unmasked_defaults`) in ``dataset`` (an NCZarr copy's model) still
    without ``_FillValue``: netCDF4 reading the copy masks their type's default fill,
    which the producer shows as data. One warning, not one per array: a Zarr store
    without ``_FillValue`` attributes would otherwise say it of every array."""
    named = []
    for var in dataset.root.all_variables():
        if var.path not in paths or FILLVALUE in var.attributes:
            continue
        default = _netcdf4_default(var.type, var.logical, var.fill_value)
        if default is not None:
            named.append(f"{var.path!r} ({default!r}, netCDF's default {var.type} fill)")
    if not named:
        return []
    one = len(named) == 1
    return [
        f"{'array' if one else 'arrays'} {', '.join(named)} "
        f"{'has' if one else 'have'} no _FillValue attribute ({'its' if one else 'their'} "
        "producer, zarr-python or xarray, masks nothing), so netCDF4 reading this NCZarr "
        f"copy masks {'that value' if one else 'those values'}{_NO_WAY}"
    ]
