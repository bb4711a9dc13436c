"""Basic selections (integers, slices, an ellipsis) projected onto a regular chunk grid.

Why
---
:mod:`.shardread` reads a selection of a sharded array shard by shard and, inside a
shard, inner chunk by inner chunk: both are regular grids, so a selection splits the
same way twice. zarr-python's own indexer takes its chunk grid object, whose API
changed in zarr-python 3.4; these pure functions take only shapes, so the reads do
not follow one release's grid classes. The semantics are zarr-python's basic
indexing: negative integers count from the end, slices have a step of at least 1 and
are clipped to the array, missing trailing dimensions are whole. Anything else
(out-of-bounds integers, a negative step, too many indices, two ellipses) raises
:class:`NotBasic`, and the caller leaves the selection to zarr-python, which raises
its own error.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator

__all__ = ["NotBasic", "normalize", "out_shape", "project"]

#: One dimension of a normalized selection: an index or a slice with ints, step >= 1.
Dim = int | slice

#: A chunk's coordinates, the selection inside it, and where that goes in the result.
Projection = tuple[tuple[int, ...], tuple[Dim, ...], tuple[slice, ...]]


class NotBasic(IndexError):
    """A selection these functions do not project (zarr-python reads or refuses it)."""


def normalize(selection: object, shape: tuple[int, ...]) -> tuple[Dim, ...]:
    """``selection`` as one :data:`Dim` per dimension of ``shape``: integers within
    bounds, slices with ``0 <= start``, ``stop <= length`` and ``step >= 1``."""
    items = selection if isinstance(selection, tuple) else (selection,)
    ellipses = [at for at, item in enumerate(items) if item is Ellipsis]
    if len(ellipses) > 1:
        raise NotBasic("more than one ellipsis")
    if ellipses:
        at = ellipses[0]
        whole = (slice(None),) * (len(shape) - len(items) + 1)
        items = items[:at] + whole + items[at + 1 :]
    if len(items) > len(shape):
        raise NotBasic(f"{len(items)} indices for {len(shape)} dimensions")
    items = items + (slice(None),) * (len(shape) - len(items))
    return tuple(_dim(item, length) for item, length in zip(items, shape, strict=True))


def _dim(item: object, length: int) -> Dim:
    if isinstance(item, slice):
        try:
            start, stop, step = item.indices(length)
        except TypeError as error:  # not integers
            raise NotBasic(str(error)) from None
        if step < 1:
            raise NotBasic("a slice step below 1")
        return slice(start, max(start, stop), step)
    if isinstance(item, bool):
        raise NotBasic("a boolean index")
    try:
        index = operator.index(item)
    except TypeError:
        raise NotBasic(f"an index of type {type(item).__name__}") from None
    if not -length <= index < length:
        raise NotBasic(f"index {index} out of bounds for length {length}")
    return index % length


def out_shape(dims: tuple[Dim, ...]) -> tuple[int, ...]:
    """The shape of the result: one length per slice (integer dimensions drop)."""
    return tuple(len(range(d.start, d.stop, d.step)) for d in dims if isinstance(d, slice))


def project(dims: tuple[Dim, ...], chunk_shape: tuple[int, ...]) -> Iterator[Projection]:
    """Every chunk of the grid of ``chunk_shape`` that ``dims`` (normalized) touches,
    in C order: its coordinates, ``dims`` inside it (normalized again, so a chunk's
    selection projects onto a finer grid), and the part of the result it fills."""
    per_dim = [_split(d, c) for d, c in zip(dims, chunk_shape, strict=True)]
    for parts in itertools.product(*per_dim):
        yield (
            tuple(p[0] for p in parts),
            tuple(p[1] for p in parts),
            tuple(p[2] for p in parts if p[2] is not None),
        )


def _split(dim: Dim, chunk: int) -> list[tuple[int, Dim, slice | None]]:
    """One dimension of :func:`project`: (chunk index, selection in it, result part;
    None for an integer, whose dimension the result drops)."""
    if isinstance(dim, int):
        return [(dim // chunk, dim % chunk, None)]
    out = []
    step = dim.step
    at, done = dim.start, 0
    while at < dim.stop:
        low = at - at % chunk
        high = min(low + chunk, dim.stop)
        count = (high - at - 1) // step + 1
        out.append((low // chunk, slice(at - low, high - low, step), slice(done, done + count)))
        at += count * step
        done += count
    return out
