"""The zmap contract: a ``MutableMapping[str, bytes]`` over a tree of keys, plus ``search``.

A *zmap* is the storage abstraction of netcdf-c's NCZarr (``zmap.h``) and the
key/value model of the NCZarr storage spec:

* Keys are ``/``-separated paths relative to the map's root. A leading ``/`` is
  accepted and means the same key, so ``"/g/.zattrs" == "g/.zattrs"``. Every key is
  checked by :func:`normalize_key`.
* Only *content-bearing* objects exist, and they are always leaves: a key holding
  content is never a prefix (by whole segments) of another key.
* :meth:`ZMap.search` lists the immediate child names below a prefix that lead to
  stored objects; it is all a reader of pure Zarr needs to walk a hierarchy.

Backends implement five primitives (``_load``, ``_store``, ``_remove``,
``_list`` and ``_describe``); everything else has a correct default here and may be
overridden for speed.

What callers need to know about a backend is asked of the map, never decided by its
class (as zarr's ``Store.supports_*``): :attr:`ZMap.kind`, :meth:`ZMap.location`,
:attr:`ZMap.supports_shared_writes`, :attr:`ZMap.blocking_io`,
:meth:`ZMap.copy_support` / :meth:`ZMap.copy_from`, :meth:`ZMap.remove_temporaries`,
:meth:`ZMap.describe`, :meth:`ZMap.same_storage` and :meth:`ZMap.reopen`. Each has a
safe default here; a backend overrides what it can do better.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from ..errors import ObjectExistsError, ReadOnlyError
from ..keys import normalize_key, normalize_prefix, parent_keys
from .common import (
    MODES,
    NOT_SUPPORTED,
    CopySupport,
    NotSupportedType,
    as_bytes,
    check_mode,
)
from .location import Location

__all__ = [
    "ZMap",
    "MODES",
    "NOT_SUPPORTED",
    "CopySupport",
    "NotSupportedType",
    "as_bytes",
    "check_mode",
]


class ZMap(MutableMapping[str, bytes], ABC):
    """Abstract zmap: a mutable mapping of normalized keys to ``bytes`` with ``search``.

    Contract (tested once, for every backend, in ``tests/test_maps_conformance.py``):

    * ``m[key]`` returns ``bytes``; a missing key raises ``KeyError(key)`` and only a
      genuine not-found does. Permission and network failures surface as
      :class:`~nczarr.errors.StoragePermissionError` / :class:`~nczarr.errors.StorageError`.
    * ``m[key] = value`` accepts any bytes-like value. Setting ``"a/b"`` while ``"a"``
      holds content, or ``"a"`` while ``"a/b"`` exists, raises
      :class:`~nczarr.errors.ObjectExistsError` and changes nothing.
    * ``search(prefix)`` returns the sorted, unique names ``n`` such that ``prefix/n``
      is a key or a whole-segment prefix of a key. ``""`` and ``"/"`` mean the root;
      a prefix that is a leaf or that does not exist gives ``[]``. Deleting keys leaves
      no empty "directories" behind.
    * Iteration yields every key lazily; ``len`` counts them.
    * A map opened with mode ``"r"`` raises :class:`~nczarr.errors.ReadOnlyError` on
      any write. ``"r+"``/``"a"`` read and write existing content, ``"w"`` creates or
      truncates, ``"w-"`` creates and fails if the store already holds keys.
    * Maps pickle by location and options and reopen on unpickle (a ``"w"`` map
      reopens as ``"r+"``, so unpickling never truncates).

    Trusted writes: the leaf rule costs a remote map requests per key (a listing
    below the key, a HEAD of unknown ancestors). A writer that knows its keys form a
    valid tree -- a converter writing a planned set of keys into a target it verified
    empty, or resuming its own interrupted run -- says so with
    ``with m.trusted_writes(): ...``; inside the block ``m[key] = value`` (and
    ``setitems``/``copy_from``) may skip the per-key leaf probes. The default is to
    check every key; a map whose check is free (memory, zip index, a local ``lstat``)
    may keep checking. The promise covers every write through the map while the
    block is open, from any thread; breaking it can store a key that is both content
    and a prefix, which no reader accepts. Trust is not pickled: a process that
    unpickles a map opens its own block.
    """

    #: A short public description of the storage kind, for messages ("a directory").
    kind: str = "a store"
    #: Whether several processes may write into the store at once (a cluster's workers).
    supports_shared_writes: bool = False
    #: Whether calls block on I/O (files, network), so an event loop should run them in
    #: a worker thread; ``False`` for maps whose calls are cheap or serialized on one lock.
    blocking_io: bool = True

    def __init__(self, mode: str = "r") -> None:
        self._mode = check_mode(mode)
        self._closed = False
        self._trusted = 0
        self._trust_lock = threading.Lock()

    # ------------------------------------------------------------------ primitives
    @abstractmethod
    def _load(self, key: str) -> bytes:
        """Return the content of normalized ``key``; raise ``KeyError(key)`` if absent."""

    @abstractmethod
    def _store(self, key: str, value: bytes) -> None:
        """Write ``value`` at normalized ``key`` (leaf rule and mode already checked)."""

    @abstractmethod
    def _remove(self, key: str) -> None:
        """Delete normalized ``key``; raise ``KeyError(key)`` if absent."""

    @abstractmethod
    def _list(self, prefix: str) -> Iterator[str]:
        """Yield every stored key at or below normalized ``prefix`` (``""`` = all keys).

        "Below" is by whole segments: ``_list("a")`` yields ``a`` and ``a/...`` but
        never ``ab``.
        """

    @abstractmethod
    def _describe(self) -> tuple[str, dict[str, Any]]:
        """``(location, options)``: a credential-free URL and the options to reopen with.

        Used for ``repr``, ``==`` and pickling (``type(self)(location, mode=..., **options)``
        must reopen the same store).
        """

    # ------------------------------------------------------------ derived defaults
    def _exists(self, key: str) -> bool:
        """Whether normalized ``key`` holds content. Override when a HEAD is cheaper."""
        try:
            self._load(key)
        except KeyError:
            return False
        return True

    def _search(self, prefix: str) -> Iterable[str]:
        """Child names under normalized ``prefix``; override with a one-level listing."""
        cut = len(prefix) + 1 if prefix else 0
        for key in self._list(prefix):
            if key == prefix:
                continue
            yield key[cut:].split("/", 1)[0]

    def _has_children(self, key: str) -> bool:
        for _ in self._list_below(key):
            return True
        return False

    def _list_below(self, key: str) -> Iterator[str]:
        for k in self._list(key):
            if k != key:
                yield k

    def _check_leaf_rule(self, key: str) -> None:
        """Raise ObjectExistsError if writing ``key`` would break the leaf rule."""
        self._probe_leaf_rule(key, parent_keys(key))

    def _probe_leaf_rule(self, key: str, ancestors: Iterable[str]) -> None:
        """Raise ObjectExistsError if one of ``ancestors`` of ``key`` holds content, or
        some stored key lies below ``key`` (maps that know part of their tree pass
        only the ancestors they do not know)."""
        for parent in ancestors:
            if self._exists(parent):
                raise ObjectExistsError(
                    f"cannot write {key!r}: {parent!r} holds content, and content-bearing "
                    "keys are leaves"
                )
        if self._has_children(key):
            raise ObjectExistsError(
                f"cannot write {key!r}: it is a prefix of existing keys "
                f"(e.g. {next(iter(self._list_below(key)))!r})"
            )

    def _check_writable(self, key: str | None = None) -> None:
        if self._closed:
            raise ValueError(f"I/O operation on closed map {self!r}")
        if self.read_only:
            what = f"write {key!r} to" if key else "modify"
            raise ReadOnlyError(f"cannot {what} {self!r}: opened read-only (mode 'r')")

    # ----------------------------------------------------------- mapping protocol
    def __getitem__(self, key: str) -> bytes:
        return self._load(normalize_key(key))

    def __setitem__(self, key: str, value: bytes | bytearray | memoryview) -> None:
        nkey = normalize_key(key)
        self._check_writable(nkey)
        data = as_bytes(value, nkey)
        if not self._trusted:
            self._check_leaf_rule(nkey)
        self._store(nkey, data)

    def __delitem__(self, key: str) -> None:
        nkey = normalize_key(key)
        self._check_writable(nkey)
        self._remove(nkey)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return self._exists(normalize_key(key))

    def __iter__(self) -> Iterator[str]:
        return self._list("")

    def __len__(self) -> int:
        return sum(1 for _ in self._list(""))

    # ---------------------------------------------------------------- extensions
    @property
    def mode(self) -> str:
        """The mode the map was opened with."""
        return self._mode

    @property
    def read_only(self) -> bool:
        """True when writes raise :class:`~nczarr.errors.ReadOnlyError`."""
        return self._mode == "r"

    @contextmanager
    def trusted_writes(self) -> Iterator[ZMap]:
        """A block in which the caller vouches that its writes keep the leaf rule.

        Use it only when the keys written form a valid tree (no key is a prefix of
        another) *and* the target held nothing they could clash with: it was verified
        empty, or holds only an earlier run of the same writes. Blocks nest. See the
        class docstring for what maps do with it.
        """
        self._check_writable()
        with self._trust_lock:
            self._trusted += 1
        try:
            yield self
        finally:
            with self._trust_lock:
                self._trusted -= 1

    @property
    def trusting(self) -> bool:
        """Whether a :meth:`trusted_writes` block is open on this map."""
        return self._trusted > 0

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """``(key, size)`` for every stored key at or below ``prefix``, lazily.

        The default asks :meth:`getsize` per key; maps whose listing carries sizes
        (S3, most fsspec filesystems) override it so a copier needs no request per key.
        """
        for key in self._list(normalize_prefix(prefix)):
            try:
                yield key, self.getsize(key)
            except KeyError:  # deleted between listing and asking
                continue

    def search(self, prefix: str = "") -> list[str]:
        """Sorted unique names ``n`` such that ``prefix/n`` is, or leads to, a stored key.

        ``""`` and ``"/"`` mean the root. A prefix that is itself a leaf, or that does
        not exist, gives ``[]`` (netcdf-c's zmap search, zarr's ``list_dir``).
        """
        return sorted(set(self._search(normalize_prefix(prefix))))

    def keys_below(self, prefix: str = "") -> Iterator[str]:
        """Every stored key at or below ``prefix`` (whole segments), lazily."""
        return self._list(normalize_prefix(prefix))

    def keys_below_streamed(self, prefix: str = "") -> Iterator[str]:
        """:meth:`keys_below` for a caller that only reads while it lists: maps that
        can list without holding a whole listing in memory do so (a directory read
        as it is consumed); keys written or deleted meanwhile may or may not be
        listed. The default is :meth:`keys_below`."""
        return self.keys_below(prefix)

    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read many keys at once; missing keys are omitted from the result.

        The default reads them with a small thread pool, which is what network
        backends need; local backends may override with a plain loop.
        """
        wanted = list(keys)
        normalized = [normalize_key(k) for k in wanted]

        def one(nkey: str) -> bytes | None:
            try:
                return self._load(nkey)
            except KeyError:
                return None

        with ThreadPoolExecutor(max_workers=min(16, max(1, len(normalized)))) as pool:
            values = list(pool.map(one, normalized))
        return {k: v for k, v in zip(wanted, values, strict=True) if v is not None}

    def declared_size(self, key: str) -> int | None:
        """The size the object at ``key`` declares, when the map knows it without reading
        the object (a zip member's central-directory entry); None when it does not (or
        there is no such object). A reader with a size limit refuses a bigger object
        before asking for any of its bytes."""
        return None

    def getitems_capped(self, keys: Iterable[str], cap: int) -> dict[str, bytes]:
        """Like :meth:`getitems`, but read at most ``cap`` bytes of each value.

        A longer object comes back cut to its first ``cap`` bytes, as ``file.read(cap)``
        would give it, so a caller that asks for ``limit + 1`` bytes can tell an object
        over its limit without this map holding (or inflating) more than that.
        File and zip maps stop reading or decompressing at ``cap``; the default here
        reads whole values.
        """
        if cap < 0:
            raise ValueError(f"cap must be >= 0, got {cap}")
        return {k: v[:cap] for k, v in self.getitems(keys).items()}

    def setitems(self, items: Mapping[str, bytes]) -> None:
        """Write many keys; same checks as ``m[k] = v`` for each."""
        for key, value in items.items():
            self[key] = value

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key`` (``length=None``: to the end).

        ``start`` may be negative (from the end, with ``length=None``: a suffix).
        Backends that can read a range without the whole object override this.
        """
        data = self[key]
        if length is None:
            return data[start:]
        return data[start : start + length]

    def getsize(self, key: str) -> int:
        """Size in bytes of the object at ``key`` (``KeyError`` if absent)."""
        return len(self[key])

    def clear(self) -> None:
        """Delete every key (faster than the MutableMapping default on most backends)."""
        self._check_writable()
        for key in list(self._list("")):
            self._remove(key)

    def flush(self) -> None:
        """Make pending writes durable (zip archives are rewritten here)."""

    def close(self) -> None:
        """Flush and release resources; further writes raise."""
        if not self._closed:
            self.flush()
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> ZMap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- capabilities
    def location(self) -> Location:
        """Where the storage really lives, for overlap checks (two names of one store,
        or one store inside another). The default is the map's URL."""
        return Location("url", self.url.rstrip("/"))

    def copy_support(self, other: ZMap) -> CopySupport | None:
        """How :meth:`copy_from` can copy objects of ``other`` without the caller
        reading them (see :data:`CopySupport`), or ``None``: it cannot."""
        return None

    def copy_from(
        self,
        other: ZMap,
        src_key: str,
        dst_key: str,
        size: int | None = None,
        *,
        atomic: bool = True,
    ) -> int | NotSupportedType | None:
        """Copy ``other[src_key]`` to ``self[dst_key]`` the map's own way; return the
        bytes copied (``None`` if not known), or :data:`NOT_SUPPORTED` (the default):
        nothing was done and the caller copies the bytes itself.

        ``size`` is the source object's size if a listing gave it. With
        ``atomic=False`` a map may create a new object in place, visible short until
        the call returns (a chunk copier that writes metadata last and resumes by size
        allows it). A missing ``src_key`` raises ``KeyError(src_key)``.
        """
        return NOT_SUPPORTED

    def copy_many(
        self, other: ZMap, keys: Iterable[str]
    ) -> Iterator[tuple[str, int | NotSupportedType | None]]:
        """``(key, copy_from(other, key, key, atomic=False))`` for each of ``keys``, in
        order, lazily (the caller handles each result before the next copy starts).

        A chunk copier's loop over :meth:`copy_from`; a map may override it to pay
        per-directory work once per run of keys (a directory map does)."""
        for key in keys:
            yield key, self.copy_from(other, key, key, None, atomic=False)

    def copy_chunk_to(self, dst: ZMap, key: str) -> int | NotSupportedType:
        """Write ``self[key]`` into ``dst`` the source's own way (a netCDF file source
        copies a byte range of its file kernel-side, :meth:`copy_range`); return the
        bytes written, or :data:`NOT_SUPPORTED` (the default): the caller copies."""
        return NOT_SUPPORTED

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
        then ``tail``, without the caller reading them; return the bytes written, or
        :data:`NOT_SUPPORTED` (the default): the caller writes the bytes itself."""
        return NOT_SUPPORTED

    def file_format(self) -> Any | None:
        """What a map serving a whole dataset file is (a netCDF file,
        :mod:`nczarr.ncfile`): its ``FormatInfo``, read from the file's own header, not
        from metadata objects. ``None`` (the default): a store of metadata objects."""
        return None

    @property
    def reencoded(self) -> Mapping[str, str]:
        """Key prefixes of arrays whose chunks this map serves re-encoded, and why
        (a netCDF file source re-encodes what no Zarr codec decodes); none by default."""
        return {}

    def reencodes(self, key: str) -> bool:
        """Whether ``self[key]`` is made by encoding decoded values again rather than
        served as stored (a chunk of one of :attr:`reencoded`'s arrays; with an HDF5
        filter mask, only some of an array's chunks are). ``convert`` counts these in
        ``report.chunks_reencoded``. False by default."""
        return False

    def chunk_location(self, key: str) -> tuple[str] | tuple[str, int, int] | None:
        """Where a reader without nczarr finds the bytes of ``self[key]``: ``(url,)``,
        the whole object; ``(url, offset, length)``, a byte range of ``url``; ``None``
        (the default), nowhere it can range into (reference sets inline or refuse)."""
        return None

    def chunk_locations(
        self, keys: Iterable[str]
    ) -> list[tuple[str] | tuple[str, int, int] | None]:
        """:meth:`chunk_location` of many keys, in order. ``keys`` are normalized keys
        as this map lists them (not normalized again). Maps override it to answer a
        batch without per-key work: a reference set asks it of every chunk."""
        return [self.chunk_location(key) for key in keys]

    def unreferenceable_reason(self) -> str:
        """Why an object :meth:`chunk_location` gives no place for cannot be pointed at."""
        return "not a verbatim byte range of the source (re-encoded or padded by it)"

    def session(self) -> AbstractContextManager[object]:
        """A block (one convert's copy) during which the map may keep resources across
        calls, e.g. a directory map its verified directories open. Nothing by default."""
        return nullcontext()

    def remove_temporaries(self) -> int:
        """Delete what killed writes of this map left behind (temporary files);
        return how many were removed. Maps whose writes leave nothing return 0."""
        return 0

    def describe(self) -> tuple[str, dict[str, Any]]:
        """``(location, options)``: a credential-free URL and the options to reopen with."""
        return self._describe()

    def same_storage(self, other: ZMap) -> bool:
        """Whether ``other`` is a map over the same storage (whatever its mode)."""
        return other is self or (
            type(self) is type(other) and self._describe() == other._describe()
        )

    def reopen(self, mode: str) -> ZMap:
        """A new map over the same storage opened with ``mode``."""
        location, options = self._describe()
        return type(self)(location, mode=mode, **options)  # type: ignore[call-arg]

    # ------------------------------------------------------- identity & pickling
    @property
    def url(self) -> str:
        """A URL naming the store, without credentials."""
        return self._describe()[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, mode={self._mode!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ZMap):
            return NotImplemented
        return (
            type(self) is type(other)
            and self._describe() == other._describe()
            and self._mode == other._mode
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._describe()[0], self._mode))

    def __reduce__(self) -> tuple[Any, ...]:
        location, options = self._describe()
        mode = "r+" if self._mode in ("w", "w-") else self._mode
        return (_reopen, (type(self), location, mode, options))


def _reopen(cls: type[ZMap], location: str, mode: str, options: dict[str, Any]) -> ZMap:
    return cls(location, mode=mode, **options)  # type: ignore[call-arg]
