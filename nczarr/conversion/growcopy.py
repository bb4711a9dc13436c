"""Writing the chunks of a grown store (:mod:`nczarr.conversion.combine`): verbatim
copies under shifted keys (kernel, server-side or byte copies; on a dask cluster runs of
whole sources per task, :mod:`nczarr.conversion.growcluster`), then the assembled
chunks.

``pickle`` and ``concurrent.futures`` (which imports ``logging``: ~20 ms of a command's
start) are imported only by what uses them: a cluster's map, concurrent jobs."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..maps import kernelcopy
from ..maps.base import NOT_SUPPORTED, ZMap
from ..translate.grow import GrowPlan, chunk_key
from .copyone import copy_one, directory_sizes
from .growparts import Part, assemble
from .growsources import Readers

__all__ = ["execute"]


def _on_cluster(
    plan: GrowPlan,
    readers: Readers,
    dst: ZMap,
    cluster: Mapping[str, Any],
    skip: str,
    progress: Callable[[int, int], object] | None,
    total: int,
) -> tuple[tuple[int, int, int], list[Any]]:
    """Copy the plan's verbatim chunks of plain sources on a dask cluster, runs of
    whole sources per task (:mod:`nczarr.conversion.growcluster`); return the stats
    and the copies left for this process (chunks a translated view serves). Each
    source is pickled as its task is cut (a combine's sources need not stay open
    here)."""
    import pickle

    from .growcluster import SourceCopies, copy_sources_on_cluster

    local: list[Any] = []

    def sources() -> Iterator[SourceCopies]:
        for part, group in itertools.groupby(plan.copies, key=lambda c: c.part):
            src = readers[part].part
            # from the first pass's listing; past SIZES_KEPT a worker asks each size (a
            # listing a variable here would be one round trip after another, per source)
            sizes = src.sizes or {}
            pairs = []
            for c in group:
                if src.copy_source(c.source_key) is src.verbatim and src.verbatim is not src.view:
                    pairs.append((c.source_key, c.target_key, sizes.get(c.source_key)))
                else:
                    local.append(c)
            if pairs:
                yield pickle.dumps(src.verbatim), pairs
            readers.release(part)

    stats, _ = copy_sources_on_cluster(
        cluster["client"],
        dst,
        sources(),
        len(plan.copies),
        batch_size=cluster.get("batch_size"),
        skip=skip,
        progress=None if progress is None else lambda done: progress(done, total),
    )
    return stats, local


def _copy_pairs(
    src: ZMap,
    dst: ZMap,
    pairs: Sequence[tuple[str, str]],
    progress: Callable[[int, int], object] | None,
    done: int,
    total: int,
) -> tuple[int, int, int]:
    """Copy one source's ``(source key, target key)`` pairs through
    :meth:`~nczarr.maps.base.ZMap.copy_pairs` (each directory opened and verified
    once, every copy ``cp``'s system calls); (written, 0, bytes)."""
    nbytes = 0
    for skey, dkey, result in dst.copy_pairs(src, pairs):
        if isinstance(result, int):
            nbytes += result
        elif result is NOT_SUPPORTED:
            data = src[skey]
            dst[dkey] = data
            nbytes += len(data)
        else:
            nbytes += src.getsize(skey)
        done += 1
        if progress is not None:
            progress(done, total)
    return len(pairs), 0, nbytes


def _run(
    jobs: Sequence[Callable[[], tuple[bool, int]]],
    workers: int,
    serial: bool,
    progress: Callable[[int, int], object] | None,
    done: int,
    total: int,
) -> tuple[int, int, int]:
    """Run ``jobs`` (at most ``workers`` at once); return (written, skipped, bytes)."""
    written = skipped = nbytes = 0

    def record(result: tuple[bool, int]) -> None:
        nonlocal written, skipped, nbytes, done
        if result[0]:
            written += 1
            nbytes += result[1]
        else:
            skipped += 1
        done += 1
        if progress is not None:
            progress(done, total)

    if serial or workers == 1 or len(jobs) <= 1:
        for job in jobs:
            record(job())
        return written, skipped, nbytes
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nczarr-grow") as pool:
        for result in pool.map(lambda job: job(), jobs):
            record(result)
    return written, skipped, nbytes


def execute(
    plan: GrowPlan,
    readers: Readers,
    dst: ZMap,
    *,
    workers: int,
    skip: str,
    progress: Callable[[int, int], object] | None,
    cluster: Mapping[str, Any] | None = None,
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Copy and assemble the plan's chunks into ``dst``; (copied, reencoded) stats.
    With ``cluster`` (``client``, ``batch_size``) the verbatim copies run on dask.

    A source whose chunks ``dst`` copies locally (directory to directory) is copied in
    one serial batch, its directories held meanwhile, and then released (``readers``
    may close its map: :meth:`~nczarr.conversion.growsources.Readers.release`); once
    such copies average :data:`~nczarr.maps.kernelcopy.THREADED_COPY_BYTES` a chunk,
    the next sources' batches run in threads, at most one a core
    (:meth:`_Window.add_kernel_copies`). The copies of other sources (S3, zip, a
    translated view...) run concurrently, a few sources at a time (:class:`_Window`):
    on every target kind a combine holds a bounded number of source maps open, not
    all of them."""
    total = len(plan.copies) + len(plan.assembled)
    copies: Iterable[Any] = plan.copies
    remote = (0, 0, 0)
    if cluster is not None and cluster.get("client") is not None:
        remote, copies = _on_cluster(plan, readers, dst, cluster, skip, progress, total)
    with ExitStack() as stack:
        stack.enter_context(dst.session())
        window = stack.enter_context(_Window(readers, dst, workers, skip, progress, total))
        window.stats = remote
        for part, group in itertools.groupby(copies, key=lambda c: c.part):
            src = readers[part].part
            if dst.copy_support(src.verbatim) != "local":
                window.add(part, src, group)  # concurrent requests, a few sources at once
                continue
            pairs = [(c.source_key, c.target_key) for c in group]
            plain = skip == "none" and all(src.copy_source(k) is src.verbatim for k, _ in pairs)
            if plain and window.large_kernel_copies:
                window.add_kernel_copies(part, src.verbatim, pairs)  # in threads
                continue
            window.drain()  # progress counts in order
            copied = window.stats
            with src.verbatim.session():  # serial kernel copies: its directories held
                done = sum(copied[:2])
                if plain:
                    stats = _copy_pairs(src.verbatim, dst, pairs, progress, done, total)
                    window.kernel_copied(stats)
                else:
                    batch = [_copier(src, dst, k, t, skip) for k, t in pairs]
                    stats = _run(batch, workers, True, progress, done, total)
            window.stats = (copied[0] + stats[0], copied[1] + stats[1], copied[2] + stats[2])
            readers.release(part)
        window.drain()
        copied = window.stats

    def assembler(path: str, coords: tuple[int, ...]) -> Callable[[], tuple[bool, int]]:
        def job() -> tuple[bool, int]:
            data = assemble(plan, readers, path, coords)
            key = chunk_key(plan.dataset.find_variable("/" + path), coords)
            dst[key] = data  # atomic: an old partial chunk is replaced in one step
            return True, len(data)

        return job

    jobs = [assembler(path, coords) for path, coords in plan.assembled]
    # readers may open sources: assembled one at a time when they do
    serial = readers.opens_sources
    reencoded = _run(jobs, workers, serial, progress, len(plan.copies), total)
    return copied, reencoded


class _HeldSizes:
    """The sizes of what a resumed target holds, one listing per directory (the first
    time a copy into it is planned) instead of a ``HeadObject`` per target chunk on S3.
    Holds the listed directories' sizes until the combine ends: a resume's cost."""

    def __init__(self, dst: ZMap) -> None:
        self._dst = dst
        self._listed: dict[str, dict[str, int]] = {}

    def sizes(self, keys: Iterable[str]) -> dict[str, int]:
        """The held size of each of ``keys`` the target holds."""
        out = {}
        for key in keys:
            parent = key.rpartition("/")[0]
            listed = self._listed.get(parent)
            if listed is None:
                listed = self._listed[parent] = directory_sizes(self._dst, parent)
            if key in listed:
                out[key] = listed[key]
        return out


def _copier(
    src: Any,
    dst: ZMap,
    skey: str,
    dkey: str,
    skip: str,
    size: int | None = None,
    held: int | None = None,
) -> Callable[[], tuple[bool, int]]:
    """A job copying ``skey`` of part ``src`` (from where it is copied) to ``dkey``;
    ``size``: the source's, from a listing, if known; ``held``: as :func:`copy_one`."""
    source = src.copy_source(skey)
    return lambda: copy_one(source, dst, skey, dkey, skip, size, held)


def _listed_sizes(src: Part, dst: ZMap, copies: Iterable[Any]) -> Mapping[str, int]:
    """The sizes of ``copies``' source chunks known without a request each
    (:meth:`~.growparts.Part.known_sizes`): those the source's listing gave, and when
    ``dst`` copies them server-side (a copy given the size is one ``CopyObject``;
    without it a ``HeadObject`` first) those one listing a variable gives."""
    verbatim = src.verbatim
    if src.sizes is None and dst.copy_support(verbatim) != "server":
        return {}  # a listing pays for server-side copies only
    return src.known_sizes(
        {c.source_key for c in copies if src.copy_source(c.source_key) is verbatim}
    )


#: Sources whose copies are in flight at once when ``dst`` does not copy them locally
#: (zip or S3 targets, zip or S3 sources...): each holds its open map (a zip's central
#: directory and file, an S3 client), so a few, not all of them.
WINDOW = 6


class _Window:
    """Concurrent copies of a few sources at a time (memory and open files bounded in
    the number of sources, on every target kind). A source's jobs are submitted when it
    is added (its map kept open, its session entered); the oldest source is waited for
    (its results counted in order, its session left, its map closed) while more than
    :data:`WINDOW` sources are in flight, or while the sources before the newest hold
    ``2 * workers`` jobs or more: the pool works on those while the next source is
    opened. A failure cancels the jobs not started."""

    def __init__(
        self,
        readers: Readers,
        dst: ZMap,
        workers: int,
        skip: str,
        progress: Callable[[int, int], object] | None,
        total: int,
    ) -> None:
        from collections import deque

        self.stats = (0, 0, 0)  # written, skipped, bytes (with what was counted before)
        self._readers = readers
        self._dst = dst
        self._workers = workers
        self._skip = skip
        self._progress = progress
        self._total = total
        # (part, its open session, its futures, whether one future copies a batch)
        self._flight: deque[tuple[int, ExitStack, list[Any], bool]] = deque()
        self._jobs = 0
        self._pool: Any = None
        self._held = _HeldSizes(dst)
        self._kernel_threads = kernelcopy.copy_threads(workers)
        self._kernel_pool: Any = None
        self._kernel_seen = (0, 0)  # chunks, bytes of the last serial kernel copies

    def __enter__(self) -> _Window:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            for pool in (self._pool, self._kernel_pool):
                if pool is not None:
                    pool.shutdown(wait=True, cancel_futures=True)
        finally:
            while self._flight:  # after a failure: nothing runs any more
                self._flight.popleft()[1].close()

    def add(self, part: int, src: Any, group: Iterable[Any]) -> None:
        """Start copying ``group`` (copies of part ``part``, read from ``src``)."""
        self._readers.keep(part)  # not closed by another reader's release while its jobs run
        with ExitStack() as opened:
            stack = opened.enter_context(ExitStack())  # closed here only if this raises
            stack.enter_context(src.verbatim.session())
            copies = list(group)
            sizes = _listed_sizes(src, self._dst, copies)
            dst, skip = self._dst, self._skip
            held: Mapping[str, int] = {}
            if skip == "size" and dst.round_trips:  # a resume: the target's sizes listed
                held, skip = self._held.sizes(c.target_key for c in copies), "listed"
            jobs = [
                _copier(
                    src,
                    dst,
                    c.source_key,
                    c.target_key,
                    skip,
                    sizes.get(c.source_key),
                    held.get(c.target_key),
                )
                for c in copies
            ]
            opened.pop_all()
        if self._workers <= 1:
            with stack:
                for job in jobs:
                    self._record(job())
            self._readers.finish(part)
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="nczarr-grow")
        futures = [self._pool.submit(job) for job in jobs]
        self._flight.append((part, stack, futures, False))
        self._jobs += len(futures)
        while len(self._flight) > 1 and (
            len(self._flight) > WINDOW or self._jobs - len(futures) >= 2 * self._workers
        ):
            self._retire()

    @property
    def large_kernel_copies(self) -> bool:
        """Whether the last serial batch of kernel copies (:meth:`kernel_copied`)
        averaged :data:`~nczarr.maps.kernelcopy.THREADED_COPY_BYTES` a chunk, and more
        than one thread may copy: then a local source's batch pays in a thread."""
        return kernelcopy.threads_for(*self._kernel_seen, self._workers) > 1

    def kernel_copied(self, stats: tuple[int, int, int]) -> None:
        """Note a serial batch of kernel copies (``_copy_pairs``' stats): the last
        batch decides, so a first source's small coordinate chunks do not decide for
        the large ones of the sources after it."""
        self._kernel_seen = (stats[0], stats[2])

    def add_kernel_copies(self, part: int, src: ZMap, pairs: Sequence[tuple[str, str]]) -> None:
        """Copy a local source's ``pairs`` in a thread of their own (``_copy_pairs``
        over the source's session, entered there): the copies' kernel time overlaps
        the next source's in another thread. Counted, in order, when retired."""
        self._readers.keep(part)  # not closed by another reader's release meanwhile
        dst = self._dst

        def job() -> tuple[int, int, int]:
            with src.session():  # its directories held for its batch
                return _copy_pairs(src, dst, pairs, None, 0, 0)

        if self._kernel_pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._kernel_pool = ThreadPoolExecutor(
                self._kernel_threads, thread_name_prefix="nczarr-kernel"
            )
        self._flight.append((part, ExitStack(), [self._kernel_pool.submit(job)], True))
        self._jobs += 1
        while len(self._flight) > min(WINDOW, 2 * self._kernel_threads):
            self._retire()

    def drain(self) -> None:
        """Wait for every source in flight."""
        while self._flight:
            self._retire()

    def _retire(self) -> None:
        """Wait for the oldest source's jobs, count them, close its session and map (on
        a failure it stays in flight: :meth:`__exit__` closes it once nothing runs)."""
        part, stack, futures, batch = self._flight[0]
        if batch:
            written, skipped, nbytes = futures[0].result()
            before = self.stats
            self.stats = (before[0] + written, before[1] + skipped, before[2] + nbytes)
            if self._progress is not None:
                self._progress(self.stats[0] + self.stats[1], self._total)
        else:
            for future in futures:
                self._record(future.result())
        self._flight.popleft()
        self._jobs -= len(futures)
        stack.close()
        self._readers.finish(part)

    def _record(self, result: tuple[bool, int]) -> None:
        written, skipped, nbytes = self.stats
        if result[0]:
            written, nbytes = written + 1, nbytes + result[1]
        else:
            skipped += 1
        self.stats = (written, skipped, nbytes)
        if self._progress is not None:
            self._progress(written + skipped, self._total)
