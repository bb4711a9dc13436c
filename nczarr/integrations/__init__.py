"""Adapters that let other libraries work over nczarr: zarr-python's ``Store``."""
