"""nczarr: make netCDF's Zarr dialect (NCZarr) and pure Zarr interchangeable.

Reading, on every layout (NCZarr as netcdf-c 4.8, 4.9 and 4.10 write it, pure Zarr
v2 and v3, and netCDF files: netCDF-4/HDF5 and netCDF-3, with the ``netcdf`` extra):

* :func:`read` loads a store into one netCDF-4 model (:class:`Dataset`, :class:`Group`,
  :class:`Dimension`, :class:`Variable`, :class:`Attribute`); :func:`detect` names
  its layout (:class:`FormatInfo`).
* :func:`view` shows a store translated into current NCZarr or pure Zarr without
  copying anything; :func:`open_zarr` opens a store (or a view) as a zarr-python group.
* The xarray engine ``engine="nczarr"`` (``xr.open_dataset``, ``xr.open_datatree``)
  shows a store as xarray's netcdf4 engine shows it through libnetcdf.

Writing:

* :func:`convert` copies a dataset into NCZarr or pure Zarr (v2 or v3), chunk bytes
  verbatim where readers decode them alike, and returns a :class:`ConvertReport`.
* :func:`migrate` upgrades an old NCZarr store's metadata in place.
* :func:`to_nczarr` writes an ``xr.Dataset`` or ``xr.DataTree`` as NCZarr.
* :func:`references` saves a translation as an fsspec (kerchunk) reference set whose
  chunk entries point into the source: any fsspec reader opens it without nczarr;
  :func:`write_references` writes one as JSON or in fsspec's Parquet layout;
  :func:`to_icechunk` commits one to an Icechunk repository (virtual chunks).
* :func:`convert` with ``concat_dim=`` combines several sources into one store, with
  ``append_dim=`` appends to one; :func:`to_nczarr` with ``mode="a"`` appends too.

Diagnosis: :func:`check` says what each reader (netcdf-c, zarr-python, xarray, GDAL) would
get wrong with a store, and the fix (:class:`CheckReport`).

Storage: every backend is a :class:`ZMap` (a ``MutableMapping[str, bytes]`` with
``search``): :class:`FileMap`, :class:`ZipMap`, :class:`S3Map`, :class:`MemoryMap`,
:class:`FsspecMap`; :func:`open_map` opens one from a netCDF-style URL
(:func:`parse_url`, :class:`NCZarrURL`); :func:`normalize_key` checks a key;
:class:`ZarrStore` lets zarr-python do its I/O through any map.

Errors derive from :class:`NCZarrError` and the builtin you would catch
(:class:`InvalidKeyError`, :class:`InvalidURLError`, :class:`InvalidModeError`,
:class:`MetadataError`, :class:`DimensionConflictError`, :class:`ObjectExistsError`,
:class:`TargetExistsError`, :class:`ReadOnlyError`, :class:`StoragePermissionError`,
:class:`StorageNotFoundError`, :class:`StorageError`, :class:`UnsupportedError`,
:class:`UnsupportedTypeError`); anything lossy is announced as :class:`NCZarrWarning`.

The command line is ``nczarr`` (or ``python -m nczarr``); see ``nczarr --help``.
Names are imported lazily so that ``import nczarr`` stays cheap.
"""

from __future__ import annotations

import os
from typing import Any

from . import hooks as _hooks
from ._version import __version__
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
from .lazy import lazy_exports


async def _open_sharded(zmap: Any, path: str) -> Any:
    """The shard reader lent to :mod:`nczarr.reencode` (:mod:`nczarr.hooks`)."""
    from .integrations.zarr_store import open_sharded

    return await open_sharded(zmap, path)


def _open_file_source(url: Any, mode: str, storage_options: dict[str, Any]) -> Any:
    """The file-source opener lent to :func:`nczarr.maps.open.open_map`
    (:mod:`nczarr.hooks`): netCDF files (:mod:`nczarr.ncfile`)."""
    if url.storage in ("file", "zip") and (
        url.storage == "zip" or mode != "r" or os.path.isdir(url.path)
    ):
        return None  # a store, or a target: not a netCDF file (and nczarr.ncfile not imported)
    from .ncfile.source import open_file_source

    return open_file_source(url, mode, storage_options)


def _append(src: Any, dst: Any, **options: Any) -> Any:
    """The append engine lent to ``to_nczarr(mode="a")`` (:mod:`nczarr.hooks`)."""
    from .conversion.growappend import append

    return append([src], dst, **options)


_hooks.shard_opener = _open_sharded
_hooks.file_source = _open_file_source
_hooks.appender = _append

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
    "write_references": "nczarr.conversion.reference_files",
    "to_icechunk": "nczarr.conversion.icechunk_repo",
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


__getattr__ = lazy_exports(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
