"""``FileMap``: a zmap over a directory tree (netcdf-c's ``file`` storage).

An object is a file and a key prefix is a directory, exactly the layout netcdf-c's
``zmap_file.c`` and zarr-python's ``LocalStore`` write, so a tree written by either
reads here key for key. The map's reads are :mod:`nczarr.maps.fileread`, its writes
(atomic, or in place for a copy) :mod:`nczarr.maps.filewrite`.

* Writes are atomic: the value goes to a temporary file in the target directory,
  then ``os.replace`` moves it over the key. Temporary names start with
  :data:`TEMP_PREFIX`; they are never listed and keys using that prefix are refused.
* Deleting a key removes the directories it leaves empty (never the root itself).
* Symbolic links inside the tree work as long as they stay inside the root; a key
  that resolves outside it raises :class:`~nczarr.errors.StoragePermissionError`,
  and such links are left out of listings. This is checked at every use, never
  remembered: a directory swapped for a link later is caught. Where the kernel can
  say where an open directory is (``/proc/self/fd``, macOS ``F_GETPATH``), the parent
  is opened by path and its real location checked (two system calls); otherwise,
  with ``dir_fd`` support, every component is opened with ``O_NOFOLLOW`` relative to
  the previous one; without either (Windows), a ``realpath`` containment check runs
  before each use. The leaf is opened with ``O_NOFOLLOW`` relative to its directory.
  These checks are :class:`~nczarr.maps.confined.ConfinedTree`'s, through which the
  map reaches every file.
* Only regular files are keys. A FIFO, socket or device named like a key raises
  :class:`~nczarr.errors.StorageError` naming it (it is opened ``O_NONBLOCK``, so a
  FIFO never blocks), and listings leave such entries out, as they leave out names
  that are not valid UTF-8 or hold control characters (with an
  :class:`~nczarr.errors.NCZarrWarning` naming each: such a name cannot be a key).
* OS-specific calls (``copy_file_range``, ``sendfile``, ``O_NOFOLLOW``,
  ``O_CLOEXEC``, ``O_DIRECTORY``, ``O_NONBLOCK``, ``dir_fd``) are looked up when used
  and have fallbacks, so the module runs on Linux, macOS and Windows.
* ``search`` is one ``os.scandir`` of the directory; a subdirectory is listed only
  if some file lies below it, so empty directories left by other tools are invisible.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from ..errors import NCZarrError, raise_os_error
from ..keys import normalize_key, normalize_prefix, parent_keys
from .base import NOT_SUPPORTED, CopySupport, NotSupportedType, ZMap, as_bytes
from .confined import ConfinedTree
from .fileleaf import check_leaf_rule
from .fileread import list_reading, load_key, read_capped, read_many, read_range
from .filewrite import (
    TEMP_PREFIX,
    remove_temporaries,
    write_atomic,
    write_in_parent,
    write_new,
)
from .kernelcopy import copy_fd, copy_range, write_all
from .localfs import DirHandle, empty_tree, local_path, prepare_root
from .location import Location

__all__ = ["TEMP_PREFIX", "FileMap", "copy_fd", "local_path"]

#: (target class, source class) -> whether copy_support allows a kernel copy.
_LOCAL_PAIRS: dict[tuple[type, type], bool] = {}


class FileMap(ZMap):
    """A zmap over the directory tree at ``root``.

    Parameters
    ----------
    root
        Directory path (``str`` or path-like) or ``file://`` URL.
    mode
        ``"r"``/``"r+"``: the directory must exist
        (:class:`~nczarr.errors.StorageNotFoundError` otherwise); ``"a"``: created if
        missing; ``"w"``: created, or emptied if it exists; ``"w-"``: created, and
        :class:`~nczarr.errors.ObjectExistsError` if it exists and is not empty.
    """

    kind = "a directory"
    supports_shared_writes = True

    def __init__(
        self,
        root: str | os.PathLike[str],
        mode: str = "r",
        *,
        real_root: str | None = None,
        lazy_real_root: bool = False,
    ) -> None:
        super().__init__(mode)
        self._root = local_path(root)
        prepare_root(self._root, self._mode)
        # real_root: os.path.realpath of the root, when the caller resolved it already;
        # lazy_real_root: resolved when first needed (a link met; ConfinedTree)
        self._tree = ConfinedTree(self._root, TEMP_PREFIX, real_root, lazy=lazy_real_root)

    # ------------------------------------------------------------------- paths
    @property
    def root(self) -> str:
        """Absolute path of the directory."""
        return self._root

    @property
    def real_root(self) -> str:
        """``os.path.realpath`` of the root, as resolved when the map was opened (what
        keys are confined to; an overlap check or a journal need not resolve it again)."""
        return self._tree.real_root

    def _parent(self, key: str, create: bool = False) -> tuple[DirHandle, str]:
        """``(parent directory handle, leaf name)`` of normalized ``key``."""
        return self._tree.parent(key, create)

    # -------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        return load_key(self._tree, key)

    def _exists(self, key: str) -> bool:
        try:
            st = self._tree.lstat_key(key)
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        return st is not None and stat.S_ISREG(st.st_mode)

    def _check_leaf_rule(self, key: str) -> None:
        check_leaf_rule(self._tree, key)

    def __setitem__(self, key: str, value: bytes | bytearray | memoryview) -> None:
        # As ZMap.__setitem__, but a contiguous buffer is written as it is: the write
        # is synchronous, so the copy as_bytes makes of a memoryview is not needed.
        nkey = normalize_key(key)
        self._check_writable(nkey)
        if not isinstance(value, bytes | bytearray) and not (
            isinstance(value, memoryview) and value.c_contiguous
        ):
            value = as_bytes(value, nkey)
        if type(self)._store is FileMap._store and write_in_parent(
            self._tree, nkey, lambda fd: write_all(fd, value)
        ):
            return
        self._check_leaf_rule(nkey)
        self._store(nkey, value)  # type: ignore[arg-type]

    def _store(self, key: str, value: bytes) -> None:
        write_atomic(self._tree, key, lambda fd: write_all(fd, value))

    # ------------------------------------------------------------- capabilities
    def location(self) -> Location:
        """The directory's absolute path on this machine."""
        return Location("local", self._root)

    def copy_support(self, other: ZMap) -> CopySupport | None:
        """``"local"`` from another directory map whose reads and writes are not
        customised (a subclass overriding them is honoured: its bytes are copied)."""
        local = (
            isinstance(other, FileMap)
            and type(other)._load is FileMap._load
            and type(self)._store is FileMap._store
            and type(self).__setitem__ is FileMap.__setitem__
        )
        return "local" if local else None

    def copy_from(
        self,
        other: ZMap,
        src_key: str,
        dst_key: str,
        size: int | None = None,
        *,
        atomic: bool = True,
    ) -> int | NotSupportedType | None:
        """Copy a file of another directory map kernel-side (:meth:`copy_file`);
        :data:`~nczarr.maps.base.NOT_SUPPORTED` from any other map."""
        if not self._local_pair(other):
            return NOT_SUPPORTED
        return self._copy(other, src_key, dst_key, atomic)  # type: ignore[arg-type]

    def _local_pair(self, other: ZMap) -> bool:
        """Whether :meth:`copy_support` allows a kernel copy from ``other``, asked once
        per pair of classes, not per key."""
        pair = (type(self), type(other))
        local = _LOCAL_PAIRS.get(pair) if type(self).copy_support is FileMap.copy_support else None
        if local is None:
            local = _LOCAL_PAIRS[pair] = self.copy_support(other) is not None
        return local

    def copy_many(
        self, other: ZMap, keys: Iterable[str]
    ) -> Iterator[tuple[str, int | NotSupportedType | None]]:
        """:meth:`copy_from` of each key (same key on both sides, ``atomic=False``), in
        order. Inside a :meth:`session` of both maps the held directories are looked up
        once per directory of keys (:meth:`ConfinedTree.copy_new_many`), with the same
        checks per file; every key that is not the plain case takes :meth:`copy_from`."""
        if self._closed or self._mode == "r" or not isinstance(other, FileMap):
            return super().copy_many(other, keys)
        if not self._local_pair(other):
            return ((key, NOT_SUPPORTED) for key in keys)

        def checked(key: str) -> int | NotSupportedType | None:
            return self._copy(other, key, key, False)

        return self._tree.copy_new_many(other._tree, keys, copy_fd, checked)  # type: ignore[return-value]

    def copy_pairs(
        self, other: ZMap, pairs: Iterable[tuple[str, str]]
    ) -> Iterator[tuple[str, str, int | NotSupportedType | None]]:
        """:meth:`copy_many` for ``(src_key, dst_key)`` pairs (a combine's chunks land
        under shifted keys, see :meth:`ZMap.copy_pairs`). Inside a :meth:`session` of
        both maps each directory is opened and verified once, when its first pair comes,
        and held (:meth:`ConfinedTree.copy_new_pairs`): a daily source holds one chunk
        per directory, so waiting for the checked path to hold it, as
        :meth:`copy_many` does, would take that path for every chunk. Every pair that
        is not the plain case takes :meth:`copy_from`."""
        if self._closed or self._mode == "r" or not isinstance(other, FileMap):
            yield from super().copy_pairs(other, pairs)
            return
        if not self._local_pair(other):
            yield from ((s, d, NOT_SUPPORTED) for s, d in pairs)
            return
        for src_key, dst_key, done in self._tree.copy_new_pairs(other._tree, pairs, copy_fd):
            if done is None:
                done = self._copy(other, src_key, dst_key, False)
            yield src_key, dst_key, done

    def session(self) -> AbstractContextManager[object]:
        """Hold each directory open once verified, until the block ends: a key then
        costs one ``openat`` relative to its held directory (:mod:`nczarr.maps.pins`)."""
        return self._tree.pinned()

    def remove_temporaries(self, directories: Iterable[str] | None = None) -> int:
        """Delete temporary files of killed atomic writes below the root (symbolic
        links are not followed), or only directly in ``directories``; return how many
        were removed."""
        return remove_temporaries(self._root, directories)

    def chunk_location(self, key: str) -> tuple[str]:
        """``(absolute path,)`` of ``key``'s file (see :meth:`ZMap.chunk_location`)."""
        return (os.path.join(self.root, *normalize_key(key).split("/")),)

    def chunk_locations(self, keys: Iterable[str]) -> list[tuple[str] | None]:
        """:meth:`chunk_location` of listed (normalized) keys, without per-key checks."""
        root = os.path.join(self.root, "")
        if os.sep == "/":
            return [(root + key,) for key in keys]
        return [(root + key.replace("/", os.sep),) for key in keys]  # pragma: no cover

    def copy_file(self, src: FileMap, key: str, *, atomic: bool = True) -> int:
        """Copy ``key`` of ``src`` to the same key here, kernel-side; return its size.

        Same checks as ``self[key] = src[key]``, but the bytes go from file to file
        with ``os.copy_file_range`` (``os.sendfile``, or a read/write loop, where the
        kernel refuses or the platform lacks them), never through a Python ``bytes``.

        With ``atomic=False`` a key that does not exist yet is created in place
        (``O_CREAT | O_EXCL``) instead of through a temporary file and a rename: one
        directory operation instead of two, which is most of the cost of a small
        chunk. Until the call returns a reader may see the file short, and a killed
        process may leave it short -- callers that use this (``copy_chunks``) write
        no metadata pointing at the key until every copy is done, and on resume
        recopy any file whose size differs from the source. A failed copy removes
        the file. An existing key is always replaced atomically.
        """
        return self._copy(src, key, key, atomic)

    def _copy(self, src: FileMap, src_key: str, dst_key: str, atomic: bool) -> int:
        skey = normalize_key(src_key)
        nkey = skey if dst_key == src_key else normalize_key(dst_key)
        if self._closed or self._mode == "r":
            self._check_writable(nkey)
        if not atomic:  # in a session, directories held: cp's system calls, no more
            done = self._tree.copy_new(src._tree, skey, nkey, copy_fd)
            if done is not None:
                return done
        try:
            fd_in, st = src._tree.open_key(skey)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(skey) from None
        except OSError as exc:
            raise_os_error(exc, f"{skey!r} in {src._root!r}")
        try:
            copied = [0]

            def fill(fd: int) -> None:
                copied[0] = copy_fd(fd_in, fd, st.st_size)

            # In place, the leaf rule needs no check of its own when the parents are
            # directories: O_EXCL finds anything already at the leaf.
            if atomic or not write_new(self._tree, nkey, fill):
                self._check_leaf_rule(nkey)
                write_atomic(self._tree, nkey, fill)
        finally:
            os.close(fd_in)
        return copied[0]

    def copy_range(
        self,
        fd_in: int,
        offset: int,
        length: int,
        key: str,
        *,
        tail: bytes = b"",
        atomic: bool = True,
    ) -> int | NotSupportedType:
        """Make ``key`` hold ``length`` bytes of the open file ``fd_in`` from ``offset``,
        then ``tail``, kernel-side where the platform can; return the bytes written.

        What a netCDF file source (:mod:`nczarr.ncfile`) copies its chunks with: each
        is a byte range of the ``.nc`` file. Checks and ``atomic`` as for
        :meth:`copy_file`. Fewer bytes than ``length`` (the file ends sooner) are
        copied as they are; the caller compares the returned size.
        """
        if type(self)._store is not FileMap._store or type(self).__setitem__ is not (
            FileMap.__setitem__
        ):
            return NOT_SUPPORTED  # a subclass customising writes gets the bytes
        nkey = normalize_key(key)
        self._check_writable(nkey)
        copied = [0]

        def fill(fd: int) -> None:
            copied[0] = copy_range(fd_in, fd, offset, length)
            if tail:
                write_all(fd, tail)
                copied[0] += len(tail)

        if atomic or not write_new(self._tree, nkey, fill):
            self._check_leaf_rule(nkey)
            write_atomic(self._tree, nkey, fill)
        return copied[0]

    def _remove(self, key: str) -> None:
        try:
            parent, name = self._parent(key)
        except (FileNotFoundError, NotADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        try:
            if stat.S_ISDIR(parent.stat(name).st_mode):
                raise KeyError(key)
            parent.unlink(name)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        finally:
            parent.close()
        self._prune(key)

    def _prune(self, key: str) -> None:
        """Remove the directories deleting ``key`` left empty, nearest first (never
        the root; each reached again from the root, links refused)."""
        for directory in parent_keys(key):
            try:
                parent, name = self._parent(directory)
                try:
                    parent.rmdir(name)
                    self._tree.unpin(directory)
                finally:
                    parent.close()
            except (OSError, NCZarrError):
                return

    def keys_below_streamed(self, prefix: str = "") -> Iterator[str]:
        """:meth:`keys_below`, each directory read as it is consumed (memory flat in the
        number of files; keys written or deleted meanwhile may or may not be listed)."""
        return self._list(normalize_prefix(prefix), stream=True)

    def _list(self, prefix: str, stream: bool = False) -> Iterator[str]:
        if prefix:
            try:
                st = self._tree.lstat_key(prefix)
            except OSError as exc:
                raise_os_error(exc, f"{prefix!r} in {self._root!r}")
            if st is None:
                return
            if stat.S_ISREG(st.st_mode):
                yield prefix
                return
            if not stat.S_ISDIR(st.st_mode):
                return
        try:
            start = self._tree.walk(prefix.split("/") if prefix else [], prefix)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise_os_error(exc, f"{prefix!r} in {self._root!r}")
        yield from self._tree.files_below(start, prefix, stream=stream)

    def _search(self, prefix: str) -> Iterable[str]:
        try:
            directory = self._tree.walk(prefix.split("/") if prefix else [], prefix)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise_os_error(exc, f"{prefix!r} in {self._root!r}")
        names = []
        try:
            for name, is_dir in self._tree.entries(directory, prefix):
                if not is_dir:
                    names.append(name)
                    continue
                child = f"{prefix}/{name}" if prefix else name
                try:
                    below = self._tree.child(directory, name, child)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                if self._tree.has_file(below, child):
                    names.append(name)
        except OSError as exc:
            raise_os_error(exc, f"{prefix!r} in {self._root!r}")
        finally:
            directory.close()
        return names

    def _describe(self) -> tuple[str, dict[str, Any]]:
        root = self._root  # absolute and normalised (local_path)
        if os.name != "nt" and root.startswith("/") and not root.startswith("//"):
            # Path(root).as_uri() on POSIX, without importing pathlib in every convert
            from urllib.parse import quote_from_bytes  # with ipaddress: only when described

            return "file://" + quote_from_bytes(os.fsencode(root)), {}
        from pathlib import Path

        return Path(root).as_uri(), {}

    # ----------------------------------------------------------- fast paths
    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read many keys with a plain loop (local files gain nothing from threads).

        Consecutive keys in one directory (the chunks of an array, as zarr asks for
        them) share one opened, verified parent directory: each file is then one
        ``openat``, ``fstat``, ``read`` and ``close``, with the same checks as ``m[k]``.
        """
        if type(self)._load is not FileMap._load:  # a subclass reads its own way
            out: dict[str, bytes] = {}
            for key in keys:
                with contextlib.suppress(KeyError):
                    out[key] = self._load(normalize_key(key))
            return out
        return read_many(self._tree, keys)

    def getitems_capped(self, keys: Iterable[str], cap: int) -> dict[str, bytes]:
        """At most ``cap`` bytes of each file, never reading more."""
        if type(self)._load is not FileMap._load:  # a subclass reads its own way
            return super().getitems_capped(keys, cap)
        return read_capped(self._tree, keys, cap)

    def list_reading(self, wanted: Mapping[str, int | None]) -> tuple[list[str], dict[str, bytes]]:
        """Every key and the ``wanted`` files' contents, each read as the listing passes
        its directory (:func:`~nczarr.maps.fileread.list_reading`): no directory opened
        twice."""
        if type(self)._load is not FileMap._load or type(self)._list is not FileMap._list:
            return super().list_reading(wanted)
        return list_reading(self._tree, wanted)

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key``, read without loading the whole file."""
        return read_range(self._tree, key, start, length)

    def getsize(self, key: str) -> int:
        """Size of the file at ``key`` from ``os.stat``."""
        nkey = normalize_key(key)
        try:
            st = self._tree.lstat_key(nkey)
        except OSError as exc:
            raise_os_error(exc, f"{nkey!r} in {self._root!r}")
        if st is None or stat.S_ISDIR(st.st_mode):
            raise KeyError(nkey)
        if not stat.S_ISREG(st.st_mode):
            raise self._tree.not_regular(nkey, st.st_mode)
        return st.st_size

    def clear(self) -> None:
        """Delete every key (and every directory) below the root."""
        self._check_writable()
        self._tree.unpin("")
        empty_tree(self._root)
