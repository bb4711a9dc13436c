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

Zip members cannot be rewritten in place, and an archive is never modified in
place either: a kill or a full disk half-way through rewriting a central directory
would lose every key. Writes and deletes are recorded in memory; above
:data:`AUTOFLUSH_BYTES` they are moved to a private *staging* archive beside the
original (a byte copy of it, then zipfile's append; a full rewrite when keys are
overwritten or deleted). :meth:`ZipMap.flush` (also run by ``close``) commits: the
staging archive is synced and renamed over the original with ``os.replace``, which is
atomic on one file system, so readers see the old archive or the new one, never a
mix, and a killed writer leaves the old archive intact (plus a temporary file that
the next writer of the archive removes). A member is never duplicated.

Several processes may write one archive, each with its own map: commits are
serialised by a lock file beside the archive (``.<name>.nczarr-lock``; ``flock``,
``msvcrt.locking``, or an ``O_EXCL`` lock file with stale-lock detection where neither
exists). A writer whose archive was replaced by another writer since it was read
merges: its own writes and deletes are applied to the current archive, so no key
committed by another writer is lost (for the same key, the last commit wins). Tools
that do not take the lock (netcdf-c, zarr's ``ZipStore``) are not serialised.

All methods take one lock, so a map may be shared between threads.

Members are decompressed here, not with ``ZipFile.read``: zipfile inflates whatever
one read of compressed data holds (a few KB of bzip2 can become gigabytes), while
every read here stops at the member's declared size (or at the caller's cap) and a
member that inflates beyond its declared size is refused as corrupt.

