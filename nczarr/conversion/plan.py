"""Planning a conversion or a migration: which objects to write, in which order.

Pure functions over the translated view (no I/O beyond what the view already did):
they decide *what* :mod:`nczarr.conversion.apply` will do, so ``dry_run`` is free and the
ordering rules live in one place.

Chunk keys are not held: :class:`ChunkKeys` lists them from the view, array by
array, each time it is iterated (a convert of a million chunks must not hold a
million key strings; a resume, the journal's digest and the copy each walk them
once), and :func:`split_chunks` sorts them into verbatim and re-encoded ones as
they pass.

Ordering rule (the safety of an interrupted run rests on it): chunk objects first,
then the metadata of every array (``.zattrs`` before ``.zarray``, so an array
appears only once it is described completely), then the groups deepest first, and
the root group's objects last (``.zattrs``, ``.zmetadata``, then ``.zgroup``). Until
the root is written, no reader sees the target as a complete dataset. Zarr v3
targets follow the same rule with one ``zarr.json`` per node.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from ..errors import UnsupportedTypeError
from ..keys import parent_keys
from ..maps.base import ZMap
from ..records import record
from ..translate.conventions import V1_OBJECT_NAMES, ZARR_METADATA_NAMES
from ..translate.model import Dataset
from ..translate.order import order_metadata
from ..translate.select import select_dataset, selected_paths

__all__ = [
    "check_representable",
    "ChunkKeys",
    "Plan",
    "ViewLike",
    "build_plan",
    "split_chunks",
    "order_metadata",
    "select_dataset",
    "selected_paths",
    "array_of_key",
    "legacy_candidates",
]

#: Every name a metadata object of any generation may have (what ``migrate`` may delete).
METADATA_NAMES = frozenset(ZARR_METADATA_NAMES | V1_OBJECT_NAMES)


class ViewLike(Protocol):
    """What the planner needs from :func:`nczarr.view` (a ``TranslatedView``)."""

    source: ZMap
    dataset: Dataset
    metadata: Mapping[str, bytes]
    warnings: Sequence[str]

    def chunk_keys(self) -> Iterable[str]: ...


class SplitView(ViewLike, Protocol):
    """What :func:`split_chunks` needs besides :class:`ViewLike` (a ``TranslatedView``)."""

    keys_mapped: bool
    reencoded: Mapping[str, str]

    def reencoded_array(self, key: str) -> str | None: ...

    def source_key(self, key: str) -> str: ...


class ChunkKeys(Collection[str]):
    """Chunk keys, listed anew each time they are iterated: memory flat in their number.

    ``listing()`` returns a fresh iterator of the keys (the view's listing, array by
    array). The count is learned by the first complete iteration (``len`` iterates
    once if none ran yet). ``in`` walks the keys: for a few lookups only (a resume
    without a journal holds them in a set). Equal to another ``ChunkKeys`` or a
    tuple or list of the same keys in the same order; pickles when ``listing`` does
    (a bound method of a view, a :func:`functools.partial`).
    """

    __slots__ = ("_count", "_listing")

    def __init__(self, listing: Callable[[], Iterable[str]]) -> None:
        self._listing = listing
        self._count: int | None = None

    def __iter__(self) -> Iterator[str]:
        count = 0
        for key in self._listing():
            count += 1
            yield key
        self._count = count

    def __len__(self) -> int:
        if self._count is None:
            for _ in self:
                pass
        assert self._count is not None
        return self._count

    def __bool__(self) -> bool:
        if self._count is not None:
            return self._count > 0
        return next(iter(self._listing()), None) is not None

    def __contains__(self, key: object) -> bool:
        return any(key == k for k in self._listing())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChunkKeys | tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ChunkKeys({self._listing!r})"

    def __getstate__(self) -> tuple[Any, int | None]:
        return self._listing, self._count

    def __setstate__(self, state: tuple[Any, int | None]) -> None:
        self._listing, self._count = state

    def where(self, keep: Callable[[str], bool], value: bool = True) -> ChunkKeys:
        """The keys for which ``keep(key) is value``, listed lazily likewise."""
        return ChunkKeys(partial(_where, self, keep, value))


def _where(keys: Iterable[str], keep: Callable[[str], bool], value: bool) -> Iterator[str]:
    return (key for key in keys if keep(key) is value)


def _no_keys() -> tuple[str, ...]:
    return ()


@record
class Plan:
    """Everything a conversion will write, in order.

    Attributes
    ----------
    metadata
        ``(key, bytes)`` pairs in the order they must be written (see module doc).
    chunk_keys
        Chunk keys to copy (target key == key as the view shows it), a
        :class:`ChunkKeys` listed from the view when iterated.
    arrays
        Number of arrays (netCDF variables) the target holds.
    warnings
        What the translation could not carry over, and what the selection dropped.
    """

    metadata: tuple[tuple[str, bytes], ...]
    chunk_keys: ChunkKeys
    arrays: int
    warnings: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the target will hold, in write order (all of them in memory: a
        dry run's list)."""
        return (*self.chunk_keys, *(key for key, _ in self.metadata))

    @property
    def metadata_bytes(self) -> int:
        """Total size of the metadata objects."""
        return sum(len(value) for _, value in self.metadata)


