"""nczarr: make netCDF's Zarr dialect (NCZarr) and pure Zarr interchangeable.

Three layers:

* :mod:`nczarr.maps`: storage maps (directory, zip, S3, memory, any fsspec
  filesystem) behind one ``MutableMapping[str, bytes]`` contract with ``search``;
  :func:`open_map` opens one from a netCDF-style URL, :class:`ZarrStore` lets
  zarr-python do I/O over any map.
* :mod:`nczarr.translate`: every NCZarr and Zarr layout read into one netCDF-4 model
  (:func:`read`, :func:`detect`), and written back as current NCZarr or pure Zarr
  (:func:`nczarr.translate.write`, :func:`view`).
* conversion: :func:`convert` and :func:`migrate`.

Names are imported lazily so that ``import nczarr`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from .errors import (
    DimensionConflictError,
    InvalidKeyError,
    InvalidModeError,
    InvalidURLError,
    MetadataError,
    NCZarrError,
    NCZarrWarning,
    ObjectExistsError,
    ReadOnlyError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
    TargetExistsError,
    UnsupportedError,
    UnsupportedTypeError,
)

__version__ = "0.1.0"

_LAZY = {
    # maps
    "ZMap": "nczarr.maps.base",
    "normalize_key": "nczarr.keys",
    "MemoryMap": "nczarr.maps.memory",
    "FileMap": "nczarr.maps.file",
    "ZipMap": "nczarr.maps.zip",
    "S3Map": "nczarr.maps.s3",
    "FsspecMap": "nczarr.maps.fsspec",
    "open_map": "nczarr.maps.open",
    "ZarrStore": "nczarr.integrations.zarr_store",
    "open_zarr": "nczarr.integrations.shortcut",
    # urls
    "parse_url": "nczarr.maps.url",
    "NCZarrURL": "nczarr.maps.url",
    # model and translation
    "Dataset": "nczarr.translate.model",
    "Group": "nczarr.translate.model",
    "Dimension": "nczarr.translate.model",
    "Variable": "nczarr.translate.model",
    "Attribute": "nczarr.translate.model",
    "FormatInfo": "nczarr.load",
    "detect": "nczarr.load",
    "read": "nczarr.load",
    "view": "nczarr.readthrough",
    # xarray
    "to_nczarr": "nczarr.integrations.xarray_writer",
    # diagnosis
    "check": "nczarr.diagnosis",
    "CheckReport": "nczarr.diagnosis",
    # conversion
    "convert": "nczarr.conversion.api",
    "references": "nczarr.conversion.references",
    "migrate": "nczarr.conversion.migrate",
    "ConvertReport": "nczarr.conversion.report",
}

__all__ = [
    "__version__",
    "NCZarrError",
    "InvalidKeyError",
    "InvalidURLError",
    "InvalidModeError",
    "ObjectExistsError",
    "TargetExistsError",
    "ReadOnlyError",
    "StoragePermissionError",
    "StorageNotFoundError",
    "StorageError",
    "MetadataError",
    "DimensionConflictError",
    "UnsupportedError",
    "UnsupportedTypeError",
    "NCZarrWarning",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nczarr' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
