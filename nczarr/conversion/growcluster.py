"""A grown store on a dask cluster (:mod:`nczarr.conversion.combine` with ``client=``):
the sources' reads of the first pass (:class:`SourceReads`) and the verbatim copies,
each task copying the chunks of a run of whole sources.

**The first pass.** A combine reads every source (its listing, metadata objects and the
chunks it compares) and checks it before anything is written. On S3 that is a listing
and a dozen GETs a source, and a profile of 40 sources at 20 ms a request
(``benchmarks/combine_s3.py``) put about 5 s of a 10-13 s combine there, all of it the
client's, however many workers: the client's threads (``growsiblings._Ahead``, 8
sources ahead) spent ~2.5 s of CPU in botocore, HTTP and XML for those requests. With a
client, the reads of sources whose maps make round trips run as tasks instead
(:func:`read_sources_batch`: a run of :data:`~nczarr.conversion.growsiblings.AHEAD`
sources, read ``AHEAD`` at a time in the task's threads, each map closed after), a few
tasks per worker thread ahead of the one compared, and come back as what the client
compares: each source's listing and the bytes of the keys asked for. The client still
opens and checks each source in order (overlap, identity), compares them in order and
refuses the same way with the same messages before anything is written; only the
requests, and their CPU, move to the workers: more workers, more sources read at once
(while the client reads the first source fully, each worker opens one source map:
:meth:`SourceReads.warm`). Overlapping the copies with the pass is not done: nothing
is written before every source is checked (a refusal leaves the target untouched).

**The copies.**

A daily source holds a couple of chunks; a task per chunk batch that carried every
source (a map showing all sources' chunks under their target keys) made each task
deserialize all the sources, read each chunk's bytes and write them, and gave a
second worker little to do. Here a task carries its own sources only (each pickled
once: a directory map pickles as its path, a few hundred bytes) with their ``(source
key, target key, size)`` triples (the size an object store's listing gave in the
first pass, so a server-side copy asks none), opens each source on the worker while
its chunks are copied, closes it after, and copies the way a local combine does
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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any
from uuid import uuid4

from ..maps.base import NOT_SUPPORTED, ZMap

__all__ = [
    "TASKS_PER_THREAD",
    "SourceCopies",
    "SourceReads",
    "copy_sources_batch",
    "copy_sources_on_cluster",
    "read_sources_batch",
]

#: Tasks per worker thread when ``batch_size`` is not given: enough to balance the
#: workers, few enough that scheduling (about a millisecond a task) costs nothing.
TASKS_PER_THREAD = 4

#: One source's copies: its map pickled, and its ``(source key, target key, size)``
#: triples (the size the first pass's listing gave, else None: asked when needed).
SourceCopies = tuple[bytes, list[tuple[str, str, int | None]]]


def copy_sources_batch(
    dst: ZMap, sources: Sequence[SourceCopies], skip: str, trusted: bool = False
) -> tuple[int, ...]:
    """One cluster task: copy each source's pairs into ``dst`` (each source opened
    while its chunks are copied); ``(copied, skipped, bytes)``. ``skip``: ``"none"``, or
    a resume's ``"size"``/``"content"`` (a chunk ``dst`` holds complete is skipped).
    ``trusted``: the client vouches for the keys (a target verified empty or holding an
    earlier run of the same combine): written without leaf-rule probes, as there."""
    stats = [0, 0, 0]
    with ExitStack() as stack:
        stack.enter_context(dst.session())
        if trusted:
            stack.enter_context(dst.trusted_writes())
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
    src: ZMap, dst: ZMap, pairs: list[tuple[str, str, int | None]], skip: str
) -> tuple[int, int, int]:
    """``(copied, skipped, bytes)`` of one source's copies: overlapped when either map
    makes round trips, else the maps' own run of copies (a resume: one by one)."""
    from .copyone import copy_one

    if src.round_trips or dst.round_trips:
        return _copy_overlapped(src, dst, pairs, skip)
    if skip == "none":
        nbytes = 0
        for skey, dkey, result in dst.copy_pairs(src, [(s, d) for s, d, _ in pairs]):
            nbytes += _copied_bytes(src, dst, skey, dkey, result)
        return len(pairs), 0, nbytes
    return _tally(copy_one(src, dst, skey, dkey, skip, size) for skey, dkey, size in pairs)


#: Copies in flight at once in a task whose source or target makes round trips (S3):
#: one chunk at a time, a task would wait a round trip (or three) per chunk.
PAIRS_IN_FLIGHT = 8


def _copy_overlapped(
    src: ZMap, dst: ZMap, pairs: list[tuple[str, str, int | None]], skip: str
) -> tuple[int, int, int]:
    """``(copied, skipped, bytes)`` of :func:`~nczarr.conversion.copyone.copy_one` of
    each copy, :data:`PAIRS_IN_FLIGHT` at a time in threads."""
    from concurrent.futures import ThreadPoolExecutor

    from .copyone import copy_one

    def one(copy: tuple[str, str, int | None]) -> tuple[bool, int]:
        skey, dkey, size = copy
        return copy_one(src, dst, skey, dkey, skip, size)

    with ThreadPoolExecutor(min(PAIRS_IN_FLIGHT, len(pairs) or 1)) as pool:
        return _tally(pool.map(one, pairs))


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
            dst.trusting,  # the client's trust, as each worker's own copy of dst has none
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


