"""Applying a plan: copy chunk objects concurrently, then write metadata in order.

Chunk objects are copied as bytes, never decoded. Copies run on ``workers``
threads that each hold one chunk at a time, so memory holds at most ``workers``
chunks whatever the dataset size. Between two local directories each chunk is
copied file to file by the kernel (``FileMap.copy_file``): a new chunk file is
created in place rather than renamed into place, so a killed copy can leave a short
chunk, which ``resume`` recopies because its size differs from the source's; no
metadata is written until every chunk is copied. When both maps live on the same
S3 service the copy is server-side (``dst.copy_from(src, key, key, size)``): no chunk byte
passes through this process, and the sizes come from one listing per directory of the source
(``src.list_sizes``), so a chunk costs one CopyObject and no HEAD. ``resume`` compares
sizes from one listing per directory of each side likewise, not a HEAD per chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from ..maps.base import NOT_SUPPORTED, ZMap
from ..records import record
from .copyone import directory_sizes
from .localcopy import copy_local

__all__ = [
    "CopyStats",
    "SizedKey",
    "copy_chunks",
    "delete_keys",
    "server_side",
    "sized_keys",
    "write_metadata",
]

#: ``progress(done, total)``: objects handled so far and in all.
Progress = Callable[[int, int], object]


@record(frozen=False)
class CopyStats:
    """What :func:`copy_chunks` did."""

    copied: int = 0
    skipped: int = 0
    bytes: int = 0

    def add(self, copied: int, skipped: int, nbytes: int) -> None:
        """Count keys copied (``nbytes`` bytes in all) and skipped."""
        self.copied, self.skipped, self.bytes = (
            self.copied + copied,
            self.skipped + skipped,
            self.bytes + nbytes,
        )


def server_side(src: ZMap, dst: ZMap) -> bool:
    """Whether ``dst`` can copy objects of ``src`` without downloading them."""
    return dst.copy_support(src) == "server"


#: ``(key, size in the source, size in the target)``; ``None``: not known (or absent).
SizedKey = tuple[str, int | None, int | None]


def sized_keys(
    src: ZMap, dst: ZMap, keys: Iterable[str], *, resume: bool = False, verify: bool = False
) -> Iterator[SizedKey]:
    """``keys`` with the sizes :func:`copy_chunks` needs, lazily, from listings.

    Sizes are listed only where they save a request per key: both sides when resuming
    by size, the source for a server-side copy (its CopyObject needs no HEAD then).
    """
    if resume and not verify:
        return ((k, s, d) for k, (s, d) in _with_sizes((src, dst), keys))
    if server_side(src, dst):
        return ((k, s, None) for k, (s,) in _with_sizes((src,), keys))
    return ((k, None, None) for k in keys)


def copy_chunks(
    src: ZMap,
    dst: ZMap,
    keys: Sequence[str],
    *,
    workers: int = 8,
    resume: bool = False,
    verify: bool = False,
    progress: Progress | None = None,
    sized: Sequence[SizedKey] | None = None,
) -> CopyStats:
    """Copy ``keys`` from ``src`` to ``dst`` unchanged (same key on both sides).

    Parameters
    ----------
    workers
        Threads copying at once; each holds at most one chunk, so at most
        ``workers`` chunks are in memory. ``1`` copies in the calling thread. A
        copy between two local directories is the kernel's, in the calling thread
        while chunks are small and in at most one thread a core once they prove
        large (:mod:`nczarr.conversion.localcopy`). The source says
        how many threads pay for its copies into ``dst`` (``ZMap.copy_threads``): a
        local ``.nc`` file's copy into a directory (byte ranges the kernel copies)
        runs in this thread for small chunks, at most one thread a core for large.
    resume
        Skip keys ``dst`` already holds with the size they have in ``src`` (what an
        interrupted run left complete). Sound only for objects the same convert
        wrote: :mod:`nczarr.conversion.journal` decides.
    verify
        With ``resume``: skip a key only if ``dst`` holds exactly ``src``'s bytes
        (a content check, for targets without a journal).
    progress
        Called from the calling thread as ``progress(done, total)`` after each key
        (after each batch of keys where threads copy between two directories).
    sized
        The keys already with their sizes (:func:`sized_keys`, e.g. listed by a
        cluster's client for a batch); then ``keys`` is ignored.

    The first failure stops the copies not yet started and is raised unchanged.

    Workers pull keys from one shared iterator and hand ``(copied, skipped, bytes)``
    back through a queue, per key only when ``progress`` follows each, else once when
    done: at most one lock and one queue hop a key, where a pool with futures and
    ``wait()`` costs several locks, a future and a waiter per key (measured: ~0.5 ms
    per key of main-thread time under load, more than a small chunk's copy).
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    with src.session(), dst.session():  # e.g. directories verified once, held open
        return _copy_chunks(src, dst, keys, workers, resume, verify, progress, sized)


def _copy_chunks(
    src: ZMap,
    dst: ZMap,
    keys: Sequence[str],
    workers: int,
    resume: bool,
    verify: bool,
    progress: Progress | None,
    sized: Sequence[SizedKey] | None,
) -> CopyStats:
    copy, local = _copier(src, dst, resume, verify)
    if local and not resume:  # directory to directory: the map's batch of kernel copies
        plain = keys if sized is None else (key for key, _, _ in sized)
        # the number of keys only for a progress report (a lazy plan lists them anew)
        count = 0 if progress is None else len(sized) if sized is not None else len(keys)
        copied, skipped, nbytes = copy_local(src, dst, plain, copy, progress, count, workers)
        return CopyStats(copied, skipped, nbytes)
    pool_size = 1 if local else src.copy_threads(dst, workers)
    # a lazy plan lists its keys anew to count them: only for progress or threads
    counted = progress is not None or pool_size > 1
    total = (len(sized) if sized is not None else len(keys)) if counted else 0
    stats = CopyStats()
    items: Iterator[SizedKey] = (
        iter(sized)
        if sized is not None
        else sized_keys(src, dst, keys, resume=resume, verify=verify)
    )

    if pool_size == 1 or total <= 1:
        for done, item in enumerate(items, 1):
            copied, nbytes = copy(*item)
            stats.add(int(copied), int(not copied), nbytes if copied else 0)
            if progress is not None:
                progress(done, total)
        return stats
    return _copy_in_threads(items, copy, min(pool_size, total), total, progress, stats)


def _copy_in_threads(
    items: Iterator[SizedKey],
    copy: Callable[[str, int | None, int | None], tuple[bool, int]],
    threads_wanted: int,
    total: int,
    progress: Progress | None,
    stats: CopyStats,
) -> CopyStats:
    """:func:`copy_chunks`' copy of ``total`` keys in ``threads_wanted`` threads."""
    # imported here: a copy between two directories (the command's usual case) runs in
    # this thread and does not load them
    import queue
    import threading

    results: queue.SimpleQueue[tuple[int, int, int] | BaseException | None] = queue.SimpleQueue()
    feed_lock = threading.Lock()
    stop = threading.Event()

    def work() -> None:
        """Copy keys until none is left; hand back ``(copied, skipped, bytes)`` per key
        when a progress callback follows each, else their sum, then ``None``: done (the
        calling thread sleeps through the copy instead of waking for every key)."""
        copied_n = skipped_n = nbytes_n = 0
        while not stop.is_set():
            try:
                with feed_lock:  # the feed may list directories lazily: it may fail too
                    item = next(items, None)
                if item is None:
                    break
                copied, nbytes = copy(*item)
            except BaseException as exc:  # handed to the calling thread, raised there
                stop.set()
                results.put(exc)
                return
            if progress is not None:
                results.put((int(copied), int(not copied), nbytes if copied else 0))
            elif copied:
                copied_n, nbytes_n = copied_n + 1, nbytes_n + nbytes
            else:
                skipped_n += 1
        if progress is None:
            results.put((copied_n, skipped_n, nbytes_n))  # every thread's, even (0, 0, 0)
        results.put(None)

    threads = [
        threading.Thread(target=work, name=f"nczarr-copy-{i}", daemon=True)
        for i in range(threads_wanted)
    ]
    for thread in threads:
        thread.start()
    try:
        done = finished = 0
        while finished < len(threads):
            result = results.get()
            if isinstance(result, BaseException):
                raise result
            if result is None:
                finished += 1
                continue
            stats.add(*result)
            done += result[0] + result[1]
            if progress is not None:
                progress(done, total)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    return stats


def _with_sizes(
    maps: Sequence[ZMap], keys: Iterable[str]
) -> Iterator[tuple[str, tuple[int | None, ...]]]:
    """``(key, (size in each of maps))`` for ``keys``, sizes from one ``list_sizes`` of
    each map per directory (one listing instead of a HEAD per key on remote maps).

    Keys come grouped by directory (a plan lists them array by array), so only the
    current directory's sizes are held; a key missing from a listing gets ``None``.
    """
    current: str | None = None
    listed: list[dict[str, int]] = []
    for key in keys:
        parent = key.rpartition("/")[0]
        if parent != current:
            current = parent
            listed = [directory_sizes(m, parent) for m in maps]
        yield key, tuple(sizes.get(key) for sizes in listed)


def _copier(
    src: ZMap, dst: ZMap, resume: bool, verify: bool = False
) -> tuple[Callable[[str, int | None, int | None], tuple[bool, int]], bool]:
    """The per-key copy ``(key, source size, target size) -> (copied, bytes copied)``
    (sizes from listings, ``None`` if unknown or absent), and whether it is a local
    file-to-file copy (:mod:`nczarr.conversion.localcopy` runs those)."""
    support = dst.copy_support(src)
    local = support == "local"

    def one(key: str, size: int | None, held: int | None) -> tuple[bool, int]:
        if resume and verify:
            try:
                if dst[key] == src[key]:
                    return False, 0
            except KeyError:
                pass
        elif resume and held is not None:  # the target listed it: compare sizes
            if size is None:
                size = src.getsize(key)  # not in the source's listing: ask (KeyError if gone)
            if held == size:
                return False, 0
        if support is not None:
            result = dst.copy_from(src, key, key, size, atomic=False)
            if isinstance(result, int):
                return True, result
            if result is not NOT_SUPPORTED:
                return True, size if size is not None else src.getsize(key)
        copied = src.copy_chunk_to(dst, key)  # e.g. byte ranges of a netCDF file
        if copied is not NOT_SUPPORTED:
            return True, copied
        data = src[key]
        dst[key] = data
        return True, len(data)

    return one, local


def write_metadata(
    dst: ZMap,
    items: Iterable[tuple[str, bytes]],
    *,
    skip_equal: bool = False,
    progress: Callable[[], object] | None = None,
) -> list[str]:
    """Write metadata objects one by one, in the given order; return the keys written.

    With ``skip_equal`` an object already holding exactly these bytes is left
    alone (so a rerun of ``migrate`` changes nothing).
    """
    written = []
    for key, value in items:
        if skip_equal:
            try:
                if dst[key] == value:
                    continue
            except KeyError:
                pass
        dst[key] = value
        written.append(key)
        if progress is not None:
            progress()
    return written


def delete_keys(
    dst: ZMap, keys: Iterable[str], *, progress: Callable[[], object] | None = None
) -> list[str]:
    """Delete ``keys`` that still exist, in order; return those deleted."""
    deleted = []
    for key in keys:
        try:
            del dst[key]
        except KeyError:
            continue
        deleted.append(key)
        if progress is not None:
            progress()
    return deleted
