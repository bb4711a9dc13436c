"""Reference sets: a translated view saved as pointers into the source (fsspec version 1).

``references(src, mode="zarr")`` returns ``{"version": 1, "refs": {...}}`` in the form
fsspec's ``reference://`` filesystem (and kerchunk) reads: the metadata objects are
exactly those :func:`nczarr.view` shows (the translated metadata, as text), and every
chunk entry points into the source's own objects, so nothing is copied:

* a directory tree or an fsspec/S3 store: ``[url]``, the whole object;
* a zip archive (local, or ``zip::s3://...``): ``[zip, offset, length]``, the bytes of
  a member stored uncompressed (what netcdf-c and zarr-python write).

What cannot be pointed at is copied into the set as ``"base64:..."`` ("inlined") only
within a budget, and never silently:

* chunks of arrays the view re-encodes (:attr:`TranslatedView.reencoded`), inlined as
  the view serves them;
* zip members that are compressed (deflate, bzip2 ...), which a reader cannot range
  into, inlined decompressed (a chunk object's bytes, as the view serves them).

Such an array is inlined, with an :class:`~nczarr.errors.NCZarrWarning` naming it and
the bytes copied, while its copied bytes stay within ``max_inlined``; above that
:func:`references` raises :class:`~nczarr.errors.UnsupportedError` naming it, unless
``exclude=`` names it, which leaves it out (announced too).

Where a chunk lives is asked of the map (``ZMap.chunk_location(key)``: ``(url,)``,
``(url, offset, length)`` or ``None``): directories, zips, fsspec filesystems, zips on
S3 and netCDF files' byte ranges each answer for themselves, a batch of keys at a time
(``ZMap.chunk_locations``), array by array from the view's listing of that array
(:meth:`TranslatedView.chunk_locations`): no per-key translation, no list of every key.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from ..errors import UnsupportedError, warn_all
from ..maps.base import ZMap
from ..readthrough import TranslatedView, view
from .plan import order_metadata, selected_paths

__all__ = [
    "DEFAULT_MAX_INLINED",
    "chunk_location",
    "references",
    "Entries",
    "check_limits",
    "inline_bytes",
]

#: Bytes per array that cannot be pointed at and may be copied into a reference set.
DEFAULT_MAX_INLINED = 1 << 20

Location = tuple[str] | tuple[str, int, int]


def chunk_location(source: ZMap, key: str) -> Location | None:
    """Where the bytes of ``source[key]`` lie, for a reader without nczarr: asked of
    the map (:meth:`~nczarr.maps.base.ZMap.chunk_location`). ``(url,)``: the whole
    object at ``url``; ``(url, offset, length)``: that byte range of ``url``; ``None``:
    nowhere a reader can range into (a compressed zip member, a re-encoded chunk)."""
    return source.chunk_location(key)


def _why_not(source: ZMap) -> str:
    """Why a chunk of ``source`` that passes through the view cannot be pointed at."""
    return source.unreferenceable_reason()


def _text(value: bytes) -> str:
    """A metadata object as the set stores it: text when it is UTF-8, else base64."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return inline_bytes(value)
    return inline_bytes(value) if text.startswith("base64:") else text


def inline_bytes(value: bytes) -> str:
    """``value`` as a reference set holds inlined bytes: ``"base64:..."``."""
    return "base64:" + base64.b64encode(value).decode("ascii")


class _Budget:
    """The bytes copied per array that could not be pointed at, against the limit."""

    def __init__(self, limit: int, into: str = "the reference set") -> None:
        self.limit = limit
        self.into = into
        self.copied: dict[str, tuple[int, int, str]] = {}

    def add(self, array: str, size: int, why: str) -> None:
        total, count, _ = self.copied.get(array, (0, 0, why))
        total += size
        if total > self.limit:
            raise UnsupportedError(
                f"array /{array} cannot be referenced ({why}) and its chunks exceed "
                f"max_inlined={self.limit} bytes: pass exclude=['/{array}'] to leave it "
                "out of the reference set, or a larger max_inlined to copy it in"
            )
        self.copied[array] = (total, count + 1, why)

    def warnings(self) -> list[str]:
        return [
            f"array /{array} cannot be referenced ({why}): {count} chunk(s), "
            f"{total} bytes copied into {self.into}"
            for array, (total, count, why) in sorted(self.copied.items())
        ]


