"""Chained URLs: a zip archive stored on S3 or any fsspec filesystem, read-only.

``zip::s3://bucket/x.zip`` and ``zip::memory://x.zip`` name a zip archive (netcdf-c's
or zarr-python's layout) that lives somewhere else than the local disk. fsspec
already does the work: the archive is opened with :func:`fsspec.open` (s3fs for
``s3://``, any other fsspec filesystem otherwise; reads are ranged, so only the
central directory and the members read are fetched) and served by fsspec's own
``ZipFileSystem``; :class:`ChainedZipMap` is an :class:`~nczarr.maps.fsspec.FsspecMap`
over it whose root is the archive's root folder, found with the same
:func:`~nczarr.maps.zip.detect_layout` rules as :class:`~nczarr.maps.zip.ZipMap`.

Members are read from a thread pool (:meth:`~nczarr.maps.base.ZMap.getitems`) through
one file object shared by every thread. :mod:`zipfile` serialises each read on it, but
since Python 3.12 it skips a member's local extra field with a seek *relative to the
file's current position*, which another thread's read may have moved in between: the
member then starts at a wrong offset (on 3.13 ``BadZipFile: Overlapped entries``, on
3.12 a CRC error or wrong bytes). :class:`ThreadPositionedFile` gives each thread its
own position in the shared file, so that relative seek is relative to the thread's own
last read.

Writing into a remote archive would mean rewriting the whole object, so these maps
open with mode ``"r"`` only. Storage options go to the filesystem holding the
archive (for S3: ``endpoint_url``, ``anon``, ``region``, ``profile`` and every other
s3fs option). A fragment (``#mode=nczarr,zip``) is accepted and ignored: the format
is detected from the archive's contents.
"""

from __future__ import annotations

import io
import posixpath
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import (
    InvalidModeError,
    InvalidURLError,
    NCZarrError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
)
from ..keys import normalize_key
from .chainurl import CHAIN, is_chained
from .credentials import public_options
from .fsspec import FsspecMap
from .zip import detect_layout

__all__ = [
    "ChainedZipMap",
    "ThreadPositionedFile",
    "is_chained",
    "open_chained",
    "s3fs_options",
]


