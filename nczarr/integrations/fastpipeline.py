"""A zarr-python codec pipeline that reads and writes Zarr v2 chunks of a map in batches.

Why
---
zarr-python 3's default pipeline (``BatchedCodecPipeline``) costs ~0.3 ms per chunk
on top of the decode itself: for every chunk of a Zarr v2 array it schedules an
asyncio task, makes one ``Store.get`` call (a thread hop in :class:`ZarrStore` for
files and S3) and two more thread hops for the compressor's and each filter's
``decode`` (``asyncio.to_thread`` in ``zarr.codecs._v2.V2Codec``; zarr-python issue
3757). With 40 KB chunks that is ten times the decode. ``codec_pipeline.batch_size``
and ``async.concurrency`` change how the tasks are grouped, not how many there are.

:class:`NCZarrCodecPipeline` keeps zarr-python's pipeline (it is a subclass, selected
through zarr's own ``codec_pipeline.path`` setting, see :func:`fast_pipeline`) and
replaces only its ``read`` and ``write`` for the common case -- a Zarr v2 array
(``V2Codec``: numcodecs compressor and filters) in a :class:`ZarrStore` -- by:

* one thread hop per selection, not three per chunk: the event loop stays free;
* one ``getitems`` call on the map for every chunk of the selection (concurrent
  requests on S3, a plain loop on files and zips), one ``setitems`` for writes;
* decoding and encoding with the array's own numcodecs objects, in batches of chunks
  spread over a small thread pool (blosc and zlib release the GIL) when a chunk's
  codec call is long enough for that to pay (:mod:`nczarr.integrations.codeccost`),
  the decoded values copied straight into the output.

Semantics are zarr-python's own (``V2Codec``): the decoded bytes are viewed as the
array's dtype (byte order kept) and reshaped in the array's order; missing chunks read
as the fill value; partial edge chunks, ``write_empty_chunks`` and the chunk
selection logic are unchanged. Everything else (Zarr v3 codecs, sharding, object
dtypes, other stores, partial chunk writes) goes through the inherited pipeline.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
from zarr.codecs._v2 import V2Codec
from zarr.core.buffer import NDBuffer, cpu
from zarr.core.codec_pipeline import BatchedCodecPipeline, fill_value_or_default
from zarr.registry import register_pipeline

from ..records import record
from .chunkcodec import SCRATCH_BYTES, Scratch, decode_v2, encode_v2, whole_chunk_block
from .codeccost import threads_pay
from .zarr_store import ZarrStore

__all__ = [
    "NCZarrCodecPipeline",
    "PIPELINE_PATH",
    "ReadJob",
    "WriteJob",
    "chunk_grid",
    "chunk_plan",
    "decode_workers",
    "fast_pipeline",
]

#: zarr's ``codec_pipeline.path`` value that selects :class:`NCZarrCodecPipeline`.
PIPELINE_PATH = "nczarr.integrations.fastpipeline.NCZarrCodecPipeline"

#: Decoded bytes below which a selection is read in one thread: the hand-off to the
#: pool costs more than it can save.
_INLINE_BYTES = 1 << 20

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def decode_workers() -> int:
    """Threads that decode and encode chunks: zarr's ``threading.max_workers``, else
    the number of CPUs (at most 8)."""
    from zarr.core.config import config

    configured = config.get("threading.max_workers")
    return int(configured) if configured else min(os.cpu_count() or 1, 8)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(decode_workers(), thread_name_prefix="nczarr-codec")
        return _pool


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: start a new pool on use."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pool)


#: Set while a :func:`fast_pipeline` block is active in this context: nested blocks
#: (one per array of an open) then cost nothing.
_fast_active: ContextVar[bool] = ContextVar("nczarr_fast_pipeline", default=False)


@contextmanager
def fast_pipeline() -> Iterator[None]:
    """Within this block, zarr arrays opened or created get :class:`NCZarrCodecPipeline`.

    An array keeps the pipeline it was opened with, so the arrays opened here stay
    fast afterwards; nothing changes for arrays opened elsewhere. A block nested in
    another (same thread or task) leaves zarr's configuration as the outer one set it.
    """
    from zarr.core.config import config

    if _fast_active.get():
        yield
        return
    token = _fast_active.set(True)
    try:
        with config.set({"codec_pipeline.path": PIPELINE_PATH}):
            yield
    finally:
        _fast_active.reset(token)


# ------------------------------------------------------------------ batches
def _batches(sizes: Sequence[int], parts: int) -> list[range]:
    """Split indices ``0..len(sizes)`` into at most ``parts`` runs of similar total size."""
    total = sum(sizes)
    if parts <= 1 or len(sizes) <= 1 or total < _INLINE_BYTES:
        return [range(len(sizes))]
    target = total / parts
    out, start, acc = [], 0, 0
    for i, size in enumerate(sizes):
        acc += size
        if acc >= target and i + 1 < len(sizes):
            out.append(range(start, i + 1))
            start, acc = i + 1, 0
    out.append(range(start, len(sizes)))
    return out


def _run(tasks: list[Callable[[], None]]) -> None:
    """Run ``tasks``: the last in this thread, the others in the codec pool."""
    if len(tasks) == 1:
        tasks[0]()
        return
    futures = [_executor().submit(t) for t in tasks[:-1]]
    try:
        tasks[-1]()
    finally:
        errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error


@record
class ReadJob:
    """Everything the worker thread needs for one selection read."""

    codec: V2Codec
    store: ZarrStore
    keys: list[str]
    info: list[tuple[Any, Any, Any, Any, bool]]
    out: NDBuffer
    drop_axes: tuple[int, ...]
    #: where the chunks are read from (same keys): the store's map, or the map a
    #: translated view passes this array's chunks through from (``chunk_map``)
    source: Any = None

    def run(self) -> None:
        """Fetch and decode in a few parts, in parallel: each part is one ``getitems``
        on the map (so file reads overlap decoding) and the decode of its chunks."""
        _run([lambda r=r: self._part(r) for r in _split(self.info, self.codec)])

    def _part(self, indices: range) -> None:
        keys, info = self.keys, self.info
        dtype = info[indices[0]][1].dtype.to_native_dtype() if len(indices) else None
        source = self.source if self.source is not None else self.store.zmap
        out = self.out.as_ndarray_like()  # a CPU buffer: plain numpy assignment
        drop_axes, codec = self.drop_axes, self.codec
        nbytes = _chunk_nbytes(info[indices[0]][1]) if len(indices) else 0
        scratch = Scratch(nbytes) if nbytes >= SCRATCH_BYTES else None
        # Large chunks from a map that reads one key after another anyway (files,
        # zips; see _sequential_reads): fetched one at a time, so each chunk's bytes are
        # freed before the next is read and the allocator reuses their pages (4 MB
        # chunks: a third to a half of the page faults). Maps making concurrent requests
        # (S3), and views over them, get the whole part in one getitems.
        one_by_one = scratch is not None and _sequential_reads(source)
        found = {} if one_by_one else source.getitems([keys[i] for i in indices])
        for i in indices:
            _, spec, chunk_selection, out_selection, complete = info[i]
            data = source.getitems([keys[i]]).get(keys[i]) if one_by_one else found.get(keys[i])
            if data is None:
                out[out_selection] = fill_value_or_default(spec)
                continue
            decoded = None
            if scratch is not None:
                target = whole_chunk_block(out, out_selection, complete, drop_axes)
                decoded = scratch.decode(codec, data, spec, dtype, target)
                if decoded is not None and decoded is target:
                    data = decoded = target = None  # freed before the next chunk is read
                    continue  # decoded straight into the output
            if decoded is None:
                decoded = decode_v2(codec, data, spec, dtype)
            tmp = decoded[chunk_selection]
            if drop_axes:
                tmp = tmp.squeeze(axis=drop_axes)
            out[out_selection] = tmp
            data = decoded = tmp = None  # freed before the next chunk is read
        if scratch is not None:  # (after an error its buffers are simply dropped)
            scratch.release()


@record
class WriteJob:
    """Complete chunks of one selection write: encode in batches, one ``setitems``."""

    pipeline: BatchedCodecPipeline
    codec: V2Codec
    store: ZarrStore
    keys: list[str]
    info: list[tuple[Any, Any, Any, Any, bool]]
    value: NDBuffer

    def run(self) -> None:
        """Encode and store in a few parts, in parallel: each part encodes its chunks
        and writes them with one ``setitems`` (memory: one part's encoded chunks)."""
        _run([lambda r=r: self._part(r) for r in _split(self.info, self.codec, encode=True)])

    def _part(self, indices: range) -> None:
        writes: dict[str, bytes] = {}
        empty: list[str] = []
        value = self.value
        # a CPU buffer's blocks are taken from its array (no NDBuffer per chunk)
        values = value.as_ndarray_like() if isinstance(value, cpu.NDBuffer) else None
        fill_spec, fill = None, None
        for i in indices:
            _, spec, chunk_selection, out_selection, complete = self.info[i]
            part: Any = None
            if value.shape:
                part = values[out_selection] if values is not None else value[out_selection]
            if part is not None and part.shape == spec.shape:
                chunk = part  # the selection is the whole chunk: no fill and copy
            else:
                # zarr-python's own merge: a fill-valued chunk with the selection
                # written into it (edge chunks, scalars)
                chunk = _merge_chunk_array(
                    self.pipeline, value, out_selection, spec, chunk_selection, complete
                )
            if isinstance(chunk, NDBuffer):
                chunk = chunk.as_ndarray_like()
            if spec is not fill_spec:  # one spec for every chunk of a Zarr v2 array
                fill_spec, fill = spec, fill_value_or_default(spec)
            if not spec.config.write_empty_chunks and _all_fill(chunk, fill, type(value)):
                empty.append(self.keys[i])  # not stored: reads back as the fill value
            else:
                writes[self.keys[i]] = encode_v2(self.codec, chunk, spec)
        zmap = self.store.zmap
        if writes:
            zmap.setitems(writes)
        for key in empty:  # as zarr does: an empty chunk deletes a stored one
            with suppress(KeyError):
                del zmap[key]


def _all_fill(chunk: Any, fill: Any, buffer: type[NDBuffer] = cpu.NDBuffer) -> bool:
    """``chunk.all_equal(fill)`` (zarr's test for an empty chunk, NaN equal to NaN,
    zeros by bit pattern; a numpy ``chunk`` is wrapped in ``buffer`` for it), answered
    from the first element when that one already differs: zarr's test broadcasts the
    fill value to the chunk's shape and compares every element, ~0.6 ms of CPU per
    40 KB chunk, which a chunk of data never needs. Numbers only; a NaN equals only a
    NaN (and two NaNs leave it to the full test)."""
    values = chunk.as_ndarray_like() if isinstance(chunk, NDBuffer) else chunk
    if fill is not None and values.size and values.dtype.kind in "biuf":
        first = values.flat[0]
        with suppress(TypeError, ValueError):
            first_nan, fill_nan = bool(first != first), bool(np.isnan(fill))
            if first_nan != fill_nan or (not first_nan and first != fill):
                return False
    if not isinstance(chunk, NDBuffer):
        chunk = buffer.from_ndarray_like(chunk)
    return chunk.all_equal(fill)


def _merge_chunk_array(pipeline: Any, value: NDBuffer, *selection: Any) -> NDBuffer:
    """zarr-python's own merge of ``value`` into a fill-valued chunk: a method of the
    pipeline up to zarr 3.1, a function of ``zarr.core.chunk_utils`` from zarr 3.2 on
    (same arguments)."""
    merge = getattr(pipeline, "_merge_chunk_array", None)
    if merge is None:
        from zarr.core.chunk_utils import _merge_chunk_array as merge
    out_selection, spec, chunk_selection, complete = selection
    return merge(None, value, out_selection, spec, chunk_selection, complete, ())


def _sequential_reads(zmap: Any) -> bool:
    """Whether ``zmap``'s ``getitems`` reads one key after another: no map it reads
    through (a view's source, and so on) awaits its storage (``async_reads``: the
    fsspec async filesystems, whose ``getitems`` makes concurrent requests)."""
    for _ in range(8):  # a view of a view ...: a short chain
        if zmap is None:
            return True
        if zmap.async_reads:
            return False
        inner = zmap.source
        if inner is zmap:
            return True
        zmap = inner
    return False


def chunk_grid(metadata: Any) -> Any:
    """The array's chunk grid: ``ChunkGrid.from_metadata`` from zarr 3.2 on (where the
    metadata attribute is deprecated), the metadata's own attribute before."""
    from zarr.core.chunk_grids import ChunkGrid

    from_metadata = getattr(ChunkGrid, "from_metadata", None)
    return metadata.chunk_grid if from_metadata is None else from_metadata(metadata)


def _chunk_nbytes(spec: Any) -> int:
    """Bytes of one decoded chunk of ``spec`` (Zarr v2: every chunk has the same)."""
    return math.prod(spec.shape) * spec.dtype.to_native_dtype().itemsize


def _split(info: Sequence[tuple[Any, ...]], codec: V2Codec, *, encode: bool = False) -> list[range]:
    """Parts of a selection's chunks (Zarr v2: all of one size) for :func:`_batches`:
    one part when a chunk's codec call is too short for threads to pay
    (:func:`~nczarr.integrations.codeccost.threads_pay`)."""
    if not info:
        return [range(0)]
    nbytes = _chunk_nbytes(info[0][1])
    parts = decode_workers() if threads_pay(codec.compressor, nbytes, encode=encode) else 1
    return _batches([nbytes] * len(info), parts)


# ------------------------------------------------------------------ the pipeline
@dataclass(frozen=True)  # zarr's dataclass extended (no field added): not a record
class NCZarrCodecPipeline(BatchedCodecPipeline):
    """zarr-python's ``BatchedCodecPipeline`` with batched reads and writes of Zarr v2
    chunks in a :class:`ZarrStore` (see the module docstring)."""

    def _v2_codec(self) -> V2Codec | None:
        codec = self.array_bytes_codec
        if self.array_array_codecs or self.bytes_bytes_codecs or not isinstance(codec, V2Codec):
            return None
        return codec

    @staticmethod
    def _store_of(info: list[tuple[Any, ...]]) -> ZarrStore | None:
        store = getattr(info[0][0], "store", None)
        if not isinstance(store, ZarrStore):
            return None
        if any(getattr(item[0], "store", None) is not store for item in info):
            return None
        return store

    def _direct(self, info: list[tuple[Any, ...]]) -> tuple[V2Codec, ZarrStore] | None:
        """The codec and store of a batch this pipeline does itself: one Zarr v2
        codec, chunks of one :class:`ZarrStore`, a dtype of fixed-size values; else
        None (zarr's own pipeline does it)."""
        codec = self._v2_codec()
        store = self._store_of(info) if info and codec is not None else None
        if codec is None or store is None or info[0][1].dtype.to_native_dtype().kind in "OTV":
            return None
        return codec, store

    async def read(
        self,
        batch_info: Iterable[tuple[Any, Any, Any, Any, bool]],
        out: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        info = list(batch_info)
        direct = self._direct(info)
        if direct is None or not isinstance(out, cpu.NDBuffer):  # decoded values: numpy
            await super().read(info, out, drop_axes)
            return
        codec, store = direct
        await store._ensure_open()
        job = ReadJob(codec, store, [item[0].path for item in info], info, out, drop_axes)
        await asyncio.to_thread(job.run)

    async def write(
        self,
        batch_info: Iterable[tuple[Any, Any, Any, Any, bool]],
        value: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        info = list(batch_info)
        direct = self._direct(info)
        # a partial chunk is a read-modify-write: zarr's own pipeline does it
        if direct is None or drop_axes or not all(item[4] for item in info):
            await super().write(info, value, drop_axes)
            return
        codec, store = direct
        await store._ensure_open()
        store._check_writable()
        job = WriteJob(self, codec, store, [item[0].path for item in info], info, value)
        await asyncio.to_thread(job.run)


register_pipeline(NCZarrCodecPipeline)


# ------------------------------------------------------------------ no event loop
def chunk_plan(
    indexer: Any, metadata: Any, prefix: str, spec: Any
) -> tuple[list[str], list[tuple[Any, Any, Any, Any, bool]]]:
    """The chunk keys and ``(None, spec, chunk selection, output selection, complete)``
    of a ``BasicIndexer``'s chunks, in its order.

    The same projections as iterating the indexer (zarr's own per-dimension
    indexers, combined in the same ``itertools.product`` order, integer dimensions
    left out of the output selection) and the same keys as the metadata's
    ``encode_chunk_key`` (Zarr v2: the chunk indexes joined by the dimension
    separator), built with a few C calls per chunk instead of four generators
    (this is every chunk read's path)."""
    import itertools

    from zarr.core.indexing import IntDimIndexer

    separator = getattr(metadata, "dimension_separator", None)
    if not indexer.dim_indexers or separator not in (".", "/"):  # 0-d, or not plain v2
        keys, info = [], []
        for coords, chunk_selection, out_selection, complete in indexer:
            keys.append(prefix + metadata.encode_chunk_key(coords))
            info.append((None, spec, chunk_selection, out_selection, complete))
        return keys, info
    dims = [
        [(str(p.dim_chunk_ix), p.dim_chunk_sel, p.dim_out_sel, p.is_complete_chunk) for p in d]
        for d in indexer.dim_indexers
    ]
    kept = [not isinstance(d, IntDimIndexer) for d in indexer.dim_indexers]
    all_kept = all(kept)
    keys, info = [], []
    for combo in itertools.product(*dims):
        names, chunk_selection, out_selection, complete = zip(*combo, strict=True)
        if not all_kept:
            out_selection = tuple(itertools.compress(out_selection, kept))
        keys.append(prefix + separator.join(names))
        info.append((None, spec, chunk_selection, out_selection, all(complete)))
    return keys, info
