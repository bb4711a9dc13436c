"""Zarr v3 fixed-width bytes (``null_terminated_bytes``, numpy ``S<n>``) read as bytes.

zarr-python 3 and xarray read such an array as numpy bytes; nczarr read it as netCDF
text, silently: the engine gave ``<U`` strings (``b"\\xff\\x01"`` became
``"\\ufffd\\x01"``) and the NCZarr copy was a netCDF string netCDF4 could not decode.
The Zarr v2 path reads ``|S<n>`` as bytes (``Variable.logical == "bytes"``); the v3
path now does the same (hunt 15, finding 6). The producers' readings are the oracle.
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

VALUES = np.array([b"ab", b"c", b"\xff\x01"], dtype="S3")
CHAR_WARNING = (
    "variable '/{name}': fixed-width bytes |S3 are written as netCDF char with the dimension "
    "'string3', as xarray's netcdf4 engine writes them: xarray reads S3 bytes again, netCDF "
    "readers read characters"
)


def _zarr_python(path: Path) -> str:
    group = zarr.open_group(path, mode="w", zarr_format=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python: the data type is not in the spec
        array = group.create_array("b", shape=(3,), chunks=(2,), dtype="S3", dimension_names=["x"])
        array[:] = VALUES
    return "b"


def _xarray(path: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.Dataset({"b": ("x", VALUES)}).to_zarr(path, zarr_format=3, mode="w")
    return "b"


@pytest.fixture(params=[_zarr_python, _xarray], ids=["zarr-python", "xarray"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "src.zarr"
    return path, request.param(path)


def _producer(path: Path, name: str) -> np.ndarray:
    values = zarr.open_group(path, mode="r")[name][...]
    assert values.dtype == np.dtype("S3")
    return values


def test_the_model_says_bytes(source: tuple[Path, str]) -> None:
    path, name = source
    ds = nczarr.read(path)
    var = ds.root.variables[name]
    assert (var.type, var.logical, var.maxstrlen) == ("string", "bytes", 3)
    assert ds.warnings == ()


def test_the_engine_reads_the_producers_bytes(source: tuple[Path, str]) -> None:
    path, name = source
    with warnings.catch_warnings():
        warnings.simplefilter("error", nczarr.NCZarrWarning)  # nothing to say
        ds = xr.open_dataset(path, engine="nczarr")
    assert ds[name].dtype == np.dtype("S3")
    np.testing.assert_array_equal(ds[name].values, _producer(path, name))
    np.testing.assert_array_equal(
        ds[name].values, xr.open_zarr(path, consolidated=False)[name].values
    )


def test_the_nczarr_copy_is_char_as_from_zarr_v2(source: tuple[Path, str], tmp_path: Path) -> None:
    path, name = source
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning) as record:
        report = nczarr.convert(path, f"file://{out}#mode=nczarr,file", mode="nczarr")
    assert CHAR_WARNING.format(name=name) in report.warnings
    assert CHAR_WARNING.format(name=name) in [str(w.message) for w in record]
    assert report.chunks_reencoded == 0  # the very chunk bytes, under v2 keys with one axis more
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        var = nc[name]
        assert (var.dtype, var.dimensions) == (np.dtype("S1"), ("x", "string3"))
        var.set_auto_mask(False)
        np.testing.assert_array_equal(netCDF4.chartostring(var[...], encoding="bytes"), VALUES)
        back = xr.open_dataset(xr.backends.NetCDF4DataStore(nc))[name].values
    np.testing.assert_array_equal(back, _producer(path, name))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_pure_zarr_copies_keep_bytes(
    source: tuple[Path, str], tmp_path: Path, zarr_format: int
) -> None:
    path, name = source
    out = tmp_path / "out.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python's unstable data type, in v3
        nczarr.convert(path, out, mode="zarr", zarr_format=zarr_format)
        copy = zarr.open_group(out, mode="r")[name][...]
        through_xarray = xr.open_zarr(out, consolidated=False)[name].values
    assert copy.dtype == np.dtype("S3") and through_xarray.dtype == np.dtype("S3")
    np.testing.assert_array_equal(copy, _producer(path, name))
    np.testing.assert_array_equal(through_xarray, _producer(path, name))


def test_netcdf_c_text_written_as_null_terminated_bytes_stays_text(tmp_path: Path) -> None:
    """nczarr's own Zarr v3 copies write netCDF char and strings as
    null_terminated_bytes, with _NCProperties: read back as text, as in Zarr v2."""
    nc_path = tmp_path / "t.nc"
    with netCDF4.Dataset(nc_path, "w") as nc:
        nc.createDimension("x", 2)
        nc.createDimension("n", 3)
        var = nc.createVariable("c", "S1", ("x", "n"))
        var[:] = netCDF4.stringtochar(np.array(["ab", "cde"], dtype="S3"))
    out = tmp_path / "v3.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nczarr.convert(nc_path, out, mode="zarr", zarr_format=3)
    var = nczarr.read(out).root.variables["c"]
    assert var.logical is None and var.type == "string"
