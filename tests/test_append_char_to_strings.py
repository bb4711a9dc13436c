"""netCDF char (``S1`` with a string-length axis) appended or combined onto fixed-width
strings as xarray writes them (a Zarr ``|S3`` array) is refused, before anything is
written, saying which variable and why: the two forms are not combined. The message
was "dimension '/string3' (of '/c') is not in st.zarr", which named no cause."""

from __future__ import annotations

import re
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.errors import InvalidModeError

from .growing import files
from .ncoracle import nc_url

WHY = re.compile(
    r"'/c' \(3 bytes a value\) is netCDF char in .*its last dimension '/string3' the "
    r"string length, and a string variable without that dimension in .*st\.zarr"
)


def _xarray_store(path: Path) -> Path:
    ds = xr.Dataset(
        {"c": (("time",), np.array([b"abc", b"de", b"f"], dtype="S3"))},
        coords={"time": np.arange(3)},
    )
    ds.to_zarr(path, zarr_format=2, consolidated=True)
    return path


def test_to_nczarr_append_of_bytes_onto_xarray_strings_says_why(tmp_path):
    store = _xarray_store(tmp_path / "st.zarr")
    before = files(store)
    new = xr.Dataset(
        {"c": (("time",), np.array([b"gh", b"ijk"], dtype="S3"))},
        coords={"time": np.arange(3, 5)},
    )
    with pytest.raises(InvalidModeError, match=WHY) as raised:
        nczarr.to_nczarr(new, store, mode="a", append_dim="time")
    assert "the dataset" in str(raised.value)
    assert files(store) == before
    # what xarray wrote still reads as it did
    with xr.open_zarr(store) as ds:
        assert ds["c"].values.tolist() == [b"abc", b"de", b"f"]


def test_a_combine_of_netcdf_char_after_xarray_strings_says_why(tmp_path):
    first = _xarray_store(tmp_path / "st.zarr")
    second = tmp_path / "nc.file"
    with netCDF4.Dataset(nc_url(second), "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("string3", 3)
        ds.createVariable("time", "i8", ("time",))[:] = [3, 4]
        c = ds.createVariable("c", "S1", ("time", "string3"))
        c[:] = netCDF4.stringtochar(np.array([b"gh", b"ijk"], dtype="S3"))
    with pytest.raises(InvalidModeError, match=WHY):
        nczarr.convert([first, second], tmp_path / "out", "zarr", concat_dim="time")
    assert not (tmp_path / "out").exists()
