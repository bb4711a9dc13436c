"""An in-memory zmap that owns its dict (no shared global state)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import ReadOnlyError
from ..keys import KeyIndex, normalize_key
from .base import ZMap
from .location import Location

__all__ = ["MemoryMap"]


class MemoryMap(ZMap):
    """A zmap held in a private dict; useful for tests, views and staging.

    Each instance owns its content: two ``MemoryMap()`` never share keys (unlike
    fsspec's process-wide memory filesystem). It pickles *with* its content.
    ``search`` and the leaf-rule check use a :class:`KeyIndex`, so neither scans
    every key.

    Parameters
    ----------
    content
        Initial keys and values (copied, keys normalized).
    mode
        ``"w"`` (default) or any mode of :data:`~nczarr.maps.base.MODES`; ``"r"`` makes
        a read-only snapshot of ``content``.
    """

    kind = "an in-memory map"
    #: Calls are a dict lookup under one lock: a thread hop would cost more than the call.
    blocking_io = False

    def __init__(self, content: Mapping[str, bytes] | None = None, *, mode: str = "w") -> None:
        super().__init__(mode)
        self._data: dict[str, bytes] = {}
        self._index = KeyIndex()
        self._lock = threading.RLock()
        for key, value in (content or {}).items():
            nkey = normalize_key(key)
            if nkey not in self._data:
                self._index.add(nkey)
            self._data[nkey] = bytes(value)

    def _load(self, key: str) -> bytes:
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(key) from None

    def _exists(self, key: str) -> bool:
        return key in self._data

    def _store(self, key: str, value: bytes) -> None:
        with self._lock:
            if key not in self._data:
                self._index.add(key)
            self._data[key] = value

    def _check_leaf_rule(self, key: str) -> None:
        with self._lock:
            self._index.check_leaf_rule(key, self._data.__contains__)

    def __setitem__(self, key: str, value: bytes | bytearray | memoryview) -> None:
        # One lock around check + store, so two threads cannot both pass the leaf rule.
        with self._lock:
            super().__setitem__(key, value)

    def _remove(self, key: str) -> None:
        with self._lock:
            try:
                del self._data[key]
            except KeyError:
                raise KeyError(key) from None
            self._index.discard(key)

    def _list(self, prefix: str) -> Iterator[str]:
        with self._lock:
            if not prefix:
                return iter(list(self._data))
            if prefix in self._data:
                return iter([prefix])
            return iter(list(self._index.below(prefix)))

    def _search(self, prefix: str) -> Iterable[str]:
        with self._lock:
            return self._index.children(prefix)

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return f"memory://{id(self):x}", {}

    def __len__(self) -> int:
        return len(self._data)

    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read many keys (a plain loop: there is no I/O to overlap)."""
        out: dict[str, bytes] = {}
        for key in keys:
            value = self._data.get(normalize_key(key))
            if value is not None:
                out[key] = value
        return out

    def clear(self) -> None:
        self._check_writable()
        with self._lock:
            self._data.clear()
            self._index.clear()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryMap):
            return NotImplemented
        return self._mode == other._mode and self._data == other._data

    def __hash__(self) -> int:
        # Equality is by content, which changes; hash only what cannot.
        return hash((type(self).__name__, self._mode))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (dict(self._data), self._mode))

    # ------------------------------------------------------------- capabilities
    def location(self) -> Location:
        """This object: two memory maps never share content."""
        return Location("memory", "", service=str(id(self)))

    def same_storage(self, other: ZMap) -> bool:
        """Only this very map holds this content."""
        return other is self

    def reopen(self, mode: str) -> ZMap:
        """Refused for a writable mode: a read-only snapshot stays one."""
        raise ReadOnlyError(
            f"cannot make a writable store from read-only {self!r}: a MemoryMap cannot be "
            "reopened for writing"
        )


def _rebuild(content: dict[str, bytes], mode: str) -> MemoryMap:
    return MemoryMap(content, mode=mode)
