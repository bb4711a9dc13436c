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
``.nczvar`` ...), the source's own metadata, and arrays the reader skipped. Wrap it
in :class:`nczarr.integrations.zarr_store.ZarrStore` to read any NCZarr generation with
zarr-python or xarray, or copy its keys to convert (what :mod:`nczarr.convert` does).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from .errors import InvalidModeError, NCZarrWarning, ReadOnlyError, warn_all
from .keys import join_key, normalize_key
from .maps.base import ZMap
from .translate.conventions import FORMATS, ZARRAY, ZMETADATA
from .translate.model import Dataset
from .translate.read_zarr3 import ChunkKeys

if TYPE_CHECKING:
    from .reencode import ChunkRecoder, Reencoding

__all__ = ["TranslatedView", "view"]


class TranslatedView(ZMap):
    """Read-only zmap: translated metadata in memory, chunk objects passed through.

    Built by :func:`view`. Attributes for converters: :attr:`source`,
    :attr:`dataset`, :attr:`metadata`, :attr:`warnings`, :attr:`format` and
    :meth:`chunk_keys`. Writes raise :class:`~nczarr.errors.ReadOnlyError`.
    """

    def __init__(
        self,
        source: ZMap,
        *,
        format: Literal["zarr", "nczarr"] = "zarr",
        noxarray: bool = False,
        consolidated: bool | None = None,
        owns_source: bool = False,
        netcdf_scalars: bool = False,
        zarr_format: int = 2,
        metadata: tuple[dict[str, Any], Sequence[str]] | None = None,
    ) -> None:
        super().__init__("r")
        if format not in FORMATS:
            raise InvalidModeError(
                f"invalid view mode {format!r}: expected one of {', '.join(map(repr, FORMATS))}"
            )
        from .load import read_with_chunk_keys
        from .translate.writer import check_zarr_format, write_with_warnings

        self._zarr_format = check_zarr_format(format, zarr_format, netcdf_scalars=netcdf_scalars)
        self._source = source
        self._owns_source = owns_source
        self._format = format
        self._noxarray = noxarray
        self._netcdf_scalars = netcdf_scalars
        self._consolidated_arg = consolidated
        self._dataset: Dataset
        read_dataset, chunk_keys = read_with_chunk_keys(source, metadata=metadata)
        #: Key prefixes of the arrays whose chunks are shown, sorted.
        self._arrays: tuple[str, ...] = tuple(
            sorted(v.path.strip("/") for v in read_dataset.root.all_variables())
        )
        self._array_set = frozenset(self._arrays)
        self._ndims = {v.path.strip("/"): len(v.shape) for v in read_dataset.root.all_variables()}
        #: Zarr v3 arrays: how their source chunk keys map to the v2 keys shown.
        self._v3: dict[str, ChunkKeys] = {a: chunk_keys[a] for a in self._arrays if a in chunk_keys}
        #: Arrays whose chunks live under another key prefix in the source: a store
        #: whose root is a bare array shows it as variable ``name`` (chunks ``name/0.0``)
        #: while the source holds them at its root (``0.0``).
        self._source_prefix: dict[str, str] = {}
        if ZARRAY in source and len(self._arrays) == 1:
            self._source_prefix[self._arrays[0]] = ""
        self._mapped = bool(self._source_prefix) or any(not k.identical for k in self._v3.values())
        #: Sharded Zarr v3 arrays: (shard shape, inner chunk shape, array shape).
        self._shards: dict[str, tuple[tuple[int, ...], ...]] = {
            v.path.strip("/"): (v.shards, v.chunks, v.shape)
            for v in read_dataset.root.all_variables()
            if v.shards is not None
        }
        self._stray: dict[str, str] = {}
        self._reencoded: dict[str, Reencoding] = {}
        self._dataset, self._reencoded, self._recoders = self._plan(read_dataset, format)
        if format == "nczarr":  # re-encoded or v3 fixed bytes stay netCDF strings (same keys)
            from .translate.netcdf_forms import bytes_as_text

            kept = {f"/{p}" for p in (*self._reencoded, *self._v3)}
            self._dataset, as_text = bytes_as_text(self._dataset, kept)
            self._dataset = replace(self._dataset, warnings=(*self._dataset.warnings, *as_text))
        if consolidated is None:
            consolidated = ZMETADATA in source
        self._consolidated = bool(consolidated)
        written = write_with_warnings(
            self._dataset,
            format,
            noxarray=noxarray,
            consolidated=self._consolidated,
            netcdf_scalars=netcdf_scalars,
            zarr_format=self._zarr_format,
        )
        self._metadata: dict[str, bytes] = written.metadata
        if format == "nczarr":  # fixed bytes become char arrays with one more axis
            for var in self._dataset.root.all_variables():
                path = var.path.strip("/")
                if var.logical == "bytes" and path not in self._v3 and path not in self._reencoded:
                    self._v3[path] = TrailingAxis(var.dimension_separator, len(var.shape))
            self._mapped = self._mapped or any(not k.identical for k in self._v3.values())
        self._warnings: tuple[str, ...] = (
            *self._dataset.warnings,
            *(r.message for r in self._reencoded.values()),
            *written.warnings,
        )
        left_out = set(written.skipped)  # arrays the writer could not describe
        self._left_out = tuple(sorted("/" + a for a in left_out))
        if left_out:
            self._arrays = tuple(a for a in self._arrays if a not in left_out)
            self._array_set = frozenset(self._arrays)
            self._v3 = {a: k for a, k in self._v3.items() if a in self._array_set}
            self._mapped = bool(self._source_prefix) or any(
                not k.identical for k in self._v3.values()
            )
        #: Arrays that own every ``array/<name>`` key not starting with "." (no key
        #: mapping, no re-encoding): :meth:`getitems` finds a chunk's owner in one step.
        self._plain_arrays = self._array_set - set(self._v3) - set(self._reencoded)

    def _plan(
        self, dataset: Dataset, format: str
    ) -> tuple[Dataset, dict[str, Reencoding], dict[str, ChunkRecoder]]:
        """Which arrays are re-encoded, the dataset as shown, and one recoder per array.

        Variable-length strings shown as NCZarr need a width (netCDF strings are
        fixed-width there): their chunks are read once, here, to find the longest.
        """
        from .reencode import ChunkRecoder, Reencoding, plan_reencoding, with_maxstrlen

        planned, reencoded = plan_reencoding(dataset, format)
        self._reencoded = reencoded  # what the listings below skip stray objects of

        def recoder(item: Reencoding) -> ChunkRecoder:
            return ChunkRecoder(
                self._source,
                item,
                self._source_prefix.get(item.path, item.path),
                self._v3.get(item.path),
            )

        widths = {}
        for path, item in reencoded.items():
            if item.source.text_storage == "vlen-utf8" and item.target.text_storage is None:
                scan = recoder(item)
                longest = max(
                    (scan.longest_string(self._coords(path, k)) for k in self._listing(path)),
                    default=0,
                )
                widths[path] = max(longest, 1)
        if widths:
            planned = with_maxstrlen(planned, widths)
            reencoded = {
                path: Reencoding(
                    item.source,
                    planned.find_variable(item.target.path),
                    item.reason.replace(
                        f"|S{item.target.maxstrlen}", f"|S{widths.get(path, item.target.maxstrlen)}"
                    ),
                )
                for path, item in reencoded.items()
            }
        return planned, reencoded, {path: recoder(item) for path, item in reencoded.items()}

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
        return self._left_out

    @property
    def reencoded_messages(self) -> tuple[str, ...]:
        """One warning per re-encoded array (also in :attr:`warnings`)."""
        return tuple(item.message for item in self._reencoded.values())

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
        return self._dataset

    @property
    def metadata(self) -> dict[str, bytes]:
        """The metadata objects the writer produced (a copy)."""
        return dict(self._metadata)

    @property
    def warnings(self) -> tuple[str, ...]:
        """The reader's warnings, then the writer's."""
        return self._warnings

    @property
    def format(self) -> str:
        """``"zarr"`` or ``"nczarr"``: what the view shows."""
        return self._format

    @property
    def zarr_format(self) -> int:
        """2 or 3: the Zarr version of the metadata the view shows."""
        return self._zarr_format

    @property
    def netcdf_scalars(self) -> bool:
        """Whether pure Zarr scalars are shown in netcdf-c's form (shape ``[1]``)."""
        return self._netcdf_scalars

    @property
    def consolidated(self) -> bool:
        """Whether the view shows a ``.zmetadata``."""
        return self._consolidated

    @property
    def keys_mapped(self) -> bool:
        """Whether some chunk is shown under another key than the source's (Zarr v3
        source with ``c/...`` keys): then copy from the view, not from :attr:`source`."""
        return self._mapped

    def chunk_keys(self) -> Iterator[str]:
        """The key, as the view shows it, of every chunk object that passes through
        (the source key itself unless :attr:`keys_mapped`; see :meth:`source_key`)."""
        for array in self._arrays:
            yield from self._chunks_below(array, array)

    def source_key(self, key: str) -> str:
        """The source key of the chunk the view shows as ``key``.

        Raises
        ------
        KeyError
            ``key`` is not a chunk key of an array of the view.
        """
        nkey = normalize_key(key)
        array = self._owner(nkey)
        if array is None:
            raise KeyError(key)
        rest = nkey[len(array) + 1 :]
        encoding = self._v3.get(array)
        if encoding is not None:
            coords = encoding.target_coords(rest)
            if coords is None:  # pragma: no cover - _owner checked it
                raise KeyError(key)
            shards = self._shards.get(array)
            if shards is not None:  # the shard holding this inner chunk
                coords = tuple(
                    c * n // s for c, s, n in zip(coords, shards[0], shards[1], strict=True)
                )
            rest = encoding.source(coords)
        return join_key(self._source_prefix.get(array, array), rest)

    def _reencode(self, key: str) -> bytes:
        """The re-encoded bytes of chunk ``key`` (normalized) of a re-encoded array."""
        array = self._owner(key)
        assert array is not None
        data = self._recoders[array].encode(self._coords(array, key))
        if data is None:
            raise KeyError(key)
        return data

    # ------------------------------------------------------------------ internals
    def _listing(self, array: str) -> Iterator[str]:
        return self._chunks_below(array, array)

    def _coords(self, array: str, shown: str) -> tuple[int, ...]:
        """Chunk coordinates of a shown chunk key of ``array``."""
        rest = shown[len(array) + 1 :]
        encoding = self._v3.get(array)
        if encoding is not None:
            coords = encoding.target_coords(rest)
            if coords is None:  # pragma: no cover - listed keys parse
                raise KeyError(shown)
            return coords
        coords = chunk_coords(rest, self._ndims[array])
        if coords is None:  # a stray object ("README") where a chunk would be
            raise KeyError(shown)
        return coords

    def _inner(self, array: str, coords: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """The inner chunk coordinates of shard ``coords`` of a sharded array."""
        shards, chunks, shape = self._shards[array]
        ranges = []
        for c, s, n, size in zip(coords, shards, chunks, shape, strict=True):
            per = s // n
            last = -(-size // n)
            ranges.append(range(c * per, min((c + 1) * per, last)))
        yield from _product(ranges)

    def _chunks_below(self, array: str, prefix: str) -> Iterator[str]:
        """Chunk keys (as shown) of ``array`` whose shown key is at or below ``prefix``."""
        encoding = self._v3.get(array)
        if encoding is not None:
            cut = len(array) + 1
            sharded = array in self._shards
            for key in self._source.keys_below(array):
                coords = encoding.source_coords(key[cut:]) if key.startswith(array + "/") else None
                if coords is None:
                    continue
                for inner in self._inner(array, coords) if sharded else (coords,):
                    shown = f"{array}/{encoding.target(inner)}"
                    if shown == prefix or shown.startswith(prefix + "/") or prefix == array:
                        yield shown
            return
        source_prefix = self._source_prefix.get(array)
        if source_prefix is not None:  # a bare root array: chunks at the source's root
            for key in self._source.keys_below(source_prefix):
                if any(segment.startswith(".") for segment in key.split("/")):
                    continue
                shown = join_key(array, key)
                if shown == prefix or shown.startswith(prefix + "/") or prefix == array:
                    yield shown
            return
        cut = len(array) + 1
        below = array + "/"
        recoded = array in self._reencoded
        ndim = self._ndims[array]
        for key in self._source.keys_below(prefix):
            if not key.startswith(below):
                continue
            rest = key[cut:]
            flat = "/" not in rest  # one segment (NCZarr's "0.1"): the array owns it
            if rest.startswith(".") if flat else any(s.startswith(".") for s in rest.split("/")):
                continue
            if recoded and chunk_coords(rest, ndim) is None:
                self._note_stray(key, array)  # re-encoding needs coordinates: not a chunk
                continue
            if flat or self._owner(key) == array:
                yield key

    def _note_stray(self, key: str, array: str) -> None:
        """Warn (once per key) that ``key`` is skipped: not a chunk of its re-encoded array."""
        if key in self._stray:
            return
        message = (
            f"{self._source.url}: skipped {key!r}: not a chunk key of re-encoded array '/{array}'"
        )
        self._stray[key] = message
        warnings.warn(message, NCZarrWarning, stacklevel=4)

    @property
    def stray_keys(self) -> dict[str, str]:
        """Objects found among the chunks of re-encoded arrays that are not chunk keys
        (``README``), skipped by the listing, and the warning given for each."""
        return dict(self._stray)

    def _owner(self, key: str) -> str | None:
        """The array whose chunk ``key`` would be (nearest array ancestor), or None."""
        parts = key.split("/")
        for i in range(len(parts) - 1, 0, -1):
            candidate = "/".join(parts[:i])
            if candidate in self._array_set:
                rest = parts[i:]
                if any(segment.startswith(".") for segment in rest):
                    return None
                encoding = self._v3.get(candidate)
                if encoding is not None and encoding.target_coords("/".join(rest)) is None:
                    return None
                if (
                    encoding is None
                    and candidate in self._reencoded
                    and chunk_coords("/".join(rest), self._ndims[candidate]) is None
                ):
                    return None  # not a chunk: re-encoding needs its coordinates
                return candidate
        return None

    def _is_chunk(self, key: str) -> bool:
        return self._owner(key) is not None

    # ----------------------------------------------------------------- primitives
    def _load(self, key: str) -> bytes:
        value = self._metadata.get(key)
        if value is not None:
            return value
        if self._is_chunk(key):
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
        return self._is_chunk(key) and self.source_key(key) in self._source

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
        return (
            f"view+{self._format}:{self._source.url}",
            {
                "noxarray": self._noxarray,
                "consolidated": self._consolidated_arg,
                "netcdf_scalars": self._netcdf_scalars,
                "zarr_format": self._zarr_format,
            },
        )

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
            cut = nkey.rfind("/")
            array = nkey[:cut] if cut > 0 else None
            if array not in self._plain_arrays or nkey.startswith(".", cut + 1):
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

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """A byte range; chunk ranges are read from the source without the whole object."""
        nkey = normalize_key(key)
        if nkey not in self._metadata and self._is_chunk(nkey):
            if self.reencoded_array(nkey) is not None:
                return super().getrange(key, start, length)
            return self._source.getrange(self.source_key(nkey), start, length)
        return super().getrange(key, start, length)

    def getsize(self, key: str) -> int:
        """Size of an object; chunk sizes come from the source."""
        nkey = normalize_key(key)
        if nkey in self._metadata:
            return len(self._metadata[nkey])
        if self._is_chunk(nkey):
            if self.reencoded_array(nkey) is not None:
                return len(self._reencode(nkey))
            return self._source.getsize(self.source_key(nkey))
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
            and self._format == other._format
            and self._noxarray == other._noxarray
            and self._consolidated == other._consolidated
            and self._netcdf_scalars == other._netcdf_scalars
            and self._zarr_format == other._zarr_format
        )

    def __hash__(self) -> int:
        return hash((self._format, self._source.url))

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (
                self._source,
                self._format,
                self._noxarray,
                self._consolidated_arg,
                self._netcdf_scalars,
                self._zarr_format,
            ),
        )


