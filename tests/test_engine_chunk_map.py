"""The engine reads a plain array's chunks from the source map, not through the view.

A translated view passes most arrays' chunks through unchanged (same keys, same
bytes); reading them through the view's ``getitems`` cost a key normalisation and an
owner lookup per chunk on top of the source map's own. ``TranslatedView.chunk_map``
names the map to read an array's chunks from: the source for such arrays, the view
itself when it shows chunks under other keys (Zarr v3 sources) or re-encodes them.
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr
import zarr

import nczarr
from nczarr.readthrough import TranslatedView


def _netcdf_c_store(path: Path) -> str:
    url = f"file://{path}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("y", 7)
        ds.createDimension("x", 5)
        a = ds.createVariable("a", "f4", ("y", "x"), chunksizes=(3, 2), zlib=True)
        a[:] = np.arange(35, dtype="f4").reshape(7, 5)
        b = ds.createVariable("b", "i2", ("x",), fill_value=-9)
        b[:2] = [1, 2]  # chunk 1 of b is never written: read as the fill value
    return url


def test_plain_chunks_are_read_from_the_source_map(tmp_path, monkeypatch) -> None:
    url = _netcdf_c_store(tmp_path / "s")
    through_view: list[str] = []
    real = TranslatedView.getitems

    def getitems(self, keys):
        keys = list(keys)
        through_view.extend(keys)
        return real(self, keys)

    monkeypatch.setattr(TranslatedView, "getitems", getitems)
    with (
        xr.open_dataset(url, engine="nczarr") as ds,
        xr.open_dataset(url, engine="netcdf4") as ref,
    ):
        xr.testing.assert_identical(ds.load(), ref.load())
        xr.testing.assert_identical(
            ds.isel(y=slice(1, 6, 2), x=3).load(), ref.isel(y=slice(1, 6, 2), x=3).load()
        )
    assert through_view == []


def test_chunk_map_is_the_source_only_for_arrays_passed_through(tmp_path) -> None:
    url = _netcdf_c_store(tmp_path / "s")
    with nczarr.view(url, "zarr") as shown:
        assert not shown.keys_mapped and not shown.reencoded
        assert shown.chunk_map("a") is shown.source
        assert shown.chunk_map("b") is shown.source
        assert shown.chunk_map("nosuch") is shown  # not an array of the view


def test_chunk_map_is_the_view_when_keys_are_shown_otherwise(tmp_path) -> None:
    src = tmp_path / "v3.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=3)
    a = group.create_array("a", shape=(4,), chunks=(2,), dtype="i4")
    a[:] = [1, 2, 3, 4]
    with nczarr.view(src, "zarr") as shown:
        if shown.keys_mapped or shown.reencoded:
            assert shown.chunk_map("a") is shown
        else:
            assert shown.chunk_map("a") is shown.source
        np.testing.assert_array_equal(
            zarr.open_array(nczarr.ZarrStore(shown), path="a", mode="r")[...], [1, 2, 3, 4]
        )
