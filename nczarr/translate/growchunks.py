"""The chunks of a grown store: which target chunk is which source chunk.

Pure, like :mod:`nczarr.translate.grow` (which plans the grown model and uses this):
each target chunk of an array along the concatenation dimension is one source chunk
copied verbatim under a shifted key (:class:`Copy`, made part by part as iterated by
:class:`Copies`, so a combine of thousands of sources holds nothing per chunk) or its
coordinates, to be assembled from the parts' values and encoded again.
"""

from __future__ import annotations

import bisect
import itertools
from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .model import Dataset, Variable, same_value

__all__ = ["Copy", "Copies", "chunk_key", "chunk_plan", "grid_of", "same_encoding"]

#: Model fields that say how a chunk's bytes encode its values (the fill value is not
#: one: it only stands for chunks that are not stored).
_ENCODING = (
    "type",
    "chunks",
    "compressor",
    "filters",
    "order",
    "endian",
    "maxstrlen",
    "text_storage",
    "shards",
    "logical",
)


class Copy(namedtuple("Copy", "part source_key target_key")):
    """One chunk copied verbatim: ``part``'s ``source_key`` to the target's ``target_key``
    (a named tuple, as :class:`~nczarr.ncfile.layout.ChunkRef`: one is made a chunk of
    every source, in C, in a third of a record's time)."""

    __slots__ = ()
    part: int
    source_key: str
    target_key: str


def chunk_key(var: Variable, coords: Sequence[int]) -> str:
    """The Zarr v2 key of chunk ``coords`` of ``var`` (its own key separator)."""
    rest = var.dimension_separator.join(map(str, coords)) if coords else "0"
    return f"{var.path.strip('/')}/{rest}"


def same_encoding(a: Variable, b: Variable) -> bool:
    """Whether stored chunks of ``a`` and ``b`` encode values the same way (their bytes
    are interchangeable; fill values may differ)."""
    return all(same_value(getattr(a, f), getattr(b, f)) for f in _ENCODING)


