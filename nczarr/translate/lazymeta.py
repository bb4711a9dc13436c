"""Metadata objects kept as documents, serialised to JSON bytes only when asked (pure).

A writer's output is a mapping of keys to metadata bytes (``.zgroup``, ``g/v/.zarray``
...). Who copies a store needs those bytes; the xarray engine needs only each array's
``.zarray`` and ``.zattrs`` as Python objects, which it used to get by parsing the
bytes the writer had just serialised: a JSON round trip per object, and the writer's
JSON serialisation (:func:`~nczarr.translate.write_common.dumps`, in Python) was the
largest part of the engine's open after reading the source. :class:`LazyMetadata`
holds each document and writes its bytes on first access (then keeps them), so the
same bytes come out for whoever asks, and :meth:`LazyMetadata.document` hands the
document itself to a reader that wants objects.

Warnings do not wait: the one thing serialisation can change is text a reader kept
undecoded (lone surrogates, written as the Latin-1 characters they stand for, with a
warning, :func:`~nczarr.translate.zarr_names.utf8_json`); a document holding such text
is serialised at once, so its warning is given when the metadata is written, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

__all__ = ["LazyMetadata"]


class _Pending:
    """A document not yet serialised, and how to serialise it."""

    __slots__ = ("doc", "serialise")

    def __init__(self, doc: Any, serialise: Callable[[Any], bytes]) -> None:
        self.doc = doc
        self.serialise = serialise


class LazyMetadata(MutableMapping[str, bytes]):
    """Metadata bytes by key, in insertion order, serialised on first access.

    Behaves as the ``dict[str, bytes]`` a writer returned before (same keys, order
    and bytes); :meth:`add` stores a document to serialise later, item assignment
    stores bytes. Documents are never modified here; a caller of :meth:`document`
    must not modify what it gets (zarr-python copies what it keeps).
    """

    __slots__ = ("_docs", "_items")

    def __init__(self) -> None:
        self._items: dict[str, bytes | _Pending] = {}
        #: key -> the document whose serialisation the bytes are (lazy entries only)
        self._docs: dict[str, Any] = {}

    def add(self, key: str, doc: Any, serialise: Callable[[Any], bytes]) -> None:
        """Store ``doc`` under ``key``, to be serialised by ``serialise`` when asked."""
        self._items[key] = _Pending(doc, serialise)
        self._docs[key] = doc

    def document(self, key: str) -> Any:
        """The JSON value of object ``key`` as Python objects: the document itself when
        it was stored as one (equal to parsing its bytes: numbers and text round-trip
        exactly), else its bytes parsed. Raises ``KeyError``."""
        if key in self._docs:
            if key not in self._items:
                raise KeyError(key)
            return self._docs[key]
        return json.loads(self[key])

    def __getitem__(self, key: str) -> bytes:
        value = self._items[key]
        if type(value) is _Pending:
            value = self._items[key] = value.serialise(value.doc)
        return value  # type: ignore[return-value]

    def __setitem__(self, key: str, value: bytes) -> None:
        self._items[key] = value
        self._docs.pop(key, None)

    def __delitem__(self, key: str) -> None:
        del self._items[key]
        self._docs.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def copy(self) -> LazyMetadata:
        """A new mapping with the same entries (documents shared, nothing serialised)."""
        out = LazyMetadata()
        out._items = dict(self._items)
        out._docs = dict(self._docs)
        return out

    def __repr__(self) -> str:
        return f"LazyMetadata({list(self._items)!r})"
