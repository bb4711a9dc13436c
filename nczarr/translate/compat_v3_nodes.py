"""What each reader does with a malformed Zarr v3 node below the root (pure).

:func:`~nczarr.translate.compat_v3_faults.node_faults` names the first field of each
``zarr.json`` zarr-python refuses; :func:`v3_node_findings` says what zarr-python 3,
xarray and GDAL 3.12 then do, one :class:`~nczarr.translate.compat_base.Finding` each,
as measured with those readers (``tests/test_check_odd_v3_and_dimrefs.py``):

* zarr-python reads a node's document when it lists the group holding it: a document
  that is no JSON object, or a field of the wrong kind, fails that listing (and the
  node cannot be opened; the nodes below a group still open by their path); a
  missing ``zarr_format`` or required array key leaves the node out of the listing,
  silently; a group whose ``zarr_format`` is 2 is listed, empty; a chunk length of 0
  is opened and fails reading; an array's ``attributes`` that are no object are
  kept as they are.
* xarray opens a group by listing it, so it follows zarr-python: the group holding a
  node zarr-python cannot list is refused, a node left out is missing, silently; it
  also refuses the group of an array whose ``attributes`` are no object.
* GDAL leaves a node whose document is no Zarr v3 node out (and, for a group,
  everything below it), silently; it fails on an array whose ``shape``,
  ``data_type``, ``chunk_grid``, ``chunk_key_encoding``, ``dimension_names`` it cannot
  use or whose ``fill_value`` is text where a number belongs; it reads chunks as raw
  bytes when ``codecs`` is missing or no list, and ignores ``attributes``.
* No released netcdf-c reads Zarr v3: its refusal of the whole store is
  :mod:`~nczarr.translate.compat_store`'s, once for the store.

nczarr's reader skips such an array with a warning (``convert`` then wants it
excluded) or reads it (a ``dimension_names`` of the wrong length, a missing
``fill_value`` ...), and reads such a group without its attributes: each finding's
fix is the copy that works.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import MetadataError, UnsupportedError
from .compat_base import GDAL, XARRAY, ZARR_PYTHON, Finding, node_path
from .compat_v3_faults import NodeFault, node_faults
from .zarr3_arrays import parse_array_v3

__all__ = ["v3_node_findings"]

_COPY = "nczarr convert URL OUT --mode zarr --zarr-format 3"
_HEADER = frozenset({"document", "zarr_format", "node_type"})


def v3_node_findings(meta: Mapping[str, Any]) -> tuple[set[str], list[Finding]]:
    """The prefixes of the malformed nodes below the root of a Zarr v3 store (the
    array rules do not look at them) and what each reader does with each."""
    faults = node_faults(meta)
    found: list[Finding] = []
    for prefix, fault in sorted(faults.items()):
        found.extend(_findings(prefix, fault, meta[fault.key]))
    return set(faults), found


def _findings(prefix: str, fault: NodeFault, doc: Any) -> Iterable[Finding]:
    where = node_path(prefix)
    fix = _fix(where, fault, doc)
    for reader, outcome in (
        (ZARR_PYTHON, _zarr_python(fault)),
        (XARRAY, _xarray(fault)),
        (GDAL, _gdal(fault)),
    ):
        if outcome is not None:
            severity, what = outcome
            yield Finding(reader, severity, where, f"{what}: {fault.reason}", fix)


def _what(fault: NodeFault) -> str:
    return {"array": "the array", "group": "the group"}.get(fault.kind, "the node")


_Outcome = tuple[str, str] | None


def _zarr_python_way(fault: NodeFault) -> str | None:
    """How zarr-python fails: ``"listing"``, ``"left-out"``, ``"empty"``, ``"reading"``."""
    group = fault.kind == "group"
    if fault.field == "zarr_format" and group:
        return None if fault.missing else ("empty" if fault.value == 2 else "listing")
    if fault.missing:
        return "left-out"
    if fault.field == "chunk_shape":
        return "reading"
    if fault.field == "attributes" and not group:
        return None
    return "listing"


def _zarr_python(fault: NodeFault) -> _Outcome:
    way, what = _zarr_python_way(fault), _what(fault)
    if way == "listing":
        below = " (the nodes below it open by their path)" if fault.kind == "group" else ""
        above = "above" if fault.kind == "group" else "holding"
        return "fails", f"cannot open {what}, and listing the group {above} it fails{below}"
    if way == "left-out":
        return "fails", f"cannot open {what}; listing the group holding it leaves it out, silently"
    if way == "empty":
        return "ignores", "lists the group without any of the arrays and groups below it"
    if way == "reading":
        return "fails", "opens the array and fails reading it (division by zero)"
    return None


def _xarray(fault: NodeFault) -> _Outcome:
    way = _zarr_python_way(fault)
    if way is None:
        if fault.field == "attributes":
            return "refuses", "cannot open the group holding this array"
        return None
    if way == "left-out":
        return "ignores", f"opens the group holding {_what(fault)} without it, silently"
    if way == "empty":
        return "ignores", "opens the group as an empty one"
    if fault.kind == "group":
        return "refuses", "cannot open the group above this one"
    return "refuses", f"cannot open the group holding {_what(fault)}"


#: The fields GDAL fails an array on when it cannot use their value.
_GDAL_FAILS = frozenset({"data_type", "chunk_grid", "chunk_key_encoding", "chunk_shape"})


def _gdal(fault: NodeFault) -> _Outcome:
    field, value = fault.field, fault.value
    if field == "zarr_format" and isinstance(value, str):  # GDAL reads "3" as 3
        return None
    if field in _HEADER:
        below = " and everything below it" if fault.kind == "group" else ""
        return "ignores", f"leaves {_what(fault)}{below} out, silently"
    if field == "codecs" and (fault.missing or not isinstance(value, list)):
        return (
            "misreads",
            "reads the chunks as raw bytes, without codecs: wrong values unless they are "
            "stored uncompressed",
        )
    fails = field in _GDAL_FAILS or (field in ("shape", "dimension_names") and fault.missing)
    fails = fails or (field == "shape" and not isinstance(value, list))
    fails = fails or (field == "dimension_names" and _unusable_names(value))
    fails = fails or (field == "fill_value" and isinstance(value, str | list | dict))
    fails = fails or (field == "codecs" and any(not isinstance(c, dict) for c in value))
    return ("fails", "cannot open the array") if fails else None


def _unusable_names(value: Any) -> bool:
    """GDAL fails on ``dimension_names`` that are no list or name another number of
    axes than the rank (a list of names: the fault is its length); a list holding
    other than names it reads."""
    if not isinstance(value, list):
        return True
    return all(n is None or isinstance(n, str) for n in value)


def _fix(where: str, fault: NodeFault, doc: Any) -> str:
    if fault.kind == "group":
        if fault.field == "attributes":  # nczarr's reader fails on it too
            return f"make 'attributes' in {fault.key} a JSON object"
        return _COPY  # nczarr reads it as a group without attributes
    return f"{_COPY} --exclude {where}" if _nczarr_skips(fault, doc) else _COPY


def _nczarr_skips(fault: NodeFault, doc: Any) -> bool:
    """Whether nczarr's reader skips the array (it reads the others of these faults)."""
    if fault.field in _HEADER or fault.field == "attributes":
        return True
    try:
        parse_array_v3(doc, fault.key)
    except (MetadataError, UnsupportedError):
        return True
    return False
