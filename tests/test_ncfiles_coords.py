"""Multi-dimensional coordinate variables from ``.nc`` files.

2-D latitude/longitude over ``(y, x)``, a variable named like a dimension it is not
the coordinate variable of (``x(y, x)``: netcdf-c stores its dataset as
``_nc4_non_coord_x``) and a 2-D variable named like its first dimension
(``time(time, y)``: netcdf-c makes that dataset the dimension scale), in the root and
in a group. netCDF4 and xarray are the oracles: nczarr reads the file as netCDF4
does, and netCDF4 and xarray read every converted store as they read the file.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.errors import NCZarrWarning

from .ncfiles import assert_same_values, nc_values
from .ncoracle import describe, describe_url, diff

STORAGE_FIELDS = ("compressor", "filters", "chunks", "warnings", "maxstrlen", "text_storage")
FORMATS = ("NETCDF4", "NETCDF4_CLASSIC", "NETCDF3_64BIT_OFFSET")
LAYOUTS = {
    "NETCDF4": "netcdf4",
    "NETCDF4_CLASSIC": "netcdf4",
    "NETCDF3_64BIT_OFFSET": "netcdf3-64bit-offset",
}


def _coordinates(where: Any, y: str, x: str, seed: int) -> None:
    """lat/lon over (y, x), a variable named x over (y, x), data using them."""
    grid = np.arange(12, dtype="f4").reshape(3, 4) + seed
    lat = where.createVariable("lat", "f4", (y, x))
    lat.units = "degrees_north"
    lat[:] = grid
    lon = where.createVariable("lon", "f4", (y, x))
    lon.units = "degrees_east"
    lon[:] = grid * 2
    where.createVariable("x", "f8", (y, x))[:] = grid * 3  # not x's coordinate variable


def build(path: Path, fmt: str) -> Path:
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("y", 3)
        ds.createDimension("x", 4)
        _coordinates(ds, "y", "x", 0)
        time = ds.createVariable("time", "i4", ("time", "y"))  # named as its first dim
        time.units = "days since 2000-01-01"
        time[:] = np.arange(6, dtype="i4").reshape(2, 3)
        v = ds.createVariable("v", "f4", ("time", "y", "x"), fill_value=-1.0)
        v.coordinates = "lat lon"
        v[:] = np.arange(24, dtype="f4").reshape(2, 3, 4)
        if fmt == "NETCDF4":
            g = ds.createGroup("g")
            g.createDimension("y", 3)  # shadows the root's y
            g.createDimension("x", 4)
            _coordinates(g, "y", "x", 100)
            w = g.createVariable("w", "i2", ("time", "y", "x"), compression="zlib")
            w.coordinates = "lat lon"
            w[:] = np.arange(24, dtype="i2").reshape(2, 3, 4)
    return path


def _file(tmp_path: Path, fmt: str) -> Path:
    return build(tmp_path / f"{fmt.lower()}.nc", fmt)


def _groups(fmt: str) -> tuple[str | None, ...]:
    return (None, "g") if fmt == "NETCDF4" else (None,)


@pytest.mark.parametrize("fmt", FORMATS)
def test_read_gives_what_netcdf4_reports(tmp_path: Path, fmt: str) -> None:
    path = _file(tmp_path, fmt)
    dataset = nczarr.read(str(path))
    assert dataset.find_variable("/x").dimensions == ("/y", "/x")
    assert dataset.find_variable("/time").dimensions == ("/time", "/y")
    ignore = (*STORAGE_FIELDS, "endian")
    assert diff(dataset, describe_url(str(path), LAYOUTS[fmt]), ignore=ignore) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_netcdf4_reads_the_nczarr_store_as_the_file(tmp_path: Path, fmt: str) -> None:
    path = _file(tmp_path, fmt)
    out = tmp_path / "out"
    nczarr.convert(str(path), str(out), "nczarr")
    ignore = (*STORAGE_FIELDS, "endian", "layout")
    assert diff(describe(out), describe_url(str(path)), ignore=ignore) == []
    assert_same_values(nc_values(str(path)), nc_values(f"file://{out}#mode=nczarr,file"))


def _open_target(out: Path, target: str, group: str | None) -> xr.Dataset:
    if target == "nczarr":
        url = f"file://{out}#mode=nczarr,file"
        return xr.open_dataset(url, engine="netcdf4", group=group)
    return xr.open_zarr(str(out), group=group, consolidated=False)


def _dtypes(ds: xr.Dataset) -> dict[str, Any]:
    return {name: var.dtype for name, var in ds.variables.items()}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("target", "extra"), [("nczarr", {}), ("zarr", {}), ("zarr", {"zarr_format": 3})]
)
def test_xarray_reads_every_target_as_the_file(
    tmp_path: Path, fmt: str, target: str, extra: dict[str, Any]
) -> None:
    path = _file(tmp_path, fmt)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python: numcodecs codecs in Zarr v3
        nczarr.convert(str(path), str(out), target, **extra)
        for group in _groups(fmt):
            with xr.open_dataset(path, engine="netcdf4", group=group) as want:
                assert "x" in want.coords and want["x"].dims == ("y", "x")
                assert {"lat", "lon"} <= set(want.coords)
                with _open_target(out, target, group) as got:
                    xr.testing.assert_identical(got, want)  # values, not dtypes
                    if extra.get("zarr_format") == 3 or target == "nczarr":
                        assert _dtypes(got) == _dtypes(want)
                    # Zarr v2: xarray takes the array's fill_value (netCDF's default
                    # fill, which netCDF4 reading the store needs) as _FillValue and
                    # reads integers without one as masked floats; values still equal


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT_OFFSET"])
def test_xarray_engine_reads_the_file_as_netcdf4_does(tmp_path: Path, fmt: str) -> None:
    path = _file(tmp_path, fmt)
    for group in _groups(fmt):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NCZarrWarning)
            ours = xr.open_dataset(str(path), engine="nczarr", group=group)
        with xr.open_dataset(path, engine="netcdf4", group=group) as want, ours:
            xr.testing.assert_identical(ours, want)