def _refuse_unrepresentable(translated: TranslatedView, exclude: Sequence[str] | None) -> None:
    """Arrays the view does not show (skipped by the reader, left out by the writer)
    are refused unless excluded, as ``convert`` refuses them."""
    refused = selected_paths((*translated.dataset.skipped, *translated.left_out), None, exclude)
    if refused:
        raise UnsupportedError(
            f"{len(refused)} array(s) cannot be shown in the target format: "
            + ", ".join(refused)
            + f". Pass exclude={refused!r} to make references without them."
        )


def _shown(translated: TranslatedView, exclude: Sequence[str] | None) -> TranslatedView:
    """The view of ``translated`` without the arrays ``exclude`` names (caller closes)."""
    return translated.selected(exclude=exclude) if exclude else translated


class Entries:
    """A reference set as a stream: ``metadata`` (key, text) first, then ``chunks()``
    yielding (key, entry) array by array (or ``entries_for`` the keys a writer walking
    the chunk grid asks, array by array), then ``warnings()`` to announce.

    Chunk entries are made array by array from the view's listing of that array,
    their locations asked of the source a batch at a time
    (:meth:`TranslatedView.chunk_locations`): no list of every chunk key is held.
    """

    def __init__(
        self,
        translated: TranslatedView,
        *,
        inline_threshold: int,
        exclude: Sequence[str] | None,
        max_inlined: int,
        into: str = "the reference set",
    ) -> None:
        _refuse_unrepresentable(translated, exclude)
        self.translated = translated
        self.inline_threshold = inline_threshold
        shown = _shown(translated, exclude)
        try:
            metadata = shown.metadata
            self.metadata: list[tuple[str, str]] = [
                (key, _text(bytes(metadata[key]))) for key in order_metadata(metadata)
            ]
            #: Key prefixes of the arrays whose chunks the set holds.
            self.arrays: tuple[str, ...] = shown.shown_arrays
            self._view_warnings = tuple(shown.warnings)
        finally:
            if shown is not translated:
                shown.close()
        self.budget = _Budget(max_inlined, into)
        self.pointed = 0
        self.inlined = 0
        #: What a writer of the set adds to announce (after the chunks).
        self.notes: list[str] = []

    def chunk_keys(self) -> Iterator[str]:
        """Every chunk key (as shown) the set holds, array by array."""
        for array in self.arrays:
            for key, _ in self.translated.chunk_locations(array):
                yield key

    def chunks(self) -> Iterator[tuple[str, str | list[Any]]]:
        """Each chunk key and its entry: ``[url]``, ``[url, offset, length]`` or
        ``"base64:..."`` (raises :class:`UnsupportedError` past ``max_inlined``)."""
        for array in self.arrays:
            yield from self._array_entries(array, self.translated.chunk_locations(array))

    def entries_for(self, array: str, keys: Sequence[str]) -> Iterator[tuple[str, str | list[Any]]]:
        """The entries of chunks ``keys`` of ``array`` (keys the view lists), in that
        order: for a writer that walks an array's chunk grid itself."""
        located = zip(keys, self.translated.locate(array, keys), strict=True)
        return self._array_entries(array, located)

    def _array_entries(
        self, array: str, located: Iterator[tuple[str, Location | None]]
    ) -> Iterator[tuple[str, str | list[Any]]]:
        """The entries of one array's chunks, from their locations."""
        translated = self.translated
        threshold = self.inline_threshold
        for key, location in located:
            if location is None:
                yield key, self._inlined(array, key)
                continue
            if threshold > 0:
                size = location[2] if len(location) == 3 else translated.getsize(key)
                if size < threshold:
                    self.inlined += 1
                    yield key, inline_bytes(translated[key])
                    continue
            self.pointed += 1
            yield key, list(location)

    def _inlined(self, array: str, key: str) -> str:
        """Chunk ``key``, which cannot be pointed at, copied in (within the budget)."""
        translated = self.translated
        if translated.reencoded_array(key) is not None:
            why = "re-encoded by the view"
        else:
            why = _why_not(translated.source)
        value = translated[key]
        self.budget.add(array, len(value), why)
        self.inlined += 1
        return inline_bytes(value)

    def warnings(self) -> list[str]:
        """What to announce once every chunk was yielded."""
        return [
            *(w for w in self._view_warnings if w not in self.translated.warnings),
            *self.budget.warnings(),
            *self.notes,
        ]


