"""Where a netCDF file's chunks are: what the HDF5 and netCDF-3 readers both produce.

Pure: a :class:`SourceArray` per variable says, for each Zarr chunk key
(``"0.1"``, ``"0"`` for a scalar), which bytes of the file hold that chunk
(:class:`ChunkRef`). Contiguous data (netCDF-3 fixed variables, HDF5 contiguous
datasets) is cut along the first dimension into chunks of about
:data:`TARGET_CHUNK_BYTES` (:func:`cut_contiguous`).
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from array import array
from bisect import bisect_left
from collections import namedtuple
from collections.abc import Iterator, Mapping

from ..records import field, record
from ..translate.conventions import DEFAULT_FILLS

__all__ = [
    "DEFAULT_FILLS",
    "TARGET_CHUNK_BYTES",
    "ChunkIndex",
    "ChunkRef",
    "SourceArray",
    "chunk_grid",
    "chunk_key",
    "contiguous_index",
    "cut_contiguous",
    "rows_per_chunk",
]

#: Size aimed at when cutting contiguous data into chunks (raw bytes).
TARGET_CHUNK_BYTES = 4 * 2**20


class ChunkRef(namedtuple("ChunkRef", "offset length pad reencode", defaults=(0, False))):
    """A chunk's bytes: ``length`` bytes at ``offset`` of the file, then ``pad``
    bytes of fill (the ragged end of cut contiguous data), or, with ``reencode``,
    bytes the reader makes from the chunk's values. (A named tuple: a file's index
    holds one per chunk, made at open. ``collections.namedtuple``, not a
    ``typing.NamedTuple`` class: that compiles each field's annotation at import, and
    a process's first ``compile`` costs ~10 M instructions.)"""

    __slots__ = ()
    offset: int
    length: int
    pad: int
    reencode: bool

    @property
    def size(self) -> int:
        return self.length + self.pad


