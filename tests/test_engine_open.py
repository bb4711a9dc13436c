"""The nczarr engine builds its zarr arrays from the translated metadata it holds.

Opening a dataset used to read every array's ``.zarray`` and ``.zattrs`` again through
zarr-python's event loop (``zarr.open_array``: a thread hop each way per array, most of
the engine's open time). The arrays are now built by zarr-python's own ``AsyncArray``
from the view's metadata; these tests show no metadata is read through the store on
open and that the arrays are the ones ``zarr.open_array`` gives.
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr
import zarr

from nczarr.integrations import fastpipeline
from nczarr.integrations.xarray_backend import NCZarrSource
from nczarr.integrations.zarr_store import ZarrStore


def _store(path: Path) -> str:
    url = f"file://{path}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("y", 6)
        ds.createDimension("x", 5)
        a = ds.createVariable("a", "f4", ("y", "x"), chunksizes=(4, 2), zlib=True)
        a[:] = np.arange(30, dtype="f4").reshape(6, 5)
        a.units = "K"
        b = ds.createVariable("b", "i2", ("x",), fill_value=-9)
        b[:3] = [1, 2, 3]
    return url


def test_open_reads_no_metadata_through_the_store(tmp_path, monkeypatch) -> None:
    url = _store(tmp_path / "s")
    asked: list[str] = []
    real_get = ZarrStore.get

    async def get(self, key, *args, **kwargs):
        asked.append(key)
        return await real_get(self, key, *args, **kwargs)

    monkeypatch.setattr(ZarrStore, "get", get)
    with xr.open_dataset(url, engine="nczarr") as ds:
        assert asked == []
        with xr.open_dataset(url, engine="netcdf4") as ref:
            xr.testing.assert_identical(ds.load(), ref.load())


def test_arrays_are_those_zarr_open_array_gives(tmp_path) -> None:
    source = NCZarrSource(_store(tmp_path / "s"))
    try:
        for var in source.dataset.root.variables.values():
            ours = source.array(var).get_array()
            path = var.path.strip("/")
            with fastpipeline.fast_pipeline():
                theirs = zarr.open_array(store=source._store, path=path, mode="r", zarr_format=2)
            assert ours.metadata == theirs.metadata
            assert dict(ours.attrs) == dict(theirs.attrs)
            assert isinstance(ours._async_array.codec_pipeline, fastpipeline.NCZarrCodecPipeline)
            np.testing.assert_array_equal(ours[...], theirs[...])
    finally:
        source.close()


def test_arrays_are_built_with_zarrs_public_from_dict(tmp_path, monkeypatch) -> None:
    built: list[str] = []
    real = zarr.Array.from_dict.__func__

    def from_dict(cls, store_path, data):
        built.append(store_path.path)
        return real(cls, store_path, data)

    monkeypatch.setattr(zarr.Array, "from_dict", classmethod(from_dict))
    url = _store(tmp_path / "s")
    with xr.open_dataset(url, engine="nczarr") as ds, xr.open_dataset(url, engine="netcdf4") as ref:
        assert sorted(built) == ["a", "b"]
        xr.testing.assert_identical(ds.load(), ref.load())


def test_a_zarr_without_from_dict_gets_open_array(tmp_path, monkeypatch) -> None:
    monkeypatch.delattr(zarr.Array, "from_dict")
    source = NCZarrSource(_store(tmp_path / "s"))
    try:
        for var in source.dataset.root.variables.values():
            ours = source.array(var).get_array()
            path = var.path.strip("/")
            theirs = zarr.open_array(store=source._store, path=path, mode="r", zarr_format=2)
            assert ours.metadata == theirs.metadata
            assert isinstance(ours._async_array.codec_pipeline, fastpipeline.NCZarrCodecPipeline)
            np.testing.assert_array_equal(ours[...], theirs[...])
    finally:
        source.close()
