"""What the producers' own readers return, recorded with :mod:`record`.

Runs in the side environments: :func:`xarray_reading` needs xarray (and zarr),
:func:`zarr_reading` zarr-python 2 or 3, :func:`netcdf4_reading` netCDF4. Each
returns plain JSON (see :mod:`record` for how arrays and typed values are kept).
"""

from __future__ import annotations

import warnings
from typing import Any

from record import encode_array, encode_value

__all__ = ["xarray_reading", "zarr_reading", "netcdf4_reading"]

#: encoding entries worth recording (what decides the mask and the decoded dtype)
_ENCODING = ("_FillValue", "scale_factor", "add_offset", "units", "calendar", "dtype")


def _variable(var: Any) -> dict[str, Any]:
    return {
        "dims": list(var.dims),
        "dtype": var.dtype.str,
        "values": encode_array(var.values),
        "attrs": {k: encode_value(v) for k, v in var.attrs.items()},
        "encoding": {k: encode_value(str(v)) for k, v in var.encoding.items() if k in _ENCODING},
    }


def xarray_reading(path: str, **kwargs: Any) -> dict[str, Any]:
    """``xr.open_zarr(path, **kwargs)``: decoded variables, their attributes, and the
    same store with ``mask_and_scale=False`` (what is masked is what differs)."""
    import xarray as xr

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_zarr(path, **kwargs).load()
    raw = xr.open_zarr(path, mask_and_scale=False, decode_times=False, **kwargs).load()
    return {
        "reader": f"xarray {xr.__version__} open_zarr {sorted(kwargs.items())!r}",
        "attrs": {k: encode_value(v) for k, v in ds.attrs.items()},
        "variables": {name: _variable(var) for name, var in ds.variables.items()},
        "raw": {name: _variable(var) for name, var in raw.variables.items()},
        "warnings": sorted({str(w.message)[:200] for w in caught}),
    }


def zarr_reading(path: str, **kwargs: Any) -> dict[str, Any]:
    """zarr-python's own view: every array's dtype, fill value, values and attributes."""
    import zarr

    root = zarr.open_group(path, mode="r", **kwargs)
    arrays: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        for name, array in sorted(group.arrays()):
            arrays[prefix + name] = {
                "dtype": array.dtype.str,
                "shape": list(array.shape),
                "fill_value": encode_value(array.fill_value),
                "values": encode_array(array[...]),
                "attrs": encode_value(dict(array.attrs)),
            }
        for name, child in sorted(group.groups()):
            walk(child, f"{prefix}{name}/")

    walk(root, "")
    return {
        "reader": f"zarr {zarr.__version__}",
        "attrs": encode_value(dict(root.attrs)),
        "arrays": arrays,
    }


def netcdf4_reading(url: str) -> dict[str, Any]:
    """netCDF4 (libnetcdf) with its default auto mask and scale."""
    import netCDF4

    with netCDF4.Dataset(url) as ds:
        variables = {}
        for name, var in ds.variables.items():
            variables[name] = {
                "dims": list(var.dimensions),
                "dtype": str(var.dtype),
                "values": encode_array(var[...]),
                "attrs": {k: encode_value(var.getncattr(k)) for k in var.ncattrs()},
            }
        return {
            "reader": f"netCDF4 {netCDF4.__version__} libnetcdf {netCDF4.__netcdf4libversion__}",
            "attrs": {k: encode_value(ds.getncattr(k)) for k in ds.ncattrs()},
            "variables": variables,
        }
