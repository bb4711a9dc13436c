"""``to_nczarr`` refuses float values that would wrap around in the integer type they
are packed into, naming the variable, before the store is touched (xarray's encoder,
as ``to_netcdf`` and ``to_zarr``, wraps them silently: 400.0 at scale 0.01 into int16
read back as -255.36). Found by a differential hunt on appends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.errors import ValueRangeError

from .growing import files


def _packed(values, times, **encoding) -> xr.Dataset:
    ds = xr.Dataset({"temp": (("time",), np.array(values))}, coords={"time": times})
    ds["temp"].encoding = {"dtype": "int16", "scale_factor": 0.01, "_FillValue": -32767}
    ds["temp"].encoding.update(encoding)
    return ds


def test_a_new_store_is_not_written(tmp_path: Path) -> None:
    with pytest.raises(ValueRangeError, match=r"'/temp': value 400.0 packs to 40000.0"):
        nczarr.to_nczarr(_packed([1.0, 400.0], [0.0, 1.0]), tmp_path / "s.zarr")
    assert not (tmp_path / "s.zarr").exists()


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_an_append_leaves_the_store_byte_identical(tmp_path: Path, lazy: bool) -> None:
    store = tmp_path / "s.zarr"
    nczarr.to_nczarr(_packed([1.0, 2.0], [0.0, 1.0]), store)
    before = files(store)
    more = _packed([-400.0, np.nan], [2.0, 3.0])
    with pytest.raises(ValueRangeError, match=r"outside int16's range"):
        nczarr.to_nczarr(more.chunk() if lazy else more, store, mode="a", append_dim="time")
    assert files(store) == before


def test_values_in_range_and_missing_values_are_written(tmp_path: Path) -> None:
    store = tmp_path / "s.zarr"
    ds = _packed([327.67, -327.68, np.nan], [0.0, 1.0, 2.0])
    nczarr.to_nczarr(ds.chunk(), store)
    back = xr.open_dataset(store, engine="nczarr")
    np.testing.assert_allclose(back["temp"].values, [327.67, -327.68, np.nan])


def test_unsigned_packing_uses_the_unsigned_range(tmp_path: Path) -> None:
    ds = _packed([600.0], [0.0], dtype="int16", _Unsigned="true", _FillValue=-1)
    nczarr.to_nczarr(ds, tmp_path / "u.zarr")  # 60000 fits uint16
    with pytest.raises(ValueRangeError, match=r"outside uint16's range"):
        nczarr.to_nczarr(_packed([-1.0], [0.0], _Unsigned="true"), tmp_path / "v.zarr")