#: One source's read on a worker: its listing and the keys asked for, or the error the
#: read raised (raised on the client when that source's turn comes, as a local read's).
SourceRead = tuple[list[str], dict[str, bytes]] | BaseException


def read_sources_batch(
    pickled: Sequence[bytes], wanted: Mapping[str, int | None], ahead: int
) -> list[SourceRead]:
    """One cluster task of the first pass: each source's
    :meth:`~nczarr.maps.mapcore.MapCore.list_reading` of ``wanted``, ``ahead`` sources
    at a time in threads (their requests overlap, as the client's read-ahead does),
    each map closed after; in the order given."""
    from concurrent.futures import ThreadPoolExecutor

    def read(raw: bytes) -> SourceRead:
        try:
            zmap = pickle.loads(raw)
        except Exception as exc:  # raised on the client at this source's turn
            return exc
        try:
            return zmap.list_reading(wanted)
        except Exception as exc:
            return exc
        finally:
            zmap.close()

    if ahead <= 1 or len(pickled) <= 1:
        return [read(raw) for raw in pickled]
    with ThreadPoolExecutor(min(ahead, len(pickled)), thread_name_prefix="nczarr-read") as pool:
        return list(pool.map(read, pickled))


def _opened_and_closed(pickled: bytes) -> None:
    """A map opened and closed on a worker (:meth:`SourceReads.warm`); a failure is the
    read tasks' to report."""
    try:
        pickle.loads(pickled).close()
    except Exception:  # the reads that follow raise it, at their source's turn
        return


class SourceReads:
    """The first pass's reads of a combine on the cluster ``client`` is connected to
    (see the module doc): :meth:`submit` starts one task reading a run of sources,
    :meth:`result` gives a source's read when its turn comes (a task's results are
    fetched once, when its first source is asked for), :meth:`cancel` drops the tasks
    not needed any more. :attr:`window`: the sources to pull ahead of the one compared
    (two tasks of ``ahead`` sources per worker thread: one running, one waiting)."""

    def __init__(self, client: Any, ahead: int) -> None:
        self._client = client
        self.ahead = max(ahead, 1)
        nthreads = client.nthreads()  # worker -> threads (one scheduler round trip)
        self._workers = list(nthreads)
        self.window = 2 * (sum(nthreads.values()) or 1) * self.ahead
        self._token = uuid4().hex[:12]
        self._tasks = 0
        # task number -> [future, its results (None until fetched), sources not done]
        self._live: dict[int, list[Any]] = {}
        self._warming: list[Any] = []  # held: a future let go is cancelled

    def warm(self, zmap: ZMap) -> None:
        """Have every worker open and close ``zmap`` now (a task each), without waiting: a worker's
        first S3 map builds its client and asks ``HeadBucket`` (~1 s here), which the
        first read tasks would wait for; done while the client reads the first source
        fully, it is over when they start (the client is cached per process:
        :mod:`~nczarr.maps.s3session`)."""
        pickled = pickle.dumps(zmap)
        for worker in self._workers:
            self._warming.append(
                self._client.submit(
                    _opened_and_closed,
                    pickled,
                    key=f"nczarr-warm-{self._token}-{len(self._warming)}",
                    workers=[worker],
                    allow_other_workers=False,
                    pure=False,
                )
            )

    def submit(self, maps: Sequence[ZMap], wanted: Mapping[str, int | None]) -> int:
        """Start reading ``maps`` (``wanted`` of each) in one task; its number."""
        self._tasks += 1
        future = self._client.submit(
            read_sources_batch,
            [pickle.dumps(zmap) for zmap in maps],
            dict(wanted),
            self.ahead,
            key=f"nczarr-read-{self._token}-{self._tasks}",
            retries=3,
            pure=False,
        )
        self._live[self._tasks] = [future, None, len(maps)]
        return self._tasks

    def result(self, task: int, position: int) -> tuple[list[str], dict[str, bytes]]:
        """The read of source ``position`` of task ``task`` (each asked for once)."""
        held = self._live[task]
        if held[1] is None:
            held[1] = held[0].result()
        read = held[1][position]
        self.drop(task)
        if isinstance(read, BaseException):
            raise read
        return read

    def drop(self, task: int) -> None:
        """One source of task ``task`` is done with (read, or read again with other
        keys): a task whose every source is done is let go (memory flat)."""
        held = self._live.get(task)
        if held is None:
            return
        held[2] -= 1
        if not held[2]:
            del self._live[task]  # the future let go: released (cancelled if running)

    def cancel(self) -> None:
        """Cancel the tasks whose results were not all asked for."""
        for future, *_ in self._live.values():
            future.cancel()
        self._live.clear()
        self._warming.clear()
