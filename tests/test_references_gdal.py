"""GDAL (3.12, tests/gdalreader.py) reads nczarr's JSON reference sets through its
kerchunk support (``/vsikerchunk_json_ref/{refs.json}``), values as netCDF4 reads the
source. (GDAL reads Parquet sets with ``/vsikerchunk_parquet_ref/`` only when built with
its Parquet driver, which the libgdal bundled with pyogrio lacks.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import nczarr

from . import gdalreader
from .refreaders import floats, make_nc, make_nczarr, netcdf_values, tree_hash


def gdal_values(refs: dict, tmp_path: Path) -> dict[str, list]:
    out = tmp_path / "refs.json"
    out.write_text(json.dumps(refs))
    store = gdalreader.read_zarr(f"/vsikerchunk_json_ref/{{{out}}}")
    assert store.error is None, store.error
    for path, array in store.arrays.items():
        assert array.error is None, (path, array.error)
    return {
        path.strip("/"): floats(np.asarray(array.values))
        for path, array in store.arrays.items()
        if array.numeric
    }


def test_gdal_reads_netcdf_c_store_references(tmp_path: Path) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    before = tree_hash(store)
    assert gdal_values(nczarr.references(str(store)), tmp_path) == netcdf_values(url, False)
    assert tree_hash(store) == before


def test_gdal_reads_netcdf_file_references(tmp_path: Path) -> None:
    path = tmp_path / "src.nc"
    url = make_nc(path, "NETCDF4")
    refs = nczarr.references(str(path))
    assert gdal_values(refs, tmp_path) == netcdf_values(url, False)


def test_gdal_parquet_sets_need_its_parquet_driver(tmp_path: Path) -> None:
    """GDAL reads a Parquet set (``/vsikerchunk_parquet_ref/``) only with its Parquet
    driver: with it, the values netCDF4 reads; without it (the libgdal of every PyPI
    wheel checked: pyogrio 0.13, rasterio 1.5.2, gdal-wheel 3.13.3), the metadata in
    ``.zmetadata`` opens and every chunk read fails naming the record file."""
    import ctypes

    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    out = tmp_path / "refs.parq"
    nczarr.write_references(str(store), out, record_size=3)
    read = gdalreader.read_zarr(f"/vsikerchunk_parquet_ref/{{{out}}}")
    assert read.error is None, read.error
    lib = gdalreader.libgdal()
    lib.GDALGetDriverByName.restype = ctypes.c_void_p
    lib.GDALGetDriverByName.argtypes = [ctypes.c_char_p]
    if lib.GDALGetDriverByName(b"Parquet"):
        got = {
            path.strip("/"): floats(np.asarray(array.values)) for path, array in read.arrays.items()
        }
        assert got == netcdf_values(url, False)
        return
    assert sorted(read.arrays) == ["/g/c", "/s", "/t"]
    for path, array in read.arrays.items():
        assert array.error is not None and "refs.0.parq' not recognized" in array.error, path