class ChunkIndex(Mapping[str, ChunkRef]):
    """Zarr chunk key -> :class:`ChunkRef` of one variable, held compactly.

    A file of a million chunks must not cost a Python object, a key string and a
    dict slot per chunk (~300 bytes each): the index keeps each chunk's offset and
    length in machine arrays, 4 bytes each while every value fits (an HDF5 chunk's
    length always does; offsets while the file is under 4 GiB), widened to 8 bytes by
    the first that does not. Chunks added in grid order from the first position on
    with none missing (a variable written whole, as HDF5's chunk index lists it) are
    *dense*: the chunk at position ``i`` is entry ``i``, so no position is stored (8
    bytes a chunk). Any other order keeps each chunk's position in the chunk grid
    (``grid``: chunks per axis) too, sorted on the first lookup (16 to 24 bytes a
    chunk). The rare ``pad`` and ``reencode`` fields are kept by position only where
    set. Keys and ``ChunkRef`` objects are made when asked. A key set twice keeps its
    last value.
    """

    def __init__(self, grid: tuple[int, ...] = ()) -> None:
        self.grid = tuple(grid)
        self._at: array[int] | None = None  # position in the grid (C order); None: dense
        self._offset = array("I")  # widened to "q" by an offset of 4 GiB or more
        self._length = array("I")  # widened to "q" by a length of 4 GiB or more
        self._pad: dict[int, int] = {}  # position -> pad, where not 0
        self._reencode: set[int] = set()  # positions of re-encoded chunks
        self._sorted = True
        self._sorting = threading.Lock()  # readers in several threads sort it once
        self._last: tuple[str | None, int] = (None, -1)  # the last key found: looked up twice
        self._rule: tuple[int, int, int, int, int] | None = None  # see strided()
        self._count = 0  # chunks of the rule
        self._inner, self._suffixes, self._suffix_at = _suffix_table(self.grid)

    @classmethod
    def strided(
        cls, grid: tuple[int, ...], count: int, first: int, stride: int, length: int, last: int
    ) -> ChunkIndex:
        """An index that holds nothing per chunk: chunk ``i`` along the first axis (the
        grid is 1 along every other) is ``length`` bytes at ``first + i * stride``,
        the last of the ``count`` only ``last`` bytes, padded with fill to ``length``
        (netCDF-3 records, contiguous data cut into rows). Setting a chunk turns it
        into a plain index."""
        if any(n != 1 for n in grid[1:]) or not grid or count > grid[0]:
            raise ValueError(f"a strided index needs a grid of (n, 1, ...), not {grid}")
        index = cls(grid)
        index._rule = (first, stride, length, last, count)
        index._count = count
        return index

    def _materialize(self) -> None:
        """Hold the rule's chunks in the arrays, as added one by one."""
        assert self._rule is not None
        first, stride, length, last, count = self._rule
        self._rule = None
        for i in range(count):
            n = last if i == count - 1 else length
            self._append(i, first + i * stride, n, length - n, False)

    # ------------------------------------------------------------- writing
    def add(
        self, coords: tuple[int, ...], offset: int, length: int, pad: int = 0, *, reencode: bool
    ) -> None:
        """Set chunk ``coords`` (a position in ``grid``)."""
        self._append(self._position(coords), offset, length, pad, reencode)

    def append_at(self, at: int, offset: int, length: int, reencode: bool) -> None:
        """Set the chunk at grid position ``at`` (C order, ``0 <= at`` < the grid's
        chunks: the caller knows it), not padded."""
        self._append(at, offset, length, 0, reencode)

    def __setitem__(self, key: str, ref: ChunkRef) -> None:
        at = self._parse(key)
        if at is None:
            raise KeyError(f"chunk key {key!r} is not in a grid of {self.grid} chunks")
        self._append(at, ref.offset, ref.length, ref.pad, ref.reencode)

    def update(self, refs: Mapping[str, ChunkRef]) -> None:  # type: ignore[override]
        for key, ref in refs.items():
            self[key] = ref

    def _append(self, at: int, offset: int, length: int, pad: int, reencode: bool) -> None:
        if self._rule is not None:
            self._materialize()
        if self._at is None and at != len(self._offset):  # no longer dense
            self._at = array("q", range(len(self._offset)))
        if self._at is not None:
            if self._at and at <= self._at[-1]:
                self._sorted = False
            self._at.append(at)
        self._last = (None, -1)
        try:
            self._offset.append(offset)
        except OverflowError:  # 4 GiB or more, or the -1 of a chunk made from values
            self._offset = array("q", self._offset)
            self._offset.append(offset)
        try:
            self._length.append(length)
        except OverflowError:
            self._length = array("q", self._length)
            self._length.append(length)
        if pad:
            self._pad[at] = pad
        elif self._pad:
            self._pad.pop(at, None)
        if reencode:
            self._reencode.add(at)
        elif self._reencode:
            self._reencode.discard(at)

    def _sort(self) -> None:
        """Order by position; of a position set twice, the last setting stays."""
        if self._sorted:
            return
        with self._sorting:
            if not self._sorted:
                self._sort_now()

    def _sort_now(self) -> None:
        at = self._at
        assert at is not None  # a dense index is sorted
        order = sorted(range(len(at)), key=at.__getitem__)  # stable: later wins below
        keep = [i for n, i in enumerate(order) if n + 1 == len(order) or at[order[n + 1]] != at[i]]
        self._at = array("q", (at[i] for i in keep))
        self._offset = array(self._offset.typecode, (self._offset[i] for i in keep))
        self._length = array(self._length.typecode, (self._length[i] for i in keep))
        if not self._at or self._at[-1] == len(self._at) - 1:  # sorted, unique: 0 .. n-1
            self._at = None  # dense again
        self._sorted = True

    # ------------------------------------------------------------- reading
    def _find(self, key: object) -> int | None:
        last = self._last  # one read: threads may replace it
        if last[0] == key:
            return last[1]
        at = self._parse(key) if isinstance(key, str) else None
        if at is None:
            return None
        self._sort()
        positions = self._at
        if positions is None:
            i = at if at < self._size() else -1
        else:
            i = bisect_left(positions, at)
            i = i if i < len(positions) and positions[i] == at else -1
        if i < 0:
            return None
        self._last = (key, i)  # type: ignore[assignment]
        return i

    def __getitem__(self, key: str) -> ChunkRef:
        ref = self.ref(key)
        if ref is None:
            raise KeyError(key)
        return ref

    def ref(self, key: str) -> ChunkRef | None:
        """The :class:`ChunkRef` of ``key``, or None when it is not a chunk of the
        index: one lookup (a copy asks this once per chunk)."""
        i = self._find(key)
        if i is None:
            return None
        at = i if self._at is None else self._at[i]
        if self._rule is not None:
            first, stride, length, last, count = self._rule
            n = last if i == count - 1 else length
            return ChunkRef(first + i * stride, n, length - n)
        pad, reencode = self._pad.get(at, 0), at in self._reencode
        return ChunkRef(self._offset[i], self._length[i], pad, reencode)

    def __contains__(self, key: object) -> bool:
        return self._find(key) is not None

    def __len__(self) -> int:
        self._sort()
        return self._size()

    def _size(self) -> int:
        return self._count if self._rule is not None else len(self._offset)

    def __iter__(self) -> Iterator[str]:
        self._sort()
        positions = range(self._size()) if self._at is None else self._at
        if not self.grid:
            yield from ("0" for _ in positions)
            return
        if len(self.grid) == 1:
            yield from map(str, positions)
            return
        if self._suffixes is not None:  # the key of position p: "<p // inner>" + suffix
            inner, suffixes = self._inner, self._suffixes
            if inner == 1:
                suffix = suffixes[0]
                yield from (f"{p}{suffix}" for p in positions)
            else:
                yield from (f"{p // inner}{suffixes[p % inner]}" for p in positions)
            return
        for at in positions:
            yield chunk_key(self._coords(at))

    @property
    def dense(self) -> bool:
        """Whether chunk ``i`` of the grid is entry ``i`` (no positions held)."""
        return self._at is None

    @property
    def nbytes(self) -> int:
        """Bytes the index holds its chunks in (the machine arrays; the few padded or
        re-encoded chunks' entries not counted)."""
        arrays = (
            (self._offset, self._length)
            if self._at is None
            else (self._at, self._offset, self._length)
        )
        return sum(a.itemsize * len(a) for a in arrays)

    # ------------------------------------------------------------- positions
    def _position(self, coords: tuple[int, ...]) -> int:
        at = 0
        for c, n in zip(coords, self.grid, strict=False):  # lengths compared below
            if not 0 <= c < n:
                break
            at = at * n + c
        else:
            if len(coords) == len(self.grid):
                return at
        raise KeyError(f"chunk {coords} is not in a grid of {self.grid} chunks")

    def _coords(self, at: int) -> tuple[int, ...]:
        coords = []
        for n in reversed(self.grid):
            at, c = divmod(at, n)
            coords.append(c)
        return tuple(reversed(coords))

    def _parse(self, key: str) -> int | None:
        """The grid position of a canonical chunk key, or None."""
        if not self.grid:
            return 0 if key == "0" else None
        if len(self.grid) == 1:  # the common case, without the split
            if not (key.isascii() and key.isdigit()) or (len(key) > 1 and key[0] == "0"):
                return None
            c = int(key)
            return c if c < self.grid[0] else None
        if self._suffix_at is not None:  # "<first>" + one of the known suffixes
            first, dot, rest = key.partition(".")
            r = self._suffix_at.get(rest) if dot else None
            if r is None or not (first.isascii() and first.isdigit()):
                return None
            if len(first) > 1 and first[0] == "0":
                return None
            c = int(first)
            return c * self._inner + r if c < self.grid[0] else None
        parts = key.split(".")
        if len(parts) != len(self.grid):
            return None
        at = 0
        for part, n in zip(parts, self.grid, strict=True):
            if not (part.isascii() and part.isdigit()) or (len(part) > 1 and part[0] == "0"):
                return None
            c = int(part)
            if c >= n:
                return None
            at = at * n + c
        return at


