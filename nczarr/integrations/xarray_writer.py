"""``to_nczarr``: write an ``xr.Dataset`` or ``xr.DataTree`` as current NCZarr.

The result is what netcdf-c 4.9.3+ writes: netCDF dimensions (shared down the group
tree, unlimited where asked), typed attributes, ``char`` and ``string`` variables, and
CF-encoded values, so that ``netCDF4``/``ncdump`` see the same variables, dimensions,
values and attributes, and ``xr.open_dataset(url, engine="netcdf4")`` (or
``engine="nczarr"``) returns the input.

How
---
* The dataset becomes nczarr's netCDF-4 model in :mod:`nczarr.integrations.xarray_model`
  (CF encoding is xarray's own, the netcdf4 engine's pipeline; types, dimensions and
  attributes as netCDF4-python assigns them), and :func:`nczarr.translate.write`
  turns the model into NCZarr metadata -- no NCZarr JSON is written by hand.
* Chunks are encoded by zarr-python, through a :class:`~nczarr.ZarrStore` over a map
  that keeps the pure-Zarr ``.zarray`` of each array in memory (zarr-python cannot
  open netcdf-c's ``>S1`` char dtype) and sends chunk objects to the target. Text is
  stored as NUL-padded UTF-8 of width ``max(longest, 128)`` (netcdf-c's
  ``|S<maxstrlen>``). Dask arrays are rechunked to the Zarr chunks and stored chunk
  by chunk, never loaded whole.
* Safety (docs/reliability.md, "to_nczarr"): everything is checked before the target
  is touched (:mod:`~nczarr.integrations.xarray_checks`: names, keys, codecs, sizes,
  fill values, and that nczarr reads the metadata back); a target that any lazy array
  of the dataset reads from is refused (:mod:`~nczarr.integrations.lazy_sources`,
  with convert's overlap rules); a local directory store is written in a stage
  beside it and renamed in (exchanged, for ``mode="w"``), a zip archive is replaced
  atomically, and a failed write leaves the old store as it was
  (:mod:`~nczarr.integrations.staging`). Order: chunks first, then array metadata,
  the root group last and its ``.zgroup`` very last, so an interrupted write never
  looks like a complete dataset.

Appending (``mode="a", append_dim=``) is :mod:`nczarr.integrations.xarray_append`.
Not supported (clear errors): ``mode="r+"``, region writes (``region=``), complex,
timedelta without CF units, object arrays that are not text, and attributes netCDF
cannot type (booleans, nested lists).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import (
    InvalidModeError,
    ReadOnlyError,
    TargetExistsError,
    UnsupportedError,
    warn_all,
)
from ..maps.base import ZMap
from ..maps.replace import mark_writing, unmark_writing
from ..translate.conventions import ZARRAY, ZATTRS, ZGROUP
from .lazy_sources import check_not_reading_from
from .staging import open_write_target
from .xarray_checks import check_before_writing
from .xarray_model import ModelPlan

__all__ = ["to_nczarr"]

_MODES = ("w-", "w")
_METADATA_NAMES = (ZARRAY, ZATTRS, ZGROUP)


# ------------------------------------------------------------------ chunk writing
class _ChunkSink(ZMap):
    """zarr-python's view while writing chunks: metadata objects live in memory, chunk
    objects go to ``target``. The target thus never holds pure-Zarr metadata."""

    def __init__(self, target: ZMap, metadata: Mapping[str, bytes]) -> None:
        super().__init__("a")
        self._target = target
        self._metadata = dict(metadata)
        self._gate = threading.Condition()
        self._writing = 0  # chunk writes under way
        self._abandoned = False

    @contextmanager
    def _chunk_write(self) -> Iterator[None]:
        """Count a chunk write under way; refuse it once the write was abandoned."""
        with self._gate:
            if self._abandoned:
                raise ReadOnlyError(f"{self._target.url}: the write was abandoned")
            self._writing += 1
        try:
            yield
        finally:
            with self._gate:
                self._writing -= 1
                self._gate.notify_all()

    def abandon(self, timeout: float = 60.0) -> None:
        """Refuse further chunk writes and wait for those under way. dask lets the
        tasks it started run on when another fails: a chunk landing after the abort
        would be left in the stage (or the target) the abort just emptied."""
        with self._gate:
            self._abandoned = True
            self._gate.wait_for(lambda: self._writing == 0, timeout)

    @staticmethod
    def _is_metadata(key: str) -> bool:
        return key.rsplit("/", 1)[-1] in _METADATA_NAMES

    def _load(self, key: str) -> bytes:
        if self._is_metadata(key):
            return self._metadata[key]
        return self._target[key]

    def _exists(self, key: str) -> bool:
        return key in self._metadata if self._is_metadata(key) else key in self._target

    def _store(self, key: str, value: bytes) -> None:
        if self._is_metadata(key):
            self._metadata[key] = bytes(value)
        else:
            with self._chunk_write():
                self._target[key] = value

    def _remove(self, key: str) -> None:
        if self._is_metadata(key):
            del self._metadata[key]
        else:
            del self._target[key]

    def setitems(self, items: Mapping[str, bytes]) -> None:
        """Metadata to memory, chunks to the target in one ``setitems``: the target's
        own checks (leaf rule included) run once per chunk, not the sink's on top."""
        chunks: dict[str, bytes] = {}
        for key, value in items.items():
            if self._is_metadata(key):
                self[key] = value
            else:
                chunks[key] = value
        if chunks:
            self._check_writable()
            with self._chunk_write():
                self._target.setitems(chunks)

    def _list(self, prefix: str) -> Iterator[str]:
        yield from (
            k for k in self._metadata if not prefix or k == prefix or k.startswith(prefix + "/")
        )
        yield from (k for k in self._target.keys_below(prefix) if not self._is_metadata(k))

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return (f"chunks-to:{self._target.url}", {})


