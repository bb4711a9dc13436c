"""Adapters that let other libraries work over nczarr.

* :mod:`~nczarr.integrations.zarr_store`: zarr-python's ``Store`` over any map.
* :mod:`~nczarr.integrations.xarray_backend`: the ``nczarr`` xarray engine.
* :mod:`~nczarr.integrations.xarray_writer`: :func:`nczarr.to_nczarr`.
"""

__all__: list[str] = []
