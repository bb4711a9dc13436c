"""Comparing the variables without the grown dimension across the parts of a grown
store (:mod:`nczarr.conversion.combine`, :mod:`nczarr.conversion.growappend`): they
must hold the same values in every part, or the combine or append is refused, naming
the variable, before anything is written. Chunk objects that are the very same bytes
are not decoded; the others are decoded by the parts' readers
(:class:`~nczarr.conversion.growparts.Reader`) and compared as values."""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidModeError
from ..records import field, record
from ..translate.grow import GrowPlan
from ..translate.model import Variable
from .growparts import Reader

if TYPE_CHECKING:  # numpy only when values are compared
    import numpy as np

__all__ = ["FirstSeen", "check_equal"]


@record(frozen=False)
class FirstSeen:
    """What :func:`check_equal` read of the first part, for the next call of a caller
    comparing one part a call (:class:`~nczarr.conversion.growsources.Compared`): its
    compared chunks' keys and bytes, and the values it decoded."""

    chunk_bytes: dict[str, Any] | None = None
    values: dict[str, Any] = field(default_factory=dict)


def check_equal(
    plan: GrowPlan,
    readers: Sequence[Reader],
    names: Sequence[str],
    known: Container[int] = frozenset(),
    seen: FirstSeen | None = None,
) -> None:
    """Refuse parts whose variables without the dimension hold other values. Each
    part's compared chunks are read in one ``getitems`` (on S3 one round trip, not one
    a chunk). A part read as the first one's model whose chunk objects of a variable
    are the very same bytes holds the same values (not decoded); the others are
    decoded from the bytes read and compared. One part's chunks are held at a time
    (and the first's, read once: into ``seen`` when given). ``known``: indices of
    parts found so already (:func:`~nczarr.conversion.growsiblings.read_sources`),
    skipped."""
    variables = [plan.dataset.find_variable(fqn) for fqn in plan.compare]
    if not variables:
        return
    first = readers[0]
    seen = FirstSeen() if seen is None else seen
    first_values = seen.values
    for i in range(1, len(readers)):
        if i in known:
            continue
        reader = readers[i]  # only the parts compared here (readers may open sources)
        if seen.chunk_bytes is None:
            seen.chunk_bytes, theirs = _both_chunk_bytes(first, reader, variables)
        else:
            theirs = _chunk_bytes(reader, variables)
        first_bytes = seen.chunk_bytes
        same: set[str] = set()
        if reader.part.dataset is first.part.dataset:
            same = {path for path, stored in theirs.items() if stored == first_bytes.get(path)}
        for var in variables:
            if var.path in same:
                continue
            if var.path not in first_values:
                first_values[var.path] = _values(first, var, first_bytes.get(var.path))
            mine, other = first_values[var.path], _values(reader, var, theirs.get(var.path))
            if mine.shape != other.shape or not _equal(mine, other):
                raise InvalidModeError(
                    f"cannot combine {names[i]} and {names[0]}: variable {var.path!r} does "
                    f"not have the dimension {plan.dimension!r} and its values differ"
                )


def _values(
    reader: Reader, var: Variable, stored: tuple[list[str], list[Any]] | None
) -> np.ndarray:
    """All of ``var``'s values in one part, decoded from its chunks' ``stored`` keys and
    bytes (:func:`_chunk_bytes`; None: read here)."""
    pairs = zip(*stored, strict=True) if stored is not None else ()
    read = {k: data for k, data in pairs if data is not None}
    if var.scalar:
        return reader.scalar(var, read)
    return reader.region(var, [(0, s) for s in var.shape], read)


def _chunk_bytes(reader: Reader, variables: Sequence[Variable]) -> dict[str, Any]:
    """``path -> (chunk keys, their bytes)`` of ``variables`` in one part (one
    ``getitems``); sharded arrays left out (their shards are read by zarr-python, and
    such parts are compared by values)."""
    own = reader.part.dataset.find_variable
    keys = {var.path: reader.stored_keys(var) for var in variables if own(var.path).shards is None}
    got = reader.part.chunks.getitems([k for ks in keys.values() for k in ks])
    return {path: (ks, [got.get(k) for k in ks]) for path, ks in keys.items()}


def _both_chunk_bytes(
    first: Reader, other: Reader, variables: Sequence[Variable]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`_chunk_bytes` of two parts, read at once when either map makes round
    trips (an append on S3 compared the store's coordinates, then the source's: two
    round trips one after another, not one)."""
    if not (first.part.chunks.round_trips or other.part.chunks.round_trips):
        return _chunk_bytes(first, variables), _chunk_bytes(other, variables)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="nczarr-compare") as pool:
        ahead = pool.submit(_chunk_bytes, first, variables)
        theirs = _chunk_bytes(other, variables)
        return ahead.result(), theirs


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    import numpy as np

    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))
