"""A convert of a local ``.nc`` file loads only what it uses (issue 18: a CLI convert
is measured against ``cp``, interpreter start and imports included): no numpy for a
netCDF-3 file (its header is decoded with ``struct``) nor, through the numpy-free HDF5
reader, for a netCDF-4 file, and no fsspec, asyncio or zipfile for either format into
a directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import zarr

SCRIPT = """
import json, sys
import nczarr
nczarr.convert(sys.argv[1], sys.argv[2], sys.argv[3])
names = ("numpy", "h5py", "fsspec", "asyncio", "zipfile", "numcodecs", "zarr", "xarray",
         "dataclasses", "inspect")
print(json.dumps({name: name in sys.modules for name in names}))
"""


def _loaded(src: Path, out: Path, fmt: str) -> dict[str, bool]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(src), str(out), fmt],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_a_netcdf3_convert_imports_no_numpy_and_no_remote_or_zip_code(tmp_path):
    src = tmp_path / "c.nc"
    with netCDF4.Dataset(src, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 3)
        v = ds.createVariable("v", "f4", ("t", "x"), fill_value=np.float32(-1.5))
        v.setncattr("steps", np.array([1, -2], dtype="i2"))
        v.title = "records"
        v[:] = np.arange(6, dtype="f4").reshape(2, 3)
    for fmt in ("nczarr", "zarr"):
        loaded = _loaded(src, tmp_path / f"out-{fmt}", fmt)
        assert not any(loaded.values()), loaded
    group = zarr.open_group(str(tmp_path / "out-zarr"), mode="r")
    np.testing.assert_array_equal(group["v"][:], np.arange(6, dtype="f4").reshape(2, 3))
    assert group["v"].fill_value == np.float32(-1.5)
    assert list(group["v"].attrs["steps"]) == [1, -2]


def test_a_netcdf4_convert_imports_no_remote_zip_or_codec_code(tmp_path):
    src = tmp_path / "h.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.createDimension("x", 4)
        v = ds.createVariable("v", "i4", ("x",), compression="zlib", chunksizes=(2,))
        v[:] = np.arange(4)
    loaded = _loaded(src, tmp_path / "out", "zarr")
    # the numpy-free reader reads the chunk index: neither h5py nor numpy
    assert not any(loaded.values()), loaded
