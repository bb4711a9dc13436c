"""File-to-file copies by the kernel where the platform can (``copy_file_range``,
``sendfile``), a read/write loop where it cannot: what a directory map's chunk copies
(:meth:`nczarr.maps.file.FileMap.copy_file`) and writes use. The OS functions are
looked up at each call, so each fallback runs (and is tested) everywhere.

How many threads such copies pay for is decided here too (:func:`copy_threads`,
:data:`THREADED_COPY_BYTES`), for every copier of chunks by the kernel: a ``.nc``
file's byte ranges, a combine's sources."""

from __future__ import annotations

import errno
import os
import threading

__all__ = [
    "FALLBACK_ERRNOS",
    "THREADED_COPY_BYTES",
    "copy_fd",
    "copy_range",
    "copy_threads",
    "threads_for",
    "usable_cores",
    "write_all",
]

#: A kernel copy failing with one of these copies another way (EXDEV: across file
#: systems, which Linux 5.19+ refuses again for most pairs; ENOSYS, EINVAL,
#: EOPNOTSUPP: the pair of files or the platform does not support it; ENOTSOCK:
#: macOS's sendfile writes only to sockets).
FALLBACK_ERRNOS = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSOCK)


#: Kernel copies of chunks averaging this many bytes or more run in threads
#: (:func:`copy_threads`); smaller ones in the calling thread. A small chunk's copy is
#: short next to the interpreter's work for it (opening, naming, counting), so threads
#: only hand the interpreter's lock back and forth (tmpfs, 100,000 chunks of 0.3 KB:
#: 19 s in one thread, 36 s in several; 365 sources of 60 KB: slower in two); a large
#: chunk's copy runs with the lock released and overlaps another thread's (1,000
#: chunks of 400 KB on 2 cores: 0.18 s in two threads, 0.35 s in one; docs/performance.md).
THREADED_COPY_BYTES = 256 * 1024


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform tells
    (``os.process_cpu_count``, Python 3.13+; ``os.sched_getaffinity``, Linux), else
    every core (``os.cpu_count``), at least 1."""
    counted = getattr(os, "process_cpu_count", None)
    if counted is not None:
        return counted() or 1
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0)) or 1
    return os.cpu_count() or 1


def copy_threads(workers: int) -> int:
    """Threads for kernel copies of large chunks when ``workers`` are allowed: at most
    one a core. A kernel copy between files in memory (page cache, tmpfs) is a memory
    copy, CPU-bound: more threads than cores only take turns and contend (a 400 MB
    ``.nc`` on 2 cores: 0.28 s in 2 threads, 0.31-0.39 s in 8; 365 daily sources of
    2.4 MB: 0.87-0.91 s in 2, 0.97-1.04 s in 8)."""
    return max(1, min(workers, usable_cores()))


def threads_for(chunks: int, nbytes: int, workers: int) -> int:
    """Threads for kernel copies of ``chunks`` chunks of ``nbytes`` bytes in all: one
    while they average under :data:`THREADED_COPY_BYTES` (or there are none), else
    :func:`copy_threads`. Every kernel copier asks this (a ``.nc`` file's byte ranges,
    a directory copy's runs of keys, a combine's sources)."""
    if chunks <= 0 or nbytes < chunks * THREADED_COPY_BYTES:
        return 1
    return copy_threads(workers)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """``os.write`` until all of ``data`` is written (a write may be short)."""
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view) :]


def copy_fd(fd_in: int, fd_out: int, size: int) -> int:
    """Copy the first ``size`` bytes of ``fd_in`` (fewer if it ends sooner) to ``fd_out``
    from their current offsets, kernel-side where the platform can.

    ``size`` comes from ``fstat`` of the open file, so no final zero-length call is
    needed to find the end. Returns the bytes copied.
    """
    total = 0
    # Linux has both, macOS sendfile only to sockets, Windows none.
    for name in ("copy_file_range", "sendfile"):
        if not hasattr(os, name):
            continue
        kernel_copy = _copy_file_range if name == "copy_file_range" else _sendfile
        try:
            while total < size and (n := kernel_copy(fd_in, fd_out, size - total)):
                total += n
            return total
        except OSError as exc:  # EXDEV on older kernels, ENOSYS, EINVAL: next method
            if exc.errno not in FALLBACK_ERRNOS:
                raise
    while total < size and (block := os.read(fd_in, min(size - total, 1 << 20))):
        write_all(fd_out, block)
        total += len(block)
    return total


def copy_range(fd_in: int, fd_out: int, offset: int, size: int) -> int:
    """Copy ``size`` bytes of ``fd_in`` from ``offset`` (fewer if it ends sooner) to
    ``fd_out``, leaving ``fd_in``'s position alone (threads share it); returns the
    bytes copied.

    Kernel-side where the platform can: ``copy_file_range`` (same file system, and
    across some), else ``sendfile`` with an offset (Linux: any pair of regular files,
    e.g. a ``.nc`` on disk into a store on tmpfs, where ``copy_file_range`` says
    EXDEV), else ``pread`` and ``write`` in blocks of 1 MiB (macOS, Windows).
    """
    total = 0
    for name in ("copy_file_range", "sendfile"):
        if not hasattr(os, name):
            continue
        kernel_copy = _copy_file_range_at if name == "copy_file_range" else _sendfile_at
        try:
            while total < size and (n := kernel_copy(fd_in, fd_out, size - total, offset + total)):
                total += n
            return total
        except OSError as exc:  # the next method goes on from ``total``
            if exc.errno not in FALLBACK_ERRNOS:
                raise
    while total < size:
        if hasattr(os, "pread"):
            block = os.pread(fd_in, min(size - total, 1 << 20), offset + total)
        else:  # Windows: a seek and a read of the shared position, one thread at a time
            with _SEEKING:
                os.lseek(fd_in, offset + total, os.SEEK_SET)
                block = os.read(fd_in, min(size - total, 1 << 20))
        if not block:
            break
        write_all(fd_out, block)
        total += len(block)
    return total


#: Held for a seek and the read after it where there is no ``pread``: threads copying
#: ranges of one open file share its position.
_SEEKING = threading.Lock()


def _copy_file_range(fd_in: int, fd_out: int, count: int) -> int:
    return os.copy_file_range(fd_in, fd_out, count)


def _sendfile(fd_in: int, fd_out: int, count: int) -> int:
    return os.sendfile(fd_out, fd_in, None, count)


def _copy_file_range_at(fd_in: int, fd_out: int, count: int, offset: int) -> int:
    return os.copy_file_range(fd_in, fd_out, count, offset)


def _sendfile_at(fd_in: int, fd_out: int, count: int, offset: int) -> int:
    # with an offset, Linux's sendfile reads from there and leaves fd_in's position
    return os.sendfile(fd_out, fd_in, offset, count)
