"""Whole chunks written the way :mod:`.fastpipeline` reads them: without zarr's loop.

:func:`set_basic_selection` is ``array[selection] = value`` for whole chunks of a numpy
value, written by :class:`~nczarr.integrations.fastpipeline.NCZarrCodecPipeline`'s own
write job in the calling thread (``to_nczarr``'s numpy-backed variables).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .fastpipeline import NCZarrCodecPipeline, WriteJob, chunk_grid, chunk_plan
from .zarr_store import ZarrStore

__all__ = ["set_basic_selection"]


def set_basic_selection(array: Any, selection: Any, value: Any) -> None:
    """``array[selection] = value`` for a basic selection of whole chunks and a numpy
    ``value`` of the selection's shape and the array's dtype, written in the calling
    thread when ``array`` uses :class:`NCZarrCodecPipeline` over a :class:`ZarrStore`;
    otherwise (or for anything else) ``array[selection] = value``.

    Why: zarr-python's ``__setitem__`` hops into its event loop thread and builds a
    ``StorePath`` and an ``ArraySpec`` per chunk before the pipeline's ``write`` (40 KB
    Blosc chunks: about a third of ``to_nczarr``'s CPU). Here the chunk keys and the
    one spec come from :func:`chunk_plan` and the chunks go to :class:`WriteJob`,
    the pipeline's own write (same encoding, empty-chunk rule and ``setitems``).
    """
    from dataclasses import replace

    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.indexing import BasicIndexer

    async_array = array._async_array
    metadata = async_array.metadata
    pipeline = async_array.codec_pipeline
    store = async_array.store_path.store
    if (
        metadata.zarr_format != 2
        or not isinstance(pipeline, NCZarrCodecPipeline)
        or not isinstance(store, ZarrStore)
        or (codec := pipeline._v2_codec()) is None
        or type(value) is not np.ndarray
        or value.dtype != (dtype := metadata.dtype.to_native_dtype())
        or dtype.kind in "OTV"
        or store.read_only
    ):
        array[selection] = value
        return
    indexer = BasicIndexer(selection, shape=metadata.shape, chunk_grid=chunk_grid(metadata))
    if indexer.drop_axes or value.shape != indexer.shape or math.prod(indexer.shape) == 0:
        array[selection] = value
        return
    prototype = default_buffer_prototype()
    config = replace(async_array.config, order=metadata.order)
    # a Zarr v2 chunk spec does not depend on the chunk: one for all
    spec = metadata.get_chunk_spec((0,) * len(metadata.shape), config, prototype=prototype)
    base = async_array.store_path.path
    keys, info = chunk_plan(indexer, metadata, f"{base}/" if base else "", spec)
    if not all(item[4] for item in info):  # a partial chunk: zarr's read-modify-write
        array[selection] = value
        return
    store._open_sync()
    store._check_writable()
    buffer = prototype.nd_buffer.from_ndarray_like(value)
    WriteJob(pipeline, codec, store, keys, info, buffer).run()