def _write_chunks(sink: ZMap, plan: ModelPlan) -> None:
    import zarr

    from .calling_thread import set_basic_selection
    from .fastpipeline import fast_pipeline
    from .zarr_store import ZarrStore

    store = ZarrStore(sink)
    lazy_sources, lazy_targets = [], []
    for data, var in plan.data.values():
        with fast_pipeline():  # chunks encoded in parallel, written in batches
            array = zarr.open_array(store=store, path=var.path.strip("/"), mode="r+", zarr_format=2)
        if hasattr(data, "dask") and hasattr(data, "rechunk"):
            lazy_sources.append(data.rechunk(var.chunks or data.shape))
            lazy_targets.append(array)
        else:
            set_basic_selection(array, ..., np.asarray(data))  # array[...] = data, faster
    if lazy_sources:
        import dask.array as da

        da.store(lazy_sources, lazy_targets, lock=False)


# ------------------------------------------------------------------ entry point
def to_nczarr(
    obj: Any,
    url: str | os.PathLike[str] | ZMap,
    mode: str = "w-",
    *,
    storage_options: Mapping[str, Any] | None = None,
    encoding: Mapping[str, Mapping[str, Any]] | None = None,
    unlimited_dims: Iterable[str] | None = None,
    region: Any = None,
    append_dim: str | None = None,
) -> None:
    """Write ``obj`` (an ``xr.Dataset`` or ``xr.DataTree``) at ``url`` as current NCZarr.

    Parameters
    ----------
    obj
        The dataset; a DataTree's nodes become netCDF groups (a child's variables
        use the parent's dimension when the name and size match).
    url
        Where to write: a path, a netCDF-style URL (``file:///x.file#mode=nczarr,file``,
        ``x.zip``, ``s3://bucket/key``) or an open writable map. A new zip archive gets
        netcdf-c's layout (one top-level folder), which netcdf-c requires.
    mode
        ``"w-"`` (default): fail if the target holds anything. ``"w"``: replace it
        (a local directory or zip store only once the new one is complete; other
        stores are cleared, root metadata first, after every check passed) if it is
        a store: a folder of other files is refused (:mod:`nczarr.maps.replace`).
    storage_options
        Passed to :func:`nczarr.open_map` (S3 ``endpoint_url``, ``anon``, ...).
    encoding
        Per-variable encodings, as for ``to_netcdf``: ``dtype``, ``_FillValue``,
        ``scale_factor``, ``add_offset``, ``units``, ``calendar``, ``chunksizes``
        (or ``chunks``), ``zlib``/``complevel``/``shuffle`` or a numcodecs
        ``compressor``. For a DataTree, keys are variable paths (``"/g/v"``).
    unlimited_dims
        Dimensions to mark unlimited (default: each dataset's
        ``encoding["unlimited_dims"]``).
    append_dim
        With ``mode="a"``: append ``obj`` to the existing store along this dimension
        (:mod:`nczarr.integrations.xarray_append`): encodings come from the store,
        every check runs before anything is written, chunks already stored are not
        rewritten (only a partial last one), the metadata is written last.
    region
        Not supported.

    Raises
    ------
    UnsupportedError
        ``mode="r+"``, ``region=``, or ``mode="a"`` without ``append_dim`` (or
        ``append_dim`` without ``mode="a"``).
    TargetExistsError
        ``mode="w-"`` and the target is not empty, or ``mode="w"`` and the target
        holds files but no store. Nothing is written.
    InvalidModeError
        A lazy variable of ``obj`` reads from the target (under any name: links,
        ``..``, zip aliases, S3 endpoint spellings); load it first. Nothing is written.
    UnsupportedTypeError
        A variable or attribute has no netCDF-4 type; nothing is written.
    InvalidNameError, ValueRangeError, EncodingError, MetadataError, UnsupportedError
        A name nczarr could not read back, an out-of-range ``_FillValue`` (an
        ``OverflowError``), an encoding xarray refuses, a metadata object over the
        readers' size cap, an unknown codec. Raised before the target is touched.
    """
    if mode == "a" and append_dim is not None and region is None:
        from .xarray_append import append_dataset

        append_dataset(
            obj,
            url,
            append_dim=append_dim,
            storage_options=storage_options,
            encoding=encoding,
            unlimited_dims=unlimited_dims,
            write=to_nczarr,
        )
        return
    if mode in ("a", "r+") or region is not None or append_dim is not None:
        what = "region writes (region=)" if region is not None else "appending"
        where = url if isinstance(url, ZMap) else os.fspath(url)
        raise UnsupportedError(
            f"to_nczarr does not support {what} ({where!r}): it writes a whole new NCZarr "
            "store (mode 'w-' or 'w'); to extend one, write pure Zarr with to_zarr and "
            "convert it with nczarr.convert"
        )
    if mode not in _MODES:
        raise InvalidModeError(f"invalid mode {mode!r} for to_nczarr: expected 'w-' or 'w'")
    obj = _with_encoding(obj, encoding)
    plan = ModelPlan(obj, unlimited_dims)  # every type error before anything is written
    from ..translate.writer import write_with_warnings

    result = write_with_warnings(plan.dataset, "nczarr")
    pure = write_with_warnings(plan.dataset, "zarr").metadata  # serialised when read
    zarr_metadata = {k: pure[k] for k in pure if k.endswith(ZARRAY)}
    check_before_writing(plan.dataset, result.metadata, zarr_metadata)
    _check_sources(obj, url, storage_options)
    warn_all(result.warnings, stacklevel=3)
    target, full = open_write_target(url, storage_options, mode)
    sink = None
    try:
        if full and mode == "w-":
            raise TargetExistsError(
                f"target {target.map.url!r} exists and is not empty: pass mode='w' to replace it"
            )
        if full:
            _clear(target.map)
        if target.in_place:  # a write killed from here on leaves a replaceable store
            mark_writing(target.map)
        sink = _ChunkSink(target.map, zarr_metadata)
        with target.map.session():  # each directory opened and verified once
            with target.map.trusted_writes():  # empty target, planned keys: no probes
                _write_chunks(sink, plan)
            _write_metadata(target.map, result.metadata)
        if target.in_place:
            unmark_writing(target.map)
        target.map.flush()
    except BaseException:
        if sink is not None:
            sink.abandon()  # no chunk lands after the abort
        target.abort()
        raise
    target.commit()


