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
stray copy while the archive's first entry is the folder's directory entry, as
netcdf-c writes it. Anything else is the root layout: Zarr metadata at the archive
root makes it the store, whatever the member order, even when its only child group
is named after the archive. Members outside the folder are kept but are not keys.

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

All methods take one lock, so a map may be shared between threads. The spill,
commit and merge steps are :mod:`nczarr.maps.zipcommit`; file-level helpers (member
copies, atomic replacement, layout detection) are :mod:`nczarr.maps.ziparchive`.

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
import os
import stat
import struct
import threading
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import zipfile_deflate64  # noqa: F401  (registers Deflate64, method 9, with zipfile)

from ..errors import (
    InvalidModeError,
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
    raise_os_error,
)
from ..keys import KeyIndex, normalize_key
from .base import ZMap
from .file import local_path
from .location import Location
from .ziparchive import (
    WRITE_METHODS,
    ZIP_LAYOUTS,
    check_member,
    detect_layout,
    identity,
    open_regular,
)
from .zipcommit import ArchiveCommits
from .zipmember import data_offset, pread, read_member

__all__ = ["ZIP_LAYOUTS", "ZipMap", "detect_layout"]

#: Pending bytes above which writes move from memory to the staging archive.
AUTOFLUSH_BYTES = 64 * 2**20


class ZipMap(ArchiveCommits, ZMap):
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

    kind = "a zip archive"
    writes_on_flush = True
    #: Reads serialize on one lock and writes are buffered in memory: threads buy no
    #: overlap (zarr's own ZipStore is called inline too).
    blocking_io = False

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
            raw = open_regular(name)
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
            self._base_id = identity(st)
        infos = reader.infolist()
        try:
            for info in infos:
                check_member(info.filename, self._path)
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

    def location(self) -> Location:
        """The archive's path on this machine."""
        return Location("local", self._path)

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
        """The content of member ``info`` (at most ``cap`` bytes), see :func:`read_member`."""
        return read_member(self._require_reader(), key, info, cap, self._path, self._offsets)

    def _pread(self, offset: int, size: int) -> bytes:
        return pread(self._require_reader().fp, offset, size)

    def _data_offset(self, key: str, info: zipfile.ZipInfo, f: Any) -> int:
        return data_offset(f, key, info, self._path, self._offsets)

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

    def declared_size(self, key: str) -> int | None:
        """Uncompressed size of ``key`` from the central directory (None: no such member)."""
        try:
            return self.getsize(key)
        except KeyError:
            return None

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

    def chunk_location(self, key: str) -> tuple[str, int, int] | None:
        """``(archive path, offset, length)`` of member ``key``'s bytes when it is
        stored uncompressed and unencrypted (a reader can range into it), else None.

        Raises KeyError when ``key`` is not a committed member.
        """
        nkey = normalize_key(key)
        with self._lock:
            if nkey in self._pending:
                return None
            info = self._live_info(nkey)
            if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
                return None
            try:
                offset = self._data_offset(nkey, info, self._require_reader().fp)
            except OSError as exc:
                raise_os_error(exc, f"{nkey!r} in {self._path!r}")
            return self._path, offset, info.file_size

    def unreferenceable_reason(self) -> str:
        """Why a member :meth:`chunk_location` gives no range for cannot be pointed at."""
        return "stored compressed in the zip archive"

    def clear(self) -> None:
        """Delete every key (applied to the archive on the next flush)."""
        self._check_writable()
        with self._lock:
            self._pending.clear()
            self._pending_bytes = 0
            self._deleted = set(self._disk)
            self._index.clear()
