"""``FileMap``: a zmap over a directory tree (netcdf-c's ``file`` storage).

An object is a file and a key prefix is a directory, exactly the layout netcdf-c's
``zmap_file.c`` and zarr-python's ``LocalStore`` write, so a tree written by either
reads here key for key.

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
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..errors import (
    NCZarrError,
    ObjectExistsError,
    raise_os_error,
)
from ..keys import normalize_key, parent_keys
from .base import NOT_SUPPORTED, CopySupport, NotSupportedType, ZMap, as_bytes
from .confined import ConfinedTree
from .fileleaf import check_leaf_rule
from .kernelcopy import copy_fd, copy_range, write_all
from .localfs import DirHandle, empty_tree, flag, local_path, prepare_root, read_fd
from .location import Location

__all__ = ["TEMP_PREFIX", "FileMap", "copy_fd", "local_path"]

#: (target class, source class) -> whether copy_support allows a kernel copy.
_LOCAL_PAIRS: dict[tuple[type, type], bool] = {}

#: Names of in-flight temporary files start with this; they are never keys.
TEMP_PREFIX = ".~nczarr-tmp-"


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

    def __init__(self, root: str | os.PathLike[str], mode: str = "r") -> None:
        super().__init__(mode)
        self._root = local_path(root)
        prepare_root(self._root, self._mode)
        self._tree = ConfinedTree(self._root, TEMP_PREFIX)

    # ------------------------------------------------------------------- paths
    @property
    def root(self) -> str:
        """Absolute path of the directory."""
        return self._root

    def _parent(self, key: str, create: bool = False) -> tuple[DirHandle, str]:
        """``(parent directory handle, leaf name)`` of normalized ``key``."""
        return self._tree.parent(key, create)

    # -------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        try:
            fd, st = self._tree.open_key(key)
            try:
                return read_fd(fd, st.st_size)
            finally:
                os.close(fd)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")

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
        if type(self)._store is FileMap._store and self._store_fast(nkey, value):
            return
        self._check_leaf_rule(nkey)
        self._store(nkey, value)  # type: ignore[arg-type]

    def _store_fast(self, key: str, value: bytes | bytearray | memoryview) -> bool:
        """Hot path of a write (every chunk of a copy): the parent directory is opened
        and verified once and the file written in it. No parent can hold content (the
        parent is a directory), and a directory at the leaf makes the rename fail:
        then, as when the parent is missing, False sends the caller the slow path."""
        self._tree.check_reserved(key)
        cut = key.rfind("/")
        if cut < 0:
            return False
        try:
            parent = self._tree.open_verified(key[:cut], key)
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        if parent is None:
            return False
        try:
            _write_temp(parent, key[cut + 1 :], lambda fd: write_all(fd, value))
        except IsADirectoryError:
            return False
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        finally:
            parent.close()
        return True

    def _store(self, key: str, value: bytes) -> None:
        self._write(key, lambda fd: write_all(fd, value))

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
            yield from super().copy_many(other, keys)
            return
        if not self._local_pair(other):
            yield from ((key, NOT_SUPPORTED) for key in keys)
            return
        for key, done in self._tree.copy_new_many(other._tree, keys, copy_fd):
            yield key, done if done is not None else self._copy(other, key, key, False)

    def session(self) -> AbstractContextManager[object]:
        """Hold each directory open once verified, until the block ends: a key then
        costs one ``openat`` relative to its held directory (:mod:`nczarr.maps.pins`)."""
        return self._tree.pinned()

    def remove_temporaries(self) -> int:
        """Delete temporary files of killed atomic writes below the root (symbolic
        links are not followed); return how many were removed."""
        removed = 0
        for directory, _dirs, files in os.walk(self._root, followlinks=False):
            for name in files:
                if name.startswith(TEMP_PREFIX):
                    try:
                        os.unlink(os.path.join(directory, name))
                    except FileNotFoundError:
                        continue
                    removed += 1
        return removed

    def chunk_location(self, key: str) -> tuple[str]:
        """``(absolute path,)`` of ``key``'s file (see :meth:`ZMap.chunk_location`)."""
        return (os.path.join(self.root, *normalize_key(key).split("/")),)

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
            if atomic or not self._write_new(nkey, fill):
                self._check_leaf_rule(nkey)
                self._write(nkey, fill)
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

        if atomic or not self._write_new(nkey, fill):
            self._check_leaf_rule(nkey)
            self._write(nkey, fill)
        return copied[0]

    def _write_new(self, key: str, fill: Callable[[int], object]) -> bool:
        """Create ``key`` in place with ``fill`` if it does not exist and its parent
        directories do; ``False`` (nothing done) otherwise."""
        try:
            parent, name = self._parent(key)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        try:
            try:
                fd = parent.open(
                    name,
                    os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_BINARY") | flag("O_CLOEXEC"),
                    0o666,
                )
            except (FileExistsError, FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return False  # exists (or a link or directory is there), or the parent went
            except OSError as exc:
                raise_os_error(exc, f"{key!r} in {self._root!r}")
            try:
                try:
                    fill(fd)
                finally:
                    os.close(fd)
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    parent.unlink(name)
                if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                    raise_os_error(exc, f"{key!r} in {self._root!r}")
                raise
            return True
        finally:
            parent.close()

    def _write(self, key: str, fill: Callable[[int], object]) -> None:
        """Atomically make ``key`` hold what ``fill(fd)`` writes to a fresh file."""
        try:
            parent, name = self._parent(key, create=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise ObjectExistsError(
                f"cannot write {key!r}: a parent is a file in {self._root!r}"
            ) from exc
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        try:
            try:
                _write_temp(parent, name, fill)
            except IsADirectoryError:
                # An empty directory tree where the file goes (the leaf rule checked it).
                parent.rmtree(name)
                self._tree.unpin(key)
                _write_temp(parent, name, fill)
        except IsADirectoryError as exc:
            raise ObjectExistsError(
                f"cannot write {key!r}: it became a directory in {self._root!r}"
            ) from exc
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        finally:
            parent.close()

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

    def _list(self, prefix: str) -> Iterator[str]:
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
        yield from self._tree.files_below(start, prefix)

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
        return Path(self._root).as_uri(), {}

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
        out = {}
        parent: Any = None
        parent_prefix: str | None = None
        # The plain case inline (a regular file opened without following a link,
        # relative to its verified directory): open_leaf's checks, without its calls.
        plain = _plain_read_flags()
        hidden = self._tree.hidden_prefix
        try:
            for key in keys:
                nkey = normalize_key(key)
                cut = nkey.rfind("/")
                prefix = nkey[:cut] if cut >= 0 else ""
                if prefix != parent_prefix:
                    if parent is not None:
                        parent.close()
                    parent, parent_prefix = None, prefix
                    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                        parent = self._tree.parent(nkey)[0]
                if parent is None:
                    continue  # no such directory: no such key
                name = nkey[cut + 1 :]
                if plain and parent.fd is not None and hidden not in nkey:
                    data = _read_plain(parent.fd, name, plain)
                    if data is not None:
                        out[key] = data
                        continue
                with contextlib.suppress(KeyError):  # anything else: the checked path
                    out[key] = self._load_in(parent, nkey, name)
        except OSError as exc:
            raise_os_error(exc, f"reading keys in {self._root!r}")
        finally:
            if parent is not None:
                parent.close()
        return out

    def _load_in(self, parent: Any, key: str, name: str) -> bytes:
        """``_load`` of ``key`` whose parent directory ``parent`` is already open."""
        self._tree.check_reserved(key)
        try:
            fd, st = self._tree.open_leaf(parent, name, key)
            try:
                return read_fd(fd, st.st_size)
            finally:
                os.close(fd)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")

    def getitems_capped(self, keys: Iterable[str], cap: int) -> dict[str, bytes]:
        """At most ``cap`` bytes of each file, never reading more.

        As :meth:`getitems`, keys in one directory (the metadata objects a crawl probes)
        share one opened, verified parent directory; a plain regular file is then read
        with ``openat``, ``fstat``, ``read`` and ``close``, anything else the checked way.
        """
        if type(self)._load is not FileMap._load:  # a subclass reads its own way
            return super().getitems_capped(keys, cap)
        if cap < 0:
            raise ValueError(f"cap must be >= 0, got {cap}")
        out: dict[str, bytes] = {}
        parent: Any = None
        parent_prefix: str | None = None
        plain = _plain_read_flags()
        hidden = self._tree.hidden_prefix
        try:
            for key in keys:
                nkey = normalize_key(key)
                cut = nkey.rfind("/")
                prefix = nkey[:cut] if cut >= 0 else ""
                if prefix != parent_prefix:
                    if parent is not None:
                        parent.close()
                    parent, parent_prefix = None, prefix
                    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                        parent = self._tree.parent(nkey)[0]
                if parent is None:
                    continue  # no such directory: no such key
                if plain and parent.fd is not None and hidden not in nkey:
                    data = _read_plain(parent.fd, nkey[cut + 1 :], plain, cap)
                    if data is not None:
                        out[key] = data
                        continue
                self._read_capped(key, nkey, cap, out)
        except OSError as exc:
            raise_os_error(exc, f"reading keys in {self._root!r}")
        finally:
            if parent is not None:
                parent.close()
        return out

    def _read_capped(self, key: str, nkey: str, cap: int, out: dict[str, bytes]) -> None:
        """The checked read of at most ``cap`` bytes of ``nkey`` into ``out[key]``."""
        try:
            with open(self._tree.open_key(nkey)[0], "rb") as f:
                out[key] = f.read(cap)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return
        except OSError as exc:
            raise_os_error(exc, f"{nkey!r} in {self._root!r}")

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key``, read without loading the whole file."""
        nkey = normalize_key(key)
        try:
            with open(self._tree.open_key(nkey)[0], "rb") as f:
                size = os.fstat(f.fileno()).st_size
                stop = None if length is None else start + length
                first, last, _ = slice(start, stop).indices(size)
                if last <= first:
                    return b""
                f.seek(first)
                return f.read(last - first)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(nkey) from None
        except OSError as exc:
            raise_os_error(exc, f"{nkey!r} in {self._root!r}")

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


def _write_temp(parent: DirHandle, name: str, fill: Callable[[int], object]) -> None:
    """Write a temporary file in ``parent`` with ``fill``, then move it to ``name``."""
    temp = TEMP_PREFIX + secrets.token_hex(8)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_BINARY") | flag("O_CLOEXEC")
    fd = parent.open(temp, flags, 0o666)
    try:
        try:
            fill(fd)
        finally:
            os.close(fd)
        parent.replace(temp, name)
    except BaseException:
        with contextlib.suppress(OSError):
            parent.unlink(temp)
        raise


def _plain_read_flags() -> int:
    """Flags of :func:`_read_plain`, or 0 where the platform lacks ``O_NOFOLLOW`` or
    ``O_NONBLOCK`` (the checked path then reads every key)."""
    if not (flag("O_NOFOLLOW") and flag("O_NONBLOCK")):
        return 0
    return (
        os.O_RDONLY
        | flag("O_BINARY")
        | flag("O_CLOEXEC")
        | flag("O_NONBLOCK")  # a FIFO's open returns; no effect on regular files
        | flag("O_NOFOLLOW")  # a link is left to the checked path
    )


def _read_plain(dir_fd: int, name: str, flags: int, cap: int | None = None) -> bytes | None:
    """The bytes (at most ``cap``) of the regular file ``name`` of the open directory
    ``dir_fd``, or None when it is anything else (missing, a link, a directory, a FIFO,
    an error): the caller then takes the checked path, which reads or refuses it."""
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return read_fd(fd, st.st_size if cap is None else min(st.st_size, cap))
    except OSError:
        return None
    finally:
        os.close(fd)
