"""A read-only zmap showing a store translated to current NCZarr or pure Zarr, copying nothing.

``view(src, mode="zarr")`` reads ``src``'s metadata into the netCDF-4 model once,
writes it again with :func:`nczarr.translate.write_with_warnings`, and
serves:

* the translated metadata objects (``.zgroup``, ``.zattrs``, ``.zarray``, and
  ``.zmetadata`` when asked for; with ``zarr_format=3`` one ``zarr.json`` per node)
  from memory;
* the chunk objects of every array in the model straight from ``src``, under the
  same key (an NCZarr scalar's chunk ``0`` is also the 0-d chunk of pure Zarr);
  Zarr v3 chunks (``c/0/1``, ``c`` for 0-d) are shown under their Zarr v2 keys
  (``0.1``, ``0``) and read from the v3 key (:meth:`TranslatedView.source_key`).

Arrays whose chunks a reader of the target would misread if passed through
(:mod:`nczarr.reencode`: unicode and variable-length strings for NCZarr, sharded
Zarr v3 arrays, codecs netcdf-c lacks) are served re-encoded, chunk by chunk, on
the fly; :attr:`TranslatedView.reencoded` names them and says why.

Everything else in ``src`` is hidden: legacy objects (``.nczarr``, ``.nczgroup``,
``.nczvar`` ...), the source's own metadata, and arrays the reader skipped. What is
shown is decided without I/O by a :class:`~nczarr.translate.translation.Translation`; the view
serves it (zarr-python reads it through ``ZarrStore``; ``convert`` copies its keys).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidModeError, ReadOnlyError, warn_all
from ..keys import normalize_key
from ..maps.base import ZMap
from ..records import replace
from ..translate.chunk_layout import TrailingAxis, chunk_coords
from ..translate.conventions import FORMATS, ZARRAY, ZMETADATA
from ..translate.model import Dataset
from ..translate.target import Target
from ..translate.translation import Translation
from ..translate.translation import draft as draft_translation
from ..translate.translation import finish as finish_translation
from .chunks import ChunkListing, note_stray

if TYPE_CHECKING:
    from ..reencode import ChunkRecoder

__all__ = ["TrailingAxis", "TranslatedView", "chunk_coords", "view"]


class TranslatedView(ChunkListing, ZMap):
    """Read-only zmap over a :class:`~nczarr.translate.translation.Translation`: its metadata from
    memory, chunk objects passed through (or re-encoded) from the source.

    Built by :meth:`from_source` (or :func:`view`). Attributes for converters:
    :attr:`source`, :attr:`dataset`, :attr:`metadata`, :attr:`warnings`,
    :attr:`target`, :meth:`chunk_keys` and :meth:`partition`. Writes raise
    :class:`~nczarr.errors.ReadOnlyError`.
    """

    @property
    def round_trips(self) -> bool:  # type: ignore[override]
        """Whether a read through the view is a round trip: its source's (an S3
        store's view gates concurrent reads as the store does)."""
        return self.source.round_trips

    def __init__(
        self,
        source: ZMap,
        translation: Translation,
        *,
        owns_source: bool = False,
        requested: Target | None = None,
    ) -> None:
        """A view of ``source`` as ``translation`` says; ``requested``: the target as
        asked (``consolidated`` may be ``None``), for pickling and the description."""
        super().__init__("r")
        self._source = source
        self._owns_source = owns_source
        self._translation = translation
        self._requested = requested or translation.target
        layout = self._layout = translation.layout
        self._arrays = layout.arrays
        self._array_set = layout.array_set
        self._shards = layout.shards
        self._mapped = layout.mapped
        #: The array owning a shown chunk key, or None (every chunk read asks).
        self._owner = layout.owner
        self._coords = layout.coords
        self._reencoded = translation.reencoded
        self._metadata = translation.metadata
        self._stray: dict[str, str] = {}
        self._stored: dict[str, frozenset[str]] = {}  # ChunkListing._locate_stored
        self._recoders: dict[str, ChunkRecoder] = {}
        if self._reencoded:  # numpy and the codecs only when a chunk is re-encoded
            from ..reencode import ChunkRecoder

            self._recoders = {
                path: ChunkRecoder(
                    source, item, layout.source_prefix.get(path, path), layout.keys.get(path)
                )
                for path, item in self._reencoded.items()
            }

    @classmethod
    def from_source(
        cls,
        source: ZMap,
        target: Target,
        *,
        owns_source: bool = False,
        metadata: tuple[dict[str, Any], Sequence[str]] | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        strict: bool = True,
    ) -> TranslatedView:
        """Read ``source``'s metadata once, translate it to ``target`` (the arrays
        ``include``/``exclude`` keep; ``strict`` false: a pattern may match nothing, as
        in a combine's source) and show it. ``target.keep_shards`` false: a Zarr v3
        target shows a sharded array's inner chunks, re-encoded, not its shards.

        ``metadata``: ``(objects, warnings)`` already loaded
        (:func:`nczarr.load.load_metadata`), so they are not read twice. The only
        chunks read here are those of variable-length strings shown as fixed-width
        NCZarr strings (to find the longest).
        """
        from ..load import loaded_metadata, read_with_chunk_keys

        if metadata is None:
            metadata = loaded_metadata(source)
        read, chunk_keys = read_with_chunk_keys(source, metadata=metadata)
        root: Any = source if metadata is None else metadata[0]  # no request per question
        draft = draft_translation(
            read,
            chunk_keys,
            target.resolved(ZMETADATA in root),
            bare_root=ZARRAY in root or "" in chunk_keys,  # a v2 or v3 root array
            include=include,
            exclude=exclude,
            strict=strict,
        )
        return cls._finished(source, draft, owns_source=owns_source, requested=target)

    @classmethod
    def _finished(
        cls, source: ZMap, draft: Translation, *, owns_source: bool, requested: Target
    ) -> TranslatedView:
        """The view of ``draft`` completed: string widths measured, metadata written."""
        stray: dict[str, str] = {}
        widths: dict[str, int] = {}
        if draft.to_measure:  # numpy and the codecs only when strings are measured
            from ..reencode import longest_strings

            widths = longest_strings(
                source,
                draft.layout,
                draft.reencoded,
                draft.to_measure,
                lambda key, array: note_stray(source.url, stray, key, array),
            )
        translation = finish_translation(draft, widths)
        result = cls(source, translation, owns_source=owns_source, requested=requested)
        result._stray.update(stray)  # already warned
        return result

    def selected(
        self, include: Sequence[str] | None = None, exclude: Sequence[str] | None = None
    ) -> TranslatedView:
        """The same source translated to the same target, with only the arrays that
        ``include``/``exclude`` keep (the source is not read again; the new view does
        not own it)."""
        t = self._translation
        draft = draft_translation(
            t.read, t.source_keys, t.target, bare_root=t.bare_root, include=include, exclude=exclude
        )
        draft = replace(draft, widths=t.widths)
        return type(self)._finished(
            self._source, draft, owns_source=False, requested=self._requested
        )

    # ---------------------------------------------------------------- converter API
    @property
    def reencoded(self) -> dict[str, str]:
        """Arrays (key prefixes) whose chunks are shown re-encoded, and why (including
        those a netCDF file source re-encodes itself: :mod:`nczarr.ncfile`)."""
        own = {path: item.reason for path, item in self._reencoded.items()}
        merged = {p: r for p, r in self._source.reencoded.items() if p in self._array_set}
        for path, reason in own.items():
            merged[path] = f"{merged[path]}; {reason}" if path in merged else reason
        return merged

    @property
    def left_out(self) -> tuple[str, ...]:
        """Paths (``/g/v``) of the arrays the target format's writer could not describe
        (codecs without a byte-identical form there): the view does not show them, and
        ``convert`` refuses them unless ``exclude=`` names them."""
        return self._translation.left_out

    @property
    def reencoded_messages(self) -> tuple[str, ...]:
        """One warning per re-encoded array (also in :attr:`warnings`)."""
        return tuple(item.message for item in self._reencoded.values())

    def partition(self, keys: Sequence[str]) -> tuple[ZMap, list[str], list[str]]:
        """Where to copy ``keys`` (chunk keys as shown) from: ``(map, verbatim keys,
        re-encoded keys)``. Verbatim chunks come from the source map itself (so its
        kernel or server-side copies apply) unless the view shows them under other
        keys (Zarr v3 ``c/0/1`` -> ``0.1``): then from the view, which reads each from
        its source key. Re-encoded chunks always come from the view."""
        source = self if self._mapped else self._source
        if not self.reencoded:  # the view's own and the source map's (a netCDF file's)
            return source, list(keys), []
        verbatim, reencoded, reencodes = [], [], self._source.reencodes
        for key in keys:
            made = self.reencoded_array(key) is not None or reencodes(self.source_key(key))
            (reencoded if made else verbatim).append(key)
        return source, verbatim, reencoded

    def reencoded_array(self, key: str) -> str | None:
        """The re-encoded array (key prefix) chunk ``key`` belongs to, or None."""
        array = self._owner(normalize_key(key))
        return array if array in self._reencoded else None

    @property
    def source(self) -> ZMap:
        """The map being translated."""
        return self._source

    @property
    def dataset(self) -> Dataset:
        """The source read into the netCDF-4 model, as the view shows it (re-encoded
        arrays with the target's codecs and types)."""
        return self._translation.dataset

    @property
    def metadata(self) -> MutableMapping[str, bytes]:
        """The metadata objects the writer produced (a copy; objects not yet asked for
        are serialised when first read, see :mod:`nczarr.translate.lazymeta`)."""
        copy = getattr(self._metadata, "copy", None)
        return copy() if copy is not None else dict(self._metadata)

    def document(self, key: str) -> Any:
        """Metadata object ``key`` (``v/.zarray``, as shown) as Python objects, without
        a JSON round trip when the writer kept the document; None when not shown."""
        metadata = self._metadata
        if key not in metadata:
            return None
        document = getattr(metadata, "document", None)
        return document(key) if document is not None else json.loads(metadata[key])

    @property
    def warnings(self) -> tuple[str, ...]:
        """The reader's warnings, then the writer's."""
        return self._translation.warnings

    @property
    def target(self) -> Target:
        """What the view shows (``consolidated`` decided by the source)."""
        return self._translation.target

    @property
    def translation(self) -> Translation:
        """The pure translation the view shows."""
        return self._translation

    @property
    def format(self) -> str:
        """``"zarr"`` or ``"nczarr"``: what the view shows."""
        return self.target.format

    @property
    def zarr_format(self) -> int:
        """2 or 3: the Zarr version of the metadata the view shows."""
        return self.target.zarr_format

    @property
    def netcdf_scalars(self) -> bool:
        """Whether pure Zarr scalars are shown in netcdf-c's form (shape ``[1]``)."""
        return self.target.netcdf_scalars

    @property
    def consolidated(self) -> bool:
        """Whether the view shows a ``.zmetadata``."""
        return self.target.write_consolidated

    @property
    def keys_mapped(self) -> bool:
        """Whether some chunk is shown under another key than the source's (Zarr v3
        source with ``c/...`` keys): then copy from the view, not from :attr:`source`."""
        return self._mapped

    def _reencode(self, key: str) -> bytes:
        """The re-encoded bytes of chunk ``key`` (normalized) of a re-encoded array."""
        array = self._owner(key)
        assert array is not None
        data = self._recoders[array].encode(self._coords(array, key))
        if data is None:
            raise KeyError(key)
        return data

    # ----------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        value = self._metadata.get(key)
        if value is not None:
            return value
        if self._owner(key) is not None:
            if self.reencoded_array(key) is not None:
                return self._reencode(key)
            return self._source[self.source_key(key)]
        raise KeyError(key)

    def _store(self, key: str, value: bytes) -> None:
        raise ReadOnlyError(f"cannot write {key!r} to {self!r}: a translated view is read-only")

    def _remove(self, key: str) -> None:
        raise ReadOnlyError(f"cannot delete {key!r} from {self!r}: a translated view is read-only")

    def _exists(self, key: str) -> bool:
        if key in self._metadata:
            return True
        return self._owner(key) is not None and self.source_key(key) in self._source

    def _list(self, prefix: str) -> Iterator[str]:
        def below(key: str) -> bool:
            return not prefix or key == prefix or key.startswith(prefix + "/")

        yield from (key for key in self._metadata if below(key))
        for array in self._arrays:
            if not prefix or array == prefix or array.startswith(prefix + "/"):
                yield from self._chunks_below(array, array)
            elif prefix.startswith(array + "/"):
                yield from self._chunks_below(array, prefix)

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return f"view+{self._requested.format}:{self._source.url}", self._requested.options()

    # ----------------------------------------------------------- fast paths
    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Metadata from memory, chunks with one ``getitems`` call on the source."""
        wanted = list(keys)
        out: dict[str, bytes] = {}
        passthrough: dict[str, str] = {}
        plain = not self._mapped and not self._shards  # a chunk's key is its source key
        for key in wanted:
            nkey = normalize_key(key)
            if nkey in self._metadata:
                out[key] = self._metadata[nkey]
                continue
            array = self._owner(nkey)  # once per key: this is every chunk read's path
            if array is None:
                continue
            if array in self._reencoded:
                with suppress(KeyError):
                    out[key] = self._reencode(nkey)
            else:
                passthrough[nkey if plain else self.source_key(nkey)] = key
        if passthrough:
            found = self._source.getitems(list(passthrough))
            for nkey, value in found.items():
                out[passthrough[nkey]] = value
        return {k: out[k] for k in wanted if k in out}

    def chunk_map(self, array: str) -> ZMap:
        """The map to read chunks of ``array`` (its path as shown) from, under the keys
        the view shows: the source itself when the view passes that array's chunks
        through unchanged (same keys, not re-encoded), so a reader of many chunks
        skips the view's per-key lookups; the view otherwise."""
        if self._mapped or self._shards or array in self._reencoded or array not in self._array_set:
            return self
        return self._source

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """A byte range; chunk ranges are read from the source without the whole object."""
        nkey = normalize_key(key)
        if nkey not in self._metadata and self._owner(nkey) is not None:
            if self.reencoded_array(nkey) is not None:
                return super().getrange(key, start, length)
            return self._source.getrange(self.source_key(nkey), start, length)
        return super().getrange(key, start, length)

    def getsize(self, key: str) -> int:
        """Size of an object; chunk sizes come from the source."""
        nkey = normalize_key(key)
        if nkey in self._metadata:
            return len(self._metadata[nkey])
        if self._owner(nkey) is not None:
            array = self.reencoded_array(nkey)
            if array is not None and not self._reencoded[array].stored_verbatim:
                return len(self._reencode(nkey))
            try:
                return self._source.getsize(self.source_key(nkey))
            except KeyError:
                if array is None:
                    raise
                return len(self._reencode(nkey))  # not stored: made by the view
        raise KeyError(key)

    def close(self) -> None:
        """Close the view, and the source when the view opened it from a URL."""
        for recoder in self._recoders.values():
            recoder.close()
        if not self._closed and self._owns_source:
            self._source.close()
        super().close()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TranslatedView):
            return NotImplemented
        return (
            self._source == other._source
            and self.target == other.target
            and self._translation.selection == other._translation.selection
        )

    def __hash__(self) -> int:
        return hash((self.target.format, self._source.url))

    def __reduce__(self) -> tuple[Any, ...]:
        include, exclude = self._translation.selection
        return (_rebuild, (self._source, self._requested, include, exclude))


