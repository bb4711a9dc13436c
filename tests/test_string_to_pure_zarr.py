"""A netCDF ``string`` variable of an NCZarr store, copied to pure Zarr (v2, v3, and
reference sets), reads as ``str`` in xarray, as netCDF4 reads the source.

NCZarr stores strings as fixed-width UTF-8 bytes (``|S128``). The pure Zarr copies
keep those bytes verbatim, and used to leave xarray reading ``bytes``
(``b'\\xc3\\xa9'`` for ``'é'``). They now say ``_Encoding: "utf-8"``, by which xarray
decodes bytes into text; nczarr reads the marker back as netCDF text (the engine,
and a round trip to NCZarr, without the attribute). Found by a differential hunt.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr

from .refreaders import xarray_of_references

VALUES = ["a", "é", "xyz"]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "src.file"
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("x", 3)
        ds.createVariable("s", str, ("x",))[:] = np.array(VALUES, dtype=object)
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file") as ds:
        assert ds["s"][:].tolist() == VALUES  # the oracle
    return path


def _quiet(func, *args, **kw):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        return func(*args, **kw)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_xarray_reads_text_from_the_copy(source: Path, tmp_path: Path, zarr_format: int) -> None:
    dst = tmp_path / "out.zarr"
    report = _quiet(nczarr.convert, source, dst, mode="zarr", zarr_format=zarr_format)
    assert "/s" not in {p for p, _ in report.reencoded}  # the bytes stay verbatim
    with xr.open_zarr(dst, consolidated=False, zarr_format=zarr_format) as ds:
        assert ds["s"].values.tolist() == VALUES
        assert "_Encoding" not in ds["s"].attrs  # decoded by xarray, not shown
    with xr.open_dataset(dst, engine="nczarr") as ours:
        assert ours["s"].values.tolist() == VALUES
        assert "_Encoding" not in ours["s"].attrs


def test_xarray_reads_text_through_references(source: Path, tmp_path: Path) -> None:
    refs = _quiet(nczarr.references, str(source), mode="zarr")
    with xarray_of_references(refs, tmp_path / "refs.json") as ds:
        assert ds["s"].values.tolist() == VALUES


def test_zarr_python_still_reads_the_bytes(source: Path, tmp_path: Path) -> None:
    dst = tmp_path / "out.zarr"
    _quiet(nczarr.convert, source, dst, mode="zarr")
    array = zarr.open_array(dst / "s", mode="r")
    assert array.dtype == np.dtype("S128")
    assert array[...].tolist() == [v.encode() for v in VALUES]


def test_round_trip_to_nczarr_adds_no_attribute(source: Path, tmp_path: Path) -> None:
    mid = tmp_path / "out.zarr"
    back = tmp_path / "back.file"
    _quiet(nczarr.convert, source, mid, mode="zarr")
    _quiet(nczarr.convert, mid, back, mode="nczarr")
    with netCDF4.Dataset(f"file://{back}#mode=nczarr,file") as ds:
        assert ds["s"].dtype is str
        assert ds["s"][:].tolist() == VALUES
        assert ds["s"].ncattrs() == []


def test_bytes_with_encoding_read_as_text(tmp_path: Path) -> None:
    """zarr-python's ``|S`` with xarray's ``_Encoding`` (how text written as bytes
    says so): xarray reads ``str``, and so does the engine (it used to show bytes)."""
    path = tmp_path / "x.zarr"
    root = zarr.open_group(path, mode="w", zarr_format=2)
    array = root.create_array("s", shape=(3,), dtype="S6", fill_value=None)
    array[...] = np.array([v.encode() for v in VALUES], dtype="S6")
    array.attrs.update({"_ARRAY_DIMENSIONS": ["x"], "_Encoding": "utf-8"})
    with xr.open_zarr(path, consolidated=False) as theirs:
        assert theirs["s"].values.tolist() == VALUES
    with xr.open_dataset(path, engine="nczarr") as ours:
        assert ours["s"].values.tolist() == VALUES
