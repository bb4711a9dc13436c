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

__all__ = ["METADATA_BLOCK", "LocalFile", "RemoteFile"]

#: Block size of the cached reads of remote HDF5 metadata.
METADATA_BLOCK = 32 * 1024


class LocalFile:
    """A local file read by offset (thread-safe: ``os.pread`` where it exists)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            raise StorageNotFoundError(f"no such netCDF file: {path!r}") from None
        except OSError as exc:
            raise StorageError(f"cannot open {path!r}: {exc}") from None
        self.size = os.fstat(self.fd).st_size
        self._lock = threading.Lock()

    def read(self, offset: int, length: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self.fd, length, offset)
        with self._lock:  # pragma: no cover - Windows
            os.lseek(self.fd, offset, os.SEEK_SET)
            return os.read(self.fd, length)

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        return [self.read(o, n) for o, n in ranges]

    def fileobj(self) -> Any:
        return self.path

    def head(self, n: int) -> bytes:
        return self.read(0, n)

    def close(self) -> None:
        os.close(self.fd)


class RemoteFile:
    """A file on an fsspec filesystem, read by byte ranges."""

    def __init__(self, url: str, options: Mapping[str, Any]) -> None:
        from fsspec.core import url_to_fs

        try:
            self.fs, self.path = url_to_fs(url, **dict(options))
            self.size = self.fs.size(self.path)
        except FileNotFoundError:
            raise StorageNotFoundError(f"no such netCDF file: {url!r}") from None
        except ImportError as exc:
            from ..errors import MissingDependencyError

            raise MissingDependencyError(f"cannot open {url!r}: {exc}") from None
        except OSError as exc:
            raise StorageError(f"cannot open {url!r}: {exc}") from None
        self._file: Any = None

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        return self.fs.cat_file(self.path, start=offset, end=offset + length)

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        if len(ranges) <= 1:
            return [self.read(o, n) for o, n in ranges]
        return self.fs.cat_ranges(
            [self.path] * len(ranges), [o for o, _ in ranges], [o + n for o, n in ranges]
        )

    def fileobj(self) -> Any:
        """A block-cached file object (HDF5 metadata, the magic bytes)."""
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
        if self._file is not None:
            self._file.close()
