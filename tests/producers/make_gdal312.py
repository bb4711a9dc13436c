"""Stores written by GDAL 3.12's Zarr driver (Zarr v2 and v3), with what GDAL reads back.

GDAL 3.12 is the libgdal bundled in the ``pyogrio`` wheel (>= 0.13), called with
``ctypes`` (``tests/gdalreader.py`` finds and loads it); ``build.py`` runs this in a
venv with ``pyogrio`` and ``numpy``::

    python make_gdal312.py OUTDIR

Written as most GDAL users write Zarr (``gdal_translate -of Zarr``): the classic
raster API (``GDALCreate`` with ``FORMAT=ZARR_V2``/``ZARR_V3``, one band, a
geotransform, a CRS, nodata or none, ``COMPRESS=ZLIB``/``GZIP``, which that libgdal
has). The record is GDAL's multidimensional reading (``gdalreader.read_zarr``):
values, nodata, the mask GDAL derives from nodata, attributes, dimensions.
"""

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np
from record import dump, encode_array, encode_value

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from gdalreader import libgdal, read_zarr, version

_GF_WRITE = 1
_GDT = {"u1": 1, "i2": 3, "f4": 6, "f8": 7}


def _bind(lib: ctypes.CDLL) -> None:
    p, c, i, d = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_double
    for name, restype, argtypes in (
        ("GDALGetDriverByName", p, [c]),
        ("GDALCreate", p, [p, c, i, i, i, i, p]),
        ("GDALGetRasterBand", p, [p, i]),
        ("GDALSetRasterNoDataValue", i, [p, d]),
        ("GDALSetGeoTransform", i, [p, ctypes.POINTER(d)]),
        ("GDALSetProjection", i, [p, c]),
        ("GDALSetDescription", None, [p, c]),
        ("GDALSetMetadataItem", i, [p, c, c, c]),
        ("GDALRasterIO", i, [p, i, i, i, i, i, p, i, i, i, i, i]),
        ("OSRNewSpatialReference", p, [c]),
        ("OSRImportFromEPSG", i, [p, i]),
        ("OSRExportToWkt", i, [p, ctypes.POINTER(ctypes.c_char_p)]),
        ("OSRDestroySpatialReference", None, [p]),
        ("VSIFree", None, [p]),
    ):
        func = getattr(lib, name)
        func.restype, func.argtypes = restype, argtypes


def _wkt(lib: ctypes.CDLL, epsg: int) -> bytes:
    srs = lib.OSRNewSpatialReference(None)
    out = ctypes.c_char_p()
    lib.OSRImportFromEPSG(srs, epsg)
    lib.OSRExportToWkt(srs, ctypes.byref(out))
    text = out.value
    lib.OSRDestroySpatialReference(srs)
    return text


def _raster(
    path: str,
    values: np.ndarray,
    *,
    zarr_format: int,
    compress: str,
    nodata: float | None,
    epsg: int | None,
    unit_metadata: dict[str, str] | None = None,
) -> None:
    """One band, written with the classic raster API (as gdal_translate does)."""
    lib = libgdal()
    _bind(lib)
    options = (ctypes.c_char_p * 3)(
        f"FORMAT=ZARR_V{zarr_format}".encode(), f"COMPRESS={compress}".encode(), None
    )
    rows, cols = values.shape
    driver = lib.GDALGetDriverByName(b"Zarr")
    dataset = lib.GDALCreate(
        driver, path.encode(), cols, rows, 1, _GDT[values.dtype.str[1:]], options
    )
    assert dataset, "GDALCreate failed"
    try:
        if epsg is not None:
            transform = (ctypes.c_double * 6)(2.0, 0.5, 0.0, 49.0, 0.0, -0.5)
            assert lib.GDALSetGeoTransform(dataset, transform) == 0
            assert lib.GDALSetProjection(dataset, _wkt(lib, epsg)) == 0
        band = lib.GDALGetRasterBand(dataset, 1)
        if nodata is not None:
            assert lib.GDALSetRasterNoDataValue(band, nodata) == 0
        for key, value in (unit_metadata or {}).items():
            lib.GDALSetMetadataItem(band, key.encode(), value.encode(), None)
        data = np.ascontiguousarray(values)
        gdt = _GDT[values.dtype.str[1:]]
        ok = lib.GDALRasterIO(
            band, _GF_WRITE, 0, 0, cols, rows, data.ctypes.data, cols, rows, gdt, 0, 0
        )
        assert ok == 0, "GDALRasterIO failed"
    finally:
        lib.GDALClose(dataset)


def _record(name: str, path: str, zarr_format: int) -> dict:
    seen = read_zarr(path)
    assert seen.error is None, seen.error
    arrays = {}
    for where, array in seen.arrays.items():
        assert array.error is None, (where, array.error)
        values = array.values
        mask = values == array.nodata if array.nodata is not None else np.zeros(values.shape, bool)
        arrays[where.lstrip("/")] = {
            "dims": [d for d, _ in array.dims],
            "values": encode_array(values),
            "nodata": encode_value(array.nodata),
            "mask": [bool(m) for m in np.asarray(mask).reshape(-1)],
            "attrs": {k: encode_value(v) for k, v in array.attrs.items()},
        }
    return {
        "name": name,
        "producer": f"GDAL {version()} (pyogrio's libgdal, classic raster API)",
        "zarr_format": zarr_format,
        "gdal": {
            "reader": f"GDAL {version()} multidimensional API",
            "attrs": {k: encode_value(v) for k, v in seen.attrs.items()},
            "arrays": arrays,
        },
    }


def nodata_v2(out: str) -> None:
    """float32 with nodata -9999, EPSG:4326 and a geotransform, ZLIB, Zarr v2."""
    path = os.path.join(out, "gdal312_v2")
    values = np.array([[1.5, -9999, 3, 4], [5, 6, -9999, 8], [9, 10, 11, 12]], "f4")
    _raster(path, values, zarr_format=2, compress="ZLIB", nodata=-9999.0, epsg=4326)
    dump(_record("gdal312_v2", path, 2), os.path.join(out, "gdal312_v2.json"))


def nodata_v3(out: str) -> None:
    """int16 with nodata -1, EPSG:32631, GZIP, Zarr v3 (``c/`` keys, ``/`` separator)."""
    path = os.path.join(out, "gdal312_v3")
    values = np.array([[1, 2, -1, 4], [-1, 6, 7, 8], [9, 10, 11, 0]], "i2")
    _raster(path, values, zarr_format=3, compress="GZIP", nodata=-1.0, epsg=32631)
    dump(_record("gdal312_v3", path, 3), os.path.join(out, "gdal312_v3.json"))


def no_nodata_v3(out: str) -> None:
    """uint8 without nodata: GDAL 3.12 writes ``"fill_value": null`` in Zarr v3."""
    path = os.path.join(out, "gdal312_v3_nonodata")
    values = np.arange(12, dtype="u1").reshape(3, 4)
    _raster(path, values, zarr_format=3, compress="GZIP", nodata=None, epsg=None)
    dump(_record("gdal312_v3_nonodata", path, 3), os.path.join(out, "gdal312_v3_nonodata.json"))


CASES = [nodata_v2, nodata_v3, no_nodata_v3]

if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    chosen = set(sys.argv[2:])
    for case in CASES:
        if not chosen or case.__name__ in chosen:
            case(sys.argv[1])
            print("wrote", case.__name__)
