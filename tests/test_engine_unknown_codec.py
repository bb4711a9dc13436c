"""One array whose codec numcodecs lacks does not fail the xarray engine for the whole
store: as xarray's netcdf4 engine shows a variable whose filter netcdf-c lacks (kept,
its reads failing with NC_ENOFILTER), the variable is shown with its shape, type and
attributes and reading it raises an error naming it and the codec; the other
variables read as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import UnsupportedError

from .ncoracle import nc_url


def _break_codec(zarray: Path) -> None:
    doc = json.loads(zarray.read_text())
    doc["compressor"] = {"id": "nosuchcodec", "level": 1}
    zarray.write_text(json.dumps(doc))


def _zarr_python_store(path: Path) -> Path:
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    for name in ("a", "b"):
        array = root.create_array(name, shape=(4,), chunks=(2,), dtype="i4", compressors=None)
        array[:] = np.arange(4, dtype="i4") + 1
        array.attrs.update({"_ARRAY_DIMENSIONS": ["x"], "units": "m"})
    _break_codec(path / "b" / ".zarray")
    return path


def _nczarr_store(path: Path) -> Path:
    import netCDF4

    with netCDF4.Dataset(nc_url(path), "w") as ds:
        ds.createDimension("x", 4)
        for name in ("a", "b"):
            var = ds.createVariable(name, "i4", ("x",))
            var[:] = np.arange(4, dtype="i4") + 1
            var.units = "m"
    _break_codec(path / "b" / ".zarray")
    return path


@pytest.mark.parametrize("make", [_zarr_python_store, _nczarr_store], ids=["zarr2", "nczarr"])
@pytest.mark.parametrize("chunks", [None, {}], ids=["numpy", "dask"])
def test_the_variable_is_shown_and_its_reads_refused(tmp_path: Path, make, chunks) -> None:
    store = make(tmp_path / "s.zarr")
    with pytest.warns(nczarr.NCZarrWarning, match="codec 'nosuchcodec' is not known"):
        ds = xr.open_dataset(store, engine="nczarr", chunks=chunks)
    with ds:
        # decoded as its readable twin (xarray's conventions: zarr-python's fill 0 is
        # a missing value, so both are float64 there)
        assert ds["b"].shape == (4,) and ds["b"].dtype == ds["a"].dtype
        assert ds["b"].encoding["dtype"] == np.int32
        assert ds["b"].attrs["units"] == "m"
        assert ds["a"].values.tolist() == [1, 2, 3, 4]
        with pytest.raises(UnsupportedError, match=r"variable '/b'.*no codec 'nosuchcodec'"):
            ds["b"].load()
