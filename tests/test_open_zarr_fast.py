"""``nczarr.open_zarr`` gives its arrays nczarr's codec pipeline by default.

The group it returns is a ``zarr.Group`` whose arrays (and those of its subgroups)
read through :class:`~nczarr.integrations.fastpipeline.NCZarrCodecPipeline`; values
are those zarr-python's own pipeline reads, and arrays opened elsewhere keep zarr's
configuration.
"""

from __future__ import annotations

import netCDF4
import numpy as np
import zarr

import nczarr
from nczarr.integrations.fastgroup import FastGroup
from nczarr.integrations.fastpipeline import NCZarrCodecPipeline


def _nczarr_store(path) -> str:
    url = f"file://{path}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("x", 10)
        v = ds.createVariable("v", "f4", ("x",), chunksizes=(3,), zlib=True)
        v[:] = np.arange(10, dtype="f4")
        g = ds.createGroup("g")
        w = g.createVariable("w", "i4", ("x",), chunksizes=(4,))
        w[:] = np.arange(10, dtype="i4") * 2
    return url


def _pipeline(array: zarr.Array) -> object:
    return array._async_array.codec_pipeline


def test_translated_arrays_and_subgroups_use_the_fast_pipeline(tmp_path) -> None:
    group = nczarr.open_zarr(_nczarr_store(tmp_path / "s"))
    assert isinstance(group, zarr.Group) and isinstance(group, FastGroup)
    v, w = group["v"], group["g"]["w"]
    assert isinstance(_pipeline(v), NCZarrCodecPipeline)
    assert isinstance(_pipeline(w), NCZarrCodecPipeline)
    assert isinstance(_pipeline(group["g/w"]), NCZarrCodecPipeline)
    assert [type(_pipeline(a)) for _, a in group["g"].arrays()] == [NCZarrCodecPipeline]
    assert all(isinstance(g, FastGroup) for _, g in group.groups())
    np.testing.assert_array_equal(v[:], np.arange(10, dtype="f4"))
    np.testing.assert_array_equal(w[2:9], np.arange(2, 9, dtype="i4") * 2)
    # arrays opened elsewhere keep zarr's default pipeline
    plain = zarr.open_array(zarr.storage.MemoryStore(), mode="w", shape=(2,), dtype="i1")
    assert not isinstance(_pipeline(plain), NCZarrCodecPipeline)


def test_pure_zarr_writes_and_reads_match_zarrs_pipeline(tmp_path) -> None:
    data = np.arange(200, dtype="f8").reshape(10, 20)
    group = nczarr.open_zarr(str(tmp_path / "z"), mode="w", zarr_format=2)
    a = group.create_array("a", shape=data.shape, chunks=(4, 6), dtype="f8")
    assert isinstance(_pipeline(a), NCZarrCodecPipeline)
    a[...] = data
    a[1:3, 2:5] = -1  # partial chunks: zarr's own read-modify-write
    data[1:3, 2:5] = -1
    theirs = zarr.open_group(str(tmp_path / "z"), mode="r")["a"]  # zarr's LocalStore
    assert not isinstance(_pipeline(theirs), NCZarrCodecPipeline)
    np.testing.assert_array_equal(theirs[...], data)
    np.testing.assert_array_equal(nczarr.open_zarr(str(tmp_path / "z"))["a"][...], data)
