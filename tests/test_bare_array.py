"""A store whose root is a bare Zarr array (no group) converts with its data.

The reader exposes it as a variable named after the store; its chunks live at the
source's root (``0.0``) and are shown, and copied, under the variable (``name/0.0``).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr


@pytest.fixture
def bare(tmp_path):
    path = tmp_path / "bare.zarr"
    values = np.arange(60, dtype="<i4").reshape(6, 10) * 7 - 3
    array = zarr.create_array(str(path), shape=(6, 10), chunks=(4, 4), dtype="<i4", zarr_format=2)
    array[:] = values
    return path, values


def test_view_shows_the_chunks_under_the_variable(bare):
    path, values = bare
    view = nczarr.view(str(path), mode="zarr")
    assert view.keys_mapped
    assert sorted(view.chunk_keys()) == sorted(f"bare/{i}.{j}" for i in range(2) for j in range(3))
    assert view.source_key("bare/1.2") == "1.2"
    assert view["bare/1.2"] == (path / "1.2").read_bytes()
    group = zarr.open_group(store=nczarr.ZarrStore(view), mode="r")
    np.testing.assert_array_equal(group["bare"][:], values)


@pytest.mark.parametrize("mode", ["zarr", "nczarr"])
def test_convert_copies_the_data(bare, tmp_path, mode):
    path, values = bare
    out = tmp_path / f"out.{mode}"
    report = nczarr.convert(str(path), str(out), mode=mode)
    assert report.chunks_copied == 6
    assert (out / "bare" / "1.2").read_bytes() == (path / "1.2").read_bytes()
    if mode == "zarr":
        np.testing.assert_array_equal(zarr.open_group(str(out), mode="r")["bare"][:], values)
        assert xr.open_zarr(out, consolidated=False)["bare"].shape == (6, 10)
    else:
        import netCDF4

        with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
            np.testing.assert_array_equal(ds["bare"][:], values)