def _rebuild(
    source: ZMap, target: Target, include: Sequence[str], exclude: Sequence[str]
) -> TranslatedView:
    return TranslatedView.from_source(source, target, include=include, exclude=exclude)


def view(
    src: str | os.PathLike[str] | ZMap,
    mode: Literal["zarr", "nczarr"] = "zarr",
    *,
    noxarray: bool = False,
    consolidated: bool | None = None,
    netcdf_scalars: bool = False,
    zarr_format: int = 2,
    storage_options: Mapping[str, Any] | None = None,
) -> TranslatedView:
    """A read-only map showing ``src`` translated to ``mode``, without copying data.

    What the translation could not carry verbatim (arrays skipped, dimensions
    renamed, metadata decoded leniently ...) is announced as
    :class:`~nczarr.errors.NCZarrWarning` and kept in ``view(...).warnings``.

    Parameters
    ----------
    src : str, path-like or ZMap
        A netCDF-style URL or path (opened read-only and closed with the view), or
        an open map (left open).
    mode : {"zarr", "nczarr"}
        ``"zarr"``: pure Zarr for zarr-python/xarray. ``"nczarr"``: the layout
        netcdf-c 4.9.3+ opens read-write.
    noxarray : bool
        Omit ``_ARRAY_DIMENSIONS`` (``dimension_names`` in Zarr v3).
    consolidated : bool or None
        Show a ``.zmetadata``; ``None``: iff ``src`` has one.
    netcdf_scalars : bool
        ``mode="zarr"`` only: show scalars as netcdf-c writes them in pure Zarr (shape
        ``[1]``, ``_ARRAY_DIMENSIONS: ["_scalar_"]``) instead of 0-d arrays.
    zarr_format : {2, 3}
        With ``mode="zarr"``: show Zarr v2 or Zarr v3 (``zarr.json``) metadata.
    storage_options : mapping, optional
        Options for opening ``src`` from a URL (see :func:`nczarr.open_map`).

    Raises
    ------
    InvalidModeError
        ``mode`` is not ``"zarr"`` or ``"nczarr"``, or ``zarr_format`` is not 2 or 3
        (3 only with ``"zarr"``, without ``netcdf_scalars``).
    MetadataError, UnsupportedError
        ``src`` cannot be read (see :func:`nczarr.load.read`).

    Examples
    --------
    >>> import nczarr
    >>> src = nczarr.MemoryMap(mode="w")
    >>> src[".zgroup"] = b'{"zarr_format": 2}'
    >>> sorted(view(src, "nczarr"))
    ['.zattrs', '.zgroup']
    """
    if mode not in FORMATS:
        raise InvalidModeError(
            f"invalid view mode {mode!r}: expected one of {', '.join(map(repr, FORMATS))}"
        )
    target = Target(mode, zarr_format, noxarray, consolidated, netcdf_scalars)
    from ..maps.open import open_source

    zmap, owned = open_source(src, storage_options, caller="view")
    try:
        result = TranslatedView.from_source(zmap, target, owns_source=owned)
    except BaseException:
        if owned:
            zmap.close()
        raise
    warn_all(result.warnings)
    return result
