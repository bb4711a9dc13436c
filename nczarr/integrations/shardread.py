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
zarr-python's own codecs decode them (their synchronous ``_decode_sync``, each evolved
for the chunk spec it sees, as zarr-python evolves them). :mod:`.shardselect` splits
the selection over the shard grid and each shard's inner chunk grid, from the shapes
alone: what is read here comes from the array's metadata (the shard shape, the
sharding codec's configuration) and the codecs, not from zarr-python's chunk grid
classes, which zarr-python 3.4 rewrote.

An array qualifies when zarr-python's codecs for it (the sharding codec's inner codecs
and its index codecs) can all decode synchronously, its shard grid is regular and the
sharding is not nested; every other array, and every non-basic selection, is read by
zarr-python as before (:meth:`ShardedArray.__getitem__` falls back to
``zarr.Array.__getitem__``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from zarr import Array

from ..maps.base import ZMap
from ..records import record
from .shardselect import NotBasic, normalize, out_shape, project

__all__ = ["BATCH", "ShardPlan", "ShardedArray", "read_basic", "shard_plan", "supported"]

#: Whole shards read with one ``getitems`` (bounds the compressed bytes held at once).
BATCH = 16

#: An inner chunk the shard does not hold (its index entry is this offset and length).
_MISSING = np.uint64(2**64 - 1)


@record
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
    """The :class:`_Chain` of ``codecs`` (a sharding codec's inner or index codecs) for
    chunks of ``spec``, each evolved for the spec it sees, as zarr-python evolves them
    (None: some codec cannot decode synchronously, e.g. a numcodecs codec before
    zarr-python 3.4)."""
    from zarr.abc.codec import ArrayArrayCodec, ArrayBytesCodec, BytesBytesCodec

    array_array: list[tuple[Any, Any]] = []
    array_bytes: list[tuple[Any, Any]] = []
    bytes_bytes: list[tuple[Any, Any]] = []
    for codec in codecs:
        codec = codec.evolve_from_array_spec(spec)
        if not callable(getattr(codec, "_decode_sync", None)):
            return None
        if not getattr(codec, "_sync_capable", True):  # zarr 3.4 says it cannot
            return None
        if isinstance(codec, ArrayArrayCodec) and not array_bytes:
            array_array.append((codec, spec))
        elif isinstance(codec, ArrayBytesCodec) and not array_bytes:
            array_bytes.append((codec, spec))
        elif isinstance(codec, BytesBytesCodec) and array_bytes:
            bytes_bytes.append((codec, spec))
        else:
            return None  # not in zarr's order: zarr-python says why
        spec = codec.resolve_metadata(spec)
    if len(array_bytes) != 1:
        return None
    return _Chain(tuple(array_array), array_bytes[0], tuple(bytes_bytes))


@record
class ShardPlan:
    """What reading a sharded array needs, worked out once per array."""

    zmap: ZMap
    prefix: str  # the array's key prefix in the map ("" or "path/")
    metadata: Any  # zarr-python's ArrayV3Metadata
    shape: tuple[int, ...]
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


def supported() -> bool:
    """Whether this zarr-python has what the reads here are built on: the chunk spec
    (``ArraySpec``, ``ArrayConfig``), the data types of zarr-python 3.1 (``UInt64`` of
    the shard index) and the codecs' synchronous decode (``SupportsSyncCodec``).
    Without them (zarr-python 3.0 has no ``zarr.core.dtype``) zarr reads every array."""
    try:
        from zarr.abc.codec import SupportsSyncCodec  # noqa: F401
        from zarr.core.array_spec import ArrayConfig, ArraySpec  # noqa: F401
        from zarr.core.dtype import UInt64  # noqa: F401
    except ImportError:
        return False
    return True


def _sharding(array: Any) -> Any:
    """The sharding codec of ``array`` when it is the only codec of a Zarr v3 array
    (its inner codecs apply to each inner chunk), else None."""
    from zarr.codecs import ShardingCodec

    metadata = array.metadata
    if metadata.zarr_format != 3 or len(metadata.codecs) != 1:
        return None
    sharding = metadata.codecs[0]
    if not isinstance(sharding, ShardingCodec):
        return None
    if any(isinstance(codec, ShardingCodec) for codec in sharding.codecs):
        return None  # nested: each inner chunk is a shard, zarr-python reads it
    return sharding


def _index_spec(per_shard: tuple[int, ...], prototype: Any) -> Any:
    """The chunk spec of a shard index (the sharding codec spec's: little-endian
    uint64 offsets and lengths, shape ``per_shard + (2,)``, all-ones filled, C order)."""
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.core.dtype import UInt64

    return ArraySpec(
        shape=(*per_shard, 2),
        dtype=UInt64(endianness="little"),
        fill_value=int(_MISSING),
        config=ArrayConfig(order="C", write_empty_chunks=False),
        prototype=prototype,
    )


def _encoded_size(codecs: Any, size: int, spec: Any) -> int:
    """The bytes ``codecs`` (fixed-size, as a shard index's are) encode ``size`` to."""
    for codec in codecs:
        codec = codec.evolve_from_array_spec(spec)
        size = codec.compute_encoded_size(size, spec)
        spec = codec.resolve_metadata(spec)
    return size


def shard_plan(array: Any, zmap: ZMap, path: str) -> ShardPlan | None:
    """The plan for reading ``array`` (a ``zarr.Array`` of a sharded Zarr v3 array at
    ``path`` of ``zmap``) in the calling thread, or None when zarr-python reads it."""
    if not supported():
        return None
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import default_buffer_prototype

    sharding = _sharding(array)
    if sharding is None or array.metadata.dtype.to_native_dtype().kind in "OTV":
        return None
    try:
        shard_shape = tuple(array.shards)  # NotImplementedError: a rectilinear grid
        inner_shape = tuple(sharding.chunk_shape)
        config = array._async_array.config
        prototype = default_buffer_prototype()
        metadata = array.metadata
        shard_spec = ArraySpec(shard_shape, metadata.dtype, metadata.fill_value, config, prototype)
        per_shard = tuple(s // c for s, c in zip(shard_shape, inner_shape, strict=True))
        index_spec = _index_spec(per_shard, prototype)
        index = _chain(sharding.index_codecs, index_spec)
        inner_spec = ArraySpec(inner_shape, metadata.dtype, metadata.fill_value, config, prototype)
        inner = _chain(sharding.codecs, inner_spec)
        index_size = _encoded_size(sharding.index_codecs, 16 * math.prod(per_shard), index_spec)
        at = sharding.index_location
    except (AttributeError, TypeError, ValueError, NotImplementedError):
        return None  # another zarr-python or grid: zarr reads it
    if index is None or inner is None or math.prod(per_shard) == 0:
        return None
    if not getattr(config, "read_missing_chunks", True):
        return None  # zarr 3.4: a shard never written is an error, zarr-python's
    return ShardPlan(
        zmap=zmap,
        prefix=f"{path.strip('/')}/" if path.strip("/") else "",
        metadata=metadata,
        shape=tuple(metadata.shape),
        shard_shape=tuple(shard_spec.shape),
        inner_shape=inner_shape,
        chunks_per_shard=per_shard,
        index_size=index_size,
        index_at_end=getattr(at, "value", at) == "end",
        index=index,
        inner=inner,
        prototype=prototype,
        order=config.order,
    )


def read_basic(plan: ShardPlan, selection: Any) -> Any:
    """``array[selection]`` for a basic ``selection`` (ints, slices, ellipsis): a
    numpy array (0-d when every dimension is an integer, as zarr-python returns it).

    Shards of which every inner chunk is asked for are read whole, :data:`BATCH` at a
    time with one ``getitems`` (concurrent requests on S3); the others by their index
    and the byte ranges of the inner chunks asked for. Raises :class:`NotBasic` for a
    selection zarr-python refuses (out of bounds, a negative step, too many indices)."""
    metadata = plan.metadata
    dims = normalize(selection, plan.shape)
    out = np.empty(out_shape(dims), dtype=metadata.dtype.to_native_dtype(), order=plan.order)
    shards = []
    for shard_coords, shard_selection, out_selection in project(dims, plan.shard_shape):
        key = plan.prefix + metadata.encode_chunk_key(shard_coords)
        parts = list(project(shard_selection, plan.inner_shape))
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
    for coords, chunk_selection, out_selection in parts:
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
            try:
                out = read_basic(self._plan, selection)
            except NotBasic:  # zarr-python raises its own error
                pass
            else:
                return out if out.shape or _orthogonal(selection) else out[()]
        return super().__getitem__(selection)


def _orthogonal(selection: Any) -> bool:
    """Whether zarr-python's ``Array.__getitem__`` takes ``selection`` for an
    orthogonal one (Python ints and slices only), whose 0-d result it returns as a 0-d
    array; any other basic selection (with an ellipsis or a numpy integer) it reads as
    a basic selection and returns a 0-d result as a numpy scalar (zarr 3.1 to 3.4)."""
    items = selection if isinstance(selection, tuple) else (selection,)
    return all(isinstance(item, int | slice) for item in items)
