"""The chunk listing of the translated view: which chunk keys it shows, where a
reader without nczarr finds each one in the source, and the source key behind each
shown key. Kept apart from :mod:`nczarr.readthrough` (the map itself) because reference
sets and convert's copy list chunks without serving them.

:class:`ChunkListing` is a mixin of :class:`~nczarr.readthrough.TranslatedView`; it
reads the view's ``_arrays``, ``_source``, ``_stray``, ``_layout`` and ``_reencoded``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING

from ..errors import NCZarrWarning
from ..keys import normalize_key

if TYPE_CHECKING:
    from ..maps.base import ZMap
    from ..translate.chunk_layout import ChunkLayout
    from ..translate.recode_plan import Reencoding

__all__ = ["ChunkListing", "note_stray"]


class ChunkListing:
    """Chunk keys as the view shows them, and their places in the source."""

    _arrays: tuple[str, ...]
    _source: ZMap
    _stray: dict[str, str]
    _layout: ChunkLayout
    _reencoded: dict[str, Reencoding]
    _stored: dict[str, frozenset[str]]

    def chunk_keys(self) -> Iterator[str]:
        """The key, as the view shows it, of every chunk object that passes through
        (the source key itself unless :attr:`keys_mapped`; see :meth:`source_key`)."""
        for array in self._arrays:
            yield from self._chunks_below(array, array)

    @property
    def shown_arrays(self) -> tuple[str, ...]:
        """Key prefixes (``"g/v"``) of the arrays whose chunks the view shows, sorted."""
        return self._arrays

    def array_chunk_keys(self, array: str) -> Iterator[str]:
        """The key, as the view shows it, of every chunk of ``array`` that passes
        through (its part of :meth:`chunk_keys`), listed from the source as it is
        consumed (:meth:`ZMap.keys_below_streamed`): memory flat in the number of
        chunks."""
        note = partial(note_stray, self._source.url, self._stray)
        keys_below = self._source.keys_below_streamed
        return self._layout.shown_below(array, array, keys_below, note)

    def locate(
        self, array: str, keys: Sequence[str]
    ) -> list[tuple[str] | tuple[str, int, int] | None]:
        """Where a reader without nczarr finds the bytes of chunks ``keys`` (as shown,
        all of ``array``, as :meth:`array_chunk_keys` lists them) in the source
        (:meth:`ZMap.chunk_location`), in one call to the source
        (:meth:`ZMap.chunk_locations`); None for a chunk the view or the source
        re-encodes (of an array whose stored chunks pass verbatim: one not stored)."""
        item = self._reencoded.get(array)
        if item is not None and item.stored_verbatim:
            return self._locate_stored(array, keys)
        if item is not None:
            return [None] * len(keys)
        layout = self._layout
        if array in layout.keys or array in layout.source_prefix:
            keys = [layout.source_key(key) for key in keys]
        return self._source.chunk_locations(keys)

    def chunk_locations(
        self, array: str, batch: int = 4096
    ) -> Iterator[tuple[str, tuple[str] | tuple[str, int, int] | None]]:
        """Every chunk of ``array`` that passes through, as ``(key as shown, location)``
        (see :meth:`locate`), the source asked a batch of keys at a time, not key by
        key: reference sets are made from this, array by array, holding ``batch``
        keys at a time."""
        keys = self.array_chunk_keys(array)
        while chunk := list(islice(keys, batch)):
            yield from zip(chunk, self.locate(array, chunk), strict=True)

    def _locate_stored(
        self, array: str, keys: Sequence[str]
    ) -> list[tuple[str] | tuple[str, int, int] | None]:
        """:meth:`locate` of an array whose stored chunks pass verbatim: the source's
        place of each stored chunk, None for the others (which the view makes). The
        array's stored keys are listed once and held while the view lives (a Parquet
        set asks a batch at a time, in grid order)."""
        stored = self._stored.get(array)
        if stored is None:
            note = partial(note_stray, self._source.url, self._stray)
            listing = self._source.keys_below_streamed
            shown = self._layout.shown_below(array, array, listing, note, stored=True)
            stored = self._stored[array] = frozenset(shown)
        wanted = [k for k in keys if k in stored]
        found = self._source.chunk_locations([self._layout.source_key(k) for k in wanted])
        where = dict(zip(wanted, found, strict=True))
        return [where.get(k) for k in keys]

    def source_key(self, key: str) -> str:
        """The source key of the chunk the view shows as ``key``.

        Raises
        ------
        KeyError
            ``key`` is not a chunk key of an array of the view.
        """
        try:
            return self._layout.source_key(normalize_key(key))
        except KeyError:
            raise KeyError(key) from None

    def _chunks_below(self, array: str, prefix: str) -> Iterator[str]:
        """Chunk keys (as shown) of ``array`` whose shown key is at or below ``prefix``."""
        note = partial(note_stray, self._source.url, self._stray)
        return self._layout.shown_below(array, prefix, self._source.keys_below, note)

    @property
    def stray_keys(self) -> dict[str, str]:
        """Objects found among the chunks of re-encoded arrays that are not chunk keys
        (``README``), skipped by the listing, and the warning given for each."""
        return dict(self._stray)


def note_stray(url: str, stray: dict[str, str], key: str, array: str) -> None:
    """Warn (once per key) that ``key`` is skipped: not a chunk of its re-encoded array."""
    if key in stray:
        return
    message = f"{url}: skipped {key!r}: not a chunk key of re-encoded array '/{array}'"
    stray[key] = message
    warnings.warn(message, NCZarrWarning, stacklevel=4)
