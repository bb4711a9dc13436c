"""Open netCDF files read by byte ranges: a local file by ``os.pread`` (one open
descriptor shared by threads), a file on any fsspec filesystem by ranged reads
(``cat_file``/``cat_ranges``) with a block-cached file object for the HDF5 metadata.
:class:`~nczarr.ncfile.source.NetCDFFileMap` reads every chunk through one of these.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import StorageError, StorageNotFoundError

__all__ = ["METADATA_BLOCK", "REMOTE_IDENTITY", "LocalFile", "RemoteFile"]

#: Block size of the cached reads of remote HDF5 metadata.
METADATA_BLOCK = 32 * 1024


class LocalFile:
    """A local file read by offset (thread-safe: ``os.pread`` where it exists).

    :meth:`park` closes the descriptor; the next read opens the file again and refuses
    it (:class:`~nczarr.errors.StorageError` naming it) unless it is still the file
    that was opened: same device, inode, size and modification time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = _open(path)
        stat = os.fstat(self._fd)
        self.size = stat.st_size
        self._identity = _identity(stat)
        self._lock = threading.Lock()
        self._reopening = threading.Lock()
        self._closed = False

    @property
    def fd(self) -> int:
        """The open descriptor (opened again, and checked, after :meth:`park`)."""
        fd = self._fd
        return fd if fd is not None else self._unpark()

    def _unpark(self) -> int:
        with self._reopening:
            if self._closed:
                raise StorageError(f"{self.path}: the netCDF file source is closed")
            if self._fd is None:
                fd = _open(self.path, changed=True)
                try:
                    found = _identity(os.fstat(fd))
                except OSError as exc:  # pragma: no cover - fstat of an open file
                    os.close(fd)
                    raise StorageError(f"cannot open {self.path!r} again: {exc}") from None
                if found != self._identity:
                    os.close(fd)
                    raise StorageError(_changed(self.path, self._identity, found))
                self._fd = fd
            return self._fd

    def park(self) -> None:
        """Close the descriptor until the next read (no read may be in flight)."""
        with self._reopening:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

    def read(self, offset: int, length: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self.fd, length, offset)
        fd = self.fd
        with self._lock:  # pragma: no cover - Windows
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, length)

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        return [self.read(o, n) for o, n in ranges]

    def read_metadata(self, offset: int, length: int) -> bytes:
        """Metadata bytes (as :meth:`read`: the page cache is this file's block cache)."""
        return self.read(offset, length)

    def fileobj(self) -> Any:
        """The path (the HDF5 library opens it itself), checked to name the file read
        first: h5py may first open it long after the metadata was read (the numpy-free
        reader holds no handle), and a file replaced meanwhile must not be decoded
        beside chunks copied from the old one."""
        self.fd  # noqa: B018 - opened again and checked after a park
        try:
            found = _identity(os.stat(self.path))
        except FileNotFoundError:
            raise StorageError(_removed(self.path)) from None
        if found != self._identity:
            raise StorageError(_changed(self.path, self._identity, found))
        return self.path

    def head(self, n: int) -> bytes:
        return self.read(0, n)

    def close(self) -> None:
        self.park()
        self._closed = True  # not opened again


def _open(path: str, changed: bool = False) -> int:
    """``path`` opened for reading (``changed``: opened again after a park, so a
    missing file was removed since it was read)."""
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        if changed:
            raise StorageError(_removed(path)) from None
        raise StorageNotFoundError(f"no such netCDF file: {path!r}") from None
    except OSError as exc:
        raise StorageError(f"cannot open {path!r}: {exc}") from None


def _identity(stat: os.stat_result) -> dict[str, int]:
    """What tells a local file from another one, or from itself rewritten."""
    return {
        "device": stat.st_dev,
        "inode": stat.st_ino,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
    }


def _removed(path: str) -> str:
    """The refusal of a file gone since it was read."""
    return f"{path}: the netCDF file was removed since it was read: its chunks cannot be copied"