#: The most chunks a grid may have past its first axis for :class:`ChunkIndex` to hold
#: their key suffixes (``".0.3"``), not build each key from its coordinates. The
#: tables are shared by every index of the same grid past its first axis (at most
#: :data:`SUFFIX_TABLES` of them are kept): a file of many variables holds each once.
SUFFIX_LIMIT = 1024
SUFFIX_TABLES = 64


def _suffix_table(
    grid: tuple[int, ...],
) -> tuple[int, tuple[str, ...] | None, dict[str, int] | None]:
    """``(chunks past the first axis, their key suffixes in C order, suffix without its
    leading dot -> index)`` of a grid of 2 or more axes with at most
    :data:`SUFFIX_LIMIT` chunks past the first; ``(1, None, None)`` otherwise."""
    if len(grid) < 2 or math.prod(grid[1:]) > SUFFIX_LIMIT:
        return 1, None, None
    return _suffixes_of(grid[1:])


@functools.lru_cache(maxsize=SUFFIX_TABLES)
def _suffixes_of(
    inner: tuple[int, ...],
) -> tuple[int, tuple[str, ...] | None, dict[str, int] | None]:
    rests = tuple(".".join(map(str, c)) for c in itertools.product(*map(range, inner)))
    if not rests:  # an axis of no chunks: no key
        return 1, None, None
    return len(rests), tuple("." + r for r in rests), {r: i for i, r in enumerate(rests)}


