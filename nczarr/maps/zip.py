"""``ZipMap``: a zmap over a zip archive, in zarr-python's or netcdf-c's layout.

Two layouts exist in the wild and both are read automatically:

* ``"root"``: keys are member names (zarr-python's ``ZipStore``, ``.zgroup`` at the
  archive root);
* ``"netcdf"``: every member lives under one top-level folder named after the
  archive's stem (netcdf-c's zip map: ``foo.zip`` holds ``foo/.zgroup``,
  ``foo.zarr.zip`` holds ``foo.zarr/``), with a directory entry for every prefix.

Detection (unless ``layout=`` is given): an archive written by this module says its
layout in the archive comment. Otherwise the single top-level folder is the root when
every member lies below it and it is named after the stem, or when it directly holds
Zarr metadata and the archive root holds no Zarr metadata of its own -- or only a
stray copy while, as netcdf-c requires, the archive's first entry lies in the
folder. Anything else is the root layout. Members outside the folder are kept but
are not keys.

Zip members cannot be rewritten in place, so writes and deletes are recorded in
memory and applied by :meth:`ZipMap.flush` (also run by ``close``): new members only
are appended in zipfile's ``"a"`` mode; any overwrite or delete rewrites the whole
archive to a temporary file beside it, which then replaces the original with
``os.replace``. A member is therefore never duplicated. All methods take one lock,
so a map may be shared between threads.

Deflate64 members (7-Zip, Windows Explorer) are read through ``zipfile-deflate64``;
they are re-compressed with Deflate when an archive is rewritten (nothing writes
Deflate64).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import struct
import threading
import time
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import zipfile_deflate64  # noqa: F401  (registers Deflate64, method 9, with zipfile)

from ..errors import (
    InvalidModeError,
    NCZarrError,
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
    UnsupportedError,
    raise_os_error,
)
from ..keys import KeyIndex, normalize_key, parent_keys
from .base import ZMap
from .file import local_path

__all__ = ["ZIP_LAYOUTS", "ZipMap", "detect_layout"]

#: Accepted values of ``layout=``.
ZIP_LAYOUTS = ("root", "netcdf")

#: Compression methods ZipMap writes (never Deflate64).
WRITE_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflated",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}

#: Pending bytes above which writes are flushed to the archive early.
AUTOFLUSH_BYTES = 64 * 2**20

_MARKER = b"nczarr:layout="
_METADATA = (".zgroup", ".zarray", ".zattrs", "zarr.json", ".zmetadata", ".nczarr")
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_FILE_MODE = (stat.S_IFREG | 0o644) << 16


class ZipMap(ZMap):
    """A zmap over the zip archive at ``path``.

    Parameters
    ----------
    path
        Archive path (``str`` or path-like) or ``file://`` URL.
    mode
        ``"r"``/``"r+"``: the archive must exist; ``"a"``: created if missing; ``"w"``:
        created or truncated now; ``"w-"``: created, and
        :class:`~nczarr.errors.ObjectExistsError` if it exists and holds keys.
    layout
        ``None`` (detect; new archives use ``"root"``), ``"root"`` or ``"netcdf"``.
    compression
        Method for members written: ``zipfile.ZIP_STORED`` (default, like netcdf-c
        and zarr), ``ZIP_DEFLATED``, ``ZIP_BZIP2`` or ``ZIP_LZMA``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str = "r",
        *,
        layout: str | None = None,
        compression: int = zipfile.ZIP_STORED,
    ) -> None:
        super().__init__(mode)
        self._path = local_path(path)
        if layout is not None and layout not in ZIP_LAYOUTS:
            raise InvalidModeError(
                f"invalid zip layout {layout!r} for {self._path!r}: expected one of "
                f"{', '.join(ZIP_LAYOUTS)} or None"
            )
        if compression not in WRITE_METHODS:
            raise InvalidModeError(
                f"invalid zip compression {compression!r} for {self._path!r}: expected one "
                f"of {sorted(WRITE_METHODS)} ({', '.join(WRITE_METHODS.values())}); "
                "Deflate64 is read but never written"
            )
        self._layout_option = layout
        self._compression = compression
        self._lock = threading.RLock()
        self._reader: zipfile.ZipFile | None = None
        self._layout = layout or "root"
        self._prefix = ""
        self._disk: dict[str, zipfile.ZipInfo] = {}
        self._dirs: set[str] = set()
        self._extra: list[zipfile.ZipInfo] = []
        self._offsets: dict[str, int] = {}
        self._pending: dict[str, bytes] = {}
        self._pending_bytes = 0
        self._deleted: set[str] = set()
        self._index = KeyIndex()
        self._open()

    # ----------------------------------------------------------------- opening
    def _open(self) -> None:
        path, mode = self._path, self._mode
        exists = os.path.exists(path)
        if exists and os.path.isdir(path):
            raise StorageError(f"cannot open {path!r} as a zip archive: it is a directory")
        if not exists and mode in ("r", "r+"):
            raise StorageNotFoundError(f"no such zip archive: {path!r} (mode {mode!r})")
        if mode == "w" or not exists:
            if self._layout == "netcdf":
                self._prefix = Path(path).stem + "/"
            self._write_archive()
            self._read(fixed=True)
        else:
            self._read(fixed=False)
        self._index = KeyIndex(self._disk)
        if mode == "w-" and self._disk:
            self._close_reader()
            raise ObjectExistsError(
                f"cannot create {path!r} (mode 'w-'): the archive exists and holds "
                f"{len(self._disk)} keys"
            )

    def _read(self, fixed: bool) -> None:
        """(Re)open the archive and index its members; ``fixed`` keeps layout and root."""
        self._close_reader()
        try:
            reader = zipfile.ZipFile(self._path)
        except zipfile.BadZipFile as exc:
            raise StorageError(f"{self._path!r} is not a zip archive: {exc}") from exc
        except FileNotFoundError as exc:
            raise StorageNotFoundError(f"no such zip archive: {self._path!r}") from exc
        except OSError as exc:
            raise_os_error(exc, self._path)
        infos = reader.infolist()
        try:
            for info in infos:
                _check_member(info.filename, self._path)
            if not fixed:
                self._layout, self._prefix = self._detect(infos, reader.comment)
        except BaseException:
            reader.close()
            raise
        disk: dict[str, zipfile.ZipInfo] = {}
        dirs: set[str] = set()
        extra: list[zipfile.ZipInfo] = []
        prefix = self._prefix
        for info in infos:
            name = info.filename
            if not name.startswith(prefix):
                extra.append(info)
                continue
            relative = name[len(prefix) :]
            if info.is_dir():
                dirs.add(relative.rstrip("/"))
                continue
            try:
                key = normalize_key(relative)
            except ValueError as exc:
                reader.close()
                raise StorageError(
                    f"archive member {name!r} of {self._path!r} is not a valid key: {exc}"
                ) from None
            disk.pop(key, None)  # a duplicate member: the last one wins, as in zipfile
            disk[key] = info
        self._reader, self._disk, self._dirs, self._extra = reader, disk, dirs, extra
        self._offsets = {}

    def _detect(self, infos: list[zipfile.ZipInfo], comment: bytes) -> tuple[str, str]:
        """``(layout, member-name prefix of the root)`` for an existing archive."""
        return detect_layout(
            [info.filename for info in infos], comment, Path(self._path).stem, self._layout_option
        )

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _require_reader(self) -> zipfile.ZipFile:
        if self._reader is None:
            raise ValueError(f"I/O operation on closed map {self!r}")
        return self._reader

    # ---------------------------------------------------------------- identity
    @property
    def path(self) -> str:
        """Absolute path of the archive."""
        return self._path

    @property
    def layout(self) -> str:
        """``"root"`` or ``"netcdf"``: where the keys live in the archive."""
        return self._layout

    @property
    def root_folder(self) -> str:
        """Name of the top-level folder holding the keys (``""`` for the root layout)."""
        return self._prefix.rstrip("/")

    def _describe(self) -> tuple[str, dict[str, Any]]:
        options: dict[str, Any] = {}
        if self._layout_option is not None:
            options["layout"] = self._layout_option
        if self._compression != zipfile.ZIP_STORED:
            options["compression"] = self._compression
        return Path(self._path).as_uri(), options

    def __reduce__(self) -> tuple[Any, ...]:
        # The copy reopens the archive from disk, so it must see what was written.
        if not self._closed and not self.read_only:
            self.flush()
        return super().__reduce__()

    # -------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        with self._lock:
            value = self._pending.get(key)
            if value is not None:
                return value
            info = self._live_info(key)
            reader = self._require_reader()
            if info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1:
                return self._read_stored(key, info, reader)
            try:
                return reader.read(info)
            except NotImplementedError as exc:
                raise UnsupportedError(f"cannot read {key!r} from {self._path!r}: {exc}") from exc
            except RuntimeError as exc:  # encrypted members
                raise UnsupportedError(f"cannot read {key!r} from {self._path!r}: {exc}") from exc
            except (zipfile.BadZipFile, EOFError, ValueError) as exc:
                raise StorageError(
                    f"cannot read {key!r} from {self._path!r}: corrupt member ({exc})"
                ) from exc
            except OSError as exc:
                raise_os_error(exc, f"{key!r} in {self._path!r}")

    def _read_stored(self, key: str, info: zipfile.ZipInfo, reader: zipfile.ZipFile) -> bytes:
        """An uncompressed member with one ``pread`` at its cached data offset.

        ``zipfile`` would seek, parse the local header and build a ``ZipExtFile`` for
        every read (~10 µs, more than reading a 4 KB chunk); the CRC is still checked.
        """
        try:
            fd = reader.fp.fileno()  # type: ignore[union-attr]
            offset = self._offsets.get(key)
            if offset is None:
                offset = self._data_offset(key, info, reader.fp)
            size = info.file_size
            data = os.pread(fd, size, offset)
            while len(data) < size:  # pread may stop short (e.g. above 2 GiB)
                more = os.pread(fd, size - len(data), offset + len(data))
                if not more:
                    break
                data += more
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._path!r}")
        if len(data) != size or zlib.crc32(data) != info.CRC:
            raise StorageError(
                f"cannot read {key!r} from {self._path!r}: corrupt member "
                f"(Bad CRC-32 for file {info.filename!r})"
            )
        return data

    def _live_info(self, key: str) -> zipfile.ZipInfo:
        if key in self._deleted:
            raise KeyError(key)
        try:
            return self._disk[key]
        except KeyError:
            raise KeyError(key) from None

    def _exists(self, key: str) -> bool:
        return key in self._pending or (key in self._disk and key not in self._deleted)

    def _check_leaf_rule(self, key: str) -> None:
        with self._lock:
            self._index.check_leaf_rule(key, self._exists)

    def __setitem__(self, key: str, value: bytes | bytearray | memoryview) -> None:
        with self._lock:
            super().__setitem__(key, value)

    def _store(self, key: str, value: bytes) -> None:
        with self._lock:
            if not self._exists(key):
                self._index.add(key)
            old = self._pending.get(key)
            self._pending_bytes += len(value) - (len(old) if old is not None else 0)
            self._pending[key] = value
            self._deleted.discard(key)
            if self._pending_bytes > AUTOFLUSH_BYTES:
                self.flush()

    def _remove(self, key: str) -> None:
        with self._lock:
            if not self._exists(key):
                raise KeyError(key)
            old = self._pending.pop(key, None)
            if old is not None:
                self._pending_bytes -= len(old)
            if key in self._disk:
                self._deleted.add(key)
            self._index.discard(key)

    def _live_keys(self) -> list[str]:
        deleted, pending, disk = self._deleted, self._pending, self._disk
        keys = [k for k in disk if k not in deleted]
        keys.extend(k for k in pending if k not in disk)
        return keys

    def _list(self, prefix: str) -> Iterator[str]:
        with self._lock:
            if not prefix:
                return iter(self._live_keys())
            if self._exists(prefix):
                return iter([prefix])
            return iter(list(self._index.below(prefix)))

    def _search(self, prefix: str) -> Iterable[str]:
        with self._lock:
            return self._index.children(prefix)

    def __len__(self) -> int:
        with self._lock:
            new = sum(1 for k in self._pending if k not in self._disk)
            return len(self._disk) - len(self._deleted) + new

    # ------------------------------------------------------------- fast paths
    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read many keys with a plain loop (one archive, one lock)."""
        out: dict[str, bytes] = {}
        with self._lock:
            for key in keys:
                with contextlib.suppress(KeyError):
                    out[key] = self._load(normalize_key(key))
        return out

    def getsize(self, key: str) -> int:
        """Uncompressed size of ``key``, from the central directory."""
        nkey = normalize_key(key)
        with self._lock:
            value = self._pending.get(nkey)
            if value is not None:
                return len(value)
            return self._live_info(nkey).file_size

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key``; a stored member is read in place."""
        nkey = normalize_key(key)
        with self._lock:
            if nkey in self._pending:
                return super().getrange(key, start, length)
            info = self._live_info(nkey)
            if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
                return super().getrange(key, start, length)
            stop = None if length is None else start + length
            first, last, _ = slice(start, stop).indices(info.file_size)
            if last <= first:
                return b""
            try:
                with open(self._path, "rb") as f:
                    offset = self._data_offset(nkey, info, f)
                    f.seek(offset + first)
                    return f.read(last - first)
            except OSError as exc:
                raise_os_error(exc, f"{nkey!r} in {self._path!r}")

    def _data_offset(self, key: str, info: zipfile.ZipInfo, f: Any) -> int:
        offset = self._offsets.get(key)
        if offset is None:
            f.seek(info.header_offset)
            header = f.read(_LOCAL_HEADER.size)
            fields = _LOCAL_HEADER.unpack(header) if len(header) == _LOCAL_HEADER.size else None
            if fields is None or fields[0] != b"PK\x03\x04":
                raise StorageError(
                    f"cannot read {key!r} from {self._path!r}: bad local file header"
                )
            offset = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]
            self._offsets[key] = offset
        return offset

    def clear(self) -> None:
        """Delete every key (applied to the archive on the next flush)."""
        self._check_writable()
        with self._lock:
            self._pending.clear()
            self._pending_bytes = 0
            self._deleted = set(self._disk)
            self._index.clear()

    # ------------------------------------------------------------ persistence
    def flush(self) -> None:
        """Apply pending writes and deletes to the archive on disk."""
        with self._lock:
            if self._closed or self.read_only or not (self._pending or self._deleted):
                return
            if not self._deleted and not any(k in self._disk for k in self._pending):
                self._append()
            else:
                self._write_archive()
            self._pending.clear()
            self._pending_bytes = 0
            self._deleted.clear()
            self._read(fixed=True)

    def close(self) -> None:
        """Flush pending changes and close the archive; further I/O raises."""
        with self._lock:
            if not self._closed:
                try:
                    self.flush()
                finally:
                    self._closed = True
                    self._close_reader()

    def _new_dirs(self, key: str, made: set[str]) -> list[str]:
        """Directory entries (relative, outermost first) to add before ``key``."""
        wanted = []
        for parent in parent_keys(key):
            if parent in made:
                break
            if self._layout == "netcdf" or parent in self._dirs:
                wanted.append(parent)
        wanted.reverse()
        made.update(wanted)
        return wanted

    def _append(self) -> None:
        """Add new members only, in zipfile's append mode."""
        self._close_reader()
        made = set(self._dirs)
        try:
            with zipfile.ZipFile(self._path, "a") as out:
                for key, value in self._pending.items():
                    for directory in self._new_dirs(key, made):
                        out.mkdir(_dir_info(self._prefix + directory))
                    out.writestr(self._new_info(key), value)
        except OSError as exc:
            raise_os_error(exc, self._path)

    def _new_info(self, key: str) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(self._prefix + key, date_time=time.localtime()[:6])
        info.compress_type = self._compression
        info.external_attr = _FILE_MODE
        return info

    def _write_archive(self) -> None:
        """Write the live keys (and foreign members) to a temp file, then replace."""
        target = os.path.realpath(self._path)  # a symlinked archive is updated, not replaced
        directory, name = os.path.split(target)
        temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w") as out:
                out.comment = _MARKER + self._layout.encode("ascii")
                made: set[str] = set()
                if self._layout == "netcdf":
                    out.mkdir(_dir_info(self._prefix))
                    made.add("")
                for key in self._live_keys():
                    for parent in self._new_dirs(key, made):
                        out.mkdir(_dir_info(self._prefix + parent))
                    value = self._pending.get(key)
                    if value is not None:
                        out.writestr(self._new_info(key), value)
                    else:
                        self._copy_member(self._disk[key], out)
                for info in self._extra:
                    self._copy_member(info, out)
            with contextlib.suppress(FileNotFoundError):
                os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))
            self._close_reader()
            os.replace(temp, target)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, self._path)
            raise

    def _copy_member(self, info: zipfile.ZipInfo, out: zipfile.ZipFile) -> None:
        """Copy one existing member, keeping its name, time, attributes and method."""
        if info.is_dir():
            entry = _dir_info(info.filename)
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
        reader = self._require_reader()
        big = info.file_size > zipfile.ZIP64_LIMIT
        with reader.open(info) as src, out.open(copy, "w", force_zip64=big) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)


def _dir_info(name: str) -> zipfile.ZipInfo:
    """A directory entry stamped now (``ZipFile.mkdir`` with a name dates it 1980)."""
    info = zipfile.ZipInfo(name.rstrip("/") + "/", date_time=time.localtime()[:6])
    info.external_attr = ((stat.S_IFDIR | 0o755) << 16) | 0x10
    info.CRC = info.compress_size = info.file_size = 0
    return info


def _check_member(name: str, path: str) -> None:
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
    if layout is None and comment.startswith(_MARKER):
        marked = comment[len(_MARKER) :].decode("ascii", "replace")
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
    if not any(f"{single}/{meta}" in names for meta in _METADATA):
        return "root", ""
    if not at_root:
        return "netcdf", single + "/"
    if all(name in _METADATA for name in at_root) and names[0].startswith(single + "/"):
        return "netcdf", single + "/"
    return "root", ""
