"""A combine writes a new store as ``convert`` writes a copy, and says what
``convert`` says of a copy's readers: packing attributes of netCDF type float that
pure Zarr holds as JSON numbers (xarray then decodes float64, not float32), netCDF
char written as 1-byte bytes (netCDF readers then read strings), 0-d scalars netcdf-c
leaves out. Before, a combine's metadata were written as a view's, without them
(``Target.stored``/``written_copy`` were decided apart for combines)."""

from __future__ import annotations

import re
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr

PACKED = r"array '/v': packing attributes .*float64, not float32"
CHAR = r"array '/c': netCDF char is written as 1-byte fixed-width bytes"
SCALAR = r"'/s'.*0-d"


def _source(path: Path, t0: int) -> Path:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("n", 3)
        v = ds.createVariable("v", "i2", ("time",))
        v.scale_factor = np.float32(0.5)
        v.set_auto_maskandscale(False)
        v[:] = np.arange(t0, t0 + 2, dtype="i2")
        ds.createVariable("c", "S1", ("n",))[:] = np.array(list("abc"), "S1")
        ds.createVariable("s", "f8")[...] = 1.5
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(t0, t0 + 2)
    return path


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_combine_into_pure_zarr_warns_as_convert_does(tmp_path: Path, zarr_format: int) -> None:
    paths = [_source(tmp_path / f"d{i}.nc", 2 * i) for i in range(2)]
    with pytest.warns(nczarr.NCZarrWarning) as convert_said:
        nczarr.convert(paths[0], tmp_path / "one", mode="zarr", zarr_format=zarr_format)
    with pytest.warns(nczarr.NCZarrWarning) as combine_said:
        nczarr.convert(
            paths, tmp_path / "all", concat_dim="time", mode="zarr", zarr_format=zarr_format
        )
    expected = [PACKED, CHAR] + ([SCALAR] if zarr_format == 2 else [])
    for said in (convert_said, combine_said):
        texts = [str(w.message) for w in said]
        for pattern in expected:
            assert any(re.search(pattern, t) for t in texts), (
                pattern,
                texts,
            )
    with xr.open_zarr(tmp_path / "all", zarr_format=zarr_format, consolidated=False) as ds:
        assert ds["v"].dtype == np.float64  # what the warning says
        assert ds["v"].values.tolist() == [0.0, 0.5, 1.0, 1.5]
