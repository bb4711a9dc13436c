"""An in-memory zmap that owns its dict (no shared global state)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

from .base import ZMap, normalize_key

__all__ = ["MemoryMap"]


class MemoryMap(ZMap):
    """A zmap held in a private dict; useful for tests, views and staging.

    Each instance owns its content: two ``MemoryMap()`` never share keys (unlike
    fsspec's process-wide memory filesystem). It pickles *with* its content.

    Parameters
    ----------
    content
        Initial keys and values (copied, keys normalized).
    mode
        ``"w"`` (default) or any mode of :data:`~nczarr.maps.base.MODES`; ``"r"`` makes
        a read-only snapshot of ``content``.
    """

    def __init__(self, content: Mapping[str, bytes] | None = None, *, mode: str = "w") -> None:
        super().__init__(mode)
        self._data: dict[str, bytes] = {}
        self._lock = threading.RLock()
        for key, value in (content or {}).items():
            self._data[normalize_key(key)] = bytes(value)

    def _load(self, key: str) -> bytes:
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(key) from None

    def _exists(self, key: str) -> bool:
        return key in self._data

    def _store(self, key: str, value: bytes) -> None:
        with self._lock:
            self._data[key] = value

    def _check_leaf_rule(self, key: str) -> None:
        with self._lock:
            super()._check_leaf_rule(key)

    def _remove(self, key: str) -> None:
        with self._lock:
            try:
                del self._data[key]
            except KeyError:
                raise KeyError(key) from None

    def _list(self, prefix: str) -> Iterator[str]:
        if not prefix:
            return iter(list(self._data))
        below = prefix + "/"
        return iter([k for k in list(self._data) if k == prefix or k.startswith(below)])

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return f"memory://{id(self):x}", {}

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._check_writable()
        with self._lock:
            self._data.clear()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryMap):
            return NotImplemented
        return self._mode == other._mode and self._data == other._data

    __hash__ = ZMap.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (dict(self._data), self._mode))


def _rebuild(content: dict[str, bytes], mode: str) -> MemoryMap:
    return MemoryMap(content, mode=mode)