def chunk_grid(shape: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[int, ...]:
    """Chunks per axis of an array of ``shape`` in chunks of ``chunks``."""
    return tuple(math.ceil(s / max(1, c)) for s, c in zip(shape, chunks, strict=True))


@record(frozen=False)
class SourceArray:
    """One variable's chunks: Zarr chunk key -> :class:`ChunkRef` (a
    :class:`ChunkIndex` over the variable's chunk grid).

    ``fill`` is one value's bytes as stored (for padding); ``reason`` says why some
    or all chunks are re-encoded (None: all verbatim).
    """

    path: str  # key prefix, "g/v"
    chunks: ChunkIndex = field(default_factory=ChunkIndex)
    fill: bytes = b""
    reason: str | None = None


def chunk_key(coords: tuple[int, ...]) -> str:
    """The Zarr v2 chunk key of chunk ``coords`` (``"0"`` for a scalar)."""
    return ".".join(str(c) for c in coords) if coords else "0"


def rows_per_chunk(shape: tuple[int, ...], itemsize: int, target: int = TARGET_CHUNK_BYTES) -> int:
    """How many leading-dimension rows make a chunk of about ``target`` bytes."""
    row = itemsize * math.prod(shape[1:])
    if not shape or shape[0] == 0:
        return 1
    return max(1, min(shape[0], target // max(row, 1)))


def contiguous_index(
    grid: tuple[int, ...], offset: int, shape: tuple[int, ...], itemsize: int, rows: int
) -> ChunkIndex:
    """The chunks of :func:`cut_contiguous` as an index over ``grid``, holding nothing
    per chunk where it can (:meth:`ChunkIndex.strided`)."""
    row = itemsize * math.prod(shape[1:])
    if shape and row and all(n == 1 for n in grid[1:]):
        count = math.ceil(shape[0] / rows)
        last = (shape[0] - (count - 1) * rows) * row if count else 0
        return ChunkIndex.strided(grid, count, offset, rows * row, rows * row, last)
    index = ChunkIndex(grid)
    index.update(cut_contiguous(offset, shape, itemsize, rows))
    return index


def cut_contiguous(
    offset: int, shape: tuple[int, ...], itemsize: int, rows: int
) -> dict[str, ChunkRef]:
    """Chunks of ``rows`` leading rows of C-order data at ``offset``; the last one is
    padded with fill to a whole chunk (Zarr chunks all have the chunk shape)."""
    if not shape:
        return {"0": ChunkRef(offset, itemsize)}
    row = itemsize * math.prod(shape[1:])
    out: dict[str, ChunkRef] = {}
    if row == 0:
        return out
    tail = (0,) * (len(shape) - 1)
    for i, start in enumerate(range(0, shape[0], rows)):
        n = min(rows, shape[0] - start)
        out[chunk_key((i, *tail))] = ChunkRef(offset + start * row, n * row, (rows - n) * row)
    return out
