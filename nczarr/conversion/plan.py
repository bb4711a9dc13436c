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

import dataclasses
import posixpath
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import InvalidModeError
from ..keys import parent_keys
from ..maps.base import ZMap
from ..translate.conventions import V1_OBJECT_NAMES, ZARR_METADATA_NAMES
from ..translate.model import Dataset, Group
from ..translate.order import order_metadata

__all__ = [
    "Plan",
    "ViewLike",
    "build_plan",
    "order_metadata",
    "select_dataset",
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


# ------------------------------------------------------------------ selection
def _variable_paths(group: Group) -> Iterator[str]:
    for variable in group.all_variables():
        yield variable.path


def _matches(pattern: str, path: str) -> bool:
    """Whether ``pattern`` (an FQN, a relative path or a bare name) names ``path`` or an
    ancestor group of it."""
    fqn = "/" + pattern.strip("/")
    if "/" not in pattern.strip("/") and not pattern.startswith("/"):
        # A bare name: the variable (or group) of that name anywhere.
        return pattern in path.strip("/").split("/")
    return path == fqn or path.startswith(fqn.rstrip("/") + "/") or fqn == "/"


def select_dataset(
    dataset: Dataset,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
) -> Dataset:
    """The dataset restricted to the variables ``include`` names minus those ``exclude`` names.

    A pattern is a variable or group FQN (``/g/v``, ``/g``), the same without the
    leading ``/``, or a bare name (``v``: every variable or group called ``v``). A
    group pattern stands for everything below it. With ``include``, only the groups
    leading to a selected variable (or named themselves) are kept; ``exclude`` alone
    keeps every group. Dimensions of kept groups are always kept.

    Raises
    ------
    InvalidModeError
        A pattern matches nothing (the message names it), so a typo is not a silent
        empty conversion.
    """
    include = list(include or ())
    exclude = list(exclude or ())
    if not include and not exclude:
        return dataset
    paths = list(_variable_paths(dataset.root))
    group_paths = [g.path for g in dataset.root.walk()]
    for pattern in (*include, *exclude):
        if not isinstance(pattern, str) or not pattern.strip("/"):
            raise InvalidModeError(f"invalid variable pattern {pattern!r}")
        if not any(_matches(pattern, p) for p in (*paths, *group_paths, *dataset.skipped)):
            raise InvalidModeError(f"variable pattern {pattern!r} matches no variable or group")
    keep_var = {
        p
        for p in paths
        if (not include or any(_matches(i, p) for i in include))
        and not any(_matches(e, p) for e in exclude)
    }
    keep_group = {
        g
        for g in group_paths
        if not any(_matches(e, g) for e in exclude)
        and (
            not include
            or g == "/"
            or any(_matches(i, g) for i in include)
            or any(v.startswith(g.rstrip("/") + "/") for v in keep_var)
        )
    }
    return dataclasses.replace(dataset, root=_prune(dataset.root, keep_var, keep_group))


def selected_paths(
    paths: Iterable[str], include: Sequence[str] | None, exclude: Sequence[str] | None
) -> list[str]:
    """The FQNs among ``paths`` that ``include``/``exclude`` keep (see :func:`select_dataset`)."""
    return [
        p
        for p in paths
        if (not include or any(_matches(i, p) for i in include))
        and not any(_matches(e, p) for e in exclude or ())
    ]


def _prune(group: Group, keep_var: set[str], keep_group: set[str]) -> Group:
    return dataclasses.replace(
        group,
        variables={n: v for n, v in group.variables.items() if v.path in keep_var},
        groups={
            n: _prune(g, keep_var, keep_group)
            for n, g in group.groups.items()
            if g.path in keep_group
        },
    )


def array_of_key(key: str, arrays: set[str] | frozenset[str]) -> str | None:
    """The array (a key prefix without leading ``/``) a chunk key belongs to, if any."""
    for parent in parent_keys(key):
        if parent in arrays:
            return parent
    return None


# ------------------------------------------------------------------ planning
def build_plan(
    translated: ViewLike,
    *,
    target_format: str,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    noxarray: bool = False,
    consolidated: bool | None = None,
    netcdf_scalars: bool = False,
    zarr_format: int = 2,
) -> Plan:
    """Plan a conversion from a translated view.

    Without a selection the view's own metadata is used as is (one translation
    path). With ``include``/``exclude`` the view's dataset is pruned and written
    again by the same writer, and only the chunks of kept arrays are planned.
    """
    dataset = translated.dataset
    metadata: Mapping[str, bytes] = translated.metadata
    warnings = list(translated.warnings)
    chunk_keys: Iterable[str] = translated.chunk_keys()
    selected = select_dataset(dataset, include, exclude)
    if selected is not dataset:
        from ..translate.writer import write_with_warnings

        written = write_with_warnings(
            selected,
            target_format,
            noxarray=noxarray,
            consolidated=bool(consolidated),
            netcdf_scalars=netcdf_scalars,
            zarr_format=zarr_format,
        )
        metadata = written.metadata
        warnings.extend(w for w in written.warnings if w not in warnings)
        kept = frozenset(p.lstrip("/") for p in _variable_paths(selected.root))
        every = frozenset(p.lstrip("/") for p in _variable_paths(dataset.root))
        chunk_keys = (k for k in chunk_keys if array_of_key(k, every) in kept)
        dropped = sorted(every - kept)
        if dropped:
            warnings.append(
                f"{len(dropped)} array(s) left out by include/exclude: "
                + ", ".join("/" + d for d in dropped[:10])
                + (" ..." if len(dropped) > 10 else "")
            )
        dataset = selected
    order = order_metadata(metadata)
    return Plan(
        metadata=tuple((key, bytes(metadata[key])) for key in order),
        chunk_keys=tuple(chunk_keys),
        arrays=sum(1 for _ in dataset.root.all_variables()),
        warnings=tuple(warnings),
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
