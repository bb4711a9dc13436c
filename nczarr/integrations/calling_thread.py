"""Basic selections read and written in the calling thread, without zarr's event loop.

:func:`get_basic_selection` is ``array[selection]`` (the engine's lazy arrays) and
:func:`set_basic_selection` is ``array[selection] = value`` for whole chunks of a numpy
value (``to_nczarr``'s numpy-backed variables), both through
:class:`~nczarr.integrations.fastpipeline.NCZarrCodecPipeline`'s own read and write
jobs, for the arrays :func:`direct_array` says they serve; anything else is zarr's own
``__getitem__``/``__setitem__``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .fastpipeline import NCZarrCodecPipeline, ReadJob, WriteJob, chunk_grid, chunk_plan
from .zarr_store import ZarrStore

__all__ = ["direct_array", "get_basic_selection", "planned_chunks", "set_basic_selection"]


def direct_array(array: Any) -> tuple[Any, Any, ZarrStore] | None:
    """``(zarr's async array, its Zarr v2 codec, its store)`` when ``array`` is a Zarr v2
    array of a fixed-size dtype read and written by :class:`NCZarrCodecPipeline` over a
    :class:`ZarrStore` (what the calling-thread paths serve), else ``None``."""
    async_array = array._async_array
    metadata = async_array.metadata
    pipeline = async_array.codec_pipeline
    store = async_array.store_path.store
    if (
        metadata.zarr_format != 2
        or not isinstance(pipeline, NCZarrCodecPipeline)
        or not isinstance(store, ZarrStore)
        or (codec := pipeline._v2_codec()) is None
        or metadata.dtype.to_native_dtype().kind in "OTV"
    ):
        return None
    return async_array, codec, store


def planned_chunks(async_array: Any, indexer: Any, prototype: Any) -> tuple[list[str], list]:
    """:func:`chunk_plan` of ``indexer``'s chunks under the array's path, with its one
    chunk spec (a Zarr v2 chunk spec does not depend on the chunk)."""
    from dataclasses import replace

    metadata = async_array.metadata
    config = replace(async_array.config, order=metadata.order)
    spec = metadata.get_chunk_spec((0,) * len(metadata.shape), config, prototype=prototype)
    base = async_array.store_path.path
    return chunk_plan(indexer, metadata, f"{base}/" if base else "", spec)


def get_basic_selection(array: Any, selection: Any) -> Any:
    """``array[selection]`` for a basic selection (ints, slices, ellipsis), read in the
    calling thread when :func:`direct_array` serves ``array`` (no hop into zarr's event
    loop thread, so dask's threads read in parallel); otherwise ``array[selection]``.

    It is what zarr-python's ``Array.__getitem__`` does for a basic selection -- zarr's
    own ``BasicIndexer``, chunk keys, chunk specs and output buffer -- with the read
    itself done by :class:`~nczarr.integrations.fastpipeline.ReadJob`.
    """
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.indexing import BasicIndexer

    direct = direct_array(array)
    if direct is None:
        return array[selection]
    async_array, codec, store = direct
    metadata = async_array.metadata
    indexer = BasicIndexer(selection, shape=metadata.shape, chunk_grid=chunk_grid(metadata))
    prototype = default_buffer_prototype()
    out = prototype.nd_buffer.empty(
        shape=indexer.shape, dtype=metadata.dtype.to_native_dtype(), order=metadata.order
    )
    if math.prod(indexer.shape) > 0:
        store._open_sync()
        keys, info = planned_chunks(async_array, indexer, prototype)
        base = async_array.store_path.path
        zmap = store.zmap
        source = zmap.chunk_map(base) if base else zmap  # a translated view's shortcut
        ReadJob(codec, store, keys, info, out, indexer.drop_axes, source).run()
    if indexer.shape == ():
        return out.as_scalar()
    return out.as_ndarray_like()


def set_basic_selection(array: Any, selection: Any, value: Any) -> None:
    """``array[selection] = value`` for a basic selection of whole chunks and a numpy
    ``value`` of the selection's shape and the array's dtype, written in the calling
    thread when :func:`direct_array` serves ``array``; otherwise (or for anything
    else) ``array[selection] = value``.

    Why: zarr-python's ``__setitem__`` hops into its event loop thread and builds a
    ``StorePath`` and an ``ArraySpec`` per chunk before the pipeline's ``write`` (40 KB
    Blosc chunks: about a third of ``to_nczarr``'s CPU). Here the chunk keys and the
    one spec come from :func:`planned_chunks` and the chunks go to
    :class:`~nczarr.integrations.fastpipeline.WriteJob`, the pipeline's own write (same
    encoding, empty-chunk rule and ``setitems``).
    """
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.indexing import BasicIndexer

    direct = direct_array(array)
    metadata = array._async_array.metadata
    if (
        direct is None
        or type(value) is not np.ndarray
        or value.dtype != metadata.dtype.to_native_dtype()
        or direct[2].read_only
    ):
        array[selection] = value
        return
    async_array, codec, store = direct
    indexer = BasicIndexer(selection, shape=metadata.shape, chunk_grid=chunk_grid(metadata))
    if indexer.drop_axes or value.shape != indexer.shape or math.prod(indexer.shape) == 0:
        array[selection] = value
        return
    prototype = default_buffer_prototype()
    keys, info = planned_chunks(async_array, indexer, prototype)
    if not all(item[4] for item in info):  # a partial chunk: zarr's read-modify-write
        array[selection] = value
        return
    store._open_sync()
    store._check_writable()
    buffer = prototype.nd_buffer.from_ndarray_like(value)
    WriteJob(async_array.codec_pipeline, codec, store, keys, info, buffer).run()
