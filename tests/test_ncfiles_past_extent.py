"""Datasets shorter than their unlimited dimension read past their extent as netCDF's fill.

netCDF4 (netcdf-c) reads a variable past its HDF5 dataset's own extent (an unlimited
dimension grown by a longer variable) as the variable's fill value, else netCDF's
default fill for its type, even where it reports no fill value: a plain HDF5
dataset matched to the dimension, or a netcdf-c variable written in no-fill mode.
HDF5 pads the stored edge chunk with its own fill (zeros for those two), so nczarr
re-encodes the chunks reaching past the extent (or writes them, all fill, where an
absent chunk would read as zeros) and says so; chunks HDF5 padded with the right
fill stay verbatim. Every target reads what netCDF4 reads from the file.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import h5py
import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.errors import NCZarrWarning
from nczarr.ncfile.source import NetCDFFileMap

from .ncfiles import assert_same_values, nc_values

#: Variables whose chunks reach past their dataset's extent with the wrong padding.
REENCODED = {"nofill_f4", "nofill_i1", "plain", "plain_2d", "plain_gzip"}


def _build(path: Path) -> Path:
    """``t`` grows to 7 records through ``v``; every other variable wrote 3 (the plain
    datasets match ``t`` by its scale's length: 3, its coordinate variable's)."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 3)
        ds.createVariable("t", "f8", ("t",))[:3] = np.arange(3.0)
        ds.createVariable("v", "f8", ("t",))[:] = np.arange(7.0)
        ds.createVariable("nofill_f4", "f4", ("t", "x"), fill_value=False, chunksizes=(2, 2))[
            :3
        ] = 1.5
        ds.createVariable("nofill_i1", "i1", ("t",), fill_value=False, chunksizes=(2,))[:3] = 4
        ds.createVariable("explicit", "i4", ("t",), fill_value=-9, chunksizes=(2,))[:3] = 5
        ds.createVariable("default", "f4", ("t",), chunksizes=(4,))[:3] = 2.5
        ds.createVariable("text", str, ("t",))[:3] = np.array(["a", "bc", "d"], object)
        ds.createVariable("letter", "S1", ("t",), fill_value=b"q")[:3] = np.array([b"x"] * 3)
    with h5py.File(path, "a") as f:
        f.create_dataset("plain", data=np.arange(3.0), maxshape=(None,), chunks=(2,))
        f.create_dataset("plain_2d", data=np.ones((3, 3), "i2"), maxshape=(None, 3), chunks=(2, 2))
        f.create_dataset(
            "plain_gzip",
            data=np.arange(3, dtype="f4"),
            maxshape=(None,),
            chunks=(4,),
            compression="gzip",
            shuffle=True,
        )
        f.create_dataset(
            "own_fill", data=np.arange(3.0), maxshape=(None,), chunks=(2,), fillvalue=-7.0
        )
    return path


def _zarr_values(root: Any) -> dict[str, Any]:
    return {f"/{name}": array[...] for name, array in root.arrays()}


def _past(values: dict[str, Any]) -> dict[str, Any]:
    """What netCDF4 reads past each short dataset's extent (records 3 to 6)."""
    return {k: v[3:].tolist() for k, v in values.items() if k not in ("/v", "/t")}


def test_the_file_reads_fill_past_the_extent_in_netcdf4(tmp_path: Path) -> None:
    """The oracle itself: what the targets must read (default fills by type)."""
    got = _past(nc_values(str(_build(tmp_path / "short.nc"))))
    assert got["/plain"] == [9.969209968386869e36] * 4
    assert got["/nofill_i1"] == [-127] * 4
    assert got["/plain_2d"] == [[-32767] * 3] * 4
    assert got["/own_fill"] == [-7.0] * 4
    assert got["/explicit"] == [-9] * 4
    assert got["/text"] == [""] * 4 and got["/letter"] == [b"q"] * 4


@pytest.mark.parametrize("fmt", ["nczarr", "zarr"])
def test_converted_targets_read_what_netcdf4_reads(tmp_path: Path, fmt: str) -> None:
    path = _build(tmp_path / "short.nc")
    out = tmp_path / "out"
    with pytest.warns(NCZarrWarning) as record:  # and the strings' heap references
        report = nczarr.convert(str(path), str(out), fmt)
    assert {p for p, _ in report.reencoded} >= {f"/{n}" for n in REENCODED}
    verbatim = {"/explicit", "/own_fill", "/default", "/v", "/t"}
    if fmt == "zarr":  # xarray would mask its HDF5 fill -7, data for netCDF4: the Zarr v2
        # fill_value is the default fill and the chunks never stored are written holding -7
        # (tests/test_hdf5_plain_fill.py)
        verbatim.discard("/own_fill")
        assert "written holding -7.0" in dict(report.reencoded)["/own_fill"]
    assert not verbatim & {p for p, _ in report.reencoded}
    named = " ".join(str(w.message) for w in record if "past the dataset's" in str(w.message))
    assert all(f"'/{n}'" in named for n in REENCODED)
    expected = nc_values(str(path))
    if fmt == "nczarr":
        got = nc_values(f"file://{out}#mode=nczarr,file")
    else:
        got = _zarr_values(zarr.open_group(str(out), mode="r"))
    assert_same_values(expected, got)


def test_view_reads_what_netcdf4_reads(tmp_path: Path) -> None:
    path = _build(tmp_path / "short.nc")
    with pytest.warns(NCZarrWarning) as record:
        group = nczarr.open_zarr(str(path))
    assert any("'/plain': 3 chunk(s) reach past the dataset's" in str(w.message) for w in record)
    assert_same_values(nc_values(str(path)), _zarr_values(group))


def test_chunks_hdf5_padded_with_the_fill_stay_verbatim(tmp_path: Path) -> None:
    """Only chunks reaching past the extent with the wrong padding are re-encoded;
    those wholly past it are written only where an absent chunk reads as zeros."""
    path = _build(tmp_path / "short.nc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        source = NetCDFFileMap(str(path))
    try:
        keys = set(source)
        assert not source.reencodes("explicit/1")  # HDF5 padded it with -9
        assert "explicit/2" not in keys  # absent: read as the fill value -9
        assert not source.reencodes("plain/0")  # wholly inside the extent
        assert source.reencodes("plain/1")  # padded with HDF5's 0
        assert source.reencodes("plain/3")  # never stored, absent would read 0
        assert not source.reencodes("plain_2d/0.0")
        assert source.reencodes("plain_2d/1.1") and source.reencodes("plain_2d/3.0")
        assert source.reencodes("nofill_i1/1") and source.reencodes("nofill_i1/3")
    finally:
        source.close()
