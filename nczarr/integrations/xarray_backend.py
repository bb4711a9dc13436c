"""The ``nczarr`` xarray engine: any NCZarr or Zarr store, seen as netcdf-c sees it.

``xr.open_dataset(url, engine="nczarr")``, ``xr.open_datatree`` and ``xr.open_groups``
open every layout nczarr reads (current NCZarr, both legacy NCZarr layouts, pure Zarr
v2/v3, netcdf-c's pure Zarr) from every map (directory, zip, S3, any fsspec
filesystem), and give what ``engine="netcdf4"`` gives for the same dataset through
libnetcdf.

Why this design
---------------
The yardstick is xarray's netcdf4 engine, so this engine is built the way that engine
is, from xarray's own parts, and differs only in where the raw values come from:

* :class:`NCZarrDataStore` is an ``AbstractDataStore`` that presents *undecoded*
  netCDF variables exactly as ``netCDF4.Variable`` presents them to xarray (auto
  mask/scale and char-to-string off): netCDF dimension names (dimensions inherited
  from parent groups by name), char variables as ``S1`` arrays with their character
  dimension, ``string`` variables as vlen ``str`` objects, true 0-d scalars, and
  attributes with their netCDF type (a ``short`` attribute is ``np.int16``, a float
  ``scale_factor`` ``np.float32`` -- which decides the dtype CF unpacking produces).
  Those facts come from the netCDF-4 model :func:`nczarr.read` builds for every layout.
* CF decoding is then xarray's own ``StoreBackendEntrypoint`` (``decode_cf_variables``),
  the very code the netcdf4 engine runs, so ``mask_and_scale=``, ``decode_times=``,
  ``concat_characters=``, ... behave identically.
* Values are read lazily by zarr-python through :class:`~nczarr.ZarrStore` over a
  read-through view (:func:`nczarr.view`, ``mode="zarr"``), which already corrects
  netcdf-c's quirks (shuffle ``elementsize`` 0, ``>S1`` char, NCZarr scalars, Zarr v3
  chunk keys), or, for the sharded arrays of a Zarr v3 source, from the source itself
  as Zarr v3 (shards to zarr-python's sharding codec, nothing re-encoded:
  :mod:`.native_v3`), wrapped in xarray's ``ZarrArrayWrapper`` (basic, orthogonal and
  vectorized indexing, async loading). With ``chunks=`` xarray makes dask arrays along
  the stored chunks (``preferred_chunks``).

Reusing xarray's Zarr *backend* (``xr.open_zarr`` over the view) was rejected: it
infers attribute types from JSON (``scale_factor`` becomes float64, changing decoded
dtypes), returns fixed-width bytes for netCDF strings, and knows nothing of netCDF
dimension scoping.

Known differences from the netcdf4 engine (each pinned by a test):

* anonymous dimensions of pure Zarr arrays without ``_ARRAY_DIMENSIONS`` are named
  ``_Anonymous_Dimension_<n>`` (netcdf-c 4.10: ``_Anonymous_Dim_<n>``);
* a scalar netcdf-c wrote as pure Zarr (shape ``[1]``, ``_ARRAY_DIMENSIONS:
  ["_scalar_"]``) is 0-d here; netcdf-c 4.10 reads it back as 1-d over ``_scalar_``;
* a char attribute whose text is a JSON scalar (``"17"``, ``"true"``) is the text
  that was written; netcdf-c stores it as JSON and reads it back mangled (``"1"``), so
  the netcdf4 engine ignores ``_Unsigned = "true"`` on NCZarr and this engine applies it;
* arrays nczarr cannot translate (e.g. complex numbers) are left out with an
  :class:`~nczarr.NCZarrWarning`;
* pure Zarr from xarray, zarr-python or GDAL is shown as xarray's zarr engine shows it:
  ``bool`` stays bool, ``|S<n>`` stays numpy bytes, and a Zarr v2 ``fill_value`` is the
  ``_FillValue`` (masked), see ``docs/conversion.md``;
* variable ``encoding`` carries the Zarr chunking (``chunksizes``,
  ``preferred_chunks``), not netCDF4's filter flags.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from numcodecs.errors import UnknownCodecError
from xarray.backends.common import (
    AbstractDataStore,
    BackendEntrypoint,
    datatree_from_dict_with_io_cleanup,
)
from xarray.backends.store import StoreBackendEntrypoint
from xarray.backends.zarr import ZarrArrayWrapper
from xarray.coding.strings import create_vlen_dtype
from xarray.core import indexing
from xarray.core.utils import FrozenDict
from xarray.core.variable import Variable as XVariable

from ..errors import NCZarrError, StorageNotFoundError, warn_all
from ..maps.base import ZMap
from ..translate.attrs import json_reading_warnings
from ..translate.conventions import LAYOUT_ZARR, NC_TO_DTYPE
from ..translate.model import Attribute, Group, Variable
from .chunkerrors import check_chunk_count, chunk_failure
from .undecodable import UndecodableArray, undecodable_array
from .zarr_store import ZarrStore

__all__ = [
    "NCZarrBackendEntrypoint",
    "NCZarrDataStore",
    "NCZarrSource",
    "NCZarrArrayWrapper",
    "attribute_value",
]

#: Suffixes of local or remote NCZarr/Zarr stores the engine claims without a fragment.
_STORE_SUFFIXES = (".zip", ".file")

_DECODERS = (
    "mask_and_scale",
    "decode_times",
    "concat_characters",
    "decode_coords",
    "drop_variables",
    "use_cftime",
    "decode_timedelta",
)


def attribute_value(attr: Attribute, netcdf: bool = False) -> Any:
    """An attribute's value as ``netCDF4.Variable.getncattr`` returns it.

    ``char``: ``str`` (``netcdf``: a netCDF file's or NCZarr store's, NUL bytes removed,
    as netCDF4 removes them; a pure Zarr producer's text is kept as written);
    ``string``: ``str`` (one value) or ``list[str]``; numbers: a numpy scalar of the
    netCDF type (one value) or a 1-d numpy array.
    """
    if attr.type == "char":
        return attr.value.replace("\x00", "") if netcdf else attr.value
    if attr.type == "string":
        values = list(attr.value)
        return values[0] if len(values) == 1 else values
    array = np.array(attr.value, dtype=np.dtype(NC_TO_DTYPE[attr.type]))
    return array[0] if array.size == 1 else array


def _attributes(attrs: Mapping[str, Attribute], layout: str) -> dict[str, Any]:
    netcdf = layout != LAYOUT_ZARR  # netCDF's reading: a netCDF file or an NCZarr store
    return {name: attribute_value(attr, netcdf) for name, attr in attrs.items()}


class NCZarrArrayWrapper(ZarrArrayWrapper):
    """xarray's ``ZarrArrayWrapper`` for one netCDF variable.

    A netCDF ``string`` variable (fixed-width UTF-8 bytes in NCZarr) is shown as
    netCDF4 shows it: vlen ``str`` objects (dtype ``object`` with xarray's vlen marker).
    """

    __slots__ = ("_text",)

    def __init__(self, zarr_array: Any, *, text: bool) -> None:
        super().__init__(zarr_array)
        self._text = text
        if text:
            self.dtype = create_vlen_dtype(str)

    def _as_text(self, value: Any) -> Any:
        if not self._text:
            return value
        data = np.asarray(value)
        if data.dtype.kind in "UOT":  # stored as text ("<U", variable-length UTF-8)
            out = np.empty(data.shape, dtype=object)
            out.reshape(-1)[:] = [str(item) for item in data.reshape(-1)]
            return out
        # C strings, as netcdf-c returns them: UTF-8 up to the first NUL
        data = np.asarray(value, dtype=bytes)
        out = np.empty(data.shape, dtype=object)
        out.reshape(-1)[:] = [
            item.split(b"\0", 1)[0].decode("utf-8", errors="replace") for item in data.reshape(-1)
        ]
        return out

    def _getitem(self, key: Any) -> Any:
        # basic selections (all of ``.load()``, every dask chunk) are read in this
        # thread, in batches (nczarr.integrations.fastpipeline)
        from .calling_thread import get_basic_selection

        return get_basic_selection(self._array, key)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        try:
            return self._as_text(super().__getitem__(key))
        except NCZarrError:
            raise
        except Exception as exc:  # a damaged chunk: named, with the store
            raise chunk_failure(self._array, exc) from exc

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> Any:
        try:
            return self._as_text(await super().async_getitem(key))
        except NCZarrError:
            raise
        except Exception as exc:
            raise chunk_failure(self._array, exc) from exc


class NCZarrSource:
    """One opened store: its netCDF-4 model and lazy zarr arrays, shared by its groups.

    Parameters
    ----------
    src
        URL, path, or open :class:`~nczarr.ZMap` (left open on :meth:`close`).
    storage_options
        Passed to :func:`nczarr.open_map` when ``src`` is a URL or a path.
    """

    def __init__(
        self, src: str | os.PathLike[str] | ZMap, storage_options: Mapping[str, Any] | None = None
    ) -> None:
        from .native_v3 import engine_view

        # warns (NCZarrWarning) about arrays it leaves out; closes a map it opened.
        # sharded Zarr v3 arrays are read as stored by zarr-python, not re-encoded by the view
        self.view, self._native = engine_view(src, storage_options)
        self.url = self.view.source.url
        self.dataset = self.view.dataset
        self._store = ZarrStore(self.view, read_only=True)
        # the source itself, for the Zarr v3 arrays (closed with the view, not here)
        self._source_store = ZarrStore(self.view.source, read_only=True) if self._native else None
        self._closed = False

    def group(self, path: str | None) -> Group:
        """The model group at ``path`` (``None``, ``""`` and ``"/"``: the root)."""
        if path in (None, "", "/"):
            return self.dataset.root
        try:
            return self.dataset.find_group(str(path))
        except KeyError:
            names = [g.path for g in self.dataset.root.walk()]
            raise StorageNotFoundError(
                f"{self.url}: group not found: {path!r} (groups: {', '.join(names)})"
            ) from None

    def array(self, var: Variable) -> NCZarrArrayWrapper | UndecodableArray:
        """A lazy, indexable wrapper of ``var``'s values (an :class:`UndecodableArray`
        when its codec is not available here)."""
        from .v2arrays import open_v2_array

        path = var.path.strip("/")
        native = self._native.get(path)
        # the translated Zarr v2 metadata, as the documents the view's writer made
        zarray = self.view.document(f"{path}/.zarray")
        if native is not None and self._source_store is not None:
            from .native_v3 import open_native

            array = open_native(self._source_store, native)  # sharded Zarr v3 as stored
        elif zarray is None:  # not shown by the view: zarr's own lookup (and error)
            import zarr

            from .fastpipeline import fast_pipeline

            with fast_pipeline():
                array = zarr.open_array(store=self._store, path=path, mode="r", zarr_format=2)
        else:  # batched chunk reads, decoded in a pool; no round trip through zarr's loop
            try:
                zattrs = self.view.document(f"{path}/.zattrs")
                array = open_v2_array(self._store, path, zarray, zattrs)
            except UnknownCodecError:  # netcdf-c: kept, its reads fail (NC_ENOFILTER)
                return undecodable_array(var, zarray, self.url)
        # fixed-width bytes a pure-Zarr producer wrote stay numpy bytes (xarray's zarr engine)
        return NCZarrArrayWrapper(array, text=var.type == "string" and var.logical != "bytes")

    def close(self) -> None:
        """Close the view (and the map, when it was opened from a URL). Idempotent."""
        if not self._closed:
            self._closed = True
            self._store.close()


class NCZarrDataStore(AbstractDataStore):
    """One netCDF group of an :class:`NCZarrSource`, as undecoded xarray variables."""

    __slots__ = ("_group", "_source")

    def __init__(self, source: NCZarrSource, group: str | None = None) -> None:
        self._source = source
        self._group = source.group(group)

    @property
    def source(self) -> NCZarrSource:
        """The opened store this group belongs to."""
        return self._source

    @classmethod
    def open(
        cls,
        src: str | os.PathLike[str] | ZMap,
        group: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> NCZarrDataStore:
        """Open ``src`` and return the store of its group ``group``."""
        source = NCZarrSource(src, storage_options)
        try:
            return cls(source, group)
        except BaseException:
            source.close()
            raise

    def open_store_variable(self, var: Variable) -> XVariable:
        """``var`` as the netcdf4 engine's ``open_store_variable`` shows it."""
        dims = tuple(d.rsplit("/", 1)[-1] for d in var.dimensions)
        check_chunk_count(var.path, tuple(var.shape), tuple(var.chunks), self._source.url)
        wrapper = self._source.array(var)
        data = indexing.LazilyIndexedArray(wrapper)
        attributes = _attributes(var.attributes, self._source.dataset.layout)
        warn_all(json_reading_warnings(var.attributes.values(), var.path))
        if wrapper.dtype.kind == "S" and "_FillValue" in attributes:
            # as xarray's netcdf4 engine does (netCDF4 returns str for a char fill)
            attributes["_FillValue"] = np.bytes_(attributes["_FillValue"])
        encoding: dict[str, Any] = {
            "dtype": str if var.type == "string" and var.logical != "bytes" else wrapper.dtype,
            "source": self._source.url,
            "original_shape": tuple(var.shape),
        }
        if dims:
            encoding["contiguous"] = False
            encoding["chunksizes"] = tuple(var.chunks)
            encoding["preferred_chunks"] = dict(zip(dims, var.chunks, strict=True))
        return XVariable(dims, data, attributes, encoding)

    def get_variables(self) -> FrozenDict[str, XVariable]:
        from .fastpipeline import fast_pipeline

        with fast_pipeline():  # once for every array of the group, not once per array
            return FrozenDict(
                (name, self.open_store_variable(var)) for name, var in self._group.variables.items()
            )

    def get_attrs(self) -> FrozenDict[str, Any]:
        warn_all(json_reading_warnings(self._group.attributes.values(), self._group.path))
        return FrozenDict(_attributes(self._group.attributes, self._source.dataset.layout))

    def get_dimensions(self) -> FrozenDict[str, int]:
        return FrozenDict((n, d.size) for n, d in self._group.dimensions.items())

    def get_encoding(self) -> dict[str, Any]:
        return {
            "unlimited_dims": {n for n, d in self._group.dimensions.items() if d.unlimited},
            "source": self._source.url,
        }

    def close(self, **kwargs: Any) -> None:
        self._source.close()


def _decoders(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: kwargs[k] for k in _DECODERS if k in kwargs}


class NCZarrBackendEntrypoint(BackendEntrypoint):
    """``engine="nczarr"``: NCZarr and Zarr stores, the way the netcdf4 engine shows them.

    Backend keyword arguments: ``group`` (a group path), ``storage_options`` (a dict
    for :func:`nczarr.open_map`: S3 ``endpoint_url``, ``anon``, ...).
    """

    description = "Open NCZarr (every netcdf-c generation) and Zarr stores as netCDF-4"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj",
        *_DECODERS,
        "group",
        "storage_options",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """True for netCDF-style NCZarr URLs and for ``.zip``/``.file`` stores.

        A ``#mode=`` fragment naming ``nczarr``/``zarr`` is claimed anywhere. A
        ``.zarr`` path is claimed only when it is a local NCZarr store (its root
        metadata names ``_nczarr``), so plain Zarr keeps going to xarray's zarr engine.
        """
        if isinstance(filename_or_obj, ZMap):
            return True
        if not isinstance(filename_or_obj, str | os.PathLike):
            return False
        text = os.fspath(filename_or_obj)
        if not isinstance(text, str):
            return False
        parts = urlsplit(text) if "://" in text else None
        fragment = parts.fragment if parts is not None else text.partition("#")[2]
        words = {
            w.strip().lower()
            for item in fragment.split("&")
            for w in item.partition("=")[2 if "=" in item else 0].split(",")
        }
        if words & {"nczarr", "zarr", "xarray", "noxarray"}:
            return True
        path = (parts.path if parts is not None else text.partition("#")[0]).rstrip("/")
        if path.endswith(_STORE_SUFFIXES):
            return True
        return path.endswith(".zarr") and parts is None and _is_local_nczarr(path)

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: Any = True,
        concat_characters: bool = True,
        decode_coords: Any = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: Any = None,
        group: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> Any:
        """Open one group (default: the root) as an ``xr.Dataset``."""
        store = NCZarrDataStore.open(filename_or_obj, group, storage_options)
        try:
            return StoreBackendEntrypoint().open_dataset(
                store,
                mask_and_scale=mask_and_scale,
                decode_times=decode_times,
                concat_characters=concat_characters,
                decode_coords=decode_coords,
                drop_variables=drop_variables,
                use_cftime=use_cftime,
                decode_timedelta=decode_timedelta,
            )
        except BaseException:
            store.close()
            raise

    def open_groups_as_dict(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        group: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Every group at or below ``group``, keyed as the netcdf4 engine keys them."""
        from xarray.core.treenode import NodePath

        source = NCZarrSource(filename_or_obj, storage_options)
        decoders = _decoders(kwargs)
        unknown = set(kwargs) - set(decoders)
        if unknown:
            source.close()
            raise TypeError(f"engine 'nczarr' got unexpected arguments {sorted(unknown)}")
        out: dict[str, Any] = {}
        try:
            top = source.group(group)
            parent = NodePath("/") / NodePath(top.path)
            for node in top.walk():
                ds = StoreBackendEntrypoint().open_dataset(
                    NCZarrDataStore(source, node.path), **decoders
                )
                name = NodePath(node.path)
                out[str(name.relative_to(parent)) if group else str(name)] = ds
        except BaseException:
            source.close()
            raise
        return out

    def open_datatree(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        group: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """The store (or the subtree at ``group``) as an ``xr.DataTree``."""
        groups = self.open_groups_as_dict(
            filename_or_obj, group=group, storage_options=storage_options, **kwargs
        )
        return datatree_from_dict_with_io_cleanup(groups)


def _is_local_nczarr(path: str) -> bool:
    """Whether the local directory ``path`` holds NCZarr root metadata.

    Guessing never blocks and reads little: each of the three objects is opened
    without blocking (a FIFO or a device answers at once), and only a regular file
    is read, at most its first 64 KiB.
    """
    for name in (".zattrs", ".zgroup", ".nczarr"):
        head = _head(os.path.join(path, name), 1 << 16)
        if head is not None and (name == ".nczarr" or b"_nczarr" in head.lower()):
            return True
    return False


def _head(path: str, size: int) -> bytes | None:
    """The first ``size`` bytes of the regular file ``path`` (None: absent or not a file)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)
