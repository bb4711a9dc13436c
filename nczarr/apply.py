"""Applying a plan: copy chunk objects concurrently, then write metadata in order.

Chunk objects are copied as bytes, never decoded. Copies run on a bounded thread
pool with a bounded in-flight window, so memory holds at most ``2 * workers``
chunks whatever the dataset size. When both maps live on the same S3 service the
copy is server-side (``dst.copy_from(src, key, key)``): no chunk byte passes
through this process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from .maps.base import ZMap

__all__ = ["CopyStats", "copy_chunks", "write_metadata", "delete_keys", "server_side"]

#: ``progress(done, total)``: objects handled so far and in all.
Progress = Callable[[int, int], object]


@dataclass
class CopyStats:
    """What :func:`copy_chunks` did."""

    copied: int = 0
    skipped: int = 0
    bytes: int = 0


def server_side(src: ZMap, dst: ZMap) -> bool:
    """Whether ``dst`` can copy objects of ``src`` without downloading them."""
    same = getattr(dst, "same_service", None)
    if same is None or not hasattr(dst, "copy_from"):
        return False
    try:
        return bool(same(src))
    except TypeError:
        return False


def copy_chunks(
    src: ZMap,
    dst: ZMap,
    keys: Sequence[str],
    *,
    workers: int = 8,
    resume: bool = False,
    progress: Progress | None = None,
) -> CopyStats:
    """Copy ``keys`` from ``src`` to ``dst`` unchanged (same key on both sides).

    Parameters
    ----------
    workers
        Threads copying at once; at most ``2 * workers`` copies are in flight.
    resume
        Skip keys ``dst`` already holds with the size they have in ``src`` (what an
        interrupted run left complete).
    progress
        Called from the calling thread as ``progress(done, total)`` after each key.

    The first failure cancels the copies not yet started and is raised unchanged.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    remote = server_side(src, dst)
    stats = CopyStats()
    total = len(keys)
    done = 0

    def one(key: str) -> tuple[bool, int]:
        size: int | None = None
        if resume:
            size = src.getsize(key)
            try:
                if dst.getsize(key) == size:
                    return False, 0
            except KeyError:
                pass
        if remote:
            result = dst.copy_from(src, key, key)  # type: ignore[attr-defined]
            if isinstance(result, int):
                return True, result
            return True, size if size is not None else src.getsize(key)
        data = src[key]
        dst[key] = data
        return True, len(data)

    def collect(finished: Iterable[Future[tuple[bool, int]]]) -> None:
        nonlocal done
        for future in finished:
            copied, nbytes = future.result()
            if copied:
                stats.copied += 1
                stats.bytes += nbytes
            else:
                stats.skipped += 1
            done += 1
            if progress is not None:
                progress(done, total)

    window = 2 * workers
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nczarr-copy")
    try:
        pending: set[Future[tuple[bool, int]]] = set()
        for key in keys:
            if len(pending) >= window:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                collect(finished)
            pending.add(pool.submit(one, key))
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            collect(finished)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return stats


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
