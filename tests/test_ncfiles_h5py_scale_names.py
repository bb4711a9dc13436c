"""h5py's reading of a netCDF-4 file names each axis's dimension scale by the path its
listing found, not by asking HDF5 (``.name`` of a dereferenced scale searches the
whole file: once per axis of every dataset, 101 s for 2,000 variables). The answer is
HDF5's own, checked axis by axis, including a scale linked twice (HDF5 then says
which path) and groups; and h5py is asked each object's name a bounded number of
times, not once more per axis.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest

from nczarr.ncfile.h5py_nodes import root_node
from nczarr.ncfile.hdf5 import HDF5Reader


def _file(path: Path, count: int) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 3)
        ds.createVariable("t", "f8", ("t",))
        ds.createVariable("x", "f8", ("x",))[:] = [1, 2, 3]
        inner = ds.createGroup("g")
        inner.createDimension("y", 2)
        for i in range(count):
            ds.createVariable(f"v{i}", "f4", ("t", "x"))[0:2] = np.ones((2, 3))
            inner.createVariable(f"w{i}", "i2", ("y", "x"))
    return path


def _every_dataset(node, out):
    for _, child in node.children():
        if child.is_group:
            _every_dataset(child, out)
        else:
            out.append(child)
    return out


def test_each_axis_is_named_as_hdf5_names_it(tmp_path: Path) -> None:
    path = _file(tmp_path / "f.nc", 5)
    with h5py.File(path, "a") as f:
        f["g/x_again"] = f["x"]  # the scale x linked twice: HDF5 says which path
    with h5py.File(path, "r") as f:
        datasets = _every_dataset(root_node(f, h5py, "f.nc"), [])
        checked = 0
        for node in datasets:
            for axis in range(len(node.shape)):
                scales = f[node.name].dims[axis].values()
                expected = scales[0].name if scales else None
                assert node.attached_scale(axis) == expected, (node.name, axis)
                checked += expected is not None
    assert checked >= 20


def test_h5py_is_asked_each_name_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 40
    path = _file(tmp_path / "f.nc", count)
    real = h5py._hl.base.HLObject.name
    asked = []

    def name(self):
        asked.append(1)
        return real.fget(self)

    monkeypatch.setattr(h5py._hl.base.HLObject, "name", property(name))
    reader = HDF5Reader(str(path), "f.nc")  # no read_at: h5py reads it
    try:
        assert reader.backend == "h5py"
        objects = 2 * count + 4  # datasets, the group and the root
        assert reader.dataset.root.groups["g"].variables["w0"].dimensions == ("/g/y", "/x")
        assert len(asked) <= objects + 2, len(asked)  # 2 * count more before: one an axis
    finally:
        reader.close()
