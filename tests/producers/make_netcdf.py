"""netcdf-c's pure Zarr (``#mode=zarr,file``), written and read back through netCDF4.

Run by ``build.py`` in a venv with the ``netCDF4`` wheel (its libnetcdf, 4.10)::

    python make_netcdf.py OUTDIR
"""

from __future__ import annotations

import os
import sys

import netCDF4
import numpy as np
from readings import netcdf4_reading
from record import dump


def pure_zarr(out: str) -> None:
    """Fill values (explicit, default, none), char and string, a packed short."""
    path = os.path.abspath(os.path.join(out, "nc_pure_zarr"))
    url = f"file://{path}#mode=zarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.title = "netcdf-c pure Zarr"
        ds.createDimension("x", 4)
        ds.createDimension("nchar", 3)
        t = ds.createVariable("t", "f4", ("x",), fill_value=-999.0)
        t.set_auto_maskandscale(False)
        t[:] = np.array([1.5, -999.0, 3.0, 4.0], "f4")
        n = ds.createVariable("n", "i4", ("x",))
        n[:] = np.array([1, 2, 3, 4], "i4")
        p = ds.createVariable("p", "i2", ("x",), fill_value=-32767)
        p.scale_factor = np.float32(0.5)
        p.add_offset = np.float32(10.0)
        p.set_auto_maskandscale(False)
        p[:] = np.array([0, -32767, 2, 4], "i2")
        c = ds.createVariable("c", "S1", ("x", "nchar"))
        c[:] = netCDF4.stringtochar(np.array(["abc", "de", "f", ""], "S3"))
        s = ds.createVariable("s", str, ("x",))
        s[:] = np.array(["alpha", "b", "", "delta"], dtype=object)
    reading = netcdf4_reading(url)
    dump(
        {
            "name": "nc_pure_zarr",
            "producer": f"netCDF4 {netCDF4.__version__} libnetcdf {netCDF4.__netcdf4libversion__}",
            "zarr_format": 2,
            "netcdf4": reading,
        },
        os.path.join(out, "nc_pure_zarr.json"),
    )


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    pure_zarr(sys.argv[1])
    print("wrote nc_pure_zarr")