def s3fs_options(url: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """Options for ``s3fs.S3FileSystem`` from an S3 :class:`~nczarr.maps.url.NCZarrURL`
    (endpoint, region, profile) and the caller's options, which win.

    ``region`` is s3fs's ``client_kwargs["region_name"]``; every other option is
    passed through unchanged.
    """
    out: dict[str, Any] = {}
    if url.endpoint is not None:
        out["endpoint_url"] = url.endpoint
    if url.profile is not None:
        out["profile"] = url.profile
    given = dict(options)
    region = given.pop("region", None) or url.region
    out.update(given)
    if region is not None:
        client_kwargs = dict(out.get("client_kwargs") or {})
        client_kwargs.setdefault("region_name", region)
        out["client_kwargs"] = client_kwargs
    return out


class ThreadPositionedFile(io.RawIOBase):
    """A read-only view of a seekable binary file in which every thread has its own
    position (see the module doc); the file itself is used under a lock, one
    seek-and-read at a time.

    >>> f = ThreadPositionedFile(io.BytesIO(b"0123456789"))
    >>> f.seek(4), f.read(3), f.tell(), f.seek(2, io.SEEK_CUR), f.read()
    (4, b'456', 7, 9, b'9')
    """

    def __init__(self, raw: Any) -> None:
        super().__init__()
        self._raw = raw
        self._lock = threading.Lock()
        self._local = threading.local()

    @property
    def _pos(self) -> int:
        return getattr(self._local, "pos", 0)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset, whence = self._pos + offset, io.SEEK_SET
        with self._lock:
            self._raw.seek(offset, whence)
            self._local.pos = self._raw.tell()
        return self._local.pos

    def read(self, size: int | None = -1) -> bytes:
        with self._lock:
            self._raw.seek(self._pos)
            data = self._raw.read(-1 if size is None else size)
            self._local.pos = self._pos + len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        """Close the underlying file too."""
        if not self.closed:
            self._raw.close()
        super().close()


class ChainedZipMap(FsspecMap):
    """A read-only zmap over a zip archive opened through fsspec (see the module doc).

    Parameters
    ----------
    url
        The chained URL (``zip::s3://bucket/x.zip``).
    mode
        ``"r"`` only.
    **storage_options
        Options of the filesystem holding the archive.
    """

    def __init__(self, url: str, mode: str = "r", **storage_options: Any) -> None:
        if mode != "r":
            raise InvalidModeError(
                f"cannot open {url!r} with mode {mode!r}: a zip archive behind a chained "
                "URL is read-only (open it with mode 'r', or copy it locally to write)"
            )
        from fsspec.implementations.zip import ZipFileSystem

        self._chained_url = url
        self._chained_options = dict(storage_options)
        inner, fsspec_url, options = _inner(url, storage_options)
        self._archive_url = fsspec_url
        import fsspec

        try:
            self._file = ThreadPositionedFile(fsspec.open(fsspec_url, "rb", **options).open())
        except FileNotFoundError as exc:
            raise StorageNotFoundError(f"no such zip archive: {url!r}") from exc
        except PermissionError as exc:
            raise StoragePermissionError(f"permission denied reading {url!r}: {exc}") from exc
        except NCZarrError:
            raise
        except Exception as exc:  # network and client errors of any fsspec backend
            raise StorageError(f"cannot open {url!r}: {type(exc).__name__}: {exc}") from exc
        try:
            fs = ZipFileSystem(fo=self._file, skip_instance_cache=True)
            names = fs.zip.namelist()
            stem = posixpath.basename(inner.rstrip("/")).removesuffix(".zip")
            _, prefix = detect_layout(names, fs.zip.comment, stem)
            super().__init__(fs, prefix.rstrip("/"), mode="r")
        except Exception as exc:
            self._file.close()
            if isinstance(exc, StorageError | InvalidModeError):
                raise
            raise StorageError(f"{url!r} is not a zip archive: {exc}") from exc

    def close(self) -> None:
        """Close the map and the archive's file."""
        if not self._closed:
            super().close()
            self._file.close()

    def unreferenceable_reason(self) -> str:
        """Members :meth:`chunk_location` gives no range for are compressed."""
        return "stored compressed in the zip archive"

    def chunk_location(self, key: str) -> tuple[str, int, int] | None:
        """``(archive URL, offset, length)`` of member ``key``'s bytes when it is stored
        uncompressed and unencrypted (a reader can range into the archive), else None
        (see :func:`nczarr.conversion.references.chunk_location`).

        Raises KeyError when ``key`` is not a member.
        """
        import struct
        import zipfile

        archive = self.fs.zip
        info = archive.getinfo(self._full(normalize_key(key)))
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            return None
        archive.fp.seek(info.header_offset)
        header = archive.fp.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise StorageError(f"cannot read {key!r} from {self.url!r}: bad local file header")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        return (
            self._archive_url,
            info.header_offset + 30 + name_length + extra_length,
            info.compress_size,
        )

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return self._chained_url, public_options(self._chained_options)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open_chained, (self._chained_url, "r", self._chained_options))


def _inner(url: str, options: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """``(inner path, fsspec URL of the archive, options for fsspec.open)``."""
    match = CHAIN.match(url)
    if match is None or match.group(1).lower() != "zip":
        raise InvalidURLError(
            f"unsupported chained URL {url!r}: only zip::<URL of a zip archive> is supported"
        )
    inner = match.group(2).partition("#")[0]
    if "::" in inner:
        raise InvalidURLError(f"chained URL {url!r} has more than two links")
    from .url import parse_url

    parsed = parse_url(inner)
    if parsed.storage == "s3":
        return parsed.path, parsed.fsspec_url, s3fs_options(parsed, options)
    return parsed.path, parsed.fsspec_url, dict(options)


def open_chained(
    url: str, mode: str = "r", storage_options: Mapping[str, Any] | None = None
) -> ChainedZipMap:
    """Open a chained URL (``zip::...``) as a read-only :class:`ChainedZipMap`."""
    return ChainedZipMap(url, mode, **dict(storage_options or {}))