class TrailingAxis:
    """Chunk keys of an array shown with one more axis of a single chunk.

    Fixed-width bytes ``|S<n>`` shown as NCZarr are netCDF ``char`` arrays with a
    string-length dimension (what xarray's netcdf4 engine writes): the same chunk
    bytes, under the source key plus one coordinate ``0`` (``x/1`` shown as ``x/1.0``).
    Duck-types :class:`~nczarr.translate.read_zarr3.ChunkKeys` for the view.
    """

    identical = False

    def __init__(self, separator: str, ndim: int) -> None:
        self.separator = separator
        self.target_separator = separator
        self.ndim = ndim

    def _parse(self, rest: str, ndim: int) -> tuple[int, ...] | None:
        if ndim == 0:
            return () if rest == "0" else None
        parts = rest.split(self.separator)
        if len(parts) != ndim or not all(p.isdigit() and p.isascii() for p in parts):
            return None
        return tuple(int(p) for p in parts)

    def source_coords(self, rest: str) -> tuple[int, ...] | None:
        """Coordinates of a source key (``ndim`` of them), or None."""
        return self._parse(rest, self.ndim)

    def target_coords(self, rest: str) -> tuple[int, ...] | None:
        """Coordinates of a shown key (``ndim + 1``, the last one 0), or None."""
        coords = self._parse(rest, self.ndim + 1)
        return coords if coords is not None and coords[-1] == 0 else None

    def source(self, coords: tuple[int, ...]) -> str:
        """The source key of shown coordinates."""
        return self.separator.join(str(c) for c in coords[:-1]) if len(coords) > 1 else "0"

    def target(self, coords: tuple[int, ...]) -> str:
        """The shown key of source coordinates."""
        return self.separator.join(str(c) for c in (*coords, 0))


