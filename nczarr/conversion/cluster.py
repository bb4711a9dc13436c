"""Chunk copies of a convert spread over a dask.distributed cluster.

:func:`nczarr.convert` with ``client=`` plans on the client as usual, then hands the
chunk keys to the cluster in batches (:data:`DEFAULT_BATCH` keys per task, so the
scheduler sees hundreds of tasks for a million chunks, not a million). The two maps
travel with every task (they pickle by location and options, a few hundred bytes) and
each worker process keeps the first copy it opens for a convert, keyed by the
convert's token, so it holds one open copy and its connection pool for the whole
convert. They are not scattered: scattered data dies with the worker that holds it,
and dask cannot rerun a task whose inputs are lost. Each task copies its keys with the same
:func:`~nczarr.conversion.apply.copy_chunks` a local run uses. Sizes (for server-side
copies and resume) are listed by the client, once per directory, as it cuts the
batches, and travel with the keys: no task lists anything. The client keeps at most a few
batches per worker thread in flight, reports progress as batches finish, and writes
no metadata: the caller writes it, root last, only after every batch succeeded.

A failed batch is retried (``retries`` times, by dask, also when its worker dies);
copying a chunk twice writes the same bytes, so a retry is harmless. If the cluster
itself goes away, rerun with ``resume=True``.

Needs ``distributed`` (``pip install nczarr[dask]``); imported only when used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from itertools import islice
from typing import Any, TypeVar
from uuid import uuid4

from ..errors import InvalidModeError
from ..maps.base import ZMap
from .apply import CopyStats, SizedKey, copy_chunks, sized_keys

__all__ = ["copy_chunks_on_cluster", "check_shareable", "run_bounded", "DEFAULT_BATCH", "IN_FLIGHT"]

#: Chunk keys per cluster task: large enough that scheduling costs nothing per chunk
#: (a task costs the scheduler ~1 ms), small enough to balance over workers and
#: to lose little work when a worker dies.
DEFAULT_BATCH = 2000

#: Batches in flight per worker thread.
IN_FLIGHT = 2

#: The maps a worker process has open, by convert token (the newest few converts).
_OPEN: dict[str, tuple[ZMap, ZMap]] = {}
_OPEN_KEEP = 4


def _worker_maps(token: str, src: ZMap, dst: ZMap) -> tuple[ZMap, ZMap]:
    """The maps this worker process opened first for convert ``token``: later tasks
    of the same convert reuse them (and their connection pools)."""
    if token not in _OPEN:
        while len(_OPEN) >= _OPEN_KEEP:
            _OPEN.pop(next(iter(_OPEN)))
        _OPEN[token] = (src, dst)
    return _OPEN[token]


def check_shareable(dst: ZMap) -> None:
    """Refuse targets other processes cannot write into alongside the client."""
    if not dst.supports_shared_writes:
        raise InvalidModeError(
            f"cannot convert into {dst.url!r} on a cluster: {dst.kind} cannot be written by "
            "several processes; convert into a directory or S3, or without a client"
        )


_Item = TypeVar("_Item")


def run_bounded(
    submit: Callable[[_Item], Any], items: Iterator[_Item], in_flight: int
) -> Iterator[Any]:
    """The results of the futures ``submit(item)`` returns for each of ``items``, as
    they finish, with at most ``in_flight`` submitted and unfinished at once (the
    client holds a few batches, not all). A task's error is raised unchanged; the
    unfinished futures are then cancelled (so they are if the caller stops early)."""
    from distributed import as_completed

    done = object()
    live = {submit(item) for item in islice(items, in_flight)}
    pending = as_completed(live)
    try:
        for future in pending:
            live.discard(future)
            result = future.result()
            item = next(items, done)
            if item is not done:
                new = submit(item)  # type: ignore[arg-type]
                live.add(new)
                pending.add(new)
            yield result
    finally:
        for future in live:
            future.cancel()


def copy_batch(
    token: str,
    src: ZMap,
    dst: ZMap,
    batch: Sequence[SizedKey],
    resume: bool,
    verify: bool,
    trusted: bool,
    workers: int,
) -> tuple[int, int, int]:
    """One cluster task: copy ``batch``; return ``(copied, skipped, bytes)``.

    ``src`` and ``dst`` are replaced by the worker's copies of the maps for convert
    ``token``, shared by its tasks; the keys come with the sizes the client listed, so
    a task lists nothing.
    """
    src, dst = _worker_maps(token, src, dst)
    with ExitStack() as stack:
        if trusted:
            stack.enter_context(dst.trusted_writes())
        stats = copy_chunks(
            src, dst, (), workers=workers, resume=resume, verify=verify, sized=batch
        )
    return stats.copied, stats.skipped, stats.bytes


def copy_chunks_on_cluster(
    client: Any,
    src: ZMap,
    dst: ZMap,
    keys: Sequence[str],
    *,
    batch_size: int = DEFAULT_BATCH,
    workers: int = 8,
    resume: bool = False,
    verify: bool = False,
    trusted: bool = False,
    retries: int = 3,
    progress: Callable[[int, int], object] | None = None,
) -> CopyStats:
    """Copy ``keys`` from ``src`` to ``dst`` on the cluster ``client`` is connected to.

    Parameters
    ----------
    client
        A ``distributed.Client``.
    batch_size
        Keys per task.
    workers
        Copy threads inside each task (as in :func:`~nczarr.apply.copy_chunks`).
    resume, verify
        Skip keys ``dst`` already holds complete, by size or (``verify``) by content
        (see :func:`~nczarr.conversion.apply.copy_chunks`).
    trusted
        The keys form a valid tree into a target verified empty: each task copies in
        a :meth:`~nczarr.maps.base.ZMap.trusted_writes` block (no per-key leaf probes).
    retries
        Times dask reruns a failed batch before the convert fails.
    progress
        ``progress(done, total)`` in chunk objects, called on the client per batch.

    Raises
    ------
    InvalidModeError
        ``dst`` is a zip archive or an in-memory map, or ``batch_size < 1``.
    Exception
        The error of a batch that failed ``retries + 1`` times, unchanged; batches not
        finished yet are cancelled.
    """
    if batch_size < 1:
        raise InvalidModeError(f"batch_size must be >= 1, got {batch_size!r}")
    check_shareable(dst)
    total = len(keys)
    stats = CopyStats()
    if not total:
        return stats
    token = uuid4().hex[:12]
    threads = sum(client.nthreads().values()) or 1
    # Sizes are listed here, once per directory, as batches are cut: a task listing
    # its own directories would list a big directory once per batch.
    sized = sized_keys(src, dst, keys, resume=resume, verify=verify)
    starts = iter(range(0, total, batch_size))

    def submit(start: int) -> Any:
        batch = list(islice(sized, batch_size))
        return client.submit(
            copy_batch,
            token,
            src,
            dst,
            batch,
            resume,
            verify,
            trusted,
            workers,
            key=f"nczarr-copy-{token}-{start}",
            retries=retries,
            pure=False,
        )

    done = 0
    for copied, skipped, nbytes in run_bounded(submit, starts, threads * IN_FLIGHT):
        stats.copied += copied
        stats.skipped += skipped
        stats.bytes += nbytes
        done += copied + skipped
        if progress is not None:
            progress(done, total)
    return stats
