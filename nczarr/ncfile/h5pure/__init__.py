"""Placeholder for the numpy-free HDF5 reader (branch h5pure): declines every file."""

__all__ = ["H5File", "Unsupported"]


class Unsupported(Exception):
    """The file uses something this reader does not read: use h5py."""


class H5File:
    """Declines every file (placeholder)."""

    def __init__(self, read_at: object, size: object) -> None:
        raise Unsupported("placeholder")
