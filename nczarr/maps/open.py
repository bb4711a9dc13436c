"""``open_map``: one entry point from a netCDF-style URL (or a path) to the right zmap.

The URL is parsed by :func:`nczarr.maps.url.parse_url`; this module only decides which
backend to construct and with which options, looking at the local file system where
a URL leaves the choice open (a zip archive without a ``.zip`` suffix, an existing
directory). Backends are imported when first needed, so opening a directory never
imports s3fs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidURLError, StorageError
from .base import ZMap, check_mode
from .url import NCZarrURL, parse_url

__all__ = ["open_map", "probe_local", "is_remote", "merge_options", "ZIP_MAGIC"]

#: First bytes of a zip archive: a local file header, or the end record of an empty one.
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def merge_options(
    storage_options: Mapping[str, Any] | None, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """``storage_options`` plus keyword options; a name given both ways is an error.

    Raises
    ------
    TypeError
        ``storage_options`` is not a mapping, or a name is given twice.
    """
    if storage_options is None:
        return dict(extra)
    if not isinstance(storage_options, Mapping):
        raise TypeError(f"storage_options must be a mapping, got {type(storage_options).__name__}")
    twice = sorted(set(storage_options) & set(extra))
    if twice:
        raise TypeError(f"storage option(s) {twice} given both in storage_options and as keywords")
    return {**storage_options, **extra}


def is_remote(url_or_path: Any) -> bool:
    """Whether a URL names storage other than the local disk (S3, fsspec, chained).

    Maps are never remote (they are already open). Used by the CLI to apply
    ``--storage-option`` to remote locations only.
    """
    if isinstance(url_or_path, ZMap):
        return False
    from .chained import is_chained

    if is_chained(url_or_path):
        return True
    url = url_or_path if isinstance(url_or_path, NCZarrURL) else parse_url(url_or_path)
    return url.storage not in ("file", "zip")


def open_map(
    url_or_path: str | os.PathLike[str] | NCZarrURL | ZMap,
    mode: str = "r",
    *,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> ZMap:
    """Open the zmap a URL or path names.

    Parameters
    ----------
    url_or_path
        A URL or local path as accepted by :func:`~nczarr.maps.url.parse_url`, a chained
        URL of a zip archive elsewhere (``zip::s3://bucket/x.zip``,
        ``zip::memory://x.zip``; read-only, see :mod:`nczarr.maps.chained`), an
        :class:`~nczarr.maps.url.NCZarrURL`, or an open :class:`ZMap`, which is returned
        as it is (``mode`` and options must then be left at their defaults).
    mode
        ``"r"``, ``"r+"``, ``"a"``, ``"w"`` or ``"w-"`` (see :class:`ZMap`).
    storage_options
        Passed to the backend (the fsspec/xarray name); for S3 they override what the
        URL says and reach ``s3fs.S3FileSystem`` unchanged (``anon=True`` for public
        buckets, ``endpoint_url``, ``region``, ``profile``, ``key``/``secret``,
        ``client_kwargs``, ``config_kwargs``, ... every option s3fs accepts); for zip
        archives ``layout`` overrides the inferred one; for other fsspec protocols
        they go to the filesystem. A directory map takes none.
    **options
        The same options as keywords (``open_map(url, anon=True)``), merged with
        ``storage_options``.

    Returns
    -------
    ZMap
        The backend chosen from :attr:`NCZarrURL.storage`:

        * ``s3`` (``s3://``, an AWS host, or ``#mode=...,s3`` with an endpoint):
          :class:`~nczarr.maps.s3.S3Map` with the URL's endpoint, region and profile.
        * ``zip`` (``#mode=zip`` or a ``.zip`` suffix), or ``file`` naming an existing
          file that starts with zip magic bytes: :class:`~nczarr.maps.zip.ZipMap`. An
          archive being created (missing, or ``mode="w"``) by a URL that names an
          NCZarr format (``#mode=nczarr,zip``) gets netcdf-c's layout (one top-level
          directory); existing archives are left to auto-detect.
        * ``file``: :class:`~nczarr.maps.file.FileMap` over an existing or new directory.
        * any other protocol: :class:`~nczarr.maps.fsspec.FsspecMap`.

    Raises
    ------
    InvalidURLError
        The URL is malformed or names a protocol fsspec does not know.
    StorageError
        A local path is a regular file that is not a zip archive, or a zip URL names
        a directory.
    """
    storage_options = merge_options(storage_options, options)
    if isinstance(url_or_path, ZMap):
        if mode != "r" or storage_options:
            raise TypeError(
                f"open_map got an open map {url_or_path!r}: it is returned as it is, "
                f"so mode and storage options cannot be applied (mode={mode!r}, "
                f"options {sorted(storage_options)})"
            )
        return url_or_path
    check_mode(mode)
    from .chained import is_chained

    if is_chained(url_or_path):
        from .chained import open_chained

        return open_chained(url_or_path, mode, storage_options)  # type: ignore[arg-type]
    url = url_or_path if isinstance(url_or_path, NCZarrURL) else parse_url(url_or_path)
    netcdf = _open_netcdf_file(url, mode, storage_options)
    if netcdf is not None:
        return netcdf
    if url.storage == "s3":
        return _open_s3(url, mode, storage_options)
    if url.storage in ("file", "zip"):
        return _open_local(url, mode, storage_options)
    return _open_fsspec(url, mode, storage_options)


def _open_netcdf_file(url: NCZarrURL, mode: str, storage_options: dict[str, Any]) -> ZMap | None:
    """A netCDF file source (:mod:`nczarr.ncfile`) when the URL names one, else None.

    Local: a regular file with netCDF-3 or HDF5 magic. Remote: a key with a netCDF
    suffix (``.nc``, ``.nc4``, ``.h5`` ...), no NCZarr/Zarr mode words in the fragment,
    that exists as an object (a store named ``x.nc`` is still opened as a store).
    """
    from ..ncfile.source import NetCDFFileMap, has_netcdf_suffix, is_netcdf_header

    if url.storage in ("file", "zip"):
        if url.storage == "zip" or mode != "r" or probe_local(url.path) != "other":
            return None
        with open(url.path, "rb") as f:
            head = f.read(8)
        return NetCDFFileMap(url.path, mode, **storage_options) if is_netcdf_header(head) else None
    if mode != "r" or not has_netcdf_suffix(url.path) or url.mode & {"nczarr", "zarr"}:
        return None
    from ..errors import StorageNotFoundError

    options = dict(storage_options)
    if url.storage == "s3":
        location = f"s3://{url.bucket}/{url.path}"
        if url.endpoint is not None:
            options.setdefault("endpoint_url", url.endpoint)
        if url.profile is not None:
            options.setdefault("profile", url.profile)
        if url.region is not None:
            options.setdefault("client_kwargs", {"region_name": url.region})
    else:
        location = url.fsspec_url
    try:
        return NetCDFFileMap(location, mode, **options)
    except StorageNotFoundError:
        return None


def _open_s3(url: NCZarrURL, mode: str, storage_options: dict[str, Any]) -> ZMap:
    from .s3 import S3Map

    location = f"s3://{url.bucket}/{url.path}" if url.path else f"s3://{url.bucket}"
    options: dict[str, Any] = {
        name: value
        for name, value in (
            ("endpoint_url", url.endpoint),
            ("region", url.region),
            ("profile", url.profile),
        )
        if value is not None
    }
    options.update(storage_options)
    return S3Map(location, mode, **options)


def _open_local(url: NCZarrURL, mode: str, storage_options: dict[str, Any]) -> ZMap:
    path = url.path
    kind = probe_local(path)
    if url.storage == "zip" or kind == "zip":
        if kind == "directory":
            raise StorageError(f"cannot open {path!r} as a zip archive: it is a directory")
        if kind == "other":
            raise StorageError(
                f"cannot open {path!r} as a zip archive: it is not a zip file "
                "(no PK signature) and will not be overwritten"
            )
        return _open_zip(
            url,
            mode,
            creating=kind in ("missing", "empty") or mode == "w",
            storage_options=storage_options,
        )
    if kind in ("other", "empty"):
        raise StorageError(
            f"cannot open {path!r}: it is a regular file, neither a directory nor a zip archive"
        )
    if storage_options:
        raise TypeError(
            f"a directory map ({path!r}) takes no storage options, got {sorted(storage_options)}"
        )
    from .file import FileMap

    return FileMap(path, mode)


def _open_zip(
    url: NCZarrURL, mode: str, *, creating: bool, storage_options: dict[str, Any]
) -> ZMap:
    from .zip import ZipMap

    options: dict[str, Any] = {}
    if creating and "nczarr" in url.mode:
        options["layout"] = "netcdf"
    options.update(storage_options)
    return ZipMap(url.path, mode, **options)


def probe_local(path: str) -> str:
    """What is at a local path: ``"missing"``, ``"directory"``, ``"zip"`` (a file
    starting with zip magic bytes), ``"empty"`` (a 0-byte file) or ``"other"``.

    Permission errors while looking propagate as :class:`StorageError` subclasses
    naming the path.
    """
    try:
        if os.path.isdir(path):
            return "directory"
        # Only regular files are probed: opening a FIFO would block (O_NONBLOCK makes it
        # return where the platform has it; the stat covers the rest).
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise StorageError(f"cannot open {path!r}: it is not a regular file or directory")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StorageError(f"cannot open {path!r}: it is not a regular file or directory")
            head = os.read(fd, 4)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing"
    except PermissionError as exc:
        from ..errors import StoragePermissionError

        raise StoragePermissionError(f"permission denied reading {path!r}: {exc}") from None
    except IsADirectoryError:
        return "directory"
    except StorageError:
        raise
    except OSError as exc:
        raise StorageError(f"cannot inspect {path!r}: {exc}") from None
    if not head:
        return "empty"
    return "zip" if head in ZIP_MAGIC else "other"


def _open_fsspec(url: NCZarrURL, mode: str, storage_options: dict[str, Any]) -> ZMap:
    from fsspec.registry import known_implementations, registry

    if url.storage not in known_implementations and url.storage not in registry:
        raise InvalidURLError(
            f"unknown protocol {url.storage!r} in {str(url)!r}: not an fsspec protocol"
        )
    from .fsspec import FsspecMap

    return FsspecMap(url.fsspec_url, mode=mode, **storage_options)
