"""A Zarr v3 store whose root is a bare array (no group) converts and reads with its data.

As for Zarr v2 (``tests/test_bare_array.py``), the reader shows it as a variable named
after the store, its chunks read from the source's root (``c/0`` shown as ``name/0``).
The view used to list no chunk of it, so ``convert`` wrote an array of fill values and
the engine read zeros, silently.
"""

from __future__ import annotations

import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import NCZarrWarning


@pytest.fixture(params=["chunks", "shards"])
def bare(request, tmp_path):
    path = tmp_path / "bare.zarr"
    values = np.arange(60, dtype="<i4").reshape(6, 10) * 7 - 3
    shards = {"shards": (4, 8)} if request.param == "shards" else {}
    array = zarr.create_array(
        path, shape=(6, 10), chunks=(2, 4), dtype="<i4", fill_value=-1, zarr_format=3, **shards
    )
    array[:] = values
    return path, values


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        return func(*args, **kwargs)


def test_view_shows_every_chunk_under_the_variable(bare):
    path, values = bare
    view = _quiet(nczarr.view, str(path), "zarr")
    assert sorted(view.chunk_keys()) == sorted(f"bare/{i}.{j}" for i in range(3) for j in range(3))
    group = zarr.open_group(store=nczarr.ZarrStore(view), mode="r")
    np.testing.assert_array_equal(group["bare"][:], values)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_convert_to_zarr_copies_the_data(bare, tmp_path, zarr_format):
    path, values = bare
    out = tmp_path / "out.zarr"
    report = _quiet(nczarr.convert, str(path), str(out), mode="zarr", zarr_format=zarr_format)
    # 9 chunks; a Zarr v3 target keeps the 4 shards as they are (issue 17)
    sharded_v3 = zarr_format == 3 and zarr.open_array(path, mode="r").shards is not None
    assert report.chunks_copied + report.chunks_reencoded == (4 if sharded_v3 else 9)
    np.testing.assert_array_equal(zarr.open_group(out, mode="r")["bare"][:], values)


def test_convert_to_nczarr_is_read_by_netcdf_c(bare, tmp_path):
    path, values = bare
    out = tmp_path / "out.file"
    _quiet(nczarr.convert, str(path), f"file://{out}#mode=nczarr,file", mode="nczarr")
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
        np.testing.assert_array_equal(ds["bare"][:], values)


def test_engine_reads_the_data(bare):
    path, values = bare
    ds = _quiet(xr.open_dataset, path, engine="nczarr")
    np.testing.assert_array_equal(ds["bare"].values, values)
