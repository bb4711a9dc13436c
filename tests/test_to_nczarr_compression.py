"""``to_nczarr`` honours netCDF4's ``compression`` encoding as ``to_netcdf`` does.

netcdf-c (through ``to_netcdf(engine="netcdf4")`` on an NCZarr URL) is the oracle:
the compressor and filters each ``compression`` value writes, with ``complevel`` and
``blosc_shuffle``. Before, ``compression="blosc_lz4"`` (xarray's way to ask for Blosc)
was ignored and the chunks written uncompressed, without a word.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.errors import UnsupportedError

CASES = [
    ("blosc_lz4", {}),
    ("blosc_lz", {}),
    ("blosc_lz4hc", {"complevel": 7}),
    ("blosc_zlib", {"blosc_shuffle": 2}),
    ("blosc_zstd", {"complevel": 2, "blosc_shuffle": 0}),
    ("zstd", {}),
    ("zstd", {"complevel": 7}),
    ("bzip2", {"complevel": 3}),
]


def _dataset() -> xr.Dataset:
    values = (np.arange(3000) % 17 - 0.5).reshape(60, 50).astype("f4")  # compressible
    return xr.Dataset({"v": (("y", "x"), values)})


def _zarray(path) -> dict:
    return json.loads((path / "v" / ".zarray").read_text())


@pytest.mark.parametrize(("compression", "extra"), CASES)
def test_compression_written_as_netcdf_c_writes_it(tmp_path, compression, extra) -> None:
    ds = _dataset()
    enc = {"v": {"compression": compression, "chunksizes": (30, 25), **extra}}
    ours, theirs = tmp_path / "ours.file", tmp_path / "theirs.file"
    nczarr.to_nczarr(ds, f"file://{ours}#mode=nczarr,file", encoding=enc)
    ds.to_netcdf(f"file://{theirs}#mode=nczarr,file", engine="netcdf4", encoding=enc)
    got, expected = _zarray(ours), _zarray(theirs)
    assert got["compressor"] == expected["compressor"]
    assert got["filters"] == expected["filters"]
    with xr.open_dataset(f"file://{ours}#mode=nczarr,file", engine="netcdf4") as back:
        np.testing.assert_array_equal(back.v.values, ds.v.values)
    with xr.open_dataset(f"file://{ours}#mode=nczarr,file", engine="nczarr") as back:
        np.testing.assert_array_equal(back.v.values, ds.v.values)


@pytest.mark.parametrize("compression", ["szip", "lzma", "blosc_snappy"])
def test_other_compression_refused_before_writing(tmp_path, compression) -> None:
    target = tmp_path / "t.file"
    enc = {"v": {"compression": compression}}
    with pytest.raises(UnsupportedError, match=f"compression='{compression}'"):
        nczarr.to_nczarr(_dataset(), f"file://{target}#mode=nczarr,file", encoding=enc)
    assert not target.exists()
