"""A combine into a new store is a written copy (issue 20): netcdf-c's rounded default
double fill (``9.96921e+36`` in ``.zarray``, no ``_FillValue``) is written as
NC_FILL_DOUBLE, as ``convert`` writes it (tests/test_double_default_fill.py), with the
same warning, so that xarray and zarr-python reading the combined store mask the values
netCDF4 masks in the sources. An append keeps the store's own fill (its encodings come
from the store)."""

from __future__ import annotations

import json
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr

from .ncoracle import nc_url

NC_FILL_DOUBLE = netCDF4.default_fillvals["f8"]
WARNING = r"'/d': the fill_value 9\.96921e\+36 .* written as NC_FILL_DOUBLE"


def _source(path: Path, t0: int, n: int = 4, chunk: int = 2) -> Path:
    """``d(time)`` (double, no ``_FillValue``) and ``f(time)`` (float), chunks of
    ``chunk``, written by netCDF4: the default fill written explicitly at every odd
    time, every chunk written."""
    with netCDF4.Dataset(nc_url(path), "w") as ds:
        ds.createDimension("time", None)
        for name, kind in (("d", "f8"), ("f", "f4")):
            var = ds.createVariable(name, kind, ("time",), chunksizes=(chunk,))
            values = np.arange(t0, t0 + n, dtype=kind)
            values[1::2] = netCDF4.default_fillvals[kind]
            var[:] = values
    return path


def _netcdf4_mask(path: Path, name: str) -> list[bool]:
    with netCDF4.Dataset(nc_url(path)) as ds:
        return np.ma.getmaskarray(ds[name][:]).tolist()


def _xarray_mask(path: Path, name: str) -> list[bool]:
    with xr.open_zarr(str(path), consolidated=False) as ds:
        return np.isnan(ds[name].values).tolist()


def _zarr_mask(path: Path, name: str) -> list[bool]:
    array = zarr.open_array(path / name, mode="r")
    assert array.fill_value == NC_FILL_DOUBLE
    return (array[:] == array.fill_value).tolist()


@pytest.mark.parametrize("lengths", [(4, 4, 4), (3, 1, 4)], ids=["aligned", "unaligned"])
def test_combine_writes_nc_fill_double_readers_mask_as_netcdf4(tmp_path, lengths):
    starts = np.cumsum((0, *lengths[:-1]))
    pairs = enumerate(zip(starts, lengths, strict=True))
    srcs = [_source(tmp_path / f"s{i}", int(t), n) for i, (t, n) in pairs]
    for src in srcs:
        assert '"fill_value": 9.96921e+36' in (src / "d" / ".zarray").read_text()
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning, match=WARNING):
        report = nczarr.convert(srcs, out, concat_dim="time")
    (told,) = [w for w in report.warnings if w.startswith("'/d': the fill_value 9.96921e+36")]
    assert "NC_FILL_DOUBLE 9.969209968386869e+36" in told
    assert not [w for w in report.warnings if w.startswith("'/f'")]
    assert json.loads((out / "d" / ".zarray").read_text())["fill_value"] == NC_FILL_DOUBLE
    source_mask = [m for src in srcs for m in _netcdf4_mask(src, "d")]
    assert sum(source_mask) == sum(n // 2 for n in lengths)  # the default fills written
    assert _xarray_mask(out, "d") == _zarr_mask(out, "d") == source_mask
    assert _netcdf4_mask(out, "d") == source_mask
    # the float: netcdf-c's fill is NC_FILL_FLOAT already, every reader masks the same
    assert _xarray_mask(out, "f") == [m for src in srcs for m in _netcdf4_mask(src, "f")]


def test_combine_dry_run_metadata_says_nc_fill_double(tmp_path):
    srcs = [_source(tmp_path / f"s{i}", 4 * i) for i in range(2)]
    with pytest.warns(nczarr.NCZarrWarning, match=WARNING):
        report = nczarr.convert(srcs, tmp_path / "out", concat_dim="time", dry_run=True)
    assert report.dry_run and not (tmp_path / "out").exists()


def test_append_keeps_the_stores_own_fill(tmp_path):
    store = _source(tmp_path / "store", 0)
    new = _source(tmp_path / "new", 4)
    assert _netcdf4_mask(new, "d") == [False, True] * 2
    before = json.loads((store / "d" / ".zarray").read_text())["fill_value"]
    report = nczarr.convert(new, store, append_dim="time")
    assert not [w for w in report.warnings if "NC_FILL_DOUBLE" in w]
    assert json.loads((store / "d" / ".zarray").read_text())["fill_value"] == before
    assert '"fill_value":9.96921e+36' in (store / "d" / ".zarray").read_text()
    # netCDF4 reads the grown store as the two sources
    assert _netcdf4_mask(store, "d") == [False, True] * 4
