"""What readers see of a store whose append was killed while writing its metadata.

An append (:mod:`nczarr.conversion.growappend`) writes every chunk first, then the
journal :data:`JOURNAL_KEY` holding every metadata object it is about to write (the
grown shapes and dimension sizes), then those objects (a few at once on S3), then
deletes the journal. A process killed among the metadata writes leaves some objects old and some
new. nczarr's readers therefore consult the journal when they open a store: an append
journal means "every chunk of the grown store is written", so they read the journal's
metadata instead of the stored objects (:class:`PendingMap`), which is the store as
the append finishes it -- the interrupted append is rolled forward for the reader,
without writing anything. The next append writes the same objects for good.

Only append journals are honoured; the journal of a convert (``resume``) names no
metadata and is ignored here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .base import ZMap

__all__ = [
    "APPEND_KIND",
    "JOURNAL_KEY",
    "PendingMap",
    "decode_append_journal",
    "encode_append_journal",
    "pending_of",
    "pending_view",
    "with_pending",
]

#: Key of the journal object, at the root of a store being written (convert or append).
JOURNAL_KEY = ".in-progress.nczarr"
#: ``kind`` of the journal an append writes before its metadata.
APPEND_KIND = "nczarr-append-journal"


def encode_append_journal(
    metadata: Sequence[tuple[str, bytes]], sources: Sequence[str], dim: str
) -> bytes:
    """The journal of an append about to write ``metadata`` (in write order)."""
    doc = {
        "kind": APPEND_KIND,
        "sources": list(sources),
        "dimension": dim,
        "metadata": [[k, v.decode("utf-8")] for k, v in metadata],
    }
    return json.dumps(doc).encode("utf-8")


def decode_append_journal(raw: bytes) -> tuple[list[tuple[str, bytes]], dict[str, Any]] | None:
    """``(metadata in write order, the journal document)`` of an append journal, or
    ``None`` if ``raw`` is no append journal (a convert's journal, or garbage)."""
    try:
        doc = json.loads(raw)
        if not isinstance(doc, dict) or doc.get("kind") != APPEND_KIND:
            return None
        pending = [(str(k), str(v).encode("utf-8")) for k, v in doc["metadata"]]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    return pending, doc


class PendingMap(ZMap):
    """Read-only: ``source`` with the metadata objects of an interrupted append
    (``pending``: key -> bytes) in place of the stored ones."""

    kind = "a store as its interrupted append leaves it"

    def __init__(
        self, source: ZMap, pending: Mapping[str, bytes], *, owns_source: bool = False
    ) -> None:
        super().__init__("r")
        self._source = source
        self._pending = dict(pending)
        self._owns_source = owns_source

    def _load(self, key: str) -> bytes:
        value = self._pending.get(key)
        return self._source[key] if value is None else value

    def getsize(self, key: str) -> int:
        value = self._pending.get(key)
        return self._source.getsize(key) if value is None else len(value)

    def declared_size(self, key: str) -> int | None:
        return len(self._pending[key]) if key in self._pending else self._source.declared_size(key)

    def getitems(self, keys: Any) -> dict[str, bytes]:
        wanted = list(keys)
        found = self._source.getitems(k for k in wanted if k not in self._pending)
        found.update((k, self._pending[k]) for k in wanted if k in self._pending)
        return found

    def _store(self, key: str, value: bytes) -> None:  # pragma: no cover - mode "r"
        raise KeyError(key)

    def _remove(self, key: str) -> None:  # pragma: no cover - mode "r"
        raise KeyError(key)

    def _list(self, prefix: str) -> Iterator[str]:
        seen = set()
        for key in self._source.keys_below(prefix):
            seen.add(key)
            yield key
        for key in self._pending:
            below = not prefix or key == prefix or key.startswith(prefix + "/")
            if below and key not in seen:
                yield key

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return self._source.describe()

    def location(self) -> Any:
        return self._source.location()

    def file_format(self) -> Any | None:
        return self._source.file_format()

    def close(self) -> None:
        super().close()
        if self._owns_source:
            self._source.close()

    def __reduce__(self) -> tuple[Any, ...]:
        return (PendingMap, (self._source, self._pending))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PendingMap)
            and other._source == self._source
            and other._pending == self._pending
        )

    def __hash__(self) -> int:
        return hash(("pending", self._source))


def pending_of(raw: bytes | None) -> dict[str, bytes] | None:
    """The metadata an append journal ``raw`` holds, or None."""
    decoded = None if raw is None else decode_append_journal(raw)
    return None if decoded is None else dict(decoded[0])


def with_pending(zmap: ZMap, raw: dict[str, bytes]) -> tuple[ZMap, dict[str, bytes]]:
    """``zmap`` and the root objects ``raw`` it gave (with its :data:`JOURNAL_KEY`,
    which is taken out), or, when that holds an append journal, the :class:`PendingMap`
    over ``zmap`` and the root objects as the journal has them."""
    pending = pending_of(raw.pop(JOURNAL_KEY, None))
    if not pending:
        return zmap, raw
    root = {k: v for k, v in pending.items() if "/" not in k}
    return PendingMap(zmap, pending), {**raw, **root}


def pending_view(zmap: ZMap, *, owns_source: bool = False) -> ZMap:
    """``zmap``, or the :class:`PendingMap` its append journal calls for (one read)."""
    try:
        pending = pending_of(zmap[JOURNAL_KEY])
    except KeyError:
        return zmap
    return PendingMap(zmap, pending, owns_source=owns_source) if pending else zmap
