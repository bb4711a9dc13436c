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

from ..maps.base import NOT_SUPPORTED, ZMap
from ..translate.grow import GrowPlan, chunk_key
from .copyone import copy_one
from .growparts import Reader, assemble

__all__ = ["execute"]


def _on_cluster(
    plan: GrowPlan,
    readers: Sequence[Reader],
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

    from .growcluster import copy_sources_on_cluster

    local: list[Any] = []
    release = getattr(readers, "release", None)

    def sources() -> Iterator[tuple[bytes, list[tuple[str, str]]]]:
        for part, group in itertools.groupby(plan.copies, key=lambda c: c.part):
            src = readers[part].part
            pairs = []
            for c in group:
                if src.copy_source(c.source_key) is src.verbatim and src.verbatim is not src.view:
                    pairs.append((c.source_key, c.target_key))
                else:
                    local.append(c)
            if pairs:
                yield pickle.dumps(src.verbatim), pairs
            if release is not None:
                release(part)

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
    readers: Sequence[Reader],
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
    may close its map: :meth:`~nczarr.conversion.growsources.Readers.release`); the
    copies of other sources (S3, zip, a translated view...) run concurrently, their
    maps kept open until they are done."""
    total = len(plan.copies) + len(plan.assembled)
    copies: Iterable[Any] = plan.copies
    remote = (0, 0, 0)
    if cluster is not None and cluster.get("client") is not None:
        remote, copies = _on_cluster(plan, readers, dst, cluster, skip, progress, total)
    keep = getattr(readers, "keep", None)
    release = getattr(readers, "release", None)
    copied = remote
    concurrent: list[Any] = []
    with ExitStack() as stack:
        stack.enter_context(dst.session())
        for part, group in itertools.groupby(copies, key=lambda c: c.part):
            src = readers[part].part
            if dst.copy_support(src.verbatim) != "local":
                if keep is not None:
                    keep(part)  # its jobs run below
                concurrent.extend(group)
                continue
            pairs = [(c.source_key, c.target_key) for c in group]
            with src.verbatim.session():  # serial kernel copies: its directories held
                done = sum(copied[:2])
                if skip == "none" and all(src.copy_source(k) is src.verbatim for k, _ in pairs):
                    stats = _copy_pairs(src.verbatim, dst, pairs, progress, done, total)
                else:
                    batch = [_copier(src, dst, k, t, skip) for k, t in pairs]
                    stats = _run(batch, workers, True, progress, done, total)
            copied = (copied[0] + stats[0], copied[1] + stats[1], copied[2] + stats[2])
            if release is not None:
                release(part)
        if concurrent:  # concurrent requests across sources
            parts = {c.part: readers[c.part].part for c in concurrent}
            for p in parts.values():
                stack.enter_context(p.verbatim.session())
            jobs = [
                _copier(parts[c.part], dst, c.source_key, c.target_key, skip) for c in concurrent
            ]
            stats = _run(jobs, workers, False, progress, sum(copied[:2]), total)
            copied = (copied[0] + stats[0], copied[1] + stats[1], copied[2] + stats[2])

    def assembler(path: str, coords: tuple[int, ...]) -> Callable[[], tuple[bool, int]]:
        def job() -> tuple[bool, int]:
            data = assemble(plan, readers, path, coords)
            key = chunk_key(plan.dataset.find_variable("/" + path), coords)
            dst[key] = data  # atomic: an old partial chunk is replaced in one step
            return True, len(data)

        return job

    jobs = [assembler(path, coords) for path, coords in plan.assembled]
    # readers may open sources: assembled one at a time when they do
    serial = getattr(readers, "opens_sources", False)
    reencoded = _run(jobs, workers, serial, progress, len(plan.copies), total)
    return copied, reencoded


def _copier(src: Any, dst: ZMap, skey: str, dkey: str, skip: str) -> Callable[[], tuple[bool, int]]:
    """A job copying ``skey`` of part ``src`` (from where it is copied) to ``dkey``."""
    source = src.copy_source(skey)
    return lambda: copy_one(source, dst, skey, dkey, skip)
