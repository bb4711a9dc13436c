"""``nczarr check`` on a store with one malformed array: every reader fails on it
(zarr-python and GDAL on the array, xarray and netcdf-c on the whole dataset) while
nczarr's readers skip it; check said every reader was fine (or, for a ``.zattrs`` that
is not JSON, failed itself). Each claim is checked against the real reader."""

from __future__ import annotations

import json
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.translate.compat import GDAL, NC410, XARRAY, ZARR_PYTHON

from .gdalreader import read_zarr


def _shape_text(array: Path) -> None:
    doc = json.loads((array / ".zarray").read_text())
    doc["shape"] = "four"
    (array / ".zarray").write_text(json.dumps(doc))


def _unknown_dtype(array: Path) -> None:
    doc = json.loads((array / ".zarray").read_text())
    doc["dtype"] = "<q9"
    (array / ".zarray").write_text(json.dumps(doc))


def _attributes_not_json(array: Path) -> None:
    (array / ".zattrs").write_text("{not json")


def _zarray_not_json(array: Path) -> None:
    (array / ".zarray").write_text("{not json")


@pytest.mark.parametrize(
    "corrupt", [_shape_text, _unknown_dtype, _attributes_not_json, _zarray_not_json]
)
def test_check_says_every_reader_fails_on_a_malformed_array(tmp_path: Path, corrupt) -> None:
    store = tmp_path / "s.zarr"
    root = zarr.open_group(str(store), mode="w", zarr_format=2)
    for name in ("a", "b"):
        array = root.create_array(name, shape=(4,), chunks=(2,), dtype="f4", compressors=None)
        array[:] = np.arange(4, dtype="f4")
        array.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    corrupt(store / "b")
    report = nczarr.check(str(store))
    assert not report.ok
    severities = {(f.reader, f.severity) for f in report.findings if f.where == "/b"}
    gdal = "misreads" if corrupt is _attributes_not_json else "fails"
    assert {(ZARR_PYTHON, "fails"), (XARRAY, "fails"), (NC410, "refuses"), (GDAL, gdal)} <= (
        severities
    )
    assert all(f.where == "/b" for f in report.findings)
    # the real readers
    with pytest.raises(Exception):  # noqa: B017 (zarr-python's own errors differ by field)
        zarr.open_group(str(store), mode="r")["b"][:]
    assert zarr.open_group(str(store), mode="r")["a"][:].tolist() == [0, 1, 2, 3]
    with pytest.raises(Exception):  # noqa: B017
        xr.open_zarr(str(store), consolidated=False).load()
    with pytest.raises(OSError, match="NCZarr error"):
        netCDF4.Dataset(f"{store.as_uri()}#mode=zarr,file")
    seen = read_zarr(store).arrays
    assert not seen["/a"].error
    if gdal == "fails":
        assert seen["/b"].error
    else:  # opened, without its attributes or dimension names
        assert seen["/b"].attrs == {} and seen["/b"].dims == [("dim0", 4)]
