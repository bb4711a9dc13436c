"""What readers other than nczarr see of a store holding a pending append journal.

An append writes every chunk, then a journal of the metadata objects it is about to
write, then those objects one by one (arrays' shapes, then the root), then deletes the
journal (:mod:`nczarr.maps.pending`). nczarr's readers read the journal's metadata, so
they see the grown store as soon as the journal exists; every other reader reads the
objects as stored. :func:`pending_append` compares the two, :func:`pending_findings`
says per reader what it gets (measured with netCDF4, zarr-python and xarray in
``tests/test_check_pending.py``):

* no grown array written yet: every reader reads the store as it was before the
  append (its new records are left out);
* some arrays grown, others (or netCDF's dimension sizes of an NCZarr group) not:
  netcdf-c refuses to open the store ("NetCDF: Invalid dimension size"), zarr-python
  and GDAL read each array old or grown, xarray refuses ("conflicting sizes for
  dimension");
* consolidated metadata (``.zmetadata``, written with the root, last) not yet written:
  zarr-python, xarray and GDAL read the old store from it.

The fix is rerunning the append: it finishes the interrupted one from the journal (and
stops, appending nothing else).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..records import record
from .compat_base import GDAL, NETCDF_C, XARRAY, ZARR_PYTHON, Finding
from .conventions import ZARR_JSON, ZARRAY, ZATTRS, ZMETADATA

__all__ = ["PendingAppend", "attrs_keys", "pending_append", "pending_findings", "superseded"]

_SHAPED = (ZARRAY, ZARR_JSON)


@record
class PendingAppend:
    """An append interrupted while writing its metadata, as the store holds it.

    Attributes
    ----------
    journal : str
        The journal's key.
    sources : tuple[str, ...]
        What the append was appending.
    dimension : str
        The dimension it grows (a path, ``/time``).
    unwritten : tuple[str, ...]
        The metadata objects whose stored content is not yet the journal's.
    grown : tuple[str, ...]
        Arrays on the dimension whose stored shape is already the grown one.
    old : tuple[str, ...]
        Arrays on the dimension whose stored shape is still the old one.
    sizes_old : bool
        The group's netCDF dimension sizes (NCZarr ``_nczarr_group``) are still old.
    consolidated_old : bool
        Consolidated metadata is stored and still old.
    """

    journal: str
    sources: tuple[str, ...]
    dimension: str
    unwritten: tuple[str, ...]
    grown: tuple[str, ...]
    old: tuple[str, ...]
    sizes_old: bool
    consolidated_old: bool

    @property
    def fix(self) -> str:
        """The command that finishes the append (``URL`` stands for the store)."""
        sources = " ".join(self.sources) or "SOURCE"
        name = self.dimension.rpartition("/")[2]
        return f"nczarr convert {sources} URL --append-dim {name} (finishes the interrupted append)"

    def describe(self) -> str:
        """One sentence: what was interrupted and how far it got."""
        what = (
            f"an append of {', '.join(self.sources) or '(unknown sources)'} along "
            f"{self.dimension!r} was interrupted while writing its metadata ({self.journal})"
        )
        if not self.unwritten:
            return (
                f"{what}: every metadata object is written, only the journal is left; every "
                "reader reads the grown store, and the next append into it finishes the "
                "interrupted one (removes the journal) and stops"
            )
        return (
            f"{what}: {len(self.unwritten)} metadata object(s) not written "
            f"({', '.join(self.unwritten)}); nczarr's readers show the grown store from the "
            "journal, other readers read the objects as stored (below). Rerunning the append "
            "finishes it from the journal, appends nothing else and stops with an error "
            "saying so; from then on every reader reads the grown store"
        )


def _parse(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _same(a: Any, b: Any) -> bool:
    """Equal JSON documents (a NaN fill equals a NaN here: both are the token ``NaN``)."""
    return a == b or json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _shape(doc: Any) -> list[Any] | None:
    shape = doc.get("shape") if isinstance(doc, dict) else None
    return shape if isinstance(shape, list) else None


def _attrs_key(key: str) -> str:
    """The ``.zattrs`` beside the metadata object ``key``."""
    return key.rpartition("/")[0] + "/" + ZATTRS if "/" in key else ZATTRS


def attrs_keys(metadata: Sequence[tuple[str, bytes]]) -> list[str]:
    """The ``.zattrs`` of the Zarr v2 arrays an append journal reshapes (their
    ``_ARRAY_DIMENSIONS`` name the dimensions; the journal holds only the changed ones)."""
    return [_attrs_key(k) for k, _ in metadata if k.rpartition("/")[2] == ZARRAY]


def _dims(key: str, journal: Mapping[str, Any], stored: Mapping[str, Any]) -> list[str]:
    """The dimension names (or paths) of the array whose shape object is ``key``."""
    doc = journal.get(key) or {}
    if isinstance(doc.get("dimension_names"), list):
        return [str(d) for d in doc["dimension_names"]]
    attrs = journal.get(_attrs_key(key)) or stored.get(_attrs_key(key)) or {}
    if not isinstance(attrs, dict):
        return []
    nczarr_array = attrs.get("_nczarr_array")
    refs = nczarr_array.get("dimension_references") if isinstance(nczarr_array, dict) else None
    if isinstance(refs, list):
        return [str(d) for d in refs]
    names = attrs.get("_ARRAY_DIMENSIONS")
    return [str(d) for d in names] if isinstance(names, list) else []


def _on_dimension(dims: Sequence[str], dimension: str) -> bool:
    name = dimension.rpartition("/")[2]
    return any(d == dimension or d.rpartition("/")[2] == name for d in dims)


def _group_size(doc: Any, name: str) -> Any:
    """The size an NCZarr group document (``.zattrs`` or v3 ``zarr.json``) gives ``name``."""
    if not isinstance(doc, dict):
        return None
    attrs = doc["attributes"] if isinstance(doc.get("attributes"), dict) else doc
    group = attrs.get("_nczarr_group") if isinstance(attrs, dict) else None
    dims = group.get("dimensions") if isinstance(group, dict) else None
    size = dims.get(name) if isinstance(dims, dict) else None
    return size.get("size") if isinstance(size, dict) else size


def _sizes_old(journal: Mapping[str, Any], stored: Mapping[str, Any], dimension: str) -> bool:
    parent, _, name = dimension.rpartition("/")
    prefix = parent.strip("/")
    for leaf in (ZATTRS, ZARR_JSON):
        key = f"{prefix}/{leaf}" if prefix else leaf
        new = _group_size(journal.get(key), name)
        if new is not None:
            return _group_size(stored.get(key), name) != new
    return False


def _consolidated_old(journal: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    if ZMETADATA in journal:
        return stored.get(ZMETADATA) is not None and not _same(
            stored[ZMETADATA], journal[ZMETADATA]
        )
    root = journal.get(ZARR_JSON)
    old = stored.get(ZARR_JSON)
    return (
        isinstance(root, dict)
        and isinstance(old, dict)
        and old.get("consolidated_metadata") is not None
        and old.get("consolidated_metadata") != root.get("consolidated_metadata")
    )


def pending_append(
    journal_key: str,
    metadata: Sequence[tuple[str, bytes]],
    doc: Mapping[str, Any],
    stored: Mapping[str, bytes],
) -> PendingAppend:
    """Compare an append journal (``metadata`` in write order and its document ``doc``)
    with the objects ``stored`` under the same keys and :func:`attrs_keys` (a missing
    key: not stored)."""
    journal = {k: _parse(v) for k, v in metadata}
    found = {k: _parse(stored.get(k)) for k in {*journal, *attrs_keys(metadata)}}
    dimension = str(doc.get("dimension", ""))
    grown, old = [], []
    for key, new in journal.items():
        if key.rpartition("/")[2] not in _SHAPED or _shape(new) is None:
            continue
        if not _on_dimension(_dims(key, journal, found), dimension):
            continue
        path = "/" + key.rpartition("/")[0]
        (grown if _shape(found[key]) == _shape(new) else old).append(path)
    sources = doc.get("sources")
    return PendingAppend(
        journal=journal_key,
        sources=tuple(str(s) for s in sources) if isinstance(sources, list) else (),
        dimension=dimension,
        unwritten=tuple(k for k in journal if not _same(found[k], journal[k])),
        grown=tuple(grown),
        old=tuple(old),
        sizes_old=_sizes_old(journal, found, dimension),
        consolidated_old=_consolidated_old(journal, found),
    )


def _names(paths: Sequence[str]) -> str:
    return ", ".join(paths)


def pending_findings(pending: PendingAppend) -> list[Finding]:
    """Per reader other than nczarr, what it gets of the store ``pending`` describes."""
    fix = pending.fix
    before = (
        f"reads the store as it was before the interrupted append of "
        f"{_names(pending.sources)} along {pending.dimension!r} (its records are left out)"
    )
    found: list[Finding] = []
    mixed = bool(pending.grown) and (bool(pending.old) or pending.sizes_old)
    for reader in NETCDF_C:
        if mixed:
            not_yet = [
                *pending.old,
                *(["the group's dimension sizes"] if pending.sizes_old else []),
            ]
            found.append(
                Finding(
                    reader,
                    "refuses",
                    "/",
                    f"NetCDF: Invalid dimension size: an interrupted append grew "
                    f"{_names(pending.grown)} along {pending.dimension!r}, not yet "
                    f"{' and '.join(not_yet)}",
                    fix,
                )
            )
        elif pending.old:
            found.append(Finding(reader, "ignores", "/", before, fix))
    zarr_readers = (ZARR_PYTHON, GDAL, XARRAY)
    if pending.consolidated_old and (pending.old or pending.grown):
        for reader in zarr_readers:
            found.append(
                Finding(reader, "ignores", "/", f"{before}: the consolidated metadata is old", fix)
            )
        return found
    if pending.grown and pending.old:
        split = (
            f"{_names(pending.grown)} grown along {pending.dimension!r} by an interrupted "
            f"append, {_names(pending.old)} not yet"
        )
        found.append(Finding(ZARR_PYTHON, "misreads", "/", f"reads {split}", fix))
        found.append(Finding(GDAL, "misreads", "/", f"reads {split}", fix))
        found.append(
            Finding(XARRAY, "refuses", "/", f"conflicting sizes for a dimension: {split}", fix)
        )
    elif pending.old:
        found.extend(Finding(reader, "ignores", "/", before, fix) for reader in zarr_readers)
    return found


def superseded(found: Sequence[Finding], pending: PendingAppend) -> list[Finding]:
    """``found`` without the "dimension has two lengths" findings of the appended
    dimension (:func:`~nczarr.translate.compat_store.dimension_conflicts`): while an
    append is pending they are its half-written shapes, which
    :func:`pending_findings` reports with the right fix (finishing the append, not
    renaming the dimension)."""
    if not (pending.grown and pending.old):
        return list(found)
    conflict = f"dimension {pending.dimension.rpartition('/')[2]!r} has lengths"
    return [f for f in found if not f.problem.startswith(conflict)]
