"""What is wrong with an NCZarr array's dimension references (pure).

An NCZarr array names its dimensions by reference (``_nczarr_array`` /
``_NCZARR_ARRAY``: ``dimension_references`` or ``dimrefs``, FQNs such as ``"/g/x"``,
a name without ``/`` meaning one at the root), each a dimension a group declares in its
``_nczarr_group`` (``dimensions``/``dims``). :func:`declared_dimensions` gathers those
declarations; :func:`reference_problem` tells whether one array's references fail,
and how (:data:`KINDS`): netcdf-c reads nothing but these references for an NCZarr
array's shape, and each kind is what makes it crash, refuse or misread the store
(:mod:`~nczarr.translate.compat_dimrefs` says which release does what). nczarr's own
reader (:mod:`~nczarr.translate.read_nczarr`) takes such an array's dimensions from
``_ARRAY_DIMENSIONS`` instead, with a warning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError
from ..records import record
from .attrs import json_text_safe
from .conventions import DIMENSIONS_ALT, DIMREFS_ALT, GROUP_KEYS, ZATTRS, ZGROUP
from .detect import nczarr_key
from .read_nczarr import dimension_entries, get_alt, is_length

__all__ = ["KINDS", "Declared", "RefProblem", "declared_dimensions", "reference_problem"]

#: The kinds of :class:`RefProblem`: the references are no list (or absent), one is
#: no text, one is empty (``""``, ``"/"``), names no declared dimension, fewer or more
#: references than the array's rank, a fixed or unlimited dimension of another length
#: than the array's, a dimension of a group below the array's own or of one neither
#: its own nor above it (a sibling's); or the array says
#: it is a netCDF scalar (``"scalar": 1``) but holds more than one value.
KINDS = (
    "not-list",
    "not-name",
    "empty-name",
    "undeclared",
    "short",
    "long",
    "length",
    "unlimited",
    "below",
    "aside",
    "scalar",
)

#: Group FQN -> dimension name -> (length, unlimited).
Declared = dict[str, dict[str, tuple[int, bool]]]


@record
class RefProblem:
    """Why one array's dimension references fail: ``kind`` (one of :data:`KINDS`) and
    what is wrong in one sentence (``text``, naming the metadata key)."""

    kind: str
    text: str


def declared_dimensions(meta: Mapping[str, Any]) -> Declared:
    """Every dimension the store's NCZarr group records declare, by group FQN
    (entries that are no name with a non-negative integer length are left out)."""
    prefixes = {""} | {
        k.rpartition("/")[0] for k in meta if k.rpartition("/")[2] in (ZGROUP, ZATTRS)
    }
    out: Declared = {}
    for prefix in sorted(prefixes):
        try:
            content, _ = nczarr_key(meta, prefix, GROUP_KEYS, ZGROUP)
        except MetadataError:
            continue
        if isinstance(content, dict):
            dims = _entries(get_alt(content, DIMENSIONS_ALT))
            out["/" + prefix if prefix else "/"] = dims
    return out


def _entries(dims: Any) -> dict[str, tuple[int, bool]]:
    """The group's declared dimensions that are ones (the reader refuses the rest:
    another rule's finding)."""
    return {d.name: (d.size, d.unlimited) for d, _ in dimension_entries(dims) if d is not None}


def reference_problem(
    record: Any, shape: Any, group: str, declared: Declared, key: str
) -> RefProblem | None:
    """What fails in the references of the array whose NCZarr array record (at ``key``)
    is ``record``, of ``shape``, in the group of FQN ``group``; None when they hold
    (or when ``record``, ``shape`` or a 4.9.2 ``"storage": "scalar"`` say nothing
    about them: the other rules' cases)."""
    if not isinstance(record, dict) or record.get("storage") == "scalar":
        return None
    if not (isinstance(shape, list) and all(is_length(n) for n in shape)):
        return None
    flag = record.get("scalar")
    if bool(flag) and flag not in ("0", "false"):
        if math.prod(shape) > 1:
            text = f"{key!r}: a netCDF scalar ('scalar': {flag!r}) of shape {shape}"
            return RefProblem("scalar", text)
        return None
    if not shape:  # a 0-d array: the 0-d rules'
        return None
    refs = get_alt(record, DIMREFS_ALT)
    if not isinstance(refs, list):
        what = (
            "the array has no dimension references"
            if refs is None
            else f"dimension references {json_text_safe(refs)} are no list"
        )
        return RefProblem("not-list", f"{key!r}: {what}")
    if len(refs) != len(shape):
        kind = "short" if len(refs) < len(shape) else "long"
        shown = json_text_safe(refs)
        return RefProblem(
            kind, f"{key!r}: {len(refs)} dimension reference(s) {shown} for shape {shape}"
        )
    for ref, size in zip(refs, shape, strict=True):
        found = _reference(ref, size, group, declared)
        if found is not None:
            kind, what = found
            return RefProblem(kind, f"{key!r}: dimension reference {json_text_safe(ref)} {what}")
    return None


def _reference(ref: Any, size: int, group: str, declared: Declared) -> tuple[str, str] | None:
    """The kind and text of what fails in one reference to an axis of ``size``."""
    if not isinstance(ref, str):
        return "not-name", "is no text"
    if not ref.strip("/"):
        return "empty-name", "is empty"
    path = ref if ref.startswith("/") else "/" + ref  # relative: from the root
    owner, _, name = path.rstrip("/").rpartition("/")  # netcdf-c reads "/g/z/" as "/g/z"
    owner = owner or "/"
    found = declared.get(owner, {}).get(name)
    if found is None:
        return "undeclared", "names no declared dimension"
    inside = group.rstrip("/") + "/"
    if owner != group and owner.startswith(inside):
        return "below", f"names a dimension of {owner!r}, a group below the array's own"
    if owner != group and not group.startswith(owner.rstrip("/") + "/"):
        return "aside", f"names a dimension of {owner!r}, neither the array's group nor above it"
    length, unlimited = found
    if length != size:
        kind = "unlimited" if unlimited else "length"
        return kind, f"has length {length}; the array's is {size} along that axis"
    return None
