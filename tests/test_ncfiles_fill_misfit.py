"""A ``_FillValue`` the variable's type cannot hold (300 on a ``byte``, 2.5 on an
``int``, 1e300 on a ``float``): netCDF4-python reads the variable without it, warning
that it "cannot be safely cast"; nczarr leaves the variable out, naming it and the
value, and ``convert`` refuses it unless it is excluded (it used to raise a raw
``OverflowError`` from deep in the reader, or keep a fill the copy's readers would not
share). An integral float on an integer type (2.0 on an ``int``) is a value of it.

netcdf-c refuses to write such an attribute, so the files are made by netCDF4 and
then changed: the HDF5 attribute rewritten by h5py (as an h5py or h5netcdf user would
write it), the netCDF-3 header's attribute renamed byte for byte.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr import NCZarrWarning, UnsupportedTypeError
from nczarr.ncfile.values import STRUCT_CODES, fill_misfit, fits
from nczarr.translate.model import Attribute

#: (variable type, the _FillValue written, its numpy type)
MISFITS = [
    ("i1", 300, "i2"),
    ("i4", 2.5, "f8"),
    ("u2", -1, "i4"),
    ("f4", 1e300, "f8"),
    ("f4", 0.1, "f8"),  # no single-precision value equals the double 0.1
    ("f4", 16777217, "i4"),
    ("i8", float("nan"), "f8"),
    ("i1", [1, 300], "i2"),  # every value is judged
    ("S1", 65, "i4"),  # a number for a char variable
]


def _netcdf4(path: Path, vtype: str, fill, fill_type: str) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 4)
        values = np.array(list("abcd"), "S1") if vtype == "S1" else np.arange(4)
        ds.createVariable("bad", vtype, ("x",))[:] = values
        ds.createVariable("good", "f4", ("x",))[:] = np.arange(4) / 2
    with h5py.File(path, "a") as f:
        f["bad"].attrs.create("_FillValue", np.array(np.atleast_1d(fill), dtype=fill_type))
    return path


def _netcdf3(path: Path) -> Path:
    """A netCDF-3 file whose byte variable's short ``_FillValue`` is 300."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", 4)
        bad = ds.createVariable("bad", "i1", ("x",))
        bad.setncattr("_FillValuX", np.int16(300))  # renamed below: netcdf-c refuses it
        bad[:] = np.arange(4)
        ds.createVariable("good", "f4", ("x",))[:] = np.arange(4) / 2
    data = path.read_bytes()
    assert data.count(b"_FillValuX") == 1
    path.write_bytes(data.replace(b"_FillValuX", b"_FillValue"))
    return path


