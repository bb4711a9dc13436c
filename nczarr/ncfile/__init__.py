"""netCDF files (netCDF-4/HDF5 and netCDF-3) as read-only sources of read, view and convert.

:class:`~nczarr.ncfile.source.NetCDFFileMap` shows a ``.nc`` file as a zmap of Zarr
chunks (byte ranges of the file) with the file read into the netCDF-4 model;
:func:`nczarr.maps.open.open_map` returns one for a local file with netCDF magic
or a remote key with a netCDF suffix. One module per job: ``cdf`` parses netCDF-3
headers, ``classic`` turns one into the model, ``hdf5`` reads netCDF-4 files with
h5py (``h5attrs`` types and attributes, ``h5dims`` dimension names, ``h5filters``
filters as Zarr codecs, ``h5chunks`` the chunk index and re-encoded chunks),
``layout`` is the chunk index both produce, ``source`` the map.
"""

__all__: list[str] = []
