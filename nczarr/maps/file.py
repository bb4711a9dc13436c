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
  and such links are left out of listings.
* ``search`` is one ``os.scandir`` of the directory; a subdirectory is listed only
  if some file lies below it, so empty directories left by other tools are invisible.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import (
    InvalidKeyError,
    InvalidURLError,
    NCZarrError,
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
    raise_os_error,
)
from ..keys import FORBIDDEN_CHARACTERS, normalize_key, parent_keys
from .base import ZMap, as_bytes

__all__ = ["TEMP_PREFIX", "FileMap", "local_path"]

#: Names of in-flight temporary files start with this; they are never keys.
TEMP_PREFIX = ".~nczarr-tmp-"


def local_path(location: str | os.PathLike[str]) -> str:
    """Absolute local path from a path or a ``file://`` URL (no fragment or query).

    >>> local_path("file:///tmp/a%20b.zarr")
    '/tmp/a b.zarr'
    """
    text = os.fspath(location)
    if not isinstance(text, str):
        raise InvalidURLError(f"expected a str path or file:// URL, got {text!r}")
    if text.startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise InvalidURLError(f"invalid file URL {text!r}: host {parts.netloc!r} is not local")
        if parts.query or parts.fragment:
            raise InvalidURLError(
                f"invalid file URL {text!r}: a map location takes no query or fragment "
                "(use nczarr.open_map for netCDF-style URLs)"
            )
        text = unquote(parts.path)
    if not text:
        raise InvalidURLError("empty path")
    return os.path.abspath(text)


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

    def __init__(self, root: str | os.PathLike[str], mode: str = "r") -> None:
        super().__init__(mode)
        self._root = local_path(root)
        self._open_root()
        self._real_root = os.path.realpath(self._root)
        self._real_prefix = self._real_root.rstrip(os.sep) + os.sep
        self._root_slash = self._root.rstrip("/") + "/"
        self._safe_dirs: set[str] = set()  # real (non-link) directories below the root

    # ----------------------------------------------------------------- opening
    def _open_root(self) -> None:
        root, mode = self._root, self._mode
        try:
            st = os.stat(root)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise_os_error(exc, root)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            raise StorageError(f"cannot open {root!r} as a directory map: it is not a directory")
        if st is None:
            if mode in ("r", "r+"):
                raise StorageNotFoundError(f"no such directory: {root!r} (mode {mode!r})")
            try:
                os.makedirs(root, exist_ok=True)
            except OSError as exc:
                raise_os_error(exc, root)
            return
        if mode == "w":
            self._empty_tree()
        elif mode == "w-":
            try:
                with os.scandir(root) as it:
                    occupied = any(True for _ in it)
            except OSError as exc:
                raise_os_error(exc, root)
            if occupied:
                raise ObjectExistsError(
                    f"cannot create {root!r} (mode 'w-'): the directory exists and is not empty"
                )

    def _empty_tree(self) -> None:
        self._safe_dirs = set()
        try:
            with os.scandir(self._root) as it:
                entries = list(it)
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
        except OSError as exc:
            raise_os_error(exc, self._root)

    # ------------------------------------------------------------------- paths
    @property
    def root(self) -> str:
        """Absolute path of the directory."""
        return self._root

    def _path(self, key: str) -> str:
        """Path of normalized ``key`` (or prefix); refuses reserved names and escapes."""
        if not key:
            return self._root
        if TEMP_PREFIX in key:
            for segment in key.split("/"):
                if segment.startswith(TEMP_PREFIX):
                    raise InvalidKeyError(
                        f"invalid key {key!r}: names starting with {TEMP_PREFIX!r} are "
                        "reserved for temporary files"
                    )
        # A normalized key has no empty, "." or ".." segment: joining is concatenation.
        path = self._root_slash + key
        cut = key.rfind("/")
        if cut < 0 or path[: len(self._root_slash) + cut] in self._safe_dirs:
            return path  # no parent directory, or all of them already checked
        # Only a symlink among the parent directories can lead out of the root; real
        # directories already seen are cached, so a hot key costs no extra syscall.
        # The leaf itself is guarded where it is opened (see _open_leaf).
        current = self._root
        for segment in key[:cut].split("/"):
            current = os.path.join(current, segment)
            if current in self._safe_dirs:
                continue
            try:
                mode = os.lstat(current).st_mode
            except (FileNotFoundError, NotADirectoryError):
                break
            except OSError as exc:
                raise_os_error(exc, f"{key!r} in {self._root!r}")
            if stat.S_ISLNK(mode):
                self._refuse_escape(key, path)
                break
            if not stat.S_ISDIR(mode):
                break
            self._safe_dirs.add(current)
        return path

    def _known_parent(self, path: str) -> bool:
        """Whether ``path``'s directory is the root or a real directory seen before."""
        directory = path[: path.rfind("/")] or "/"
        return directory == self._root or directory in self._safe_dirs

    def _refuse_escape(self, key: str, path: str) -> None:
        if not self._inside(path):
            raise StoragePermissionError(
                f"key {key!r} resolves to {os.path.realpath(path)!r}, outside the "
                f"map's root {self._root!r}; refusing to follow the symbolic link"
            )

    def _stat_leaf(self, key: str, path: str) -> os.stat_result:
        """``os.stat`` of ``key``'s file, refusing a leaf symlink out of the root."""
        st = os.stat(path, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            self._refuse_escape(key, path)
            st = os.stat(path)
        return st

    def _open_leaf(self, key: str, path: str) -> int:
        """``os.open`` the file of ``key`` read-only without following a leaf symlink
        out of the root (one syscall on the hot path)."""
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
        self._refuse_escape(key, path)  # a symlink leaf: allowed only inside the root
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self._real_root or real.startswith(self._real_prefix)

    def _visible(self, entry: os.DirEntry[str]) -> bool:
        """Whether a directory entry can be (part of) a key."""
        name = entry.name
        if name.startswith(TEMP_PREFIX) or name in (".", ".."):
            return False
        if "\\" in name or FORBIDDEN_CHARACTERS.search(name):
            return False
        return not (entry.is_symlink() and not self._inside(entry.path))

    def _has_file(self, directory: str) -> bool:
        """Whether some file (a key) lies anywhere below ``directory``."""
        seen: set[str] = set()
        stack = [directory]
        while stack:
            current = stack.pop()
            try:
                it = os.scandir(current)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise_os_error(exc, current)
            with it:
                for entry in it:
                    if not self._visible(entry):
                        continue
                    if entry.is_file():
                        return True
                    if entry.is_dir() and _first_visit(entry, seen):
                        stack.append(entry.path)
        return False

    # -------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        path = self._path(key)
        try:
            with open(self._open_leaf(key, path), "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")

    def _exists(self, key: str) -> bool:
        path = self._path(key)
        try:
            return stat.S_ISREG(self._stat_leaf(key, path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")

    def _check_leaf_rule(self, key: str) -> None:
        path = self._path(key)
        if self._known_parent(path):
            # Hot path (every chunk of a copy): the parent is a real directory, so no
            # parent holds content; one lstat of the leaf settles the rest.
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return
            except OSError as exc:
                raise_os_error(exc, f"{key!r} in {self._root!r}")
            if stat.S_ISREG(mode):
                return
        # A directory where the file should go, with content below it.
        if os.path.isdir(path) and self._has_file(path):
            raise ObjectExistsError(
                f"cannot write {key!r}: it is a prefix of existing keys in {self._root!r}"
            )
        # A file where a directory is needed: stop at the nearest existing directory.
        for parent in parent_keys(key):
            try:
                mode = os.stat(self._path(parent)).st_mode
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise_os_error(exc, f"{parent!r} in {self._root!r}")
            if stat.S_ISDIR(mode):
                return
            raise ObjectExistsError(
                f"cannot write {key!r}: {parent!r} holds content, and content-bearing "
                "keys are leaves"
            )

    def __setitem__(self, key: str, value: bytes | bytearray | memoryview) -> None:
        # As ZMap.__setitem__, but a contiguous buffer is written as it is: the write
        # is synchronous, so the copy as_bytes makes of a memoryview is not needed.
        nkey = normalize_key(key)
        self._check_writable(nkey)
        if not isinstance(value, bytes | bytearray) and not (
            isinstance(value, memoryview) and value.c_contiguous
        ):
            value = as_bytes(value, nkey)
        self._check_leaf_rule(nkey)
        self._store(nkey, value)  # type: ignore[arg-type]

    def _store(self, key: str, value: bytes) -> None:
        self._write(key, lambda fd: _write_all(fd, value))

    def copy_file(self, src: FileMap, key: str, *, atomic: bool = True) -> int:
        """Copy ``key`` of ``src`` to the same key here, kernel-side; return its size.

        Same checks as ``self[key] = src[key]``, but the bytes go from file to file
        with ``os.copy_file_range`` (``os.sendfile``, or a read/write loop, where the
        kernel refuses), never through a Python ``bytes``.

        With ``atomic=False`` a key that does not exist yet is created in place
        (``O_CREAT | O_EXCL``) instead of through a temporary file and a rename: one
        directory operation instead of two, which is most of the cost of a small
        chunk. Until the call returns a reader may see the file short, and a killed
        process may leave it short -- callers that use this (``copy_chunks``) write
        no metadata pointing at the key until every copy is done, and on resume
        recopy any file whose size differs from the source. A failed copy removes
        the file. An existing key is always replaced atomically.
        """
        nkey = normalize_key(key)
        self._check_writable(nkey)
        source = src._path(nkey)
        try:
            fd_in = src._open_leaf(nkey, source)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(nkey) from None
        except OSError as exc:
            raise_os_error(exc, f"{nkey!r} in {src._root!r}")
        try:
            st = os.fstat(fd_in)
            if not stat.S_ISREG(st.st_mode):
                raise KeyError(nkey)
            copied = [0]

            def fill(fd: int) -> None:
                copied[0] = _copy_fd(fd_in, fd, st.st_size)

            # In place, the leaf rule needs no check of its own: the parent is a known
            # real directory and O_EXCL finds anything already at the leaf.
            if atomic or not self._write_new(nkey, fill):
                self._check_leaf_rule(nkey)
                self._write(nkey, fill)
        finally:
            os.close(fd_in)
        return copied[0]

    def _write_new(self, key: str, fill: Callable[[int], object]) -> bool:
        """Create ``key`` in place with ``fill`` if it does not exist and its directory
        is known; ``False`` (nothing done) otherwise."""
        path = self._path(key)
        if not self._known_parent(path):
            return False
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except (FileExistsError, FileNotFoundError, NotADirectoryError):
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
                os.unlink(path)
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, f"{key!r} in {self._root!r}")
            raise
        return True

    def _write(self, key: str, fill: Callable[[int], object]) -> None:
        """Atomically make ``key`` hold what ``fill(fd)`` writes to a fresh file."""
        path = self._path(key)
        if self._known_parent(path):
            # Hot path: the directory exists; a directory at the leaf or a directory
            # that vanished since shows up as an error and takes the slow path.
            try:
                self._write_temp(os.path.dirname(path), path, fill)
                return
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                self._safe_dirs.discard(os.path.dirname(path))
            except OSError as exc:
                raise_os_error(exc, f"{key!r} in {self._root!r}")
        self._prepare_leaf(key, path)
        try:
            self._write_temp(os.path.dirname(path), path, fill)
        except IsADirectoryError as exc:
            raise ObjectExistsError(
                f"cannot write {key!r}: it became a directory in {self._root!r}"
            ) from exc
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        self._path(key)  # remember the parent directories now known to be real

    def _prepare_leaf(self, key: str, path: str) -> None:
        """Create the parent directories; remove an empty directory tree at the leaf."""
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)  # an empty directory tree (the leaf rule checked it)
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise ObjectExistsError(
                f"cannot write {key!r}: a parent is a file in {self._root!r}"
            ) from exc
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")

    @staticmethod
    def _write_temp(directory: str, path: str, fill: Callable[[int], object]) -> None:
        """Write a temporary file in ``directory`` with ``fill``, then move it to ``path``."""
        temp = os.path.join(directory, TEMP_PREFIX + secrets.token_hex(8))
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            try:
                fill(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def _remove(self, key: str) -> None:
        path = self._path(key)
        try:
            if os.path.isdir(path):
                raise KeyError(key)
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {self._root!r}")
        self._prune(os.path.dirname(path))

    def _prune(self, directory: str) -> None:
        """Remove ``directory`` and its ancestors while they are empty, up to the root."""
        root = self._root
        while len(directory) > len(root) and directory.startswith(root):
            try:
                os.rmdir(directory)
            except OSError:
                return
            self._safe_dirs.discard(directory)
            directory = os.path.dirname(directory)

    def _list(self, prefix: str) -> Iterator[str]:
        path = self._path(prefix)
        if prefix:
            try:
                mode = os.stat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return
            except OSError as exc:
                raise_os_error(exc, f"{prefix!r} in {self._root!r}")
            if stat.S_ISREG(mode):
                yield prefix
                return
            if not stat.S_ISDIR(mode):
                return
        seen: set[str] = set()
        stack = [(path, prefix)]
        while stack:
            directory, key = stack.pop()
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise_os_error(exc, directory)
            for entry in entries:
                if not self._visible(entry):
                    continue
                child = f"{key}/{entry.name}" if key else entry.name
                if entry.is_file():
                    yield child
                elif entry.is_dir() and _first_visit(entry, seen):
                    stack.append((entry.path, child))

    def _search(self, prefix: str) -> Iterable[str]:
        path = self._path(prefix)
        try:
            it = os.scandir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise_os_error(exc, f"{prefix!r} in {self._root!r}")
        names = []
        with it:
            for entry in it:
                if not self._visible(entry):
                    continue
                if entry.is_file() or (entry.is_dir() and self._has_file(entry.path)):
                    names.append(entry.name)
        return names

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return Path(self._root).as_uri(), {}

    # ----------------------------------------------------------- fast paths
    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read many keys with a plain loop (local files gain nothing from threads)."""
        out: dict[str, bytes] = {}
        for key in keys:
            with contextlib.suppress(KeyError):
                out[key] = self._load(normalize_key(key))
        return out

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key``, read without loading the whole file."""
        nkey = normalize_key(key)
        path = self._path(nkey)
        try:
            with open(self._open_leaf(nkey, path), "rb") as f:
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
            st = self._stat_leaf(nkey, self._path(nkey))
        except (FileNotFoundError, NotADirectoryError):
            raise KeyError(nkey) from None
        except OSError as exc:
            raise_os_error(exc, f"{nkey!r} in {self._root!r}")
        if not stat.S_ISREG(st.st_mode):
            raise KeyError(nkey)
        return st.st_size

    def clear(self) -> None:
        """Delete every key (and every directory) below the root."""
        self._check_writable()
        self._empty_tree()


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """``os.write`` until all of ``data`` is written (a write may be short)."""
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view) :]


