"""The core of the zmap contract: keys, the leaf rule and the mapping protocol.

:class:`MapCore` is what every map is before it is asked anything about its storage:
a ``MutableMapping[str, bytes]`` over a tree of keys with ``search``, the five
primitives a backend implements (``_load``, ``_store``, ``_remove``, ``_list`` and
``_describe``), the leaf rule, modes, trusted writes and the bulk reads and writes
with correct defaults. :class:`~nczarr.maps.base.ZMap` adds what callers may ask of a
map (its capabilities) and its identity; backends subclass ``ZMap``, never this.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, Self

from ..errors import ObjectExistsError, ReadOnlyError
from ..keys import normalize_key, normalize_prefix, parent_keys
from .common import as_bytes, check_mode

__all__ = ["ListedKeys", "MapCore"]


class ListedKeys(list[str]):
    """The keys of a listing (:meth:`MapCore.list_reading`), with :attr:`sizes`, each
    key's size, when the listing gave them at no cost (an object store's listing holds
    every object's size): a server-side copy given its size needs no request for it.
    None when the listing did not give them."""

    sizes: dict[str, int] | None = None

    @classmethod
    def sized(cls, sizes: dict[str, int]) -> ListedKeys:
        """The keys of ``sizes`` (in its order), with ``sizes``."""
        keys = cls(sizes)
        keys.sizes = sizes
        return keys


class MapCore(MutableMapping[str, bytes], ABC):
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

    def delete_if_present(self, key: str) -> None:
        """Delete ``key`` if it is stored; nothing if not (``del m[key]`` without the
        ``KeyError``). A store that deletes an absent object silently does it in one
        request, without asking first whether it exists (S3: no ``HeadObject`` before
        the ``DeleteObject``): a convert's journal, removed at the end of every
        convert, combine and append, and the root objects an overwrite removes first."""
        nkey = normalize_key(key)
        self._check_writable(nkey)
        self._remove_if_present(nkey)

    def _remove_if_present(self, key: str) -> None:
        with contextlib.suppress(KeyError):
            self._remove(key)

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
    def trusted_writes(self) -> Iterator[Self]:
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

        from concurrent.futures import ThreadPoolExecutor  # imports logging: only when used

        with ThreadPoolExecutor(max_workers=min(16, max(1, len(normalized)))) as pool:
            values = list(pool.map(one, normalized))
        return {k: v for k, v in zip(wanted, values, strict=True) if v is not None}

    def declared_size(self, key: str) -> int | None:
        """The size the object at ``key`` declares, when the map knows it without reading
        the object (a zip member's central-directory entry); None when it does not (or
        there is no such object). A reader with a size limit refuses a bigger object
        before asking for any of its bytes."""
        return None

    def list_reading(self, wanted: Mapping[str, int | None]) -> tuple[list[str], dict[str, bytes]]:
        """Every key (``list(keys_below(""))``) and ``{key: content}`` of the ``wanted``
        keys that exist (key -> at most that many bytes, None: all). One pass where the
        map can (a directory map reads them as its listing passes their directory: a
        combine reads each source's listing and metadata objects so); the default lists,
        then reads. The keys may be a :class:`ListedKeys` with their sizes."""
        return list(self.keys_below("")), self.read_wanted(wanted)

    def read_wanted(self, wanted: Mapping[str, int | None]) -> dict[str, bytes]:
        """``{key: content}`` of the ``wanted`` keys that exist (key -> at most that
        many bytes, None: all): :meth:`getitems` and :meth:`getitems_capped`, a call
        for each cap."""
        by_cap: dict[int | None, list[str]] = {}
        for key, cap in wanted.items():
            by_cap.setdefault(cap, []).append(key)
        out: dict[str, bytes] = {}
        for cap, some in by_cap.items():
            out.update(self.getitems(some) if cap is None else self.getitems_capped(some, cap))
        return out

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