def grid_of(shape: Sequence[int], chunks: Sequence[int]) -> list[range]:
    return [range(-(-s // c) if c else 0) for s, c in zip(shape, chunks, strict=True)]


#: Source chunk keys remembered while planning (parts read as one model copy the same
#: source keys: one string for all of them), at most this many.
_SHARED_KEYS = 4096


class Copies:
    """The plan's verbatim copies (:class:`Copy`), part by part, made as they are
    iterated: a combine of thousands of sources holds no object or key string per chunk
    (memory flat in the sources), only what planning needs anyway (each part's model
    and stored keys, shared by parts read as one model, and its offset). ``len`` is
    counted when planned; :meth:`of_part` gives one part's."""

    __slots__ = (
        "_dim",
        "_first_is_target",
        "_offsets",
        "_part_vars",
        "_spec_cache",
        "_stored",
        "_template",
        "caches",
        "count",
        "variables",
    )

    def __init__(
        self,
        target: Dataset,
        dim: str,
        part_vars: Sequence[Mapping[str, Variable]],
        offsets: Sequence[int],
        stored: Sequence[frozenset[str] | set[str]],
        first_is_target: bool,
    ) -> None:
        self.variables = list(target.root.all_variables())
        self.count = 0
        #: same_encoding per source variable, source chunk keys: shared by the parts
        self.caches: tuple[dict[int, bool], dict[tuple[int, tuple[int, ...]], str]] = ({}, {})
        self._dim = dim
        self._part_vars = part_vars
        self._offsets = offsets
        self._stored = stored
        self._first_is_target = first_is_target
        self._spec_cache: list[tuple[Variable, tuple[Any, ...] | None]] | None = None
        self._template: tuple[Any, ...] | None = None  # the last part's copies (of_part)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Copy]:
        for part in range(len(self._offsets)):
            yield from self.of_part(part)

    def __repr__(self) -> str:
        return f"<{self.count} verbatim copies of {len(self._offsets)} parts>"

    def of_part(self, part: int) -> Iterator[Copy]:
        """The copies of ``part``'s chunks, in the plan's order (arrays, then chunks):
        what :func:`chunk_plan` yields for that part, worked out for it alone (each
        array's grid and key parts once for all parts). A part read as the same model
        as the part before, storing the same keys, with the same length, both far from
        the end, and shifted by whole chunks, copies the same source keys to target
        chunks shifted as much, provided the shift is whole chunks of every array along
        the dimension: the last part's copies are the template (a daily series works its
        copies out once)."""
        if self._first_is_target and part == 0:
            return
        offsets = self._offsets
        offset = offsets[part]
        end = offsets[part + 1] if part + 1 < len(offsets) else None
        own, stored = self._part_vars[part], self._stored[part]
        inside = part > 0 and end is not None and end + self._longest() <= self._size()
        template = self._template
        if inside and template is not None:
            t_own, t_stored, t_offset, t_length, entries = template
            delta = offset - t_offset
            if (
                t_own is own
                and t_stored is stored
                and t_length == end - offset
                # every array along the dimension, not only those the template copies:
                # one whose chunks were all assembled there may be aligned here
                and all(delta % spec[1] == 0 for _, spec in self._specs() if spec is not None)
            ):
                for key, coords, prefix, sep, axis, n in entries:
                    shifted = (*coords[:axis], coords[axis] + delta // n, *coords[axis + 1 :])
                    yield Copy(part, key, prefix + sep.join(map(str, shifted)))
                return
        entries = []
        for entry in self._worked_out(part, offset, end, own, stored):
            entries.append(entry)
            key, coords, prefix, sep, _, _ = entry
            yield Copy(part, key, prefix + sep.join(map(str, coords)))
        if inside and entries:  # none (every chunk assembled): no chunk length to check a shift by
            self._template = (own, stored, offset, end - offset, entries)  # type: ignore[operator]

    def _worked_out(
        self,
        part: int,
        offset: int,
        end: int | None,
        own: Mapping[str, Variable],
        stored: frozenset[str] | set[str],
    ) -> Iterator[tuple[str, tuple[int, ...], str, str, int, int]]:
        """:meth:`of_part` worked out: ``(source key, target chunk coordinates, target
        key prefix, separator, axis, chunk length along it)`` of each copy."""
        alike, keys = self.caches
        for var, spec in self._specs():
            if spec is None:  # no dimension: the first part's chunks, as they are
                if part == 0:
                    prefix = var.path.strip("/") + "/"
                    for k in sorted(stored):
                        if k.startswith(prefix):
                            yield k, (k[len(prefix) :],), prefix, "", 0, 1  # type: ignore[misc]
                continue
            axis, n, total, before, after, prefix, sep = spec
            hi = total if end is None else end
            src = own[var.path]
            if id(src) not in alike:
                alike[id(src)] = same_encoding(src, var)
            if hi <= offset or not alike[id(src)]:
                continue  # nothing here, or every chunk assembled
            length = src.shape[axis]
            for index in range(-(-offset // n), -(-hi // n)):
                start = index * n
                if (start - offset) % n or min(start + n, total) > offset + length:
                    continue  # assembled
                at_source = (start - offset) // n
                for coords in itertools.product(*before, (index,), *after):
                    at = (id(src), (*coords[:axis], at_source, *coords[axis + 1 :]))
                    key = keys.get(at)
                    if key is None:
                        if len(keys) >= _SHARED_KEYS:
                            keys.clear()
                        key = keys[at] = chunk_key(src, at[1])
                    if key in stored:
                        yield key, coords, prefix, sep, axis, n

    def _longest(self) -> int:
        """The longest chunk along the dimension of the arrays along it."""
        return max((spec[1] for _, spec in self._specs() if spec is not None), default=1)

    def _size(self) -> int:
        """The dimension's size in the target."""
        return next((spec[2] for _, spec in self._specs() if spec is not None), 0)

    def _specs(self) -> list[tuple[Variable, tuple[Any, ...] | None]]:
        """Per target array: None (no dimension), or its axis, chunk length along it,
        size, the other axes' chunk ranges before and after it, key prefix and
        separator."""
        specs = self._spec_cache
        if specs is None:
            specs = []
            for var in self.variables:
                if self._dim not in var.dimensions:
                    specs.append((var, None))
                    continue
                axis = var.dimensions.index(self._dim)
                grid = grid_of(var.shape, var.chunks)
                prefix = var.path.strip("/") + "/"
                spec = (axis, var.chunks[axis], var.shape[axis], grid[:axis], grid[axis + 1 :])
                specs.append((var, (*spec, prefix, var.dimension_separator)))
            self._spec_cache = specs
        return specs


def chunk_plan(
    var: Variable,
    part_vars: Sequence[Mapping[str, Variable]],
    dim: str,
    offsets: Sequence[int],
    stored: Sequence[frozenset[str] | set[str]],
    caches: tuple[dict[int, bool], dict[tuple[int, tuple[int, ...]], str]],
    only: int | None = None,
) -> Iterator[Copy | tuple[int, ...]]:
    """Each target chunk of ``var`` (of part ``only``'s chunks only, if given): a
    :class:`Copy`, nothing (a verbatim copy of a chunk the part does not store), or its
    coordinates (assembled). ``caches``: :attr:`Copies.caches`."""
    axis = var.dimensions.index(dim)
    n = var.chunks[axis]
    total = var.shape[axis]
    grid = grid_of(var.shape, var.chunks)
    alike, keys = caches  # parts sharing a model share same_encoding and source keys
    indices = grid[axis]
    if only is not None:  # the target chunks that start in part ``only``
        lo = offsets[only]
        hi = offsets[only + 1] if only + 1 < len(offsets) else total
        indices = range(-(-lo // n), -(-hi // n)) if hi > lo and n else range(0)
    for index in indices:
        start, stop = index * n, min((index + 1) * n, total)
        part = bisect.bisect_right(offsets, start) - 1
        src = part_vars[part][var.path]
        offset = offsets[part]
        if id(src) not in alike:
            alike[id(src)] = same_encoding(src, var)
        whole = alike[id(src)] and (start - offset) % n == 0 and stop <= offset + src.shape[axis]
        for coords in itertools.product(*([*grid[:axis], [index], *grid[axis + 1 :]])):
            if not whole:
                yield tuple(coords)
                continue
            source_coords = list(coords)
            source_coords[axis] = (start - offset) // n
            at = (id(src), tuple(source_coords))
            key = keys.get(at)
            if key is None:
                if len(keys) >= _SHARED_KEYS:
                    keys.clear()
                key = keys[at] = chunk_key(src, source_coords)
            if key in stored[part]:
                yield Copy(part, key, chunk_key(var, coords))
            elif not same_value(src.fill_value, var.fill_value):
                yield tuple(coords)  # not stored: the part's fill values, written out
