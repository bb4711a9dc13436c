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
