"""An exclusive inter-process lock beside a file, for writers that replace it.

The zip map commits by renaming a new archive over the old one, so it cannot lock the
archive itself (the inode changes); it locks ``<dir>/.<name>.nczarr-lock`` instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import time
from typing import Any

from ..errors import StorageError
from .localfs import flag

__all__ = ["HOST", "LOCK_TIMEOUT", "STALE_LOCK_SECONDS", "ArchiveLock", "pid_alive"]

#: Seconds a commit waits for another writer's lock before failing loudly.
LOCK_TIMEOUT = 120.0

#: An ``O_EXCL`` lock file (used only without flock/msvcrt) older than this is stale.
STALE_LOCK_SECONDS = 600.0

#: This host's short name, in lock files and temporary names (which host wrote them).
HOST = "".join(c for c in socket.gethostname().split(".")[0] if c.isalnum())[:16] or "host"


def pid_alive(pid: int) -> bool:
    if sys.platform == "win32":
        return True  # no cheap check: leave the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class ArchiveLock:
    """An exclusive inter-process lock on ``<dir>/.<name>.nczarr-lock``.

    ``fcntl.flock`` (POSIX) or ``msvcrt.locking`` (Windows): released by the OS when a
    holder dies, so never stale. Where neither exists, an ``O_EXCL`` lock file holding
    host, pid and time, treated as stale when its process is gone (same host) or it is
    older than :data:`STALE_LOCK_SECONDS`. Waits up to :data:`LOCK_TIMEOUT` seconds,
    then raises :class:`~nczarr.errors.StorageError` naming the archive.
    """

    def __init__(self, target: str) -> None:
        directory, name = os.path.split(target)
        self.target = target
        self.path = os.path.join(directory, f".{name}.nczarr-lock")
        self._fd: int | None = None
        self._excl = False

    def __enter__(self) -> ArchiveLock:
        deadline = time.monotonic() + LOCK_TIMEOUT
        delay = 0.002
        while not self._try():
            if time.monotonic() > deadline:
                raise StorageError(
                    f"cannot commit {self.target!r}: another writer holds {self.path!r} for "
                    f"more than {LOCK_TIMEOUT:.0f} s"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._excl:
            with contextlib.suppress(OSError):
                os.unlink(self.path + ".excl")
            self._excl = False
        if self._fd is not None:
            os.close(self._fd)  # releases flock / msvcrt locks
            self._fd = None

    def _try(self) -> bool:
        fcntl = _module("fcntl")
        msvcrt = _module("msvcrt")
        if fcntl is not None and hasattr(fcntl, "flock"):
            return self._try_os(lambda fd: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
        if msvcrt is not None and hasattr(msvcrt, "locking"):
            return self._try_os(lambda fd: msvcrt.locking(fd, msvcrt.LK_NBLCK, 1))
        return self._try_excl()

    def _try_os(self, lock: Any) -> bool:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | flag("O_CLOEXEC"), 0o666)
        try:
            lock(self._fd)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK):
                return False
            raise
        return True

    def _try_excl(self) -> bool:
        path = self.path + ".excl"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_CLOEXEC"), 0o666)
        except FileExistsError:
            if self._stale(path):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            return False
        with os.fdopen(fd, "w") as f:
            f.write(f"{HOST} {os.getpid()} {time.time():.0f}\n")
        self._excl = True
        return True

    @staticmethod
    def _stale(path: str) -> bool:
        try:
            with open(path) as f:
                host, pid, _ = f.read().split()
            age = time.time() - os.stat(path).st_mtime
        except (OSError, ValueError):
            return False  # being written right now, or already gone
        if age > STALE_LOCK_SECONDS:
            return True
        return host == HOST and pid.isdigit() and not pid_alive(int(pid))


def _module(name: str) -> Any:
    """An OS-specific stdlib module, or None where this platform lacks it."""
    try:
        return __import__(name)
    except ImportError:
        return None
