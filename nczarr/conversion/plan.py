"""Planning a conversion or a migration: which objects to write, in which order.

Pure functions over the translated view (no I/O beyond what the view already did):
they decide *what* :mod:`nczarr.conversion.apply` will do, so ``dry_run`` is free and the
ordering rules live in one place.

Ordering rule (the safety of an interrupted run rests on it): chunk objects first,
then the metadata of every array (``.zattrs`` before ``.zarray``, so an array
appears only once it is described completely), then the groups deepest first, and
the root group's objects last (``.zattrs``, ``.zmetadata``, then ``.zgroup``). Until
the root is written, no reader sees the target as a complete dataset. Zarr v3
targets follow the same rule with one ``zarr.json`` per node.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..keys import parent_keys
from ..maps.base import ZMap
from ..translate.conventions import V1_OBJECT_NAMES, ZARR_METADATA_NAMES
from ..translate.model import Dataset
from ..translate.order import order_metadata
from ..translate.select import select_dataset, selected_paths

__all__ = [
    "Plan",
    "ViewLike",
    "build_plan",
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


@dataclass(frozen=True)
class Plan:
    """Everything a conversion will write, in order.

    Attributes
    ----------
    metadata
        ``(key, bytes)`` pairs in the order they must be written (see module doc).
    chunk_keys
        Source chunk keys to copy unchanged (target key == source key).
    arrays
        Number of arrays (netCDF variables) the target holds.
    warnings
        What the translation could not carry over, and what the selection dropped.
    """

    metadata: tuple[tuple[str, bytes], ...]
    chunk_keys: tuple[str, ...]
    arrays: int
    warnings: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the target will hold, in write order."""
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
        chunk_keys=tuple(translated.chunk_keys()),
        arrays=sum(1 for _ in translated.dataset.root.all_variables()),
        warnings=tuple(translated.warnings),
    )


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
