"""A zmap over any fsspec filesystem (``memory://``, ``file://``, ``gcs://``, ``http(s)://`` ...).

The map's keys are paths below one root path of the filesystem. ``search`` is one
``fs.ls(path, detail=True)``; fsspec's listing caches are invalidated for every path
this map writes or deletes, so a listing never misses a write made through the map.
Directories left empty by a delete are pruned, as the zmap contract requires.
``http(s)`` filesystems cannot write: they open read-only. On fsspec's local
filesystem only regular files are read: a FIFO or device named like a key is an
error naming it (fsspec would block opening a FIFO).

Leaf rule without a request per key (as :class:`~nczarr.maps.s3.S3Map`): ancestors
of keys the map wrote or listed are remembered as directories (a cache bounded by
the number of groups and arrays), so they need no ``info`` call; a map that created
or emptied its root (modes ``"w"``/``"w-"``, ``clear()``) knows every key below it and
needs no listing below a new key either; inside
:meth:`~nczarr.maps.base.ZMap.trusted_writes` nothing is probed.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import (
    MissingDependencyError,
    NCZarrError,
    ObjectExistsError,
    ReadOnlyError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
)
from ..keys import normalize_key, normalize_prefix, parent_keys
from .base import ZMap

__all__ = ["FsspecMap", "public_options"]

#: Protocols whose filesystems only read.
READ_ONLY_PROTOCOLS = frozenset({"http", "https"})

#: Storage option names that look like credentials; never shown by ``repr``/``url``.
_SECRET = re.compile(r"secret|password|passwd|token|credential|^key$|access_key|auth", re.I)


def public_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without credential-looking entries (recursing into nested dicts)."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if _SECRET.search(name):
            continue
        out[name] = public_options(value) if isinstance(value, dict) else value
    return out


def _url_to_fs(url_to_fs: Any, url: str, options: dict[str, Any]) -> tuple[Any, str]:
    """``fsspec.core.url_to_fs``, with its failures as nczarr errors naming the URL.

    A missing optional backend (``gcsfs`` for ``gs://``, ``adlfs`` for ``az://`` ...)
    is :class:`~nczarr.errors.MissingDependencyError` with fsspec's advice on what to
    install; a filesystem that connects when constructed (``ftp://``) and fails is a
    :class:`~nczarr.errors.StorageError`.
    """
    from .url import redact

    shown = redact(url)
    try:
        return url_to_fs(url, **options)
    except ImportError as exc:
        hint = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MissingDependencyError(
            f"cannot open {shown}: a package it needs is not installed: {hint}"
        ) from None
    except PermissionError as exc:
        raise StoragePermissionError(f"permission denied opening {shown}: {exc}") from exc
    except OSError as exc:
        raise StorageError(f"cannot open {shown}: {type(exc).__name__}: {exc}") from exc


class FsspecMap(ZMap):
    """A zmap whose keys are files below ``root`` of an fsspec filesystem.

    Parameters
    ----------
    url_or_fs
        A URL such as ``"memory://x"``, ``"file:///tmp/d"`` or ``"gcs://bucket/root"``,
        or an ``fsspec.AbstractFileSystem`` instance.
    root
        A path below the URL (or, with a filesystem instance, the root path in it,
        e.g. ``"bucket/root"``).
    mode
        As in :data:`~nczarr.maps.base.MODES`. ``"r"``/``"r+"`` need the root to
        exist (else :class:`~nczarr.errors.StorageNotFoundError`); ``"a"``, ``"w"`` and
        ``"w-"`` create it; ``"w"`` empties it; ``"w-"`` refuses a root holding keys.
        ``http(s)`` filesystems accept only ``"r"``.
    **storage_options
        Passed to the filesystem when ``url_or_fs`` is a URL. Options that look like
        credentials are kept out of ``repr``/``url``/``_describe``.
    """

    def __init__(
        self, url_or_fs: Any, root: str = "", mode: str = "r", **storage_options: Any
    ) -> None:
        super().__init__(mode)
        import fsspec
        from fsspec.core import url_to_fs

        if isinstance(url_or_fs, str):
            fs, path = _url_to_fs(url_to_fs, url_or_fs, storage_options)
            sub = normalize_prefix(root)
            if sub:
                path = f"{path.rstrip('/')}/{sub}" if path else sub
        elif isinstance(url_or_fs, fsspec.AbstractFileSystem):
            if storage_options:
                raise TypeError(
                    "storage options are given to the filesystem instance, not to FsspecMap: "
                    f"{sorted(storage_options)}"
                )
            fs, path = url_or_fs, url_or_fs._strip_protocol(root) if root else ""
            normalize_prefix(path)  # rejects '.', '..' and empty segments in the root
        else:
            raise TypeError(
                f"FsspecMap needs a URL or an fsspec filesystem, got {type(url_or_fs).__name__}"
            )
        self._fs = fs
        self._path = fs._strip_protocol(path).rstrip("/") if path else ""
        # Directory cache and ownership, see the module docstring.
        self._known_dirs: set[str] = set()
        self._owned = False
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        self._protocols = frozenset(protocols)
        if protocols & READ_ONLY_PROTOCOLS and mode != "r":
            raise ReadOnlyError(
                f"cannot open {self.url} with mode {mode!r}: http(s) filesystems are "
                "read-only, open with mode 'r'"
            )
        try:
            self._open()
        except NCZarrError:
            raise
        except OSError as exc:  # a filesystem that connects lazily (ftp, sftp ...)
            raise self._error(exc, "", "open") from exc

    # ------------------------------------------------------------------ plumbing
    @property
    def fs(self) -> Any:
        """The fsspec filesystem."""
        return self._fs

    def _full(self, key: str) -> str:
        if not key:
            return self._path
        return f"{self._path}/{key}" if self._path else key

    def _key_of(self, path: str) -> str:
        path = path.rstrip("/")
        if not self._path:
            return path.lstrip("/")
        return path[len(self._path) + 1 :]

    def _error(self, exc: OSError, key: str, action: str) -> Exception:
        where = self._fs.unstrip_protocol(self._full(key))
        if isinstance(exc, PermissionError):
            return StoragePermissionError(f"permission denied to {action} {where}: {exc}")
        return StorageError(f"cannot {action} {where}: {type(exc).__name__}: {exc}")

    def _invalidate(self, key: str) -> None:
        self._fs.invalidate_cache(self._full(key))
        for parent in parent_keys(key):
            self._fs.invalidate_cache(self._full(parent))
        self._fs.invalidate_cache(self._path)

    def _open(self) -> None:
        exists = self._path == "" or self._fs.exists(self._path)
        if not exists and self.mode in ("r", "r+"):
            raise StorageNotFoundError(
                f"cannot open {self.url} with mode {self.mode!r}: no such store"
            )
        if self.mode in ("a", "w", "w-") and self._path:
            try:
                self._fs.makedirs(self._path, exist_ok=True)
            except OSError as exc:
                raise self._error(exc, "", "create") from exc
        if self.mode == "w":
            self._clear_all()
        elif self.mode == "w-":
            for key in self._list(""):
                raise ObjectExistsError(
                    f"cannot create {self.url} with mode 'w-': it already holds keys (e.g. {key!r})"
                )
            self._owned = True

    # --------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        if "file" in self._protocols:
            self._check_regular(key)
        try:
            return self._fs.cat_file(self._full(key))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise self._error(exc, key, "read") from exc

    def _check_regular(self, key: str) -> None:
        """Refuse a local FIFO, socket or device at ``key`` (opening a FIFO blocks)."""
        try:
            mode = os.stat(self._full(key)).st_mode
        except OSError:
            return  # missing or unreadable: cat_file reports it as usual
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise StorageError(
                f"cannot read {key!r} in {self.url}: it is not a regular file "
                "(only regular files are keys)"
            )

    def _exists(self, key: str) -> bool:
        return bool(self._fs.isfile(self._full(key)))

    def _store(self, key: str, value: bytes) -> None:
        path = self._full(key)
        try:
            try:
                self._fs.pipe_file(path, value)
            except FileNotFoundError:
                self._fs.makedirs(self._fs._parent(path), exist_ok=True)
                self._fs.pipe_file(path, value)
        except OSError as exc:
            raise self._error(exc, key, "write") from exc
        finally:
            self._invalidate(key)
        self._known_dirs.discard(key)
        self._known_dirs.update(parent_keys(key))

    def _check_leaf_rule(self, key: str) -> None:
        """The base rule, skipping what the directory cache and ownership settle."""
        if key in self._known_dirs:
            super()._check_leaf_rule(key)  # a directory: fails, naming a key below it
            return
        for parent in parent_keys(key):
            if parent in self._known_dirs:
                continue
            if self._exists(parent):
                raise ObjectExistsError(
                    f"cannot write {key!r}: {parent!r} holds content, and content-bearing "
                    "keys are leaves"
                )
        if not self._owned and self._has_children(key):
            raise ObjectExistsError(
                f"cannot write {key!r}: it is a prefix of existing keys "
                f"(e.g. {next(iter(self._list_below(key)))!r})"
            )

    def _remove(self, key: str) -> None:
        if not self._exists(key):
            raise KeyError(key)
        try:
            self._fs.rm_file(self._full(key))
        except (FileNotFoundError, NotADirectoryError):
            raise KeyError(key) from None
        except OSError as exc:
            raise self._error(exc, key, "delete") from exc
        finally:
            self._invalidate(key)
        self._known_dirs.difference_update(parent_keys(key))
        self._prune(key)

    def _prune(self, key: str) -> None:
        """Remove the directories that deleting ``key`` left empty, nearest first."""
        for parent in parent_keys(key):
            path = self._full(parent)
            try:
                if self._fs.ls(path, detail=False):
                    return
                self._fs.rmdir(path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:  # a directory another writer just filled: keep it
                return
            finally:
                self._fs.invalidate_cache(path)

    def _list(self, prefix: str) -> Iterator[str]:
        path = self._full(prefix)
        try:
            found = self._fs.find(path, withdirs=False) if path else self._fs.find("")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise self._error(exc, prefix, "list") from exc
        for name in found:
            key = self._key_of(name)
            if key and (not prefix or key == prefix or key.startswith(prefix + "/")):
                yield key

    def _search(self, prefix: str) -> Iterable[str]:
        path = self._full(prefix)
        try:
            entries = self._fs.ls(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise self._error(exc, prefix, "list") from exc
        names = []
        base = path.rstrip("/")
        for entry in entries:
            name = entry["name"].rstrip("/")
            if name == base:  # ls of a file lists the file itself: a leaf has no children
                continue
            child = name.rsplit("/", 1)[-1]
            if child:
                names.append(child)
                if entry.get("type") == "directory":
                    self._known_dirs.add(f"{prefix}/{child}" if prefix else child)
        return names

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """``(key, size)`` below ``prefix`` from one ``find(detail=True)`` (no call per key)."""
        nprefix = normalize_prefix(prefix)
        path = self._full(nprefix)
        try:
            found = self._fs.find(path, withdirs=False, detail=True) if path else {}
        except FileNotFoundError:
            return
        except OSError as exc:
            raise self._error(exc, nprefix, "list") from exc
        if not path:
            yield from super().list_sizes(prefix)
            return
        for name, info in found.items():
            key = self._key_of(name)
            if key and (not nprefix or key == nprefix or key.startswith(nprefix + "/")):
                yield key, int(info.get("size") or 0)

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return self._fs.unstrip_protocol(self._path), public_options(dict(self._fs.storage_options))

    # ------------------------------------------------------------- fast paths
    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key``, read with one ranged ``cat_file``."""
        nkey = normalize_key(key)
        if start < 0 or (length is not None and length <= 0):
            stop = None if length is None else start + length
            first, end, _ = slice(start, stop).indices(self.getsize(nkey))
            if end <= first:
                return b""
            start, length = first, end - first
        end = None if length is None else start + length
        try:
            data = self._fs.cat_file(self._full(nkey), start=start, end=end)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise KeyError(nkey) from None
        except OSError as exc:
            raise self._error(exc, nkey, "read") from exc
        if length is not None and len(data) > length:
            # An HTTP server that ignores Range sends the whole object: cut it here.
            data = data[start:end]
        return data

    def getsize(self, key: str) -> int:
        """Size of ``key`` in bytes, from one ``info`` call."""
        nkey = normalize_key(key)
        try:
            info = self._fs.info(self._full(nkey))
        except (FileNotFoundError, NotADirectoryError):
            raise KeyError(nkey) from None
        except OSError as exc:
            raise self._error(exc, nkey, "stat") from exc
        if info.get("type") != "file":
            raise KeyError(nkey)
        return int(info["size"])

    def clear(self) -> None:
        """Delete every key (and the directories they leave empty), keeping the root."""
        self._check_writable()
        self._clear_all()

    def _clear_all(self) -> None:
        try:
            children = self._fs.ls(self._path, detail=False) if self._path else []
        except FileNotFoundError:
            children = []
        if not self._path:
            for key in list(self._list("")):
                self._remove(key)
            self._known_dirs.clear()
            self._owned = True
            return
        for child in children:
            if child.rstrip("/") == self._path:
                continue
            try:
                self._fs.rm(child, recursive=True)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise self._error(exc, self._key_of(child), "delete") from exc
        self._fs.invalidate_cache(self._path)
        self._known_dirs.clear()
        self._owned = True

    # ------------------------------------------------------------- pickling
    def __reduce__(self) -> tuple[Any, ...]:
        mode = "r+" if self._mode in ("w", "w-") else self._mode
        return (_reopen_fsspec, (self._fs, self._path, mode))


def _reopen_fsspec(fs: Any, path: str, mode: str) -> FsspecMap:
    return FsspecMap(fs, path, mode=mode)
