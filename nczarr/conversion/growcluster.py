"""A grown store's verbatim copies on a dask cluster (:mod:`nczarr.conversion.combine`
with ``client=``): each task copies the chunks of a run of whole sources.

A daily source holds a couple of chunks; a task per chunk batch that carried every
source (a map showing all sources' chunks under their target keys) made each task
deserialize all the sources, read each chunk's bytes and write them, and gave a
second worker little to do. Here a task carries its own sources only (each pickled
once: a directory map pickles as its path, a few hundred bytes) with their ``(source
key, target key)`` pairs, opens each source on the worker while its chunks are copied,
closes it after, and copies the way a local combine does
(:meth:`~nczarr.maps.base.ZMap.copy_pairs`: directory to directory, each directory
held once, one kernel copy a chunk). Sources are cut into about
:data:`TASKS_PER_THREAD` tasks per worker thread (``batch_size``: at most that many
chunks a task; a source holding more is cut), submitted a few per thread at a time
as tasks finish, so the client holds the pairs of the tasks in flight only. A failed
task is retried by dask; a copy made twice writes the same bytes.

Needs ``distributed``; imported only when used.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any
from uuid import uuid4

from ..maps.base import NOT_SUPPORTED, ZMap

__all__ = ["TASKS_PER_THREAD", "copy_sources_batch", "copy_sources_on_cluster"]

#: Tasks per worker thread when ``batch_size`` is not given: enough to balance the
#: workers, few enough that scheduling (about a millisecond a task) costs nothing.
TASKS_PER_THREAD = 4

#: One source's copies: its map pickled, and its ``(source key, target key)`` pairs.
SourceCopies = tuple[bytes, list[tuple[str, str]]]


def copy_sources_batch(dst: ZMap, sources: Sequence[SourceCopies], skip: str) -> tuple[int, ...]:
    """One cluster task: copy each source's pairs into ``dst`` (each source opened
    while its chunks are copied); ``(copied, skipped, bytes)``. ``skip``: ``"none"``, or
    a resume's ``"size"``/``"content"`` (a chunk ``dst`` holds complete is skipped)."""
    stats = [0, 0, 0]
    with ExitStack() as stack:
        stack.enter_context(dst.session())
        for pickled, pairs in sources:
            src = pickle.loads(pickled)
            try:
                with src.session():
                    for i, n in enumerate(_copy_source(src, dst, pairs, skip)):
                        stats[i] += n
            finally:
                src.close()
    return tuple(stats)


def _copy_source(
    src: ZMap, dst: ZMap, pairs: list[tuple[str, str]], skip: str
) -> tuple[int, int, int]:
    """``(copied, skipped, bytes)`` of one source's pairs: overlapped when either map
    makes round trips, else the maps' own run of copies (a resume: one by one)."""
    from .copyone import copy_one

    if src.round_trips or dst.round_trips:
        return _copy_overlapped(src, dst, pairs, skip)
    if skip == "none":
        nbytes = 0
        for skey, dkey, result in dst.copy_pairs(src, pairs):
            nbytes += _copied_bytes(src, dst, skey, dkey, result)
        return len(pairs), 0, nbytes
    return _tally(copy_one(src, dst, skey, dkey, skip) for skey, dkey in pairs)


#: Copies in flight at once in a task whose source or target makes round trips (S3):
#: one chunk at a time, a task would wait a round trip (or three) per chunk.
PAIRS_IN_FLIGHT = 8


def _copy_overlapped(
    src: ZMap, dst: ZMap, pairs: list[tuple[str, str]], skip: str
) -> tuple[int, int, int]:
    """``(copied, skipped, bytes)`` of :func:`~nczarr.conversion.copyone.copy_one` of
    each pair, :data:`PAIRS_IN_FLIGHT` at a time in threads."""
    from concurrent.futures import ThreadPoolExecutor

    from .copyone import copy_one

    with ThreadPoolExecutor(min(PAIRS_IN_FLIGHT, len(pairs) or 1)) as pool:
        return _tally(pool.map(lambda pair: copy_one(src, dst, *pair, skip), pairs))


def _tally(results: Iterable[tuple[bool, int]]) -> tuple[int, int, int]:
    """``(copied, skipped, bytes)`` of :func:`~nczarr.conversion.copyone.copy_one`'s
    ``(written, size)`` results."""
    copied = skipped = nbytes = 0
    for written, size in results:
        copied += written
        skipped += not written
        nbytes += size
    return copied, skipped, nbytes


def _copied_bytes(src: ZMap, dst: ZMap, skey: str, dkey: str, result: Any) -> int:
    """The bytes one :meth:`~nczarr.maps.base.ZMap.copy_pairs` result stands for (a
    pair it could not copy is copied here as bytes)."""
    if isinstance(result, int):
        return result
    if result is NOT_SUPPORTED:
        data = src[skey]
        dst[dkey] = data
        return len(data)
    return src.getsize(skey)


def _batches(sources: Iterable[SourceCopies], chunks: int) -> Iterator[list[SourceCopies]]:
    """Runs of sources of at least ``chunks`` chunks each (the last may hold fewer); a
    source of more chunks than that is cut into pieces of ``chunks`` (each piece opens
    it again), so no task copies more than ``chunks`` chunks plus one source's."""
    chunks = max(chunks, 1)
    batch: list[SourceCopies] = []
    count = 0
    for pickled, pairs in sources:
        for start in range(0, len(pairs), chunks):
            piece = pairs[start : start + chunks] if len(pairs) > chunks else pairs
            batch.append((pickled, piece))
            count += len(piece)
            if count >= chunks:
                yield batch
                batch, count = [], 0
    if batch:
        yield batch


def copy_sources_on_cluster(
    client: Any,
    dst: ZMap,
    sources: Iterable[SourceCopies],
    total: int,
    *,
    batch_size: int | None = None,
    skip: str = "none",
    retries: int = 3,
    progress: Callable[[int], object] | None = None,
) -> tuple[tuple[int, int, int], int]:
    """Copy every source's pairs into ``dst`` on the cluster ``client`` is connected
    to; ``total``: the chunks in all. Returns ``((copied, skipped, bytes), tasks)``.
    ``progress(done)`` is called as tasks finish.

    Raises
    ------
    InvalidModeError
        ``dst`` cannot be written by several processes (a zip archive, memory).
    Exception
        The error of a task that failed ``retries + 1`` times; tasks not finished yet
        are cancelled.
    """
    from .cluster import IN_FLIGHT, check_shareable, run_bounded

    check_shareable(dst)
    threads = sum(client.nthreads().values()) or 1
    per_task = -(-total // (threads * TASKS_PER_THREAD))
    if batch_size:
        per_task = min(per_task, batch_size)
    batches = _batches(sources, per_task)
    token = uuid4().hex[:12]
    tasks = 0

    def submit(batch: list[SourceCopies]) -> Any:
        nonlocal tasks
        tasks += 1
        return client.submit(
            copy_sources_batch,
            dst,
            batch,
            skip,
            key=f"nczarr-combine-{token}-{tasks}",
            retries=retries,
            pure=False,
        )

    stats = [0, 0, 0]
    for result in run_bounded(submit, batches, threads * IN_FLIGHT):
        for i, n in enumerate(result):
            stats[i] += n
        if progress is not None:
            progress(stats[0] + stats[1])
    return (stats[0], stats[1], stats[2]), tasks
