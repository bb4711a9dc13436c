"""netcdf-c writes netCDF's default double fill as ``9.96921e+36`` in ``.zarray`` (its
``"%g"`` text: not NC_FILL_DOUBLE 9.969209968386869e36), while its chunks hold the exact
default and netCDF4 masks exactly that. xarray and GDAL take the ``fill_value`` for the
missing value: they mask the chunks netcdf-c never wrote, and none of the default fill
values netCDF4 masks. ``nczarr check`` says so; nczarr's Zarr copies keep the
``fill_value`` (xarray reads them as it reads netcdf-c's store). float is not
affected: 9.96921e+36 is NC_FILL_FLOAT in float32.
"""

from __future__ import annotations

import json
from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr

import nczarr
from nczarr.translate.compat import GDAL, XARRAY

from .gdalreader import read_zarr
from .ncoracle import nc_url

NC_FILL_DOUBLE = netCDF4.default_fillvals["f8"]
NC_FILL_FLOAT = netCDF4.default_fillvals["f4"]


def _source(path: Path, mode: str) -> Path:
    """``d`` (double) and ``f`` (float), no ``_FillValue``, chunks of 2 over 6 values: an
    explicit default fill in chunk 0, chunk 1 half written, chunk 2 never written."""
    with netCDF4.Dataset(nc_url(path, mode), "w") as ds:
        ds.createDimension("x", 6)
        for name, kind in (("d", "f8"), ("f", "f4")):
            var = ds.createVariable(name, kind, ("x",), chunksizes=(2,))
            var[0:2] = [1.0, netCDF4.default_fillvals[kind]]
            var[2:3] = [3.0]
    return path


def _netcdf4_mask(url: str, name: str) -> list[bool]:
    with netCDF4.Dataset(url) as ds:
        return np.ma.getmaskarray(ds[name][:]).tolist()


def _xarray_mask(path: Path, name: str) -> list[bool]:
    with xr.open_zarr(str(path), consolidated=False) as ds:
        return np.isnan(ds[name].values).tolist()


def test_netcdf_c_writes_the_rounded_fill_and_exact_chunks(tmp_path):
    src = _source(tmp_path / "src", "nczarr")
    assert '"fill_value": 9.96921e+36' in (src / "d" / ".zarray").read_text()
    assert json.loads((src / "d" / ".zarray").read_text())["fill_value"] != NC_FILL_DOUBLE
    chunk1 = np.frombuffer((src / "d" / "1").read_bytes(), "<f8")
    assert chunk1[1] == NC_FILL_DOUBLE  # the half-written chunk holds the exact default
    assert not (src / "d" / "2").exists()
    # netCDF4 masks the exact default, not the never-written chunk (read as 9.96921e+36)
    assert _netcdf4_mask(nc_url(src), "d") == [False, True, False, True, False, False]
    assert _netcdf4_mask(nc_url(src), "f") == [False, True, False, True, True, True]
    assert np.float32(9.96921e36) == np.float32(NC_FILL_FLOAT)


def test_check_reports_xarray_and_gdal_masking_the_rounded_fill(tmp_path):
    src = _source(tmp_path / "pure", "zarr")
    report = nczarr.check(src)
    for reader in (XARRAY, GDAL):
        (found,) = [f for f in report.for_reader(reader) if f.where == "/d"]
        assert found.severity == "misreads" and "9.96921e+36" in found.problem
    assert not [f for f in report.findings if f.where == "/f"]
    assert _netcdf4_mask(nc_url(src, "zarr"), "d") == [False, True, False, True, False, False]
    assert _xarray_mask(src, "d") == [False, False, False, False, True, True]
    gdal = read_zarr(src).arrays["/d"]
    assert (gdal.values == gdal.nodata).tolist() == [False, False, False, False, True, True]
    # the float: every reader masks the default fill
    assert _xarray_mask(src, "f") == _netcdf4_mask(nc_url(src, "zarr"), "f")


def test_zarr2_copy_keeps_the_fill_value_xarray_reads_it_as_the_source(tmp_path):
    src = _source(tmp_path / "src", "nczarr")
    out = tmp_path / "out.zarr"
    nczarr.convert(src, out, mode="zarr")
    assert json.loads((out / "d" / ".zarray").read_text())["fill_value"] == 9.96921e36
    assert _xarray_mask(out, "d") == [False, False, False, False, True, True]
    assert _xarray_mask(out, "f") == _netcdf4_mask(nc_url(src), "f")
