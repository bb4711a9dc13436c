"""Chunk copies between two local directories (:func:`copy_local`): the kernel's
copies in batches (``dst.copy_many``), in the calling thread while chunks are small,
in threads, at most one a core, once they prove large.

Why both: a small chunk's copy costs less than the interpreter's work around it, so
threads only hand the interpreter's lock back and forth (20,000 chunks of 22 KB on
tmpfs: 4 threads 1.7-3.4x slower than 1); a large chunk's kernel copy runs with the
lock released and overlaps another's (365 chunks of 2.4 MB on 2 cores: half the wall
time; docs/performance.md). The keys come lazily from a plan, so their sizes are
learnt from the copies, :data:`PROBE` keys at a time, rather than asked first."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..maps import kernelcopy
from ..maps.base import NOT_SUPPORTED, ZMap

__all__ = ["BATCH", "PROBE", "copy_local"]

#: Keys copied in the calling thread at a time, whose sizes decide on threads.
PROBE = 16
#: Keys a thread copies in one go once threads pay (one hand-over per batch).
BATCH = 8

Copier = Callable[[str, int | None, int | None], tuple[bool, int]]
Progress = Callable[[int, int], object]
#: (copied, skipped, bytes)
Counts = tuple[int, int, int]


def copy_local(
    src: ZMap,
    dst: ZMap,
    keys: Iterable[str],
    copy: Copier,
    progress: Progress | None,
    total: int,
    workers: int,
) -> Counts:
    """Copy ``keys`` from the directory ``src`` to the directory ``dst``; ``copy`` is
    the checked copy of one key for what the batch cannot copy plainly. Progress is
    reported from the calling thread, in order: after each key, or after each batch
    of keys once threads copy them.

    Keys are copied here :data:`PROBE` at a time until a run of them averages
    :data:`~nczarr.maps.kernelcopy.THREADED_COPY_BYTES` (small coordinate arrays
    listed before large data ones do not decide for them); from then on, in threads.
    The threads are stopped and joined before this returns or raises, whatever
    raises (a progress callback, an interrupt): none writes after it."""
    feed = iter(keys)
    threads = 1

    def serial_keys() -> Iterator[str]:  # the feed, until the copies prove large
        while threads == 1 and (key := next(feed, None)) is not None:
            yield key

    # one batch of the directory map's copies while serial (its held directories looked
    # up once per directory), run to its end: a key it took is copied, never dropped.
    # Plain integers: this loop is the copy floor's per-key cost (docs/performance.md).
    copied = skipped = nbytes = run_copied = run_bytes = 0
    for was_copied, was_skipped, n in _each(src, dst, serial_keys(), copy):
        copied, skipped, nbytes = copied + was_copied, skipped + was_skipped, nbytes + n
        done = copied + skipped
        if progress is not None:
            progress(done, total)
        if done % PROBE == 0:
            threads = kernelcopy.threads_for(copied - run_copied, nbytes - run_bytes, workers)
            run_copied, run_bytes = copied, nbytes
    counts = (copied, skipped, nbytes)
    if threads == 1:
        return counts
    batches = iter(lambda: list(itertools.islice(feed, BATCH)), [])
    with contextlib.closing(_in_threads(src, dst, batches, copy, threads)) as results:
        for more in results:
            counts = _add(counts, more)
            if progress is not None:
                progress(counts[0] + counts[1], total)
    return counts


def _add(a: Counts, b: Counts) -> Counts:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _each(src: ZMap, dst: ZMap, keys: Iterable[str], copy: Copier) -> Iterator[Counts]:
    """``dst.copy_many``'s kernel copies of ``keys``, the counts of each key in turn
    (its per-key work is the copy floor's, docs/performance.md)."""
    for key, result in dst.copy_many(src, keys):
        if isinstance(result, int):
            yield 1, 0, result
        elif result is NOT_SUPPORTED:
            was_copied, n = copy(key, None, None)
            yield int(was_copied), int(not was_copied), n
        else:  # copied, size not known
            yield 1, 0, src.getsize(key)


def _copy_batch(src: ZMap, dst: ZMap, keys: list[str], copy: Copier) -> Counts:
    """:func:`_each` of a batch, summed (what a thread runs)."""
    counts = (0, 0, 0)
    for more in _each(src, dst, keys, copy):
        counts = _add(counts, more)
    return counts


def _in_threads(
    src: ZMap, dst: ZMap, batches: Iterator[list[str]], copy: Copier, threads: int
) -> Iterator[Counts]:
    """:func:`_copy_batch` of each batch on ``threads`` threads, at most ``2 *
    threads`` batches in flight; their counts in order. The first failure is raised
    here once the batches started are over; none is started after it."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    flight: deque[Any] = deque()
    with ThreadPoolExecutor(threads, thread_name_prefix="nczarr-kernel") as pool:
        try:
            for batch in batches:
                flight.append(pool.submit(_copy_batch, src, dst, batch, copy))
                if len(flight) >= 2 * threads:
                    yield flight.popleft().result()
            while flight:
                yield flight.popleft().result()
        finally:
            for future in flight:
                future.cancel()
