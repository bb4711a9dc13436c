"""A ``.nc`` source named every way the issue lists: a path, a ``file://`` URL, any
fsspec URL (``memory://`` here; S3 in test_ncfiles_s3), with any netCDF suffix, and
an HDF5 file with a user block (its superblock at 512 bytes or later, which netCDF4
opens too)."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import fsspec
import h5py
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.errors import NCZarrWarning

from .ncfiles import assert_same_values, build_netcdf3, nc_values
from .ncoracle import describe_url, diff

STORAGE_FIELDS = ("compressor", "filters", "chunks", "warnings", "maxstrlen", "text_storage")


@pytest.fixture
def memory_dir() -> Iterator[str]:
    """A fresh directory of fsspec's memory filesystem, removed afterwards."""
    fs = fsspec.filesystem("memory")
    root = f"/nc-{uuid.uuid4().hex[:8]}"
    yield root
    fs.rm(root, recursive=True)


def _userblock(path: Path) -> Path:
    with h5py.File(path, "w", userblock_size=1024) as f:
        f.create_dataset("a", data=np.arange(12, dtype="i4").reshape(3, 4), chunks=(2, 4))
        f.create_dataset("b", data=np.arange(3.0))
        f.attrs["title"] = "after a user block"
    with open(path, "r+b") as f:
        f.write(b"not HDF5: a user block")
    return path


def _zarr_values(out: Path) -> dict[str, np.ndarray]:
    return {f"/{n}": a[...] for n, a in zarr.open_group(str(out), mode="r").arrays()}


def test_user_block_file_is_read_as_netcdf4_reads_it(tmp_path: Path) -> None:
    path = _userblock(tmp_path / "ub.h5")
    assert nczarr.detect(str(path)).layout == "netcdf4"
    dataset = nczarr.read(str(path))
    oracle = describe_url(str(path), "netcdf4")
    assert diff(dataset, oracle, ignore=(*STORAGE_FIELDS, "endian")) == []
    nczarr.convert(str(path), str(tmp_path / "out"), "zarr")
    assert_same_values(nc_values(str(path)), _zarr_values(tmp_path / "out"))


@pytest.mark.parametrize("suffix", [".nc", ".nc4", ".h5", ".cdf"])
def test_fsspec_url_source(tmp_path: Path, memory_dir: str, suffix: str) -> None:
    path = _userblock(tmp_path / "ub.h5") if suffix == ".h5" else tmp_path / f"x{suffix}"
    if suffix != ".h5":
        build_netcdf3(path, "NETCDF3_64BIT_DATA")
    url = f"memory://{memory_dir}/x{suffix}"
    fsspec.filesystem("memory").pipe(f"{memory_dir}/x{suffix}", path.read_bytes())
    layout = nczarr.detect(url).layout
    assert layout == ("netcdf4" if suffix == ".h5" else "netcdf3-cdf5")
    ignore = (*STORAGE_FIELDS, "endian")
    assert diff(nczarr.read(url), describe_url(str(path), layout), ignore=ignore) == []
    out = tmp_path / "out"
    nczarr.convert(url, str(out), "zarr")
    assert_same_values(nc_values(str(path)), _zarr_values(out))


def test_file_url_source(tmp_path: Path) -> None:
    path = build_netcdf3(tmp_path / "x.nc", "NETCDF3_CLASSIC")
    url = path.resolve().as_uri()
    assert nczarr.detect(url).layout == "netcdf3-classic"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", NCZarrWarning)
        report = nczarr.convert(url, str(tmp_path / "out"), "zarr")
    # the only announcements: xarray masks the byte default fill ncdump shows as data,
    # netCDF readers read the char array back as strings, and netcdf-c 4.10 leaves the
    # scalar, a 0-d array, out of the Zarr v2 copy
    messages = sorted(str(w.message) for w in said if issubclass(w.category, NCZarrWarning))
    assert [m.split(":")[0] for m in messages] == [
        "'/f_i1'",
        "'/r_i1'",
        "array '/chars'",
        "array '/scalar'",
    ]
    assert all("the Zarr v2 fill_value -127" in m for m in messages[:2])
    assert "netCDF char is written as 1-byte fixed-width bytes" in messages[2]
    assert messages[3].startswith("array '/scalar': a netCDF scalar, written as a 0-d")
    assert report.source_layout == "netcdf3-classic"
    assert_same_values(nc_values(str(path)), _zarr_values(tmp_path / "out"))
