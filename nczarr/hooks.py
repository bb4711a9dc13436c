"""Implementations an upper floor lends to a lower one, so that imports go one way.

A module low in the floors of docs/architecture.md sometimes needs a service that
only an upper one can give. It asks here; the package (``nczarr/__init__.py``, the
top) installs the implementation, so the low module names no upper module.

``shard_opener``
    ``await shard_opener(zmap, path)`` opens the sharded Zarr v3 array at ``path`` of
    a map for reading (a zarr-python ``AsyncArray``). Used by
    :class:`nczarr.reencode.ChunkRecoder`; provided by
    :func:`nczarr.integrations.zarr_store.open_sharded` (zarr-python over the map's
    zarr adapter).

``file_source``
    ``file_source(url, mode, storage_options)`` opens a URL that names a file holding
    a whole dataset (a netCDF ``.nc`` file) as a read-only map, or returns None when
    it names no such file. Used by :func:`nczarr.maps.open.open_map` before it picks a
    storage backend; provided by :func:`nczarr.ncfile.source.open_file_source`.

``appender``
    ``appender(src, dst, append_dim=..., target_options=..., combine_attrs=...)``
    appends the dataset of map ``src`` to the existing store ``dst`` along a
    dimension and returns the report. Used by ``to_nczarr(mode="a")``
    (:mod:`nczarr.integrations.xarray_append`); provided by
    :func:`nczarr.conversion.growappend.append`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = [
    "Appender",
    "FileSourceOpener",
    "ShardOpener",
    "appender",
    "file_source",
    "shard_opener",
]

ShardOpener = Callable[[Any, str], Awaitable[Any]]

#: Installed by ``nczarr/__init__.py``; None until then.
shard_opener: ShardOpener | None = None

FileSourceOpener = Callable[[Any, str, dict[str, Any]], Any]

#: Installed by ``nczarr/__init__.py``; None until then (no file sources).
file_source: FileSourceOpener | None = None

Appender = Callable[..., Any]

#: Installed by ``nczarr/__init__.py``; None until then.
appender: Appender | None = None
