"""xarray's Zarr v2 integers without ``_FillValue`` (``fill_value`` null): netCDF4
reading an NCZarr copy masks netCDF's default fill of their type, which xarray and
zarr-python show as data. Said when the copy is written, naming the array, as for
Zarr v3 sources (tests/test_v3_odd_fill.py); a float with xarray's NaN fill is not."""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr


def test_an_nczarr_copy_names_the_arrays_netcdf4_masks(tmp_path: Path) -> None:
    src = tmp_path / "x.zarr"
    ds = xr.Dataset(
        {
            "xi": ("x", np.array([-2147483647, 1, 2], "i4")),
            "f": ("x", np.array([1.0, 2.0, np.nan])),
        }
    )
    ds.to_zarr(src, zarr_format=2, mode="w", consolidated=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        nczarr.read(src)  # reading shows xarray's values: nothing to say
        nczarr.view(src)  # nor an NCZarr view, which zarr-python and xarray read
    assert [str(w.message) for w in said if issubclass(w.category, nczarr.NCZarrWarning)] == []
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning) as said:
        nczarr.convert(src, f"file://{out}#mode=nczarr,file", mode="nczarr")
    named = [str(w.message) for w in said if "has no _FillValue attribute" in str(w.message)]
    assert len(named) == 1 and named[0].startswith(
        "array '/xi' (-2147483647, netCDF's default int fill) has no _FillValue attribute"
    )
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:  # what the warning says
        assert np.ma.getmaskarray(nc["xi"][...]).tolist() == [True, False, False]
