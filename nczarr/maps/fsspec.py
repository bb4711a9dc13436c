"""A zmap over any fsspec filesystem (``memory://``, ``file://``, ``gcs://``, ``az://`` ...).

The map's keys are paths below one root path of the filesystem. ``search`` is one
``fs.ls(path, detail=True)``; fsspec's listing caches are invalidated for every path
this map writes or deletes, so a listing never misses a write made through the map.
On filesystems with real directories, those left empty by a delete are pruned, as the
zmap contract requires; object stores (S3, GCS, Azure) have none to create or prune.
``http(s)`` filesystems cannot write: they open read-only. On fsspec's local
filesystem only regular files are read: a FIFO or device named like a key is an
error naming it (fsspec would block opening a FIFO).

Remote filesystems are fsspec ``AsyncFileSystem``\\ s: ``getitems`` and ``setitems``
then run their requests concurrently on the filesystem's event loop (at most
:data:`MAX_CONCURRENCY` at once) instead of one after another, and reads can be awaited
(:mod:`nczarr.maps.fsspecasync`).

The leaf rule costs no request per key where the map knows its tree (see
:mod:`nczarr.maps.leafcache`), and none at all inside
:meth:`~nczarr.maps.base.ZMap.trusted_writes`.

Every failure of the filesystem goes through :meth:`FsspecMap._failure`, which sorts
it into the zmap's errors; :class:`~nczarr.maps.s3.S3Map` refines it for S3.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from ..errors import (
    InvalidURLError,
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
from .credentials import public_options
from .fsspecasync import AsyncReads
from .fsspecbulk import MAX_CONCURRENCY, BulkRequests
from .leafcache import KnownTree
from .location import Location
from .mapcore import ListedKeys
from .url import NCZarrURL

__all__ = ["FsspecMap", "MAX_CONCURRENCY", "open_url"]

T = TypeVar("T")

#: Protocols whose filesystems only read.
READ_ONLY_PROTOCOLS = frozenset({"http", "https"})

#: Protocols of object stores: no directories to create before a write or prune after
#: a delete (each would be a request).
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss"})


_NOT_FOUND = (FileNotFoundError, IsADirectoryError, NotADirectoryError)


def _url_to_fs(url_to_fs: Any, url: str, options: dict[str, Any]) -> tuple[Any, str]:
    """``fsspec.core.url_to_fs``, with its failures as nczarr errors naming the URL.

    A missing optional backend (``gcsfs`` for ``gs://``, ``adlfs`` for ``az://`` ...)
    is :class:`~nczarr.errors.MissingDependencyError` with fsspec's advice on what to
    install; a filesystem that connects when constructed (``ftp://``) and fails is a
    :class:`~nczarr.errors.StorageError`.
    """
    from .credentials import redact

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


#: fsspec protocols served on this machine without a network round trip per request.
_IN_PROCESS = frozenset({"file", "local", "memory"})
#: fsspec protocols whose URLs name a place inside another file: not a location a
#: reader elsewhere can open (:meth:`FsspecMap.chunk_location`).
_NESTED_PROTOCOLS = frozenset({"zip", "tar", "libarchive", "reference", "blockcache"})


class FsspecMap(AsyncReads, BulkRequests, ZMap):
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

    kind = "an fsspec store"
    supports_shared_writes = True

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
        self._tree = KnownTree()
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        self._protocols = frozenset(protocols)
        self._object_store = bool(protocols & OBJECT_STORES)
        self.round_trips = not protocols & _IN_PROCESS
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
            raise self._failure(exc, "open", "", missing=False) from exc

    # ------------------------------------------------------------------ plumbing
    def chunk_location(self, key: str) -> tuple[str] | tuple[str, int, int] | None:
        """``(url,)`` of ``key``'s object, or None on a filesystem whose URLs name a
        place inside another file (zip, tar, reference ...): no reader can open those."""
        protocols = self.fs.protocol
        protocols = {protocols} if isinstance(protocols, str) else set(protocols)
        if protocols & _NESTED_PROTOCOLS:
            return None
        return (f"{self.url.rstrip('/')}/{normalize_key(key)}",)

    @property
    def fs(self) -> Any:
        """The fsspec filesystem."""
        return self._fs

    def location(self) -> Location:
        """The filesystem's protocol and the root path in it (a local path for ``file``)."""
        fs = self._fs
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        path = self.url.split("://", 1)[-1]
        if protocol in ("file", "local"):
            return Location("local", os.path.abspath(path))
        if protocol == "memory":
            return Location("memory", path.strip("/"))
        return Location(protocol, path.rstrip("/"))

    def _full(self, key: str) -> str:
        if not key:
            return self._path
        return f"{self._path}/{key}" if self._path else key

    def _key_of(self, path: str) -> str:
        path = path.rstrip("/")
        if not self._path:
            return path.lstrip("/")
        return path[len(self._path) + 1 :]

    def _where(self, key: str) -> str:
        """The URL of ``key`` as error messages show it."""
        return self._fs.unstrip_protocol(self._full(key))

    def _failure(
        self, exc: BaseException, action: str, key: str, missing: bool = True
    ) -> Exception:
        """The zmap error for ``exc``, raised when ``action`` on ``key`` failed.

        With ``missing``, a not-found is ``KeyError(key)``; backends refine the rest.
        """
        if missing and isinstance(exc, _NOT_FOUND):
            return KeyError(key)
        where = self._where(key)
        if isinstance(exc, PermissionError):
            return StoragePermissionError(f"permission denied to {action} {where}: {exc}")
        return StorageError(f"cannot {action} {where}: {type(exc).__name__}: {exc}")

    def _call(self, action: str, key: str, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """``fn(*args, **kw)``, its failure sorted by :meth:`_failure`."""
        try:
            return fn(*args, **kw)
        except (KeyError, NCZarrError, NotImplementedError):
            raise
        except Exception as exc:
            raise self._failure(exc, action, key) from exc

    async def _acall(self, action: str, key: str, coro: Awaitable[T]) -> T:
        """Await ``coro``, its failure sorted by :meth:`_failure`."""
        try:
            return await coro
        except (KeyError, NCZarrError, NotImplementedError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise self._failure(exc, action, key) from exc

    def _run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run coroutine function ``fn(*args)`` on the filesystem's event loop."""
        from fsspec.asyn import sync

        return sync(self._fs.loop, fn, *args)

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
        if self.mode in ("a", "w", "w-") and self._path and not self._object_store:
            self._call("create", "", self._fs.makedirs, self._path, exist_ok=True)
        if self.mode == "w":
            self._clear_all()
        elif self.mode == "w-":
            for key in self._list(""):
                raise ObjectExistsError(
                    f"cannot create {self.url} with mode 'w-': it already holds keys (e.g. {key!r})"
                )
            self._tree.own_all()

    # --------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        if "file" in self._protocols:
            self._check_regular(key)
        return self._call("read", key, self._fs.cat_file, self._full(key))

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
                if self._object_store:
                    raise
                self._fs.makedirs(self._fs._parent(path), exist_ok=True)
                self._fs.pipe_file(path, value)
        except Exception as exc:
            raise self._failure(exc, "write", key, missing=False) from exc
        finally:
            self._invalidate(key)
        self._tree.wrote(key)

    def _check_leaf_rule(self, key: str) -> None:
        """The base rule, skipping what :class:`~nczarr.maps.leafcache.KnownTree` settles."""
        if self._tree.settled(key):
            return
        # a known directory fails on its children; other known directories need no HEAD
        self._probe_leaf_rule(key, self._tree.unknown_ancestors(key))

    def _remove(self, key: str) -> None:
        if not self._exists(key):
            raise KeyError(key)
        self._delete(key)

    def _delete(self, key: str) -> None:
        """Delete ``key`` (known to exist, or on a store that deletes an absent object
        silently), keeping the caches and the known tree."""
        try:
            self._call("delete", key, self._fs.rm_file, self._full(key))
        finally:
            self._invalidate(key)
        self._tree.deleted(key)
        if not self._object_store:
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

    def _entries(self, prefix: str) -> Iterator[tuple[str, int]]:
        """``(key, size)`` of every key at or below ``prefix``, from one
        ``find(detail=True)`` (no call per key); backends may stream it instead."""
        try:
            found = self._fs.find(self._full(prefix), withdirs=False, detail=True)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._failure(exc, "list", prefix, missing=False) from exc
        for name, info in found.items():
            key = self._key_of(name)
            if key and (not prefix or key == prefix or key.startswith(prefix + "/")):
                # fsspec's find on a file gives it without details: ask for its size
                yield key, int(info["size"]) if "size" in info else self.getsize(key)

    def _list(self, prefix: str) -> Iterator[str]:
        return (key for key, _ in self._list_sized(prefix))

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """``(key, size)`` at or below ``prefix``, sizes from the listing itself."""
        return self._entries(normalize_prefix(prefix))

    def list_reading(self, wanted: Mapping[str, int | None]) -> tuple[list[str], dict[str, bytes]]:
        """Every key, with its size from the same listing (:class:`ListedKeys`: a
        combine's server-side copies then ask no size), and the ``wanted`` objects."""
        keys = ListedKeys.sized(dict(self._list_sized("")))
        return keys, self.read_wanted(wanted)

    def _list_sized(self, prefix: str) -> Iterator[tuple[str, int]]:
        """:meth:`_list` with each key's size."""
        empty = True
        for entry in self._entries(prefix):
            empty = False
            yield entry
        if empty:
            self._tree.own_below(prefix)

    def _search(self, prefix: str) -> Iterable[str]:
        path = self._full(prefix)
        try:
            entries = self._ls(path)
        except NCZarrError:
            raise
        except _NOT_FOUND:
            return []
        except Exception as exc:
            raise self._failure(exc, "list", prefix, missing=False) from exc
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
                    self._tree.saw_dirs(f"{prefix}/{child}" if prefix else child)
        if names and prefix:
            self._tree.saw_dirs(prefix, *parent_keys(prefix))
        return names

    def _ls(self, path: str) -> list[dict[str, Any]]:
        """One level of ``path``, as ``fs.ls(path, detail=True)`` gives it."""
        return self._fs.ls(path, detail=True)

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return self._fs.unstrip_protocol(self._path), public_options(dict(self._fs.storage_options))

    # ------------------------------------------------------------- bulk & fast paths
    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key``, read with one ranged ``cat_file``.

        A suffix (negative ``start``, no ``length``) is one request too, where the
        filesystem supports it (S3, GCS, HTTP, local).
        """
        nkey = normalize_key(key)
        if length is not None and (length <= 0 or start < 0):
            # A window counted from the end, or an empty one: resolve it against the size
            # exactly as Python slicing does, then read just that window.
            first, end, _ = slice(start, start + length).indices(self.getsize(nkey))
            if end <= first:
                return b""
            start, length = first, end - first
        end = None if length is None else start + length
        try:
            data = self._call(
                "read", nkey, self._fs.cat_file, self._full(nkey), start=start, end=end
            )
        except StorageError:
            # Some services refuse a range starting at or past the end (S3's
            # InvalidRange) where Python slicing gives b"": tell the two apart.
            if start >= 0 and start >= self.getsize(nkey):
                return b""
            raise
        if length is not None and len(data) > length:
            # An HTTP server that ignores Range sends the whole object: cut it here.
            data = data[start:end]
        return data

    def getsize(self, key: str) -> int:
        """Size of ``key`` in bytes, from one ``info`` call."""
        nkey = normalize_key(key)
        info = self._call("stat", nkey, self._fs.info, self._full(nkey))
        if info.get("type") != "file":
            raise KeyError(nkey)
        return int(info["size"])

    def clear(self) -> None:
        """Delete every key (and the directories they leave empty), keeping the root."""
        self._check_writable()
        self._clear_all()

    def _clear_all(self) -> None:
        if not self._path:
            for key in list(self._list("")):
                self._remove(key)
            self._tree.own_all()
            return
        try:
            children = self._fs.ls(self._path, detail=False)
        except FileNotFoundError:
            children = []
        for child in children:
            if child.rstrip("/") == self._path:
                continue
            try:
                self._fs.rm(child, recursive=True)
            except FileNotFoundError:
                pass
            except Exception as exc:
                raise self._failure(exc, "delete", self._key_of(child), missing=False) from exc
        self._fs.invalidate_cache(self._path)
        self._tree.own_all()

    # ------------------------------------------------------------- pickling
    def __reduce__(self) -> tuple[Any, ...]:
        mode = "r+" if self._mode in ("w", "w-") else self._mode
        return (_reopen_fsspec, (self._fs, self._path, mode))


def _reopen_fsspec(fs: Any, path: str, mode: str) -> FsspecMap:
    return FsspecMap(fs, path, mode=mode)


def open_url(url: NCZarrURL, mode: str, storage_options: dict[str, Any]) -> FsspecMap:
    """The map a URL of any fsspec protocol names (the registry's fallback opener,
    :mod:`nczarr.maps.open`); an unknown protocol is an :class:`InvalidURLError`."""
    from fsspec.registry import known_implementations, registry

    if url.storage not in known_implementations and url.storage not in registry:
        raise InvalidURLError(
            f"unknown protocol {url.storage!r} in {str(url)!r}: not an fsspec protocol"
        )
    return FsspecMap(url.fsspec_url, mode=mode, **storage_options)
