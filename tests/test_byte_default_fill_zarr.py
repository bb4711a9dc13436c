"""byte and ubyte without ``_FillValue``: netCDF4 masks their default fills (-127, 255),
ncdump does not ("too risky", for both types), nor does xarray's netcdf4 engine. No
``fill_value`` of a Zarr copy agrees with every reader, so a warning names each array:
in Zarr v2 xarray masks the kept ``fill_value`` (as netCDF4); in Zarr v3 GDAL takes it
as nodata (as netCDF4) while xarray masks nothing (as ncdump)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr

from .gdalreader import read_zarr
from .ncoracle import nc_url
from .test_check_readers import _debian_ncdump_490

DEFAULTS = {"b": ("i1", -127), "ub": ("u1", 255)}


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bytes") / "src"
    with netCDF4.Dataset(nc_url(path), "w") as ds:
        ds.createDimension("x", 4)
        for name, (kind, fill) in DEFAULTS.items():
            var = ds.createVariable(name, kind, ("x",))
            var.set_auto_mask(False)
            var[:] = np.array([1, fill, 3, 4], kind)
    return path


def test_netcdf4_masks_the_byte_defaults_ncdump_does_not(source):
    with netCDF4.Dataset(nc_url(source)) as ds:
        for name in DEFAULTS:
            assert np.ma.getmaskarray(ds[name][:]).tolist() == [False, True, False, False]
    dumped = subprocess.run(
        [_debian_ncdump_490(), nc_url(source)], capture_output=True, text=True, check=True
    ).stdout
    assert "b = 1, -127, 3, 4 ;" in dumped and "ub = 1, 255, 3, 4 ;" in dumped


def test_zarr3_copy_warns_gdal_masks_what_xarray_shows(source, tmp_path):
    out = tmp_path / "v3.zarr"
    with pytest.warns(nczarr.NCZarrWarning) as caught:
        nczarr.convert(source, out, mode="zarr", zarr_format=3)
    told = [str(w.message) for w in caught if "is GDAL's nodata" in str(w.message)]
    assert sorted(w[:5] for w in told) == ["'/b':", "'/ub'"], told
    seen = read_zarr(out).arrays
    with xr.open_zarr(str(out), consolidated=False) as ds:
        for name, (_, fill) in DEFAULTS.items():
            assert seen[f"/{name}"].nodata == fill  # GDAL masks it, as netCDF4
            assert (seen[f"/{name}"].values == fill).tolist() == [False, True, False, False]
            assert ds[name].values.tolist() == [1, fill, 3, 4]  # xarray: data, as ncdump


def test_zarr2_copy_warns_for_ubyte_too(source, tmp_path):
    out = tmp_path / "v2.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match=r"'/ub': the Zarr v2 fill_value 255"):
        nczarr.convert(source, out, mode="zarr")
    with xr.open_zarr(str(out), consolidated=False) as ds:
        assert np.isnan(ds["ub"].values).tolist() == [False, True, False, False]
