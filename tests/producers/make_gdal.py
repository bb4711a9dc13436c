"""Stores written by GDAL's Zarr driver (Zarr v2), with what GDAL reads back.

Run by ``build.py`` with a Python that has GDAL's bindings (Debian: ``apt-get install
gdal-bin python3-gdal``, GDAL 3.6)::

    python3 make_gdal.py OUTDIR

GDAL keeps nodata only as the Zarr ``fill_value`` and the georeferencing as a ``_CRS``
object attribute; the record holds GDAL's multidimensional reading: values, nodata,
the mask GDAL derives from nodata, attributes, and the spatial reference.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from osgeo import gdal, osr
from record import dump, encode_array, encode_value

gdal.UseExceptions()


def _reading(path: str) -> dict:
    ds = gdal.OpenEx(path, gdal.OF_MULTIDIM_RASTER)
    root = ds.GetRootGroup()
    arrays = {}
    for name in root.GetMDArrayNames():
        array = root.OpenMDArray(name)
        values = array.ReadAsArray()
        nodata = array.GetNoDataValueAsDouble() if array.GetNoDataValueAsRaw() else None
        mask = values == nodata if nodata is not None else np.zeros(values.shape, bool)
        srs = array.GetSpatialRef()
        arrays[name] = {
            "dims": [d.GetName() for d in array.GetDimensions()],
            "values": encode_array(values),
            "nodata": encode_value(nodata),
            "mask": [bool(m) for m in np.asarray(mask).reshape(-1)],
            "unit": array.GetUnit(),
            "attrs": {a.GetName(): encode_value(a.Read()) for a in array.GetAttributes()},
            "srs_epsg": srs.GetAuthorityCode(None) if srs is not None else None,
        }
    return {
        "reader": f"GDAL {gdal.__version__} multidimensional API",
        "attrs": {a.GetName(): encode_value(a.Read()) for a in root.GetAttributes()},
        "arrays": arrays,
    }


def nodata_crs(out: str) -> None:
    """Two arrays with nodata (float and int16), a CRS, LZMA and ZLIB compression."""
    path = os.path.join(out, "gdal_nodata")
    driver = gdal.GetDriverByName("ZARR")
    ds = driver.CreateMultiDimensional(path, options=["FORMAT=ZARR_V2"])
    root = ds.GetRootGroup()
    dim_y = root.CreateDimension("y", gdal.DIM_TYPE_HORIZONTAL_Y, None, 3)
    dim_x = root.CreateDimension("x", gdal.DIM_TYPE_HORIZONTAL_X, None, 4)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(4326)
    float32 = gdal.ExtendedDataType.Create(gdal.GDT_Float32)
    temp = root.CreateMDArray("temp", [dim_y, dim_x], float32, ["COMPRESS=LZMA"])
    temp.SetNoDataValueDouble(-9999.0)
    temp.SetSpatialRef(srs)
    temp.SetUnit("K")
    values = np.array([[1.5, -9999, 3, 4], [5, 6, -9999, 8], [9, 10, 11, 12]], "f4")
    temp.Write(values)
    attr = temp.CreateAttribute("long_name", [], gdal.ExtendedDataType.CreateString())
    attr.Write("temperature")
    int16 = gdal.ExtendedDataType.Create(gdal.GDT_Int16)
    count = root.CreateMDArray("count", [dim_y, dim_x], int16, ["COMPRESS=ZLIB"])
    count.SetNoDataValueDouble(-1)
    count.Write(np.array([[1, 2, -1, 4], [-1, 6, 7, 8], [9, 10, 11, 0]], "i2"))
    plain = root.CreateMDArray("plain", [dim_x], float32, [])
    plain.Write(np.array([0, 1, 2, 3], "f4"))
    del temp, count, plain, root, ds
    dump(
        {
            "name": "gdal_nodata",
            "producer": f"GDAL {gdal.__version__}",
            "zarr_format": 2,
            "gdal": _reading(path),
        },
        os.path.join(out, "gdal_nodata.json"),
    )


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    nodata_crs(sys.argv[1])
    print("wrote gdal_nodata")
