"""Portable local file-system primitives for the file and zip maps (and a directory
map's root: its path from a URL, its preparation for an open mode).

Every OS-specific name (``O_NOFOLLOW``, ``O_CLOEXEC``, ``O_DIRECTORY``,
``O_NONBLOCK``, ``O_BINARY``, ``dir_fd`` support, ``/proc/self/fd``, macOS
``F_GETPATH``) is looked up when it is used, never bound at import, so that each
fallback runs -- and is tested on Linux by removing the attribute -- on the
platforms that lack it (macOS, Windows, the BSDs).
"""

from __future__ import annotations

import os
import stat
import sys

from ..errors import (
    InvalidURLError,
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
    raise_os_error,
)

__all__ = [
    "PROC_FD",
    "DirHandle",
    "empty_tree",
    "fd_path",
    "first_visit",
    "flag",
    "local_path",
    "prepare_root",
    "read_fd",
    "use_dir_fds",
]

#: Where this system lists a process's open files by descriptor (Linux), if anywhere.
PROC_FD = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None


class DirHandle:
    """A directory reached safely from the root: an open descriptor where the
    platform has ``dir_fd`` support (every later call is relative to it, so a
    directory swapped for a symlink afterwards is not followed), else its path."""

    __slots__ = ("fd", "path", "via_link")

    def __init__(self, path: str, fd: int | None) -> None:
        self.path = path
        self.fd = fd
        self.via_link = False  # reached through a symbolic link (loops are possible)

    def join(self, name: str) -> str:
        return os.path.join(self.path, name)

    def _at(self, name: str) -> str:
        return name if self.fd is not None else self.join(name)

    def open(self, name: str, flags: int, mode: int = 0o777) -> int:
        return os.open(self._at(name), flags, mode, dir_fd=self.fd)

    def stat(self, name: str) -> os.stat_result:
        return os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False)

    def mkdir(self, name: str) -> None:
        os.mkdir(self._at(name), 0o777, dir_fd=self.fd)

    def rmdir(self, name: str) -> None:
        os.rmdir(self._at(name), dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        os.unlink(self._at(name), dir_fd=self.fd)

    def replace(self, src: str, dst: str) -> None:
        os.replace(self._at(src), self._at(dst), src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def rmtree(self, name: str) -> None:
        import shutil  # imports bz2 and lzma: only when a tree is removed

        if self.fd is not None and shutil.rmtree.avoids_symlink_attacks:
            shutil.rmtree(name, dir_fd=self.fd)
        else:
            shutil.rmtree(self.join(name))

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def use_dir_fds() -> bool:
    """Whether this platform can walk directories by descriptor (looked up per call,
    so the path fallback is testable everywhere)."""
    return (
        os.open in os.supports_dir_fd
        and os.stat in os.supports_dir_fd
        and os.scandir in os.supports_fd
        and hasattr(os, "O_NOFOLLOW")
    )


def flag(name: str) -> int:
    """``os.<name>`` where this platform has it, else 0 (looked up at each call)."""
    return getattr(os, name, 0)


def read_fd(fd: int, size: int) -> bytes:
    """The first ``size`` bytes of ``fd`` (fewer if it ends sooner), without the
    buffered file object (its isatty and seek calls cost as much as a small read)."""
    if size == 0:
        return b""
    data = os.read(fd, size)
    if len(data) < size:
        parts = [data]
        left = size - len(data)
        while left > 0 and (more := os.read(fd, left)):
            parts.append(more)
            left -= len(more)
        data = b"".join(parts)
    return data


def fd_path(fd: int) -> str | None:
    """The path of the open directory ``fd`` as the kernel knows it, or None."""
    if PROC_FD is not None:
        try:
            real = os.readlink(f"{PROC_FD}/{fd}")
        except OSError:
            return None
        return real if real.startswith("/") and not real.endswith(" (deleted)") else None
    fcntl = sys.modules.get("fcntl")
    getpath = getattr(fcntl, "F_GETPATH", None) if fcntl is not None else None
    if getpath is None:
        return None
    try:
        raw = fcntl.fcntl(fd, getpath, b"\0" * 1024)  # type: ignore[union-attr]
    except OSError:
        return None
    return os.fsdecode(raw.split(b"\0", 1)[0]) or None


def first_visit(directory: DirHandle, seen: set[tuple[int, int]]) -> bool:
    """Guard against symlink loops: a directory reached through a link is walked once."""
    if not directory.via_link:
        return True
    st = os.fstat(directory.fd) if directory.fd is not None else os.stat(directory.path)
    ident = (st.st_dev, st.st_ino)
    if ident in seen:
        return False
    seen.add(ident)
    return True


def local_path(location: str | os.PathLike[str]) -> str:
    """Absolute local path from a path or a ``file://`` URL (no fragment or query).

    >>> local_path("file:///tmp/a%20b.zarr")
    '/tmp/a b.zarr'
    """
    text = os.fspath(location)
    if not isinstance(text, str):
        raise InvalidURLError(f"expected a str path or file:// URL, got {text!r}")
    if text.startswith("file:"):
        from urllib.parse import unquote, urlsplit  # with ipaddress: only for a file:// URL

        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise InvalidURLError(f"invalid file URL {text!r}: host {parts.netloc!r} is not local")
        if parts.query or parts.fragment:
            raise InvalidURLError(
                f"invalid file URL {text!r}: a map location takes no query or fragment "
                "(use nczarr.open_map for netCDF-style URLs)"
            )
        text = unquote(parts.path)
    if not text:
        raise InvalidURLError("empty path")
    return os.path.abspath(text)


def prepare_root(root: str, mode: str) -> None:
    """Make the directory ``root`` of a directory map ready for ``mode``: it must exist
    for ``"r"``/``"r+"``, is created otherwise, emptied for ``"w"``; ``"w-"`` refuses
    one that holds anything."""
    try:
        st = os.stat(root)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise_os_error(exc, root)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise StorageError(f"cannot open {root!r} as a directory map: it is not a directory")
    if st is None:
        if mode in ("r", "r+"):
            raise StorageNotFoundError(f"no such directory: {root!r} (mode {mode!r})")
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as exc:
            raise_os_error(exc, root)
        return
    if mode == "w":
        empty_tree(root)
    elif mode == "w-":
        try:
            with os.scandir(root) as it:
                occupied = any(True for _ in it)
        except OSError as exc:
            raise_os_error(exc, root)
        if occupied:
            raise ObjectExistsError(
                f"cannot create {root!r} (mode 'w-'): the directory exists and is not empty"
            )


def empty_tree(root: str) -> None:
    """Delete everything below the directory ``root`` (links are removed, not followed)."""
    import shutil  # imports bz2 and lzma: only when a tree is removed

    try:
        with os.scandir(root) as it:
            entries = list(it)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
    except OSError as exc:
        raise_os_error(exc, root)