def _changed(path: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """The refusal of a file found changed since it was read."""
    differ = ", ".join(
        f"{key} {before.get(key)!r} -> {after.get(key)!r}"
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    )
    return (
        f"{path}: the netCDF file changed since it was read (replaced or rewritten: "
        f"{differ}): refusing to read its chunks at the offsets read from the old file"
    )


#: Fields of an fsspec ``info`` that change when an object is replaced or rewritten
#: (S3's ETag and version, a file system's modification time and inode...).
REMOTE_IDENTITY = ("size", "ETag", "etag", "VersionId", "LastModified", "mtime", "ino", "created")


class RemoteFile:
    """A file on an fsspec filesystem, read by byte ranges.

    :meth:`park` drops the block-cached file object (and so the HDF5 library's reads
    through it); the next read first asks the filesystem for the file's info again (one
    request) and refuses a file replaced or rewritten meanwhile (its size, ETag,
    version or modification time differ), naming it."""

    def __init__(self, url: str, options: Mapping[str, Any]) -> None:
        from fsspec.core import url_to_fs

        self.url = url
        try:
            self.fs, self.path = url_to_fs(url, **dict(options))
            info = self.fs.info(self.path)
        except FileNotFoundError:
            raise StorageNotFoundError(f"no such netCDF file: {url!r}") from None
        except ImportError as exc:
            from ..errors import MissingDependencyError

            raise MissingDependencyError(f"cannot open {url!r}: {exc}") from None
        except OSError as exc:
            raise StorageError(f"cannot open {url!r}: {exc}") from None
        self.size = info.get("size")  # as ``fs.size`` gives it
        self._identity = _remote_identity(info)
        self._file: Any = None
        self._parked = False
        self._reopening = threading.Lock()
        self._seeking = threading.Lock()  # one position in the block-cached file

    def _ready(self) -> None:
        """After a park: the file checked to be the one read first."""
        if not self._parked:
            return
        with self._reopening:
            if not self._parked:
                return
            try:
                self.fs.invalidate_cache(self.path)
                info = self.fs.info(self.path)
            except FileNotFoundError:
                raise StorageError(_removed(self.url)) from None
            except OSError as exc:
                raise StorageError(f"cannot open {self.url!r} again: {exc}") from None
            found = _remote_identity(info)
            # fields both infos give (a listing's and a HEAD's need not give the same)
            common = self._identity.keys() & found.keys()
            if any(self._identity[key] != found[key] for key in common):
                before = {key: self._identity[key] for key in common}
                raise StorageError(_changed(self.url, before, {key: found[key] for key in common}))
            self._parked = False

    def park(self) -> None:
        """Drop the block-cached file object until the next read (no read in flight)."""
        with self._reopening:
            if self._file is not None:
                self._file.close()
                self._file = None
            self._parked = True

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        self._ready()
        return self.fs.cat_file(self.path, start=offset, end=offset + length)

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        if len(ranges) <= 1:
            return [self.read(o, n) for o, n in ranges]
        self._ready()
        return self.fs.cat_ranges(
            [self.path] * len(ranges), [o for o, _ in ranges], [o + n for o, n in ranges]
        )

    def read_metadata(self, offset: int, length: int) -> bytes:
        """Metadata bytes through the block-cached :meth:`fileobj`: the many small reads
        of HDF5 metadata cost a few ranged requests of :data:`METADATA_BLOCK` bytes, and
        h5py, when it reads the file after the numpy-free reader, finds them cached. (h5py
        moves the same file position without this lock: no caller reads metadata here
        while h5py decodes chunks; the reference writer's deferred walks decode none.)"""
        with self._seeking:
            f = self.fileobj()
            f.seek(offset)
            return f.read(length)

    def fileobj(self) -> Any:
        """A block-cached file object (HDF5 metadata, the magic bytes)."""
        self._ready()
        if self._file is None:
            self._file = self.fs.open(
                self.path, "rb", block_size=METADATA_BLOCK, cache_type="blockcache", size=self.size
            )
        return self._file

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes, through the block cache the HDF5 reader then uses."""
        f = self.fileobj()
        f.seek(0)
        return f.read(n)

    def close(self) -> None:
        self.park()  # (a closed map reads nothing: its reader is gone)


def _remote_identity(info: Mapping[str, Any]) -> dict[str, str]:
    """The fields of ``info`` that tell a remote file from another one (as text: a
    time is compared as the filesystem gives it)."""
    return {key: str(info[key]) for key in REMOTE_IDENTITY if info.get(key) is not None}
