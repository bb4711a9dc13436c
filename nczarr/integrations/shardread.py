"""Basic selections of a sharded Zarr v3 array, read in the calling thread.

Why
---
zarr-python reads a selection of a sharded array on its own event loop thread: the
caller hops into the loop, then the shard index and each inner chunk are separate store
reads (each in a worker thread for a blocking store, zarr's ``LocalStore`` as our
:class:`~nczarr.integrations.zarr_store.ZarrStore`) and zstd runs in yet another worker
thread. Under dask every task reads one inner chunk, so that is four thread hops and
~2 ms of CPU per 40 KB chunk, more than the read and the decode themselves.

Here the same reads are made by the calling thread, through the map
(:meth:`~nczarr.maps.base.ZMap.getrange`: the shard index, then the inner chunks asked
for; the whole shard in one read when every inner chunk of it is asked for), and
zarr-python's own codecs decode them (their synchronous ``_decode_sync``). zarr-python's
``BasicIndexer`` splits the selection, so the values are zarr-python's.

An array qualifies when zarr-python's codecs for it (the sharding codec's inner codecs
and its index codecs) can all decode synchronously and the sharding is not nested;
every other array, and every non-basic selection, is read by zarr-python as before
(:meth:`ShardedArray.__getitem__` falls back to ``zarr.Array.__getitem__``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from zarr import Array

from ..maps.base import ZMap

__all__ = ["BATCH", "ShardPlan", "ShardedArray", "read_basic", "shard_plan"]

#: Whole shards read with one ``getitems`` (bounds the compressed bytes held at once).
BATCH = 16

#: An inner chunk the shard does not hold (its index entry is this offset and length).
_MISSING = np.uint64(2**64 - 1)


@dataclass(frozen=True)
class _Chain:
    """zarr-python codecs with the spec each decodes with, in encode order."""

    array_array: tuple[tuple[Any, Any], ...]
    array_bytes: tuple[Any, Any]
    bytes_bytes: tuple[tuple[Any, Any], ...]

    def decode(self, data: bytes, prototype: Any) -> np.ndarray:
        """The array ``data`` encodes (every codec's ``_decode_sync``, last first)."""
        buf = prototype.buffer.from_bytes(data)
        for codec, spec in reversed(self.bytes_bytes):
            buf = codec._decode_sync(buf, spec)
        codec, spec = self.array_bytes
        arr = codec._decode_sync(buf, spec)
        for codec, spec in reversed(self.array_array):
            arr = codec._decode_sync(arr, spec)
        return arr.as_numpy_array()


def _chain(codecs: Any, spec: Any) -> _Chain | None:
    """The :class:`_Chain` of a zarr codec pipeline for chunks of ``spec`` (None: some
    codec cannot decode synchronously, e.g. a nested sharding or a numcodecs codec)."""
    if not all(callable(getattr(codec, "_decode_sync", None)) for codec in codecs):
        return None
    array_array = []
    for codec in codecs.array_array_codecs:
        array_array.append((codec, spec))
        spec = codec.resolve_metadata(spec)
    array_bytes = (codecs.array_bytes_codec, spec)
    spec = codecs.array_bytes_codec.resolve_metadata(spec)
    bytes_bytes = []
    for codec in codecs.bytes_bytes_codecs:
        bytes_bytes.append((codec, spec))
        spec = codec.resolve_metadata(spec)
    return _Chain(tuple(array_array), array_bytes, tuple(bytes_bytes))


@dataclass(frozen=True)
class ShardPlan:
    """What reading a sharded array needs, worked out once per array."""

    zmap: ZMap
    prefix: str  # the array's key prefix in the map ("" or "path/")
    metadata: Any  # zarr-python's ArrayV3Metadata
    shard_shape: tuple[int, ...]
    inner_shape: tuple[int, ...]
    chunks_per_shard: tuple[int, ...]
    index_size: int
    index_at_end: bool
    index: _Chain
    inner: _Chain
    prototype: Any
    order: str

    @property
    def inner_count(self) -> int:
        """Inner chunks in one shard."""
        return math.prod(self.chunks_per_shard)


def shard_plan(array: Any, zmap: ZMap, path: str) -> ShardPlan | None:
    """The plan for reading ``array`` (a ``zarr.Array`` of a sharded Zarr v3 array at
    ``path`` of ``zmap``) in the calling thread, or None when zarr-python reads it."""
    from zarr.codecs import ShardingCodec
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.chunk_grids import RegularChunkGrid

    async_array = array._async_array
    metadata = async_array.metadata
    pipeline = async_array.codec_pipeline
    sharding = getattr(pipeline, "array_bytes_codec", None)
    if (
        metadata.zarr_format != 3
        or not isinstance(metadata.chunk_grid, RegularChunkGrid)
        or not isinstance(sharding, ShardingCodec)
        or tuple(pipeline.array_array_codecs) + tuple(pipeline.bytes_bytes_codecs)
        or metadata.dtype.to_native_dtype().kind in "OTV"
    ):
        return None
    try:
        prototype = default_buffer_prototype()
        shard_spec = metadata.get_chunk_spec(
            (0,) * len(metadata.shape), async_array.config, prototype=prototype
        )
        per_shard = sharding._get_chunks_per_shard(shard_spec)
        index_pipeline = type(pipeline).from_codecs(sharding.index_codecs)
        index = _chain(index_pipeline, sharding._get_index_chunk_spec(per_shard))
        inner = _chain(sharding.codec_pipeline, sharding._get_chunk_spec(shard_spec))
        index_size = sharding._shard_index_size(per_shard)
    except (AttributeError, TypeError, ValueError):  # another zarr-python: zarr reads it
        return None
    if index is None or inner is None:
        return None
    return ShardPlan(
        zmap=zmap,
        prefix=f"{path.strip('/')}/" if path.strip("/") else "",
        metadata=metadata,
        shard_shape=tuple(shard_spec.shape),
        inner_shape=tuple(sharding.chunk_shape),
        chunks_per_shard=tuple(per_shard),
        index_size=index_size,
        index_at_end=sharding.index_location.value == "end",
        index=index,
        inner=inner,
        prototype=prototype,
        order=async_array.config.order,
    )


def read_basic(plan: ShardPlan, selection: Any) -> Any:
    """``array[selection]`` for a basic ``selection`` (ints, slices, ellipsis): a
    numpy array (0-d when every dimension is an integer, as zarr-python returns it).

    Shards of which every inner chunk is asked for are read whole, :data:`BATCH` at a
    time with one ``getitems`` (concurrent requests on S3); the others by their index
    and the byte ranges of the inner chunks asked for."""
    from zarr.core.chunk_grids import RegularChunkGrid
    from zarr.core.indexing import BasicIndexer

    metadata = plan.metadata
    indexer = BasicIndexer(selection, shape=metadata.shape, chunk_grid=metadata.chunk_grid)
    out = np.empty(indexer.shape, dtype=metadata.dtype.to_native_dtype(), order=plan.order)
    grid = RegularChunkGrid(chunk_shape=plan.inner_shape)
    shards = []
    for shard_coords, shard_selection, out_selection, _ in indexer:
        key = plan.prefix + metadata.encode_chunk_key(shard_coords)
        parts = list(BasicIndexer(shard_selection, shape=plan.shard_shape, chunk_grid=grid))
        # a view of the result (``out[()]`` of a 0-d array would be a copy, a scalar)
        shards.append((key, parts, out[out_selection] if out_selection else out[...]))
    for first in range(0, len(shards), BATCH):
        batch = shards[first : first + BATCH]
        whole = [key for key, parts, _ in batch if len(parts) == plan.inner_count]
        fetched = plan.zmap.getitems(whole) if whole else {}
        for key, parts, view in batch:
            if len(parts) == plan.inner_count:
                _read_whole(plan, fetched.get(key), parts, view)
            else:
                _read_parts(plan, key, parts, view)
    return out


def _read_whole(plan: ShardPlan, shard: bytes | None, parts: list[Any], out: np.ndarray) -> None:
    """Write the inner chunks ``parts`` of ``shard`` (None: never written) into ``out``."""
    if shard is None:
        out[...] = plan.metadata.fill_value
        return
    _decode_into(plan, _index(plan, _index_bytes(plan, shard)), _slicer(shard), parts, out)


def _read_parts(plan: ShardPlan, key: str, parts: list[Any], out: np.ndarray) -> None:
    """Write the inner chunks ``parts`` of the shard at ``key`` into ``out``, reading
    its index and then those chunks' byte ranges."""
    try:
        index = _index(plan, _read_index(plan, key))
    except KeyError:  # a shard never written: the fill value
        out[...] = plan.metadata.fill_value
        return
    _decode_into(plan, index, _ranger(plan.zmap, key), parts, out)


def _decode_into(
    plan: ShardPlan, index: np.ndarray, fetch: Any, parts: list[Any], out: Any
) -> None:
    fill = plan.metadata.fill_value
    for coords, chunk_selection, out_selection, _ in parts:
        offset, length = index[coords]
        if offset == _MISSING and length == _MISSING:
            out[out_selection] = fill
            continue
        chunk = plan.inner.decode(fetch(int(offset), int(length)), plan.prototype)
        out[out_selection] = chunk[chunk_selection]


def _index_bytes(plan: ShardPlan, shard: bytes) -> bytes:
    if len(shard) < plan.index_size:
        raise ValueError(
            f"a shard of {len(shard)} bytes is shorter than its index ({plan.index_size} bytes)"
        )
    return shard[-plan.index_size :] if plan.index_at_end else shard[: plan.index_size]


def _read_index(plan: ShardPlan, key: str) -> bytes:
    size = plan.index_size
    data = plan.zmap.getrange(key, -size) if plan.index_at_end else plan.zmap.getrange(key, 0, size)
    if len(data) != size:
        raise ValueError(f"the shard index of {key!r} is {len(data)} bytes, expected {size}")
    return data


def _index(plan: ShardPlan, data: bytes) -> np.ndarray:
    """Offsets and lengths (uint64, shape ``chunks_per_shard + (2,)``) of a shard index."""
    return plan.index.decode(data, plan.prototype)


def _slicer(whole: bytes) -> Any:
    view = memoryview(whole)
    return lambda offset, length: view[offset : offset + length]


def _ranger(zmap: ZMap, key: str) -> Any:
    return lambda offset, length: zmap.getrange(key, offset, length)


def _is_basic(selection: Any) -> bool:
    items = selection if isinstance(selection, tuple) else (selection,)
    return all(
        item is Ellipsis
        or (isinstance(item, slice | int | np.integer) and not isinstance(item, bool))
        for item in items
    )


class ShardedArray(Array):  # type: ignore[type-arg]
    """A ``zarr.Array`` whose basic selections are read by :func:`read_basic` (in the
    calling thread); every other selection is zarr-python's own."""

    _plan: ShardPlan

    @classmethod
    def over(cls, array: Any, plan: ShardPlan) -> ShardedArray:
        """``array`` (a ``zarr.Array``) reading through ``plan``."""
        out = cls(array._async_array)
        out._plan = plan
        return out

    def __getitem__(self, selection: Any) -> Any:
        if _is_basic(selection):
            return read_basic(self._plan, selection)
        return super().__getitem__(selection)