def chunk_coords(rest: str, ndim: int) -> tuple[int, ...] | None:
    """The coordinates of Zarr v2 chunk key ``rest`` (``"0.1"``, ``"0/1"``; ``"0"`` for
    0-d) of an array of rank ``ndim``, or None when ``rest`` is not such a key."""
    if ndim == 0:
        return () if rest == "0" else None
    parts = rest.replace("/", ".").split(".")
    if len(parts) != ndim or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _product(ranges: list[range]) -> Iterator[tuple[int, ...]]:
    from itertools import product

    return product(*ranges)


def _rebuild(
    source: ZMap,
    format: str,
    noxarray: bool,
    consolidated: bool | None,
    netcdf_scalars: bool = False,
    zarr_format: int = 2,
) -> TranslatedView:
    return TranslatedView(
        source,
        format=format,  # type: ignore[arg-type]
        noxarray=noxarray,
        consolidated=consolidated,
        netcdf_scalars=netcdf_scalars,
        zarr_format=zarr_format,
    )


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
    options = {
        "noxarray": noxarray,
        "consolidated": consolidated,
        "netcdf_scalars": netcdf_scalars,
        "zarr_format": zarr_format,
    }
    if isinstance(src, ZMap):
        if storage_options:
            raise TypeError(
                f"view got an open map {src!r}: storage options apply to URLs only, "
                f"got {sorted(storage_options)}"
            )
        result = TranslatedView(src, format=mode, **options)
    elif isinstance(src, str | os.PathLike):
        from .maps.open import open_map

        zmap = open_map(os.fspath(src), mode="r", storage_options=storage_options)
        try:
            result = TranslatedView(zmap, format=mode, owns_source=True, **options)
        except BaseException:
            zmap.close()
            raise
    else:
        raise TypeError(f"expected a URL, a path or a ZMap, got {type(src).__name__}")
    warn_all(result.warnings)
    return result