def _build(
    translated: TranslatedView,
    *,
    inline_threshold: int,
    exclude: Sequence[str] | None,
    max_inlined: int,
) -> tuple[dict[str, Any], list[str]]:
    """The refs dict of ``translated`` and the warnings to announce."""
    entries = Entries(
        translated, inline_threshold=inline_threshold, exclude=exclude, max_inlined=max_inlined
    )
    refs: dict[str, Any] = dict(entries.metadata)
    refs.update(entries.chunks())
    return {"version": 1, "refs": refs}, entries.warnings()


def check_limits(inline_threshold: int, max_inlined: int) -> None:
    """Refuse negative limits before anything is opened."""
    if inline_threshold < 0 or max_inlined < 0:
        raise ValueError(
            f"inline_threshold and max_inlined must be >= 0, got {inline_threshold}, {max_inlined}"
        )


def references(
    src: str | os.PathLike[str] | ZMap,
    mode: Literal["zarr", "nczarr"] = "zarr",
    *,
    zarr_format: int = 2,
    storage_options: Mapping[str, Any] | None = None,
    consolidated: bool | None = True,
    inline_threshold: int = 0,
    exclude: Sequence[str] | None = None,
    max_inlined: int = DEFAULT_MAX_INLINED,
) -> dict[str, Any]:
    """A kerchunk/fsspec reference set (version 1) showing ``src`` as
    ``view(src, mode, consolidated=consolidated)``.

    Metadata entries are the view's metadata objects byte for byte; chunk entries point
    into ``src``'s objects (see the module doc), so reading through the set reads the
    source's own bytes. ``src`` is only read.

    Parameters
    ----------
    src : str, path-like or ZMap
        Any source :func:`nczarr.view` accepts (URL, path or open map).
    mode : {"zarr", "nczarr"}
        What the set shows, as in :func:`nczarr.view`.
    zarr_format : {2, 3}
        Zarr version of the metadata shown (3 only with ``mode="zarr"``).
    storage_options : mapping, optional
        Options for opening ``src`` from a URL.
    consolidated : bool or None
        As in :func:`nczarr.view`: the set holds consolidated metadata (``.zmetadata``;
        Zarr v3: the root ``zarr.json``'s ``consolidated_metadata``). ``True`` by
        default: zarr and xarray (``consolidated=None``, their default) then open the
        set with one metadata read instead of listing it (which makes fsspec index
        every key) and reading each ``.zarray``. ``None``: iff ``src`` has it.
    inline_threshold : int
        As in kerchunk: chunks smaller than this many bytes are copied into the set;
        ``0`` (the default) copies no chunk that can be pointed at.
    exclude : sequence of str, optional
        Arrays or groups (``/g/v``, ``g/v`` or a bare name) to leave out.
    max_inlined : int
        Bytes per array that cannot be pointed at (re-encoded arrays, compressed zip
        members) that may be copied into the set (announced); above it the array is
        refused unless ``exclude`` names it.

    Raises
    ------
    UnsupportedError
        An array cannot be referenced and exceeds ``max_inlined``, or the target
        format cannot show it; the message names it and the ``exclude=`` to pass.
    InvalidModeError, MetadataError
        As :func:`nczarr.view`.
    """
    check_limits(inline_threshold, max_inlined)
    with view(
        src,
        mode,
        zarr_format=zarr_format,
        consolidated=consolidated,
        storage_options=storage_options,
    ) as translated:
        result, warnings = _build(
            translated,
            inline_threshold=inline_threshold,
            exclude=exclude,
            max_inlined=max_inlined,
        )
    warn_all(warnings)
    return result
