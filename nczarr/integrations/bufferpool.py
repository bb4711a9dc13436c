"""Large byte buffers kept from one read to the next, within a bound.

Why: a read of large chunks decodes each chunk into a buffer of its own
(:class:`nczarr.integrations.chunkcodec.Scratch`, one per part of a read). Allocated
afresh for every read, a 4 MB buffer comes back from the C allocator as new pages
whenever the allocator has handed its memory back to the system meanwhile, which
depends on everything the process allocated before (glibc's thresholds move): then
every page of it faults on first write. Measured in ``benchmarks/engine.py`` (4 MB zlib
chunks from a zip): ~10,600 page faults a read and ~50 ms of system time in some
processes, none in others: that difference alone moved nczarr's throughput over the
zarr engine between 1.35x and 1.7x from one run to the next. Buffers taken from
:data:`POOL` and given back are the same, already-mapped pages each time.

The pool holds at most :data:`POOL_BYTES` bytes of idle buffers (what a few threads
need for chunks of a few MB); a buffer given back beyond that, or larger than it, is
simply freed. Buffers are plain ``uint8`` numpy arrays; nothing they held is cleared
(every user writes a buffer whole before reading it).
"""

from __future__ import annotations

import os
import threading

import numpy as np

from ..environment import env_bytes

__all__ = ["POOL", "POOL_BYTES", "BufferPool"]

#: Idle bytes the pool keeps at most (``NCZARR_BUFFER_POOL_BYTES`` overrides; 0 turns
#: the pool off).
POOL_BYTES = env_bytes("NCZARR_BUFFER_POOL_BYTES", 32 * 2**20)


class BufferPool:
    """Idle ``uint8`` buffers by size, taken and given back by any thread."""

    def __init__(self, most_bytes: int) -> None:
        self.most_bytes = most_bytes
        self._idle: dict[int, list[np.ndarray]] = {}
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Bytes of the idle buffers the pool keeps now."""
        return self._held

    def take(self, nbytes: int) -> np.ndarray:
        """A buffer of exactly ``nbytes`` bytes: an idle one, else a new one."""
        with self._lock:
            idle = self._idle.get(nbytes)
            if idle:
                self._held -= nbytes
                return idle.pop()
        return np.empty(nbytes, dtype=np.uint8)

    def give(self, buffer: np.ndarray) -> None:
        """Keep ``buffer`` for a later :meth:`take` if the bound allows, else let it go.
        The caller holds no view of it any more."""
        nbytes = buffer.nbytes
        with self._lock:
            if self._held + nbytes <= self.most_bytes:
                self._idle.setdefault(nbytes, []).append(buffer)
                self._held += nbytes

    def clear(self) -> None:
        """Free every idle buffer."""
        with self._lock:
            self._idle.clear()
            self._held = 0

    def after_fork(self) -> None:
        """In a forked child: a new lock (another thread may have held the parent's at
        the fork) and no idle buffers (the child's copies of the parent's pages)."""
        self._lock = threading.Lock()
        self._idle = {}
        self._held = 0


#: The pool large-chunk reads share.
POOL = BufferPool(POOL_BYTES)

if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=POOL.after_fork)
