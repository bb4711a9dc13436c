"""netcdf-c writes netCDF's default double fill as ``9.96921e+36`` in ``.zarray`` (its
``"%g"`` text: not NC_FILL_DOUBLE 9.969209968386869e36), while its chunks hold the exact
default and netCDF4 masks exactly that. The Zarr copies write the exact default fill,
so that xarray (v2) and GDAL (v3 nodata) mask what netCDF4 masks; only a chunk netcdf-c
never wrote differs (netcdf-c reads it as 9.96921e+36, data to netCDF4), and a
warning names the array. float needs nothing: 9.96921e+36 is NC_FILL_FLOAT in float32.
"""

from __future__ import annotations

import json
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr

from .gdalreader import read_zarr
from .ncoracle import nc_url

NC_FILL_DOUBLE = netCDF4.default_fillvals["f8"]
NC_FILL_FLOAT = netCDF4.default_fillvals["f4"]


def _source(path: Path, *, unwritten_chunk: bool) -> Path:
    """``d`` (double) and ``f`` (float), no ``_FillValue``, chunks of 2 over 6 values: an
    explicit default fill in chunk 0, chunk 1 half written, chunk 2 written or not."""
    with netCDF4.Dataset(nc_url(path), "w") as ds:
        ds.createDimension("x", 6)
        for name, kind in (("d", "f8"), ("f", "f4")):
            var = ds.createVariable(name, kind, ("x",), chunksizes=(2,))
            var[0:2] = [1.0, netCDF4.default_fillvals[kind]]
            var[2:3] = [3.0]
            if not unwritten_chunk:
                var[4:6] = [5.0, 6.0]
    return path


def _netcdf4_mask(url: str, name: str) -> list[bool]:
    with netCDF4.Dataset(url) as ds:
        return np.ma.getmaskarray(ds[name][:]).tolist()


def _xarray_mask(path: Path, name: str) -> list[bool]:
    with xr.open_zarr(str(path), consolidated=False) as ds:
        return np.isnan(ds[name].values).tolist()


def test_netcdf_c_writes_the_rounded_fill_and_exact_chunks(tmp_path):
    src = _source(tmp_path / "src", unwritten_chunk=True)
    assert '"fill_value": 9.96921e+36' in (src / "d" / ".zarray").read_text()
    assert json.loads((src / "d" / ".zarray").read_text())["fill_value"] != NC_FILL_DOUBLE
    chunk1 = np.frombuffer((src / "d" / "1").read_bytes(), "<f8")
    assert chunk1[1] == NC_FILL_DOUBLE  # the half-written chunk holds the exact default
    assert not (src / "d" / "2").exists()
    # netCDF4 masks the exact default, not the never-written chunk (read as 9.96921e+36)
    assert _netcdf4_mask(nc_url(src), "d") == [False, True, False, True, False, False]
    assert _netcdf4_mask(nc_url(src), "f") == [False, True, False, True, True, True]
    assert np.float32(9.96921e36) == np.float32(NC_FILL_FLOAT)


def test_zarr2_copy_masks_what_netcdf4_masks(tmp_path):
    src = _source(tmp_path / "src", unwritten_chunk=False)
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match=r"'/d': the Zarr v2 fill_value is netCDF's"):
        nczarr.convert(src, out, mode="zarr")
    assert json.loads((out / "d" / ".zarray").read_text())["fill_value"] == NC_FILL_DOUBLE
    for name in ("d", "f"):
        assert _xarray_mask(out, name) == _netcdf4_mask(nc_url(src), name), name
        assert _netcdf4_mask(nc_url(out, "zarr"), name) == _netcdf4_mask(nc_url(src), name)
    np.testing.assert_array_equal(
        zarr.open_group(str(out), mode="r")["d"][:],
        [1.0, NC_FILL_DOUBLE, 3.0, NC_FILL_DOUBLE, 5.0, 6.0],
    )


def test_zarr2_copy_of_a_never_written_chunk_is_the_warned_difference(tmp_path):
    src = _source(tmp_path / "src", unwritten_chunk=True)
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match=r"never wrote reads as 9\.96921e\+36") as got:
        nczarr.convert(src, out, mode="zarr")
    assert not any("'/f'" in str(w.message) for w in got)  # float needs nothing
    # written chunks: as netCDF4; the never-written one: masked here, data to netCDF4
    assert _xarray_mask(out, "d") == [False, True, False, True, True, True]
    assert _netcdf4_mask(nc_url(src), "d")[:4] == [False, True, False, True]
    assert _xarray_mask(out, "f") == _netcdf4_mask(nc_url(src), "f")


def test_zarr3_copy_fill_value_is_the_exact_default_gdal_nodata(tmp_path):
    src = _source(tmp_path / "src", unwritten_chunk=False)
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match=r"'/d': the Zarr v3 fill_value .* GDAL"):
        nczarr.convert(src, out, mode="zarr", zarr_format=3)
    assert json.loads((out / "d" / "zarr.json").read_text())["fill_value"] == NC_FILL_DOUBLE
    seen = read_zarr(out).arrays["/d"]
    assert seen.error is None and seen.nodata == NC_FILL_DOUBLE
    gdal_mask = (seen.values == seen.nodata).tolist()
    assert gdal_mask == _netcdf4_mask(nc_url(src), "d")


def test_check_reports_xarray_and_gdal_masking_the_rounded_fill(tmp_path):
    """On netcdf-c's own pure Zarr store: xarray and GDAL mask 9.96921e+36 (the
    never-written chunk), netCDF4 the default fill values; ``check`` says so, and the
    Zarr copy it names as the fix passes."""
    from nczarr.translate.compat import GDAL, XARRAY

    src = _source_pure(tmp_path / "pure")
    report = nczarr.check(src)
    for reader in (XARRAY, GDAL):
        (found,) = [f for f in report.for_reader(reader) if f.where == "/d"]
        assert found.severity == "misreads" and "9.96921e+36" in found.problem
        assert found.fix.startswith("nczarr convert URL OUT --mode zarr")
    assert not [f for f in report.findings if f.where == "/f"]
    netcdf4 = _netcdf4_mask(nc_url(src, "zarr"), "d")
    assert netcdf4 == [False, True, False, True, False, False]
    assert _xarray_mask(src, "d") == [False, False, False, False, True, True]
    gdal = read_zarr(src).arrays["/d"]
    assert (gdal.values == gdal.nodata).tolist() == [False, False, False, False, True, True]
    out = tmp_path / "fixed.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match="'/d'"):
        nczarr.convert(src, out, mode="zarr")
    assert not [f for f in nczarr.check(out).findings if f.where == "/d"]


def _source_pure(path: Path) -> Path:
    """As :func:`_source` (the never-written chunk included), in netcdf-c's pure Zarr."""
    with netCDF4.Dataset(nc_url(path, "zarr"), "w") as ds:
        ds.createDimension("x", 6)
        for name, kind in (("d", "f8"), ("f", "f4")):
            var = ds.createVariable(name, kind, ("x",), chunksizes=(2,))
            var[0:2] = [1.0, netCDF4.default_fillvals[kind]]
            var[2:3] = [3.0]
    return path