Deflate64 members (7-Zip, Windows Explorer) are read through ``zipfile-deflate64``;
they are re-compressed with Deflate when an archive is rewritten (nothing writes
Deflate64).
"""

from __future__ import annotations

import contextlib
import lzma
import os
import secrets
import shutil
import stat
import struct
import sys
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
from .file import copy_fd, local_path
from .localfs import flag
from .lockfile import HOST, ArchiveLock, pid_alive
from .zipcodec import BOUNDED_DECODERS

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

#: Pending bytes above which writes move from memory to the staging archive.
AUTOFLUSH_BYTES = 64 * 2**20

_MARKER = b"nczarr:layout="
_METADATA = (".zgroup", ".zarray", ".zattrs", "zarr.json", ".zmetadata", ".nczarr")
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_FILE_MODE = (stat.S_IFREG | 0o644) << 16
_TEMP_TAG = ".nczarr-"
_READ_BLOCK = 1 << 20


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
        self._reader_file: Any = None
        self._base_id: tuple[int, ...] | None = None  # identity of the archive we read
        self._stage: str | None = None  # private staging archive, once writes spill
        self._stage_damaged = False  # a failed append: rewrite the stage next time
        self._written: set[str] = set()  # keys whose value is in the stage
        self._removed: set[str] = set()  # keys deleted since the last commit, spilled
        self._open()

    # ----------------------------------------------------------------- opening
    def _open(self) -> None:
        path, mode = self._path, self._mode
        try:
            st: os.stat_result | None = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        except OSError as exc:
            raise_os_error(exc, path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise StorageError(f"cannot open {path!r} as a zip archive: it is a directory")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise StorageError(f"cannot open {path!r} as a zip archive: it is not a regular file")
        if st is None and mode in ("r", "r+"):
            raise StorageNotFoundError(f"no such zip archive: {path!r} (mode {mode!r})")
        if mode != "r":
            self._remove_stale_temps()
        if mode == "w" or st is None:
            if self._layout == "netcdf":
                self._prefix = Path(path).stem + "/"
            if self._create(truncate=mode == "w"):
                self._read(fixed=True)
            else:  # another writer created it meanwhile: open what it wrote
                self._read(fixed=False)
        else:
            self._read(fixed=False)
        self._index = KeyIndex(self._disk)
        if mode == "w-" and self._disk:
            self._close_reader()
            raise ObjectExistsError(
                f"cannot create {path!r} (mode 'w-'): the archive exists and holds "
                f"{len(self._disk)} keys"
            )

    def _read(self, fixed: bool, path: str | None = None) -> None:
        """(Re)open the archive (or the staging archive ``path``) and index its members;
        ``fixed`` keeps layout and root."""
        self._close_reader()
        name = path or self._path
        try:
            raw = _open_regular(name)
        except FileNotFoundError as exc:
            raise StorageNotFoundError(f"no such zip archive: {self._path!r}") from exc
        except OSError as exc:
            raise_os_error(exc, self._path)
        try:
            reader = zipfile.ZipFile(raw)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
            raw.close()
            raise StorageError(
                f"{self._path!r} is not a zip archive (or is corrupt): {exc}"
            ) from exc
        except (struct.error, NotImplementedError) as exc:
            raw.close()
            raise StorageError(
                f"{self._path!r} is not a zip archive (or is corrupt): {exc}"
            ) from exc
        except OSError as exc:
            raw.close()
            raise_os_error(exc, self._path)
        except BaseException:
            raw.close()
            raise
        self._reader_file = raw
        if path is None:
            st = os.fstat(raw.fileno())
            self._base_id = _identity(st)
        infos = reader.infolist()
        try:
            for info in infos:
                _check_member(info.filename, self._path)
            if not fixed:
                self._layout, self._prefix = self._detect(infos, reader.comment)
        except BaseException:
            self._reader = reader
            self._close_reader()
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
            if name.endswith("/"):  # ZipInfo.is_dir() fails on an empty member name
                dirs.add(relative.rstrip("/"))
                continue
            try:
                key = normalize_key(relative)
            except ValueError as exc:
                self._reader = reader
                self._close_reader()
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
        if self._reader_file is not None:
            self._reader_file.close()
            self._reader_file = None

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
            return self._read_member(key, self._live_info(key), None)

    def _read_member(self, key: str, info: zipfile.ZipInfo, cap: int | None) -> bytes:
        """The content of member ``info`` (its first ``cap`` bytes when ``cap`` is given),
        never inflating more than that; corruption is a StorageError naming the key."""
        reader = self._require_reader()
        where = f"{key!r} from {self._path!r}"
        if info.flag_bits & 0x1:
            raise UnsupportedError(f"cannot read {where}: the member is encrypted")
        size = info.file_size if cap is None else min(cap, info.file_size)
        method = info.compress_type
        try:
            if method == zipfile.ZIP_STORED:
                if info.compress_size != info.file_size:
                    raise StorageError(
                        f"cannot read {where}: corrupt member (stored with "
                        f"{info.compress_size} bytes for {info.file_size})"
                    )
                data = self._pread(self._data_offset(key, info, reader.fp), size)
            elif method in BOUNDED_DECODERS:
                raw = self._pread(self._data_offset(key, info, reader.fp), info.compress_size)
                # One byte more than declared shows a member inflating beyond its size.
                want = size + 1 if size == info.file_size else size
                data = BOUNDED_DECODERS[method](raw, want)
            else:
                data = self._read_streaming(info, size)
        except NCZarrError:
            raise
        except (zlib.error, lzma.LZMAError, EOFError, ValueError, zipfile.BadZipFile) as exc:
            raise StorageError(f"cannot read {where}: corrupt member ({exc})") from exc
        except NotImplementedError as exc:
            raise UnsupportedError(f"cannot read {where}: {exc}") from exc
        except RuntimeError as exc:  # e.g. encryption zipfile refuses
            raise UnsupportedError(f"cannot read {where}: {exc}") from exc
        except OSError as exc:
            if exc.errno is None:
                # bz2 reports corrupt streams as a bare OSError ("Invalid data stream")
                raise StorageError(f"cannot read {where}: corrupt member ({exc})") from exc
            raise_os_error(exc, f"{key!r} in {self._path!r}")
        if len(data) > info.file_size:
            raise StorageError(
                f"cannot read {where}: corrupt member (it inflates beyond its declared "
                f"size of {info.file_size} bytes)"
            )
        if len(data) < size:
            raise StorageError(
                f"cannot read {where}: corrupt member (it ends after {len(data)} of {size} bytes)"
            )
        if size == info.file_size and zlib.crc32(data) != info.CRC:
            raise StorageError(
                f"cannot read {where}: corrupt member (Bad CRC-32 for file {info.filename!r})"
            )
        return data[:size] if len(data) > size else data

    def _read_streaming(self, info: zipfile.ZipInfo, size: int) -> bytes:
        """Methods decoded by zipfile only (Deflate64): read in blocks up to ``size``."""
        reader = self._require_reader()
        chunks = []
        left = size + 1
        with reader.open(info) as f:
            while left > 0 and (block := f.read(min(left, _READ_BLOCK))):
                chunks.append(block)
                left -= len(block)
        return b"".join(chunks)

    def _pread(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset`` of the open archive (``os.pread`` where present,
        else ``seek`` + ``read`` on the reader's file, under the map's lock)."""
        f = self._require_reader().fp
        pread = getattr(os, "pread", None)
        if pread is None:
            f.seek(offset)  # type: ignore[union-attr]
            return f.read(size)  # type: ignore[union-attr]
        fd = f.fileno()  # type: ignore[union-attr]
        data = pread(fd, size, offset)
        while len(data) < size:  # pread may stop short (e.g. above 2 GiB)
            more = pread(fd, size - len(data), offset + len(data))
            if not more:
                break
            data += more
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
                self._spill()

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

    def getitems_capped(self, keys: Iterable[str], cap: int) -> dict[str, bytes]:
        """At most ``cap`` bytes of each value, inflating no more than that."""
        if type(self)._load is not ZipMap._load:  # a subclass reads its own way
            return super().getitems_capped(keys, cap)
        if cap < 0:
            raise ValueError(f"cap must be >= 0, got {cap}")
        out: dict[str, bytes] = {}
        with self._lock:
            for key in keys:
                nkey = normalize_key(key)
                value = self._pending.get(nkey)
                if value is not None:
                    out[key] = value[:cap]
                    continue
                try:
                    info = self._live_info(nkey)
                except KeyError:
                    continue
                out[key] = self._read_member(nkey, info, cap)
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
                offset = self._data_offset(nkey, info, self._require_reader().fp)
                return self._pread(offset + first, last - first)
            except OSError as exc:
                raise_os_error(exc, f"{nkey!r} in {self._path!r}")

    def _data_offset(self, key: str, info: zipfile.ZipInfo, f: Any) -> int:
        offset = self._offsets.get(key)
        if offset is None:
            header = self._pread(info.header_offset, _LOCAL_HEADER.size)
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
        """Commit pending writes and deletes: the archive is replaced atomically."""
        with self._lock:
            if self._closed or self.read_only:
                return
            if self._pending or self._deleted:
                self._spill()
            if self._stage is not None:
                self._commit()

    def close(self) -> None:
        """Commit pending changes and close the archive; further I/O raises.

        If the commit fails (a full disk, a lock held too long), the error is raised,
        the archive on disk is unchanged, and the uncommitted changes and the staging
        file are discarded, so a failed close never holds disk space. To retry instead,
        call :meth:`flush` (which keeps the changes when it fails) before ``close``.
        """
        with self._lock:
            if not self._closed:
                try:
                    self.flush()
                finally:
                    self._closed = True
                    self._close_reader()
                    self._discard_stage()

    def _target(self) -> str:
        """The archive's real path (a symlinked archive is updated, not replaced)."""
        return os.path.realpath(self._path)

    def _temp_name(self) -> str:
        directory, name = os.path.split(self._target())
        token = secrets.token_hex(6)
        return os.path.join(directory, f".{name}{_TEMP_TAG}{HOST}-{os.getpid()}-{token}.tmp")

    def _remove_stale_temps(self) -> None:
        """Remove staging files of writers on this host that no longer run (killed)."""
        directory, name = os.path.split(self._target())
        start = f".{name}{_TEMP_TAG}{HOST}-"
        try:
            with os.scandir(directory) as it:
                names = [e.name for e in it if e.name.startswith(start)]
        except OSError:
            return
        for temp in names:
            pid_text = temp[len(start) :].split("-", 1)[0]
            if pid_text.isdigit() and not pid_alive(int(pid_text)):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, temp))

    def _discard_stage(self) -> None:
        if self._stage is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._stage)
            self._stage = None

    def _create(self, truncate: bool) -> bool:
        """Atomically create an empty archive (replace it with ``truncate``); ``False``
        when another writer created the archive first and it must not be truncated."""
        target = self._target()
        temp = self._temp_name()
        with self._removed_on_failure(temp):
            self._write_new(temp, keys=False)
            with ArchiveLock(target):
                if not truncate and os.path.exists(target):
                    os.unlink(temp)
                    return False
                _replace(temp, target)
        return True

    @contextlib.contextmanager
    def _removed_on_failure(self, temp: str) -> Iterator[None]:
        """Remove the temporary archive ``temp`` if the block fails; an OS error comes
        out as the nczarr error naming this archive."""
        try:
            yield
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, self._path)
            raise

    def _spill(self) -> None:
        """Move pending writes and deletes from memory into the staging archive."""
        appendable = (
            not self._deleted
            and not self._stage_damaged
            and not any(k in self._disk for k in self._pending)
        )
        if appendable:
            self._append_to_stage()
        else:
            temp = self._temp_name()
            with self._removed_on_failure(temp):
                self._write_new(temp, keys=True)
            self._close_reader()
            self._discard_stage()
            self._stage, self._stage_damaged = temp, False
        self._written.update(self._pending)
        self._written.difference_update(self._deleted)
        self._removed.update(self._deleted)
        self._removed.difference_update(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        self._deleted.clear()
        self._read(fixed=True, path=self._stage)

    def _append_to_stage(self) -> None:
        """Append new members to the staging archive (first a byte copy of the archive)."""
        if self._stage is None:
            stage = self._temp_name()
            try:
                _copy_archive(self._target(), stage)
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.unlink(stage)
                if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                    raise_os_error(exc, self._path)
                raise
            self._stage = stage
        made = set(self._dirs)
        try:
            with zipfile.ZipFile(self._stage, "a") as out:
                for key, value in self._pending.items():
                    for directory in self._new_dirs(key, made):
                        out.mkdir(_dir_info(self._prefix + directory))
                    out.writestr(self._new_info(key), value)
        except BaseException as exc:
            # Members already in the stage are intact (an append only writes past
            # them) and indexed in memory; the next spill rewrites the stage.
            self._stage_damaged = True
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, self._path)
            raise

    def _commit(self) -> None:
        """Rename the staging archive over the archive, or merge into a newer one."""
        stage = self._stage
        assert stage is not None
        target = self._target()
        try:
            with ArchiveLock(target):
                try:
                    current = _identity(os.stat(target))
                except FileNotFoundError:
                    current = None
                if current is not None and current == self._base_id:
                    _copy_mode(target, stage)
                    self._close_reader()
                    _replace(stage, target)
                else:  # another writer replaced the archive since we read it
                    merged = self._temp_name()
                    try:
                        self._write_merged(merged, target)
                        self._close_reader()
                        _replace(merged, target)
                    except BaseException:
                        with contextlib.suppress(OSError):
                            os.unlink(merged)
                        raise
                    self._discard_stage()
                self._stage = None
                self._written.clear()
                self._removed.clear()
                self._read(fixed=True)  # under the lock: the identity is of this version
        except BaseException as exc:
            if self._stage is not None and self._reader is None:
                self._read(fixed=True, path=self._stage)  # keep serving our writes
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, self._path)
            raise

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

    def _new_info(self, key: str) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(self._prefix + key, date_time=time.localtime()[:6])
        info.compress_type = self._compression
        info.external_attr = _FILE_MODE
        return info

    def _write_new(self, temp: str, keys: bool) -> None:
        """Write a complete archive to the new file ``temp``: the live keys (none when
        ``keys`` is false) and the foreign members, then sync it."""
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_CLOEXEC"), 0o666)
        with os.fdopen(fd, "wb") as raw:
            with zipfile.ZipFile(raw, "w") as out:
                out.comment = _MARKER + self._layout.encode("ascii")
                made: set[str] = set()
                if self._layout == "netcdf":
                    out.mkdir(_dir_info(self._prefix))
                    made.add("")
                if keys:
                    for key in self._live_keys():
                        for parent in self._new_dirs(key, made):
                            out.mkdir(_dir_info(self._prefix + parent))
                        value = self._pending.get(key)
                        if value is not None:
                            out.writestr(self._new_info(key), value)
                        else:
                            _copy_member(self._disk[key], self._require_reader(), out)
                    for info in self._extra:
                        _copy_member(info, self._require_reader(), out)
            raw.flush()
            os.fsync(raw.fileno())

    def _write_merged(self, temp: str, target: str) -> None:
        """Write the archive another writer committed, with our writes and deletes
        applied, to the new file ``temp``."""
        prefix = self._prefix
        ours = {prefix + k for k in self._written}
        dropped = ours | {prefix + k for k in self._removed}
        stage = self._require_reader()
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_CLOEXEC"), 0o666)
        with os.fdopen(fd, "wb") as raw:
            with contextlib.ExitStack() as stack:
                out = stack.enter_context(zipfile.ZipFile(raw, "w"))
                out.comment = _MARKER + self._layout.encode("ascii")
                names: set[str] = set()
                if os.path.exists(target):
                    base = stack.enter_context(zipfile.ZipFile(target))
                    for info in base.infolist():
                        if info.filename not in dropped:
                            _check_member(info.filename, target)
                            _copy_member(info, base, out)
                            names.add(info.filename.rstrip("/"))
                for key in sorted(self._written):
                    if self._layout == "netcdf":
                        for parent in reversed([prefix.rstrip("/"), *parent_keys(key)]):
                            name = parent if parent == prefix.rstrip("/") else prefix + parent
                            if name and name not in names:
                                out.mkdir(_dir_info(name))
                                names.add(name)
                    _copy_member(self._disk[key], stage, out)
            raw.flush()
            os.fsync(raw.fileno())


