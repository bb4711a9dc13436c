"""An HDF5 file netcdf-c did not write: an h5py dataset with ``fillvalue=-9`` and no
``_FillValue`` attribute.

netCDF4 (the oracle for a ``.nc`` source) reads -9 as data, also in chunks never
written (HDF5 fills them with -9), and masks netCDF's default fill of the type
instead. The Zarr v2 copy used to keep ``fill_value`` -9, which xarray masks. Found by
a differential hunt. Now every copy reads as netCDF4 reads the file: a Zarr v2 copy
says the default fill as its ``fill_value`` and writes the chunks never written
holding -9 (announced); NCZarr and Zarr v3 copies keep -9 (netCDF4 masks the default
fill there too; xarray masks a v3 array by a ``_FillValue`` attribute only, and there
is none), copied verbatim.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr

from .refreaders import xarray_of_references

DEFAULT = np.float32(9.969209968386869e36)  # netCDF's default float fill
ABSENT = r"chunks the source does not store are written holding -9.0"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """``a``: chunks of 2; the first written ``[1, -9]``, the second never written,
    the third holding netCDF's default fill."""
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        a = f.create_dataset("a", shape=(6,), chunks=(2,), dtype="f4", fillvalue=-9.0)
        a[0:2] = [1, -9]
        a[4:6] = [DEFAULT, 2]
    return path


def _netcdf4(url: str) -> np.ma.MaskedArray:
    with netCDF4.Dataset(url) as ds:
        return ds["a"][:]


def _same(got: np.ndarray, oracle: np.ma.MaskedArray) -> None:
    """``got`` (xarray's, NaN for missing) shows what netCDF4 shows."""
    mask = np.ma.getmaskarray(oracle)
    assert np.isnan(got).tolist() == mask.tolist()
    np.testing.assert_array_equal(got[~mask], oracle.data[~mask])


def _convert(source: Path, dst: Path, **kw: object) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(source, dst, **kw)
    return [str(w.message) for w in caught if issubclass(w.category, nczarr.NCZarrWarning)]


def test_the_oracle(source: Path) -> None:
    oracle = _netcdf4(str(source))
    assert oracle.tolist() == [1.0, -9.0, -9.0, -9.0, None, 2.0]


def test_zarr_v2_copy_reads_as_netcdf4_reads_the_file(source: Path, tmp_path: Path) -> None:
    oracle = _netcdf4(str(source))
    dst = tmp_path / "o.zarr"
    found = _convert(source, dst, mode="zarr")
    assert any("'/a'" in w and "written holding -9.0" in w for w in found), found
    assert json.loads((dst / "a" / ".zarray").read_text())["fill_value"] == float(DEFAULT)
    assert (dst / "a" / "1").exists()  # the chunk never written, written with -9
    with xr.open_zarr(dst, consolidated=False) as ds:
        _same(ds["a"].values, oracle)


def test_nczarr_copy_reads_as_netcdf4_reads_the_file(source: Path, tmp_path: Path) -> None:
    oracle = _netcdf4(str(source))
    dst = tmp_path / "o.file"
    assert _convert(source, dst, mode="nczarr") == []  # verbatim
    assert not (dst / "a" / "1").exists()
    got = _netcdf4(f"file://{dst}#mode=nczarr,file")
    assert np.ma.getmaskarray(got).tolist() == np.ma.getmaskarray(oracle).tolist()
    assert got.filled(0).tolist() == oracle.filled(0).tolist()


def test_zarr_v3_copy_keeps_the_hdf5_fill(source: Path, tmp_path: Path) -> None:
    dst = tmp_path / "o3.zarr"
    _convert(source, dst, mode="zarr", zarr_format=3)
    doc = json.loads((dst / "a" / "zarr.json").read_text())
    assert doc["fill_value"] == -9.0 and "_FillValue" not in doc["attributes"]
    with xr.open_zarr(dst, consolidated=False, zarr_format=3) as ds:
        # xarray masks nothing of a v3 array without _FillValue: netCDF4's default
        # fill shows as data there, as in xarray's netcdf4 engine on the file
        np.testing.assert_array_equal(ds["a"].values, [1, -9, -9, -9, DEFAULT, 2])
    with xr.open_dataset(source, engine="netcdf4") as theirs:
        np.testing.assert_array_equal(theirs["a"].values, [1, -9, -9, -9, DEFAULT, 2])


def test_references_and_engine(source: Path, tmp_path: Path) -> None:
    oracle = _netcdf4(str(source))
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        refs = nczarr.references(str(source), mode="zarr")
    with xarray_of_references(refs, tmp_path / "refs.json") as ds:
        _same(ds["a"].values, oracle)
    with xr.open_dataset(source, engine="nczarr") as ours, xr.open_dataset(source) as theirs:
        np.testing.assert_array_equal(ours["a"].values, theirs["a"].values)
