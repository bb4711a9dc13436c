"""The producer scripts run in side environments (old zarr, GDAL): pytest must not import
them (``--doctest-modules`` would); ``record.py`` is imported by the tests themselves."""

collect_ignore = [
    "build.py",
    "make_gdal.py",
    "make_gdal312.py",
    "make_netcdf.py",
    "make_netcdf48.py",
    "make_zarr2.py",
    "make_zarr3.py",
    "readings.py",
    "record.py",
]