def array_of_key(key: str, arrays: set[str] | frozenset[str]) -> str | None:
    """The array (a key prefix without leading ``/``) a chunk key belongs to, if any."""
    for parent in parent_keys(key):
        if parent in arrays:
            return parent
    return None


# ------------------------------------------------------------------ planning
def build_plan(translated: ViewLike) -> Plan:
    """Plan a conversion from a translated view: its chunks, then its metadata in a
    safe order. A selection (``include``/``exclude``) is the view's own
    (:meth:`nczarr.readthrough.TranslatedView.from_source`): the writer ran once, on
    the arrays kept."""
    metadata = translated.metadata
    order = order_metadata(metadata)
    return Plan(
        metadata=tuple((key, bytes(metadata[key])) for key in order),
        chunk_keys=ChunkKeys(translated.chunk_keys),
        arrays=sum(1 for _ in translated.dataset.root.all_variables()),
        warnings=tuple(translated.warnings),
    )


def split_chunks(translated: SplitView, keys: ChunkKeys) -> tuple[ZMap, ChunkKeys, ChunkKeys]:
    """Where to copy ``keys`` (chunk keys as the view shows them) from: ``(map,
    verbatim keys, re-encoded keys)``, both listed lazily from ``keys``.

    Verbatim chunks come from the source map itself (its kernel or server-side
    copies apply) unless the view shows them under other keys (Zarr v3 ``c/0/1`` ->
    ``0.1``): then from the view. Re-encoded chunks (the view's arrays, or chunks a
    netCDF file source encodes) always come from the view.
    """
    source = translated if translated.keys_mapped else translated.source
    if not translated.reencoded:
        return source, keys, ChunkKeys(_no_keys)
    made = partial(_reencoded_chunk, translated)
    return source, keys.where(made, False), keys.where(made, True)


def _reencoded_chunk(translated: SplitView, key: str) -> bool:
    """Whether the view serves chunk ``key`` re-encoded."""
    if translated.reencoded_array(key) is not None:
        return True
    return bool(translated.source.reencodes(translated.source_key(key)))


def legacy_candidates(dataset: Dataset) -> Iterator[str]:
    """Every key where a metadata object of any generation may sit for ``dataset``'s nodes.

    ``migrate`` checks these (a bounded number of lookups, independent of the
    number of chunks) and deletes the ones the new metadata does not reuse.
    """
    for group in dataset.root.walk():
        nodes = [group.path.strip("/")]
        nodes += [v.path.strip("/") for v in group.variables.values()]
        for node in nodes:
            for name in sorted(METADATA_NAMES):
                yield posixpath.join(node, name) if node else name


def check_representable(
    translated: Any,
    include: Sequence[str] | None,
    exclude: Sequence[str] | None,
    *,
    verb: str = "convert",
) -> None:
    """Refuse to write a store without arrays the reader or the target's writer had
    to leave out (``translated``: a ``TranslatedView``), unless they are excluded:
    neither ``convert`` nor ``migrate`` drops data on its own.

    Raises
    ------
    UnsupportedTypeError
        Naming each such array, why, and the ``exclude=`` that passes.
    """
    left_out = translated.left_out
    refused = selected_paths((*translated.dataset.skipped, *left_out), include, exclude)
    if not refused:
        return
    starts = tuple(
        prefix
        for p in refused
        for prefix in (f"skipped array {p!r}", f"array {p!r} left out of the ")
    )
    reasons = [w for w in translated.warnings if w.startswith(starts)]
    raise UnsupportedTypeError(
        f"{translated.source.url}: cannot represent {', '.join(refused)} in "
        f"{translated.format}: "
        + "; ".join(reasons)
        + f". Pass exclude={refused!r} (--exclude) to {verb} without them."
    )
