"""Where the chunks a translated view shows are in its source (pure).

A view shows every chunk under a Zarr v2 key of the target; the source may hold it
under another key: a Zarr v3 key (``c/0/1`` shown as ``0.1``, one shard shown as
its inner chunks), the root of a bare-array store (shown as ``name/0.0``), or one
axis less (NCZarr char arrays of fixed-width bytes, :class:`TrailingAxis`). A
:class:`ChunkLayout` answers, for a shown key, which array owns it, its coordinates
and its source key, and lists the shown keys from the source's own listing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import product
from typing import Protocol

from ..keys import join_key
from ..records import field, record, replace
from .model import Dataset

__all__ = ["ChunkLayout", "KeyEncoding", "TrailingAxis", "chunk_coords", "chunk_layout"]


class KeyEncoding(Protocol):
    """How an array's source chunk keys map to the keys shown (``ChunkKeys``,
    :class:`TrailingAxis`)."""

    identical: bool
    target_separator: str

    def source_coords(self, rest: str) -> tuple[int, ...] | None: ...
    def target_coords(self, rest: str) -> tuple[int, ...] | None: ...
    def source(self, coords: tuple[int, ...]) -> str: ...
    def target(self, coords: tuple[int, ...]) -> str: ...


class TrailingAxis:
    """Chunk keys of an array shown with one more axis of a single chunk.

    Fixed-width bytes ``|S<n>`` shown as NCZarr are netCDF ``char`` arrays with a
    string-length dimension (what xarray's netcdf4 engine writes): the same chunk
    bytes, under the source key plus one coordinate ``0`` (``x/1`` shown as ``x/1.0``).
    ``inner``: the array's own key encoding when its source keys are not Zarr v2 keys
    (a Zarr v3 array's ``ChunkKeys``: ``x/c/1`` shown as ``x/1.0``).
    Duck-types :class:`~nczarr.translate.read_zarr3.ChunkKeys` for the view.
    """

    identical = False

    def __init__(self, separator: str, ndim: int, inner: KeyEncoding | None = None) -> None:
        self.inner = inner
        self.separator = separator
        self.target_separator = inner.target_separator if inner is not None else separator
        self.ndim = ndim

    def _parse(self, rest: str, ndim: int, separator: str) -> tuple[int, ...] | None:
        if ndim == 0:
            return () if rest == "0" else None
        parts = rest.split(separator)
        if len(parts) != ndim or not all(p.isdigit() and p.isascii() for p in parts):
            return None
        return tuple(int(p) for p in parts)

    def source_coords(self, rest: str) -> tuple[int, ...] | None:
        """Coordinates of a source key (``ndim`` of them), or None."""
        if self.inner is not None:
            return self.inner.source_coords(rest)
        return self._parse(rest, self.ndim, self.separator)

    def target_coords(self, rest: str) -> tuple[int, ...] | None:
        """Coordinates of a shown key (``ndim + 1``, the last one 0), or None."""
        coords = self._parse(rest, self.ndim + 1, self.target_separator)
        return coords if coords is not None and coords[-1] == 0 else None

    def source(self, coords: tuple[int, ...]) -> str:
        """The source key of shown coordinates."""
        if self.inner is not None:
            return self.inner.source(coords[:-1])
        return self.separator.join(str(c) for c in coords[:-1]) if len(coords) > 1 else "0"

    def target(self, coords: tuple[int, ...]) -> str:
        """The shown key of source coordinates."""
        return self.target_separator.join(str(c) for c in (*coords, 0))


def chunk_coords(rest: str, ndim: int) -> tuple[int, ...] | None:
    """The coordinates of Zarr v2 chunk key ``rest`` (``"0.1"``, ``"0/1"``; ``"0"`` for
    0-d) of an array of rank ``ndim``, or None when ``rest`` is not such a key."""
    if ndim == 0:
        return () if rest == "0" else None
    parts = rest.replace("/", ".").split(".")
    if len(parts) != ndim or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


@record
class ChunkLayout:
    """Where the chunks of the arrays shown are in the source.

    Attributes
    ----------
    arrays
        Key prefixes (``"g/v"``) of the arrays whose chunks are shown, sorted.
    ndims
        Rank of each array.
    keys
        Arrays whose chunks are shown under other keys than the source's (Zarr v3
        ``c/...`` keys, NCZarr char arrays' extra axis): their key encoding.
    source_prefix
        Arrays whose chunks live under another prefix in the source: a store whose
        root is a bare array shows it as variable ``name`` (chunks ``name/0.0``) while
        the source holds them at its root (``0.0``).
    shards
        Sharded Zarr v3 arrays: ``(shard shape, inner chunk shape, array shape)``.
    complete
        Arrays whose every chunk is shown, stored in the source or not: ``(array
        shape, chunk shape)`` (the chunks the source leaves out hold another value than
        the target's fill value: ``Variable.absent_fill``).
    """

    arrays: tuple[str, ...] = ()
    ndims: Mapping[str, int] = field(default_factory=dict)
    keys: Mapping[str, KeyEncoding] = field(default_factory=dict)
    source_prefix: Mapping[str, str] = field(default_factory=dict)
    shards: Mapping[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    recoded: frozenset[str] = frozenset()
    complete: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)
    array_set: frozenset[str] = field(init=False, repr=False, compare=False)
    #: Arrays that own every ``array/<name>`` key not starting with "." (no key
    #: mapping, no re-encoding): :meth:`owner` answers their chunks in one step.
    plain: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "array_set", frozenset(self.arrays))
        object.__setattr__(self, "plain", self.array_set - set(self.keys) - self.recoded)

    @property
    def mapped(self) -> bool:
        """Whether some chunk is shown under another key than its source key."""
        return bool(self.source_prefix) or any(not k.identical for k in self.keys.values())

    # ------------------------------------------------------------- shown keys
    def owner(self, key: str) -> str | None:
        """The array whose chunk ``key`` (normalized, as shown) would be (nearest array
        ancestor), or None. Every chunk read asks: a plain array's chunk in one step."""
        cut = key.rfind("/")
        if cut > 0 and key[:cut] in self.plain and not key.startswith(".", cut + 1):
            return key[:cut]
        parts = key.split("/")
        for i in range(len(parts) - 1, 0, -1):
            candidate = "/".join(parts[:i])
            if candidate in self.array_set:
                rest = parts[i:]
                if any(segment.startswith(".") for segment in rest):
                    return None
                encoding = self.keys.get(candidate)
                if encoding is not None and encoding.target_coords("/".join(rest)) is None:
                    return None
                if (
                    encoding is None
                    and candidate in self.recoded
                    and chunk_coords("/".join(rest), self.ndims[candidate]) is None
                ):
                    return None  # not a chunk: re-encoding needs its coordinates
                return candidate
        return None

    def coords(self, array: str, shown: str) -> tuple[int, ...]:
        """Chunk coordinates of a shown chunk key of ``array`` (``KeyError`` if none)."""
        rest = shown[len(array) + 1 :]
        encoding = self.keys.get(array)
        if encoding is not None:
            coords = encoding.target_coords(rest)
            if coords is None:  # pragma: no cover - listed keys parse
                raise KeyError(shown)
            return coords
        coords = chunk_coords(rest, self.ndims[array])
        if coords is None:  # a stray object ("README") where a chunk would be
            raise KeyError(shown)
        return coords

    def source_key(self, key: str) -> str:
        """The source key of the chunk shown as ``key`` (normalized).

        Raises
        ------
        KeyError
            ``key`` is not a chunk key of an array shown.
        """
        array = self.owner(key)
        if array is None:
            raise KeyError(key)
        rest = key[len(array) + 1 :]
        encoding = self.keys.get(array)
        if encoding is not None:
            coords = encoding.target_coords(rest)
            if coords is None:  # pragma: no cover - owner() checked it
                raise KeyError(key)
            shards = self.shards.get(array)
            if shards is not None:  # the shard holding this inner chunk
                coords = tuple(
                    c * n // s for c, s, n in zip(coords, shards[0], shards[1], strict=True)
                )
            rest = encoding.source(coords)
        return join_key(self.source_prefix.get(array, array), rest)

    def inner(self, array: str, coords: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """The inner chunk coordinates of shard ``coords`` of a sharded array."""
        shards, chunks, shape = self.shards[array]
        ranges = []
        for c, s, n, size in zip(coords, shards, chunks, shape, strict=True):
            per = s // n
            last = -(-size // n)
            ranges.append(range(c * per, min((c + 1) * per, last)))
        return product(*ranges)

    def shown_below(
        self,
        array: str,
        prefix: str,
        keys_below: Callable[[str], Iterable[str]],
        on_stray: Callable[[str, str], None],
        *,
        stored: bool = False,
    ) -> Iterator[str]:
        """Chunk keys (as shown) of ``array`` whose shown key is at or below ``prefix``,
        from the source's listing ``keys_below(prefix)`` (every chunk of the grid for a
        :attr:`complete` array, unless ``stored``: only those the source holds).
        ``on_stray(key, array)`` is told of objects among a re-encoded array's chunks
        that are not chunk keys."""
        if array in self.complete and not stored:
            yield from self._grid_below(array, prefix)
            return
        encoding = self.keys.get(array)
        if encoding is not None:
            yield from self._mapped_below(array, prefix, encoding, keys_below)
            return
        source_prefix = self.source_prefix.get(array)
        if source_prefix is not None:  # a bare root array: chunks at the source's root
            for key in keys_below(source_prefix):
                if any(segment.startswith(".") for segment in key.split("/")):
                    continue
                shown = join_key(array, key)
                if shown == prefix or shown.startswith(prefix + "/") or prefix == array:
                    yield shown
            return
        cut = len(array) + 1
        below = array + "/"
        recoded = array in self.recoded
        ndim = self.ndims[array]
        for key in keys_below(prefix):
            if not key.startswith(below):
                continue
            rest = key[cut:]
            flat = "/" not in rest  # one segment (NCZarr's "0.1"): the array owns it
            if rest.startswith(".") if flat else any(s.startswith(".") for s in rest.split("/")):
                continue
            if recoded and chunk_coords(rest, ndim) is None:
                on_stray(key, array)  # re-encoding needs coordinates: not a chunk
                continue
            if flat or self.owner(key) == array:
                yield key

    def _grid_below(self, array: str, prefix: str) -> Iterator[str]:
        """:meth:`shown_below` of a :attr:`complete` array: its whole chunk grid."""
        shape, chunks = self.complete[array]
        encoding = self.keys.get(array)
        for coords in product(*(range(-(-n // c)) for n, c in zip(shape, chunks, strict=True))):
            rest = encoding.target(coords) if encoding else ".".join(map(str, coords)) or "0"
            shown = f"{array}/{rest}"
            if shown == prefix or shown.startswith(prefix + "/") or prefix == array:
                yield shown

    def _mapped_below(
        self,
        array: str,
        prefix: str,
        encoding: KeyEncoding,
        keys_below: Callable[[str], Iterable[str]],
    ) -> Iterator[str]:
        """:meth:`shown_below` for an array whose chunks are shown under other keys."""
        source = self.source_prefix.get(array, array)  # "": a v3 array at the root
        below = source + "/" if source else ""
        sharded = array in self.shards
        for key in keys_below(source):
            coords = encoding.source_coords(key[len(below) :]) if key.startswith(below) else None
            if coords is None:
                continue
            for inner in self.inner(array, coords) if sharded else (coords,):
                shown = f"{array}/{encoding.target(inner)}"
                if shown == prefix or shown.startswith(prefix + "/") or prefix == array:
                    yield shown

    def only(self, arrays: Sequence[str]) -> ChunkLayout:
        """The layout of ``arrays`` only (those the writer described)."""
        kept = frozenset(arrays)
        return replace(
            self,
            arrays=tuple(a for a in self.arrays if a in kept),
            keys={a: k for a, k in self.keys.items() if a in kept},
        )


def chunk_layout(
    read: Dataset, shown: Dataset, chunk_keys: Mapping[str, KeyEncoding], *, bare_root: bool
) -> ChunkLayout:
    """The :class:`ChunkLayout` of the arrays of ``shown`` (``read`` after selection).

    ``bare_root``: the source's root is an array (a ``.zarray``, or a Zarr v3 array
    ``zarr.json``; then its one array is shown as a variable, its chunks read from the
    root, a v3 one's key encoding given under the prefix ``""``).
    """
    every = sorted(v.path.strip("/") for v in read.root.all_variables())
    variables = list(shown.root.all_variables())
    arrays = tuple(sorted(v.path.strip("/") for v in variables))
    prefix = {every[0]: ""} if bare_root and len(every) == 1 and every[0] in arrays else {}
    return ChunkLayout(
        arrays=arrays,
        ndims={v.path.strip("/"): len(v.shape) for v in variables},
        keys={a: chunk_keys[k] for a in arrays if (k := prefix.get(a, a)) in chunk_keys},
        source_prefix=prefix,
        shards={
            v.path.strip("/"): (v.shards, v.chunks, v.shape)
            for v in variables
            if v.shards is not None
        },
    )