def _copy_fd(fd_in: int, fd_out: int, size: int) -> int:
    """Copy the first ``size`` bytes of ``fd_in`` (fewer if it ends sooner) to ``fd_out``.

    ``size`` comes from ``fstat`` of the open file, so no final zero-length call is
    needed to find the end. Returns the bytes copied.
    """
    total = 0
    for kernel_copy in (_copy_file_range, _sendfile):
        try:
            while total < size and (n := kernel_copy(fd_in, fd_out, size - total)):
                total += n
            return total
        except OSError as exc:  # EXDEV on older kernels, ENOSYS, EINVAL: next method
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
    while total < size and (block := os.read(fd_in, min(size - total, 1 << 20))):
        _write_all(fd_out, block)
        total += len(block)
    return total


def _copy_file_range(fd_in: int, fd_out: int, count: int) -> int:
    return os.copy_file_range(fd_in, fd_out, count)


def _sendfile(fd_in: int, fd_out: int, count: int) -> int:
    return os.sendfile(fd_out, fd_in, None, count)


def _first_visit(entry: os.DirEntry[str], seen: set[str]) -> bool:
    """Guard against symlink loops: real directories are walked once."""
    if not entry.is_symlink():
        return True
    real = os.path.realpath(entry.path)
    if real in seen:
        return False
    seen.add(real)
    return True