def _copy_member(info: zipfile.ZipInfo, reader: zipfile.ZipFile, out: zipfile.ZipFile) -> None:
    """Copy one member of ``reader``, keeping its name, time, attributes and method."""
    if info.filename.endswith("/"):  # not is_dir(): it fails on an empty name
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
    big = info.file_size > zipfile.ZIP64_LIMIT
    try:
        with reader.open(info) as src, out.open(copy, "w", force_zip64=big) as dst:
            shutil.copyfileobj(src, dst, _READ_BLOCK)
    except (zlib.error, lzma.LZMAError, EOFError, zipfile.BadZipFile) as exc:
        raise StorageError(f"cannot copy member {info.filename!r}: corrupt member ({exc})") from exc


def _copy_archive(source: str, target: str) -> None:
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


def _open_regular(path: str) -> Any:
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


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What changes when another writer replaces (or rewrites) the archive."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _copy_mode(source: str, target: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(target, stat.S_IMODE(os.stat(source).st_mode))


def _replace(temp: str, target: str) -> None:
    """``os.replace`` and, where directories can be synced, make the rename durable."""
    os.replace(temp, target)
    if sys.platform != "win32":
        with contextlib.suppress(OSError):
            fd = os.open(os.path.dirname(target) or ".", os.O_RDONLY | flag("O_DIRECTORY"))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


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