def _netcdf4_reading(path: Path) -> dict:
    """What netCDF4-python reads: the values, unmasked, with its safe-cast warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with netCDF4.Dataset(path) as ds:
            bad = ds["bad"][:]
            good = ds["good"][:]
    assert any("cannot be safely cast" in str(w.message) for w in caught)
    assert not np.ma.is_masked(bad)
    return {"bad": np.asarray(bad), "good": np.asarray(good)}


@pytest.mark.parametrize("vtype,fill,fill_type", MISFITS)
def test_a_netcdf4_variable_whose_fill_its_type_cannot_hold_is_left_out_by_name(
    tmp_path, hdf5_reader, vtype, fill, fill_type
):
    path = _netcdf4(tmp_path / "f.nc", vtype, fill, fill_type)
    theirs = _netcdf4_reading(path)
    with pytest.warns(
        NCZarrWarning, match=r"skipped array '/bad': its _FillValue .* is not (a|text)"
    ):
        ds = nczarr.read(str(path))
    assert list(ds.root.variables) == ["good"] and ds.skipped == ("/bad",)
    with pytest.raises(UnsupportedTypeError, match=r"bad.*_FillValue .*exclude=\['/bad'\]"):
        nczarr.convert(str(path), str(tmp_path / "refused.zarr"), "zarr")
    assert not (tmp_path / "refused.zarr").exists()
    with pytest.warns(NCZarrWarning):
        nczarr.convert(str(path), str(tmp_path / "out.zarr"), "zarr", exclude=["/bad"])
    group = zarr.open_group(str(tmp_path / "out.zarr"), mode="r")
    assert sorted(group.array_keys()) == ["good"]
    np.testing.assert_array_equal(group["good"][:], theirs["good"])


def test_a_netcdf3_variable_whose_fill_its_type_cannot_hold_is_left_out_by_name(tmp_path):
    path = _netcdf3(tmp_path / "c.nc")
    theirs = _netcdf4_reading(path)
    with pytest.warns(NCZarrWarning, match=r"'/bad': its _FillValue 300 \(short\) is not a byte"):
        ds = nczarr.read(str(path))
    assert list(ds.root.variables) == ["good"] and ds.skipped == ("/bad",)
    with pytest.raises(UnsupportedTypeError, match="exclude="):
        nczarr.convert(str(path), str(tmp_path / "refused.zarr"))
    with pytest.warns(NCZarrWarning, match="skipped array '/bad'"):
        nczarr.convert(str(path), str(tmp_path / "out.zarr"), exclude=["bad"])
    with netCDF4.Dataset(f"file://{tmp_path / 'out.zarr'}#mode=nczarr,file") as ds:
        assert list(ds.variables) == ["good"]
        np.testing.assert_array_equal(ds["good"][:], theirs["good"])


def test_an_integral_float_fill_of_an_integer_variable_is_its_fill(tmp_path, hdf5_reader):
    path = _netcdf4(tmp_path / "f.nc", "i4", 2.0, "f8")
    with netCDF4.Dataset(path) as theirs:
        assert theirs["bad"][:].mask.tolist() == [False, False, True, False]  # 2 is masked
    ds = nczarr.read(str(path))
    assert ds.root.variables["bad"].fill_value == 2 and ds.skipped == ()
    nczarr.convert(str(path), str(tmp_path / "out"))
    with netCDF4.Dataset(f"file://{tmp_path / 'out'}#mode=nczarr,file") as copy:
        assert copy["bad"][:].mask.tolist() == [False, False, True, False]


@pytest.mark.parametrize(
    "value,kind,expected",
    [
        (127, "byte", True),
        (128, "byte", False),
        (-1, "ubyte", False),
        (2.0, "int", True),
        (2.5, "int", False),
        (float("inf"), "int64", False),
        (2**64 - 1, "uint64", True),
        (2**64, "uint64", False),
        (1e300, "float", False),
        (1e300, "double", True),
        (float("nan"), "float", True),
        (float("-inf"), "float", True),
        (True, "byte", False),
        ("1", "int", False),
        (0.1, "float", False),
        (0.5, "float", True),
        (16777216, "float", True),
        (16777217, "float", False),
        (1e-50, "float", False),
        (-0.0, "float", True),
        (2**53 + 1, "double", True),  # equal as doubles, as numpy compares them
        (10**400, "double", False),
        (np.int8(5), "byte", True),
        (np.float32(1.5), "float", True),
        (np.uint64(2**64 - 1), "uint64", True),
    ],
)
def test_fits_says_whether_a_value_is_one_of_a_type(value, kind, expected):
    """As netCDF4-python's safe cast: the value cast to the type equals it."""
    assert fits(value, kind) is expected
    assert (fill_misfit(_fill("double", (value,)), kind) is None) is expected
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 2**63:
        att = np.array(value)  # netCDF4-python's _safecast: the attribute as an array
        with np.errstate(invalid="ignore", over="ignore"):
            cast = att.astype(np.dtype(STRUCT_CODES[kind]), casting="unsafe")
            same = bool(cast == att) or bool(np.isnan(cast) and np.isnan(att))
        assert same is expected


def test_text_fills_are_text_and_every_value_is_judged():
    assert fill_misfit(_fill("char", "x"), "char") is None
    assert fill_misfit(_fill("string", ("",)), "string") is None
    assert "is not text" in fill_misfit(_fill("int", (65,)), "char")
    assert "is not a byte value" in fill_misfit(_fill("short", (1, 300)), "byte")
    assert fill_misfit(_fill("short", (1, 2)), "byte") is None
    assert fill_misfit(_fill("short", ()), "byte") is None  # empty: the default fill
    assert fill_misfit(None, "byte") is None  # no _FillValue


def _fill(kind: str, value) -> Attribute:
    return Attribute("_FillValue", kind, value)