# ------------------------------------------------------------------ order of writes
def _clear(zmap: ZMap) -> None:
    """Empty a store being replaced in place, its root metadata first (so a failure
    part-way never leaves the old root over a partial tree)."""
    for root_object in (ZGROUP, ZATTRS, ".zmetadata", "zarr.json"):
        if root_object in zmap:
            del zmap[root_object]
    zmap.clear()


def _write_metadata(zmap: ZMap, metadata: Mapping[str, bytes]) -> None:
    """Arrays, then groups deepest first, the root group last, and within it the root
    ``.zgroup`` very last (after ``.zattrs``): a store cut short anywhere has no root
    ``.zgroup``, so no reader opens it as a dataset without its global attributes."""
    from ..translate.order import order_metadata

    for key in order_metadata(metadata):
        zmap[key] = metadata[key]


def _check_sources(obj: Any, url: Any, storage_options: Mapping[str, Any] | None) -> None:
    """Refuse a target that lazy variables of ``obj`` read from (any spelling of it)."""
    from ..maps.overlap import location_of

    if isinstance(url, ZMap):
        check_not_reading_from(obj, url, url.url)
        return
    text = os.fspath(url)
    check_not_reading_from(obj, location_of(text, storage_options), text)


def _with_encoding(obj: Any, encoding: Mapping[str, Mapping[str, Any]] | None) -> Any:
    if not encoding:
        return obj
    import xarray as xr

    obj = obj.copy(deep=False)
    for key, enc in encoding.items():
        if isinstance(obj, xr.DataTree):
            group, _, name = str(key).rpartition("/")
            node = obj[group] if group else obj
            target = node.dataset[name]  # raises KeyError naming an unknown variable
            target.encoding = {**target.encoding, **enc}
            node[name] = target
        else:
            if key not in obj.variables:
                raise KeyError(f"encoding names variable {key!r}, which is not in the dataset")
            obj[key].encoding = {**obj[key].encoding, **enc}
    return obj
