"""Dimension names of HDF5 datasets without netCDF dimension scales, as netCDF4 names them.

An HDF5 file written by h5py (or a netCDF-4 file with plain datasets added) has axes
no dimension scale names. netCDF4 (libnetcdf 4.10) is the oracle: each such axis gets
the first dimension of its own group with its length and unlimited-ness not taken by
an earlier axis, else a new ``phony_dim_<id>`` (ids after the scales', groups children
first; a new 0-length one is unlimited). nczarr reads the file with the same names, and
a converted NCZarr store shows them to netCDF4 as the file did.

A plain dataset matched to an unlimited dimension longer than the dataset reads,
past its own extent, as netCDF's default fill in netCDF4 although netCDF4 reports no
fill value for it; the converted store reads the same (tests/test_ncfiles_past_extent.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.errors import NCZarrWarning

from .ncfiles import assert_same_values, nc_values
from .ncoracle import describe, describe_url, diff

STORAGE_FIELDS = ("compressor", "filters", "chunks", "warnings", "maxstrlen", "text_storage")


def _groups_and_shapes(path: Path) -> None:
    """Square datasets, lengths shared across datasets, unlimited axes, nested groups."""
    with h5py.File(path, "w") as f:
        f.create_dataset("sq", data=np.arange(9.0).reshape(3, 3))
        f.create_dataset("r", data=np.arange(12, dtype="i4").reshape(4, 3))
        f.create_dataset("u", data=np.arange(3.0), maxshape=(None,), chunks=(2,))
        f.create_dataset("c", data=np.arange(3, dtype="i2"))
        f.create_dataset("z", data=np.ones((2, 7), "f4"))
        g = f.create_group("g")
        g.create_dataset("x", data=np.arange(15.0).reshape(3, 5))
        g.create_dataset("s", data=np.float64(1.5))
        h = g.create_group("h")
        h.create_dataset("y", data=np.arange(10, dtype="u2").reshape(5, 2))


def _creation_order(path: Path) -> None:
    """Creation order tracked (as netcdf-c does): datasets matched in that order."""
    with h5py.File(path, "w", track_order=True) as f:
        f.create_dataset("zz", data=np.arange(2.0))
        f.create_dataset("aa", data=np.arange(5.0))
        f.create_dataset("mm", data=np.ones((2, 5)))
        f.create_dataset("kk", data=np.ones((5, 2)))


def _zero_length(path: Path) -> None:
    """0-length axes: a new phony dimension of length 0 is unlimited."""
    with h5py.File(path, "w", track_order=True) as f:
        f.create_dataset("e0", data=np.zeros((0,)))
        f.create_dataset("e1", shape=(0,), maxshape=(None,), dtype="f4")
        f.create_dataset("e0b", data=np.zeros((0,)))
        f.create_dataset("m", data=np.zeros((0, 0)))
        f.create_dataset("n", shape=(0, 0), maxshape=(None, None), dtype="f4")
        f.create_dataset("f3", data=np.arange(3.0))
        f.create_dataset("g3", data=np.arange(3.0), shape=(3,), maxshape=(None,))


def _h5py_scales(path: Path) -> None:
    """Dimension scales made by h5py (no netCDF ids): named by their dataset; a plain
    dataset's axis matches a scale of its length."""
    with h5py.File(path, "w") as f:
        x = f.create_dataset("x", data=np.arange(4.0))
        x.make_scale("a label, not the name")
        y = f.create_dataset("y", data=np.arange(3.0))
        y.make_scale()
        v = f.create_dataset("v", data=np.ones((3, 4)))
        v.dims[0].attach_scale(y)
        v.dims[1].attach_scale(x)
        f.create_dataset("w", data=np.ones((4, 5)))


