"""Zip archive files written safely: members copied, archives replaced atomically.

The file-level half of :class:`~nczarr.maps.zip.ZipMap`, used by its commits
(:mod:`nczarr.maps.zipcommit`) and by its reader: how a member is copied between
archives (bounded, re-compressing Deflate64), how a staging copy is made (kernel-side
where the OS can), how an archive is replaced (``os.replace`` and a directory sync),
which member names are refused, and which layout an archive is in
(:func:`detect_layout`, rules in the :mod:`~nczarr.maps.zip` docstring).
"""

from __future__ import annotations

import contextlib
import lzma
import os
import shutil
import stat
import sys
import time
import zipfile
import zlib
from typing import Any

from ..errors import StorageError
from .file import copy_fd
from .localfs import flag

__all__ = [
    "MARKER",
    "WRITE_METHODS",
    "ZIP_LAYOUTS",
    "check_member",
    "copy_archive",
    "copy_member",
    "detect_layout",
    "dir_info",
    "identity",
    "new_member_info",
    "open_regular",
    "replace_atomically",
    "READ_BLOCK",
    "copy_mode",
]

#: Accepted values of ``layout=``.
ZIP_LAYOUTS = ("root", "netcdf")

#: Compression methods ZipMap writes (never Deflate64).
WRITE_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflated",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}

#: How an archive written by nczarr records its layout, in the archive comment.
MARKER = b"nczarr:layout="
#: Names of Zarr metadata objects (layout detection looks for them).
ZARR_METADATA = (".zgroup", ".zarray", ".zattrs", "zarr.json", ".zmetadata", ".nczarr")
#: External attributes of a regular file member (rw-r--r--).
FILE_MODE = (stat.S_IFREG | 0o644) << 16
#: Block size of streamed member reads and copies.
READ_BLOCK = 1 << 20


def new_member_info(name: str, compression: int) -> zipfile.ZipInfo:
    """A regular file member ``name`` stamped now, compressed with ``compression``."""
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.compress_type = compression
    info.external_attr = FILE_MODE
    return info


def copy_member(info: zipfile.ZipInfo, reader: zipfile.ZipFile, out: zipfile.ZipFile) -> None:
    """Copy one member of ``reader``, keeping its name, time, attributes and method."""
    if info.filename.endswith("/"):  # not is_dir(): it fails on an empty name
        entry = dir_info(info.filename)
        entry.date_time = info.date_time
        entry.external_attr = info.external_attr
        out.mkdir(entry)
        return
    copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    copy.external_attr = info.external_attr
    copy.create_system = info.create_system
    method = info.compress_type
    copy.compress_type = method if method in WRITE_METHODS else zipfile.ZIP_DEFLATED
    copy.file_size = info.file_size
    big = info.file_size > zipfile.ZIP64_LIMIT
    try:
        with reader.open(info) as src, out.open(copy, "w", force_zip64=big) as dst:
            shutil.copyfileobj(src, dst, READ_BLOCK)
    except (zlib.error, lzma.LZMAError, EOFError, zipfile.BadZipFile) as exc:
        raise StorageError(f"cannot copy member {info.filename!r}: corrupt member ({exc})") from exc


def copy_archive(source: str, target: str) -> None:
    """Byte copy of the archive to a new file, kernel-side (``copy_file_range``
    shares the blocks on btrfs/XFS and copies server-side on NFS 4.2)."""
    fd_in = os.open(source, os.O_RDONLY | flag("O_BINARY") | flag("O_CLOEXEC"))
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_BINARY") | flag("O_CLOEXEC")
        fd_out = os.open(target, flags, 0o666)
        try:
            size = os.fstat(fd_in).st_size
            if copy_fd(fd_in, fd_out, size) != size:
                raise StorageError(f"cannot copy {source!r}: it shrank while being copied")
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


def open_regular(path: str) -> Any:
    """Open ``path`` for binary reading, refusing anything but a regular file (a FIFO
    would block the open; ``O_NONBLOCK`` makes it return so it can be refused)."""
    if not flag("O_NONBLOCK") and not stat.S_ISREG(os.stat(path).st_mode):
        raise StorageError(f"cannot open {path!r} as a zip archive: it is not a regular file")
    fd = os.open(path, os.O_RDONLY | flag("O_BINARY") | flag("O_CLOEXEC") | flag("O_NONBLOCK"))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StorageError(f"cannot open {path!r} as a zip archive: it is not a regular file")
        if flag("O_NONBLOCK") and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What changes when another writer replaces (or rewrites) the archive."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def copy_mode(source: str, target: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(target, stat.S_IMODE(os.stat(source).st_mode))


def replace_atomically(temp: str, target: str) -> None:
    """``os.replace`` and, where directories can be synced, make the rename durable."""
    os.replace(temp, target)
    if sys.platform != "win32":
        with contextlib.suppress(OSError):
            fd = os.open(os.path.dirname(target) or ".", os.O_RDONLY | flag("O_DIRECTORY"))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def dir_info(name: str) -> zipfile.ZipInfo:
    """A directory entry stamped now (``ZipFile.mkdir`` with a name dates it 1980)."""
    info = zipfile.ZipInfo(name.rstrip("/") + "/", date_time=time.localtime()[:6])
    info.external_attr = ((stat.S_IFDIR | 0o755) << 16) | 0x10
    info.CRC = info.compress_size = info.file_size = 0
    return info


def check_member(name: str, path: str) -> None:
    """Refuse member names that could escape a directory when extracted."""
    problem = None
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        problem = "it is an absolute path"
    elif "\\" in name:
        problem = "it contains a backslash"
    elif ".." in name.split("/"):
        problem = "it contains a '..' segment"
    if problem:
        raise StorageError(f"refusing archive {path!r}: member {name!r} is unsafe ({problem})")


def detect_layout(
    names: list[str], comment: bytes, stem: str, layout: str | None = None
) -> tuple[str, str]:
    """``(layout, member-name prefix of the root)`` of an archive (module docstring).

    Parameters
    ----------
    names
        Member names in archive order.
    comment
        The archive comment (nczarr records its layout there).
    stem
        The archive's file name without ``.zip`` (netcdf-c's top-level folder).
    layout
        ``"root"``/``"netcdf"`` to force one, ``None`` to detect.
    """
    tops = {name.split("/", 1)[0] for name in names if "/" in name}
    single = next(iter(tops)) if len(tops) == 1 else None
    if layout is None and comment.startswith(MARKER):
        marked = comment[len(MARKER) :].decode("ascii", "replace")
        layout = marked if marked in ZIP_LAYOUTS else None
    if layout == "root":
        return "root", ""
    if layout == "netcdf":
        return "netcdf", (single or stem) + "/"
    if single is None:
        return "root", ""
    at_root = [name for name in names if "/" not in name]
    if not at_root and single == stem:
        return "netcdf", single + "/"
    if not any(f"{single}/{meta}" in names for meta in ZARR_METADATA):
        return "root", ""
    if not at_root:
        return "netcdf", single + "/"
    # Both levels hold members: the archive root is a store whose one child is the
    # folder (as zarr's ZipStore writes it, in any member order), unless netcdf-c
    # wrote the archive -- its first entry is the folder's own directory entry -- and
    # the root holds nothing but a stray copy of metadata.
    if names[0] == single + "/" and all(name in ZARR_METADATA for name in at_root):
        return "netcdf", single + "/"
    return "root", ""
