"""netcdf-c writes netCDF's default double fill as ``9.96921e+36`` in ``.zarray`` (its
``"%g"`` text: not NC_FILL_DOUBLE 9.969209968386869e36), while its chunks hold the exact
default and netCDF4 masks exactly that. xarray and GDAL take the ``fill_value`` for the
missing value: they mask the chunks netcdf-c never wrote, and none of the default fill
values netCDF4 masks. ``nczarr check`` says so. nczarr's written copies (``convert``,
``migrate``; Zarr v2, v3 and NCZarr) say NC_FILL_DOUBLE itself, so their readers mask
the default fill values netCDF4 masks in the source; the chunks the source never wrote
then read as NC_FILL_DOUBLE, masked (netCDF4 masks them in the source's copy too: a
superset), and a warning says so. The view the nczarr engine reads, and an append's
metadata, keep ``9.96921e+36`` (the engine reads what netCDF4 reads). float is not
affected: 9.96921e+36 is NC_FILL_FLOAT in float32.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.translate.compat import GDAL, XARRAY

from .gdalreader import read_zarr
from .ncoracle import nc_url

NC_FILL_DOUBLE = netCDF4.default_fillvals["f8"]
NC_FILL_FLOAT = netCDF4.default_fillvals["f4"]
#: what netCDF4 masks of ``d`` in the source: the written default fills, not chunk 2
SOURCE_MASK = [False, True, False, True, False, False]
#: what the copies' readers mask: those, and chunk 2 (never written: NC_FILL_DOUBLE)
COPY_MASK = [False, True, False, True, True, True]
#: the warning a written copy gives for ``d``
COPY_WARNING = r"'/d': the fill_value 9\.96921e\+36 .* written as NC_FILL_DOUBLE .* never wrote"


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
        assert "copies write NC_FILL_DOUBLE" in found.problem and "--mode zarr" in found.fix
    assert not [f for f in report.findings if f.where == "/f"]
    assert _netcdf4_mask(nc_url(src, "zarr"), "d") == [False, True, False, True, False, False]
    assert _xarray_mask(src, "d") == [False, False, False, False, True, True]
    gdal = read_zarr(src).arrays["/d"]
    assert (gdal.values == gdal.nodata).tolist() == [False, False, False, False, True, True]
    # the float: every reader masks the default fill
    assert _xarray_mask(src, "f") == _netcdf4_mask(nc_url(src, "zarr"), "f")


def _gdal_mask(path: Path, name: str) -> list[bool]:
    gdal = read_zarr(path).arrays[f"/{name}"]
    assert gdal.nodata == NC_FILL_DOUBLE if name == "d" else True
    return (gdal.values == gdal.nodata).tolist()


def _convert(src: Path, out: Path, **options) -> nczarr.ConvertReport:
    with pytest.warns(nczarr.NCZarrWarning, match=COPY_WARNING):
        report = nczarr.convert(src, out, **options)
    (told,) = [w for w in report.warnings if w.startswith("'/d': the fill_value 9.96921e+36")]
    assert "NC_FILL_DOUBLE 9.969209968386869e+36" in told
    assert not [w for w in report.warnings if w.startswith("'/f'")]
    return report


@pytest.mark.parametrize("kind", ["nczarr", "zarr"])
def test_zarr2_copy_writes_nc_fill_double_xarray_and_gdal_mask_as_netcdf4(tmp_path, kind):
    src = _source(tmp_path / "src", kind)
    assert _netcdf4_mask(nc_url(src, kind), "d") == SOURCE_MASK
    out = tmp_path / "out.zarr"
    _convert(src, out, mode="zarr")
    assert json.loads((out / "d" / ".zarray").read_text())["fill_value"] == NC_FILL_DOUBLE
    # the default fill values netCDF4 masks, and the chunk never written (the warning)
    assert _xarray_mask(out, "d") == _gdal_mask(out, "d") == COPY_MASK
    assert zarr.open_array(out / "d", mode="r").fill_value == NC_FILL_DOUBLE
    # the float keeps its fill and every reader masks as netCDF4 does
    fill = json.loads((out / "f" / ".zarray").read_text())["fill_value"]
    assert np.float32(fill) == np.float32(NC_FILL_FLOAT)
    assert _xarray_mask(out, "f") == _netcdf4_mask(nc_url(src, kind), "f")
    # netcdf-c reading the pure Zarr copy masks at least what it masks in the source
    assert _netcdf4_mask(nc_url(out, "zarr"), "d") == COPY_MASK


def test_zarr3_copy_writes_nc_fill_double_gdal_masks_as_netcdf4(tmp_path):
    src = _source(tmp_path / "src", "nczarr")
    out = tmp_path / "out.zarr"
    report = _convert(src, out, mode="zarr", zarr_format=3)
    (told,) = [w for w in report.warnings if w.startswith("'/d'")]
    assert "xarray masks a Zarr v3 array by a _FillValue attribute only" in told
    doc = json.loads((out / "d" / "zarr.json").read_text())
    assert doc["fill_value"] == NC_FILL_DOUBLE and "_FillValue" not in doc["attributes"]
    assert _gdal_mask(out, "d") == COPY_MASK
    # xarray masks no v3 array without a _FillValue attribute (as the warning says)
    with xr.open_zarr(str(out), consolidated=False) as ds:
        values = ds["d"].values
    assert not np.isnan(values).any()
    assert (values == NC_FILL_DOUBLE).tolist() == COPY_MASK


def test_nczarr_copy_writes_nc_fill_double_netcdf4_masks_at_least_the_source(tmp_path):
    src = _source(tmp_path / "src", "zarr")  # netcdf-c's pure Zarr, copied to NCZarr
    out = tmp_path / "out"
    _convert(src, out, mode="nczarr")
    assert json.loads((out / "d" / ".zarray").read_text())["fill_value"] == NC_FILL_DOUBLE
    # netCDF4 masks what it masks in the source, and the chunk never written
    assert _netcdf4_mask(nc_url(out), "d") == COPY_MASK
    assert _xarray_mask(out, "d") == _gdal_mask(out, "d") == COPY_MASK
    assert _netcdf4_mask(nc_url(out), "f") == _netcdf4_mask(nc_url(src, "zarr"), "f")


@pytest.mark.parametrize("kind", ["nczarr", "zarr"])
def test_migrate_to_zarr_writes_nc_fill_double(tmp_path, kind):
    store = _source(tmp_path / "store", kind)
    with pytest.warns(nczarr.NCZarrWarning, match=COPY_WARNING):
        report = nczarr.migrate(store, to="zarr")
    assert [w for w in report.warnings if w.startswith("'/d': the fill_value 9.96921e+36")]
    assert "d/.zarray" in report.metadata_written
    assert json.loads((store / "d" / ".zarray").read_text())["fill_value"] == NC_FILL_DOUBLE
    assert _xarray_mask(store, "d") == _gdal_mask(store, "d") == COPY_MASK
    again = nczarr.migrate(store, to="zarr")  # done: nothing to write, nothing to say
    assert again.metadata_written == () and not again.warnings


def test_migrate_current_nczarr_to_nczarr_keeps_its_metadata_and_says_nothing(tmp_path):
    store = _source(tmp_path / "store", "nczarr")
    before = (store / "d" / ".zarray").read_bytes()
    report = nczarr.migrate(store, to="nczarr")
    assert report.metadata_written == () and not report.warnings
    assert (store / "d" / ".zarray").read_bytes() == before


@pytest.mark.parametrize("kind", ["nczarr", "zarr"])
def test_engine_and_view_keep_the_fill_netcdf4_reads(tmp_path, kind):
    """The nczarr engine reads what engine="netcdf4" reads of netcdf-c's store: the view
    it reads through is not a written copy."""
    src = _source(tmp_path / "src", kind)
    for mode in ("zarr", "nczarr"):
        doc = json.loads(nczarr.view(src, mode)["d/.zarray"])
        assert doc["fill_value"] == 9.96921e36
    with xr.open_dataset(nc_url(src, kind), engine="netcdf4") as nc:
        expected = nc.load()
    with xr.open_dataset(src, engine="nczarr") as ds:
        xr.testing.assert_identical(ds.load(), expected)
    # xarray's netcdf4 engine masks by _FillValue only: no NaN (the engine agrees)
    assert not np.isnan(expected["d"].values).any()


def _days(path: Path, t0: int, n: int) -> Path:
    """``d(t)``: a double without ``_FillValue`` along an unlimited ``t``, chunks of 2."""
    with netCDF4.Dataset(nc_url(path), "w") as ds:
        ds.createDimension("t", None)
        var = ds.createVariable("d", "f8", ("t",), chunksizes=(2,))
        var[:] = np.arange(t0, t0 + n, dtype="f8")
    return path


def test_append_keeps_the_targets_fill_value(tmp_path):
    """An append rewrites the target's metadata (its new shape) and keeps its fill."""
    dst = _days(tmp_path / "dst", 0, 4)
    nczarr.convert(_days(tmp_path / "src", 4, 2), dst, append_dim="t")
    assert json.loads((dst / "d" / ".zarray").read_text())["fill_value"] == 9.96921e36
    with netCDF4.Dataset(nc_url(dst)) as ds:
        assert ds["d"][:].tolist() == list(range(6))
    copy = tmp_path / "copy.zarr"  # a copy's fill stays NC_FILL_DOUBLE through an append
    _convert(_days(tmp_path / "a", 0, 4), copy, mode="zarr")
    nczarr.convert(_days(tmp_path / "b", 4, 2), copy, append_dim="t")
    assert json.loads((copy / "d" / ".zarray").read_text())["fill_value"] == NC_FILL_DOUBLE
    with xr.open_zarr(str(copy), consolidated=False) as ds:
        assert ds["d"].values.tolist() == list(range(6))
    shutil.rmtree(copy)