def _netcdf_plus_plain(path: Path) -> None:
    """A netCDF-4 file with plain datasets added: they match the real dimensions of
    their own group (fixed with fixed, unlimited with unlimited), and phony ids follow
    the real ones."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("a", 3)
        ds.createDimension("b", 3)
        ds.createDimension("q", 4)
        ds.createVariable("t", "f8", ("t",))[:] = [1.0, 2.0, 3.0]
        g = ds.createGroup("g")
        g.createDimension("k", 2)
        g.createVariable("v", "f4", ("k", "q"))[:] = np.ones((2, 4))
    with h5py.File(path, "a") as f:
        f.create_dataset("p", data=np.ones((3, 3, 3)))
        f.create_dataset("pu", data=np.arange(3.0), maxshape=(None,), chunks=(2,))
        f.create_dataset("p2", data=np.arange(6.0))
        f["g"].create_dataset("pg", data=np.ones((2, 6)))
        f["g"].create_dataset("pg3", data=np.ones((3, 4)))  # root's a and q: not matched
        f["g"].create_dataset("pgu", data=np.arange(3.0), maxshape=(None,), chunks=(2,))


def _unlimited_longer_than_its_scale(path: Path) -> None:
    """An unlimited dimension longer than its scale (a variable wrote more records):
    a plain dataset matches it by the scale's own length."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createVariable("t", "f8", ("t",))[:] = [1.0, 2.0, 3.0]
        ds.createVariable("v", "f8", ("t",))[:] = np.arange(5.0)
    with h5py.File(path, "a") as f:
        f.create_dataset("p5", data=np.arange(5.0), maxshape=(None,), chunks=(2,))
        f.create_dataset("p3", data=np.arange(3.0), maxshape=(None,), chunks=(2,))


BUILDERS: dict[str, Callable[[Path], None]] = {
    "unlimited_longer_than_its_scale": _unlimited_longer_than_its_scale,
    "groups_and_shapes": _groups_and_shapes,
    "creation_order": _creation_order,
    "zero_length": _zero_length,
    "h5py_scales": _h5py_scales,
    "netcdf_plus_plain": _netcdf_plus_plain,
}


def _file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.h5"
    BUILDERS[name](path)
    return path


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_axes_without_scales_are_named_as_netcdf4_names_them(tmp_path: Path, name: str) -> None:
    path = _file(tmp_path, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)  # past the extent: test_ncfiles_past_extent
        dataset = nczarr.read(str(path))
    oracle = describe_url(str(path), "netcdf4")
    assert diff(dataset, oracle, ignore=(*STORAGE_FIELDS, "endian")) == []


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_converted_store_shows_netcdf4_the_same_dimensions(tmp_path: Path, name: str) -> None:
    path = _file(tmp_path, name)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)  # plain HDF5: no netCDF fill values
        nczarr.convert(str(path), str(out), "nczarr")
    ignore = (*STORAGE_FIELDS, "endian", "layout", "fill_value")
    assert diff(describe(out), describe_url(str(path)), ignore=ignore) == []
    assert_same_values(nc_values(str(path)), nc_values(f"file://{out}#mode=nczarr,file"))


def test_phony_names_in_detail(tmp_path: Path) -> None:
    """What the oracle says, written out: children first, ids after the real ones."""
    a = nczarr.read(str(_file(tmp_path, "groups_and_shapes")))
    assert a.find_variable("/g/h/y").dimensions == ("/g/h/phony_dim_0", "/g/h/phony_dim_1")
    assert a.find_variable("/sq").dimensions == ("/phony_dim_4", "/phony_dim_6")
    assert a.root.dimensions["phony_dim_7"].unlimited  # u's axis
    b = nczarr.read(str(_file(tmp_path, "netcdf_plus_plain")))
    assert b.find_variable("/p").dimensions == ("/a", "/b", "/phony_dim_9")  # g took 5 to 8
    assert b.find_variable("/pu").dimensions == ("/t",)
    assert b.find_variable("/g/pg").dimensions == ("/g/k", "/g/phony_dim_5")


def test_fill_values_as_netcdf4_reports_them(tmp_path: Path) -> None:
    """HDF5's own fill value where the file defines one, netCDF's default fill for
    netcdf-c's variables, none for plain datasets and netcdf-c's no-fill variables."""
    path = tmp_path / "fills.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", 3)
        ds.createVariable("default", "i2", ("n",))[:] = [1, 2, 3]
        ds.createVariable("nofill", "f4", ("n",), fill_value=False)[:] = 1.0
        ds.createVariable("explicit", "f8", ("n",), fill_value=-9.0)[:] = 1.0
        ds.createVariable("chars", "S1", ("n",))
    with h5py.File(path, "a") as f:
        f.create_dataset("plain", data=np.arange(3.0))
        f.create_dataset("own_fill", shape=(3,), dtype=">i4", fillvalue=-5)
    dataset = nczarr.read(str(path))
    fills = {v.name: v.fill_value for v in dataset.root.variables.values()}
    assert fills == {
        "default": -32767,
        "nofill": None,
        "explicit": -9.0,
        "chars": "",
        "plain": None,
        "own_fill": -5,
    }
    oracle = describe_url(str(path), "netcdf4")
    assert diff(dataset, oracle, ignore=(*STORAGE_FIELDS, "endian")) == []
