"""What each reader does with an NCZarr array whose dimension references fail (pure).

:func:`~nczarr.translate.nczarr_dimrefs.reference_problem` says what fails in one
array's references; :func:`dimref_findings` says, per NCZarr generation, which readers
read them and what each then does, as measured (``tests/test_check_odd_v3_and_dimrefs.py``):

* the current layout (``.zattrs``, 4.9.3 on) and 4.9.1/4.9.2's (``.zarray``, lower
  case): libnetcdf 4.10.1 through netCDF4 crashes (segmentation fault; an abort for
  too many references in the 4.9.2 layout) or refuses the whole store (``NetCDF:
  Invalid dimension size``, ``Invalid argument``, ``No group found``), and reads an
  array flagged ``"scalar": 1`` as its first value only. netcdf-c 4.8 and 4.9.0 read
  these layouts as pure Zarr: the references do not matter to them.
* 4.8.1/4.9.0's layout (``_NCZARR_ARRAY`` in ``.zarray``): Debian's ncdump 4.9.0
  crashes or refuses as 4.10 does, reads past too many references, and gives the
  array the length of a dimension of another length; netcdf-c 4.10 reads that layout
  as pure Zarr. xarray names the axes of an array without ``_ARRAY_DIMENSIONS`` from
  these references (their base names), and refuses the group when they are no list of
  one text per axis.
* zarr-python, GDAL (which reads ``_ARRAY_DIMENSIONS`` first, then only references it
  can resolve) and xarray where ``_ARRAY_DIMENSIONS`` exists read the array as
  producers wrote it: no finding.

nczarr's reader takes such an array's dimensions from ``_ARRAY_DIMENSIONS`` (or makes
them anonymous), with a warning, so its copy is the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import MetadataError
from ..keys import join_key
from .compat_base import NC49, NC410, XARRAY, Finding, node_path
from .compat_facts import array_prefixes, uppercase_keys
from .conventions import (
    ARRAY_DIMENSIONS,
    ARRAY_KEYS,
    LAYOUT_V2,
    LAYOUT_V2_KEYS,
    ZARRAY,
    ZATTRS,
)
from .detect import FormatInfo, nczarr_key
from .nczarr_dimrefs import RefProblem, declared_dimensions, reference_problem

__all__ = ["dimref_findings"]

_TO_NCZARR = "nczarr convert URL OUT --mode nczarr"
_TO_ZARR = "nczarr convert URL OUT --mode zarr"

_CRASH_410 = "refuses", "crashes (segmentation fault in libnetcdf 4.10.1) opening the store"
_SIZE_410 = "refuses", "refuses the whole store (NetCDF: Invalid dimension size)"
_ARGUMENT = "refuses", "refuses the whole store (NetCDF: Invalid argument)"
_NO_GROUP = "refuses", "refuses the whole store (NetCDF: No group found)"

#: What netcdf-c 4.10 does, per kind, with the current layout's references.
_NC410_CURRENT = {
    "not-list": _CRASH_410,
    "not-name": _CRASH_410,
    "empty-name": _ARGUMENT,
    "undeclared": _CRASH_410,
    "short": _CRASH_410,
    "long": _SIZE_410,
    "length": _SIZE_410,
    "unlimited": _SIZE_410,
    "below": _NO_GROUP,
    "aside": _CRASH_410,
    "scalar": ("misreads", "reads the array as a netCDF scalar: its first value only"),
}
#: ... with 4.9.1/4.9.2's (measured on their own fixture: no unlimited dimensions).
_NC410_V2_KEYS = {
    **{k: v for k, v in _NC410_CURRENT.items() if k not in ("unlimited", "scalar")},
    "long": ("refuses", "aborts (libnetcdf 4.10.1) opening the store"),
}
_CRASH_490 = "refuses", "crashes (segmentation fault in 4.9.0, Debian's ncdump) opening the store"
#: What netcdf-c 4.9.0 does with 4.8.1/4.9.0's references (ncgen 4.9.0 writes no
#: unlimited dimension in NCZarr, and reads past too many references).
_NC490 = {
    "not-list": _CRASH_490,
    "not-name": _CRASH_490,
    "empty-name": _ARGUMENT,
    "undeclared": _CRASH_490,
    "short": _CRASH_490,
    "length": ("misreads", "gives the array the referenced dimension's length (4.9.0)"),
    "below": _NO_GROUP,
}
#: What xarray does when it names the axes from 4.8.1/4.9.0's references.
_XARRAY = dict.fromkeys(
    ("not-list", "not-name", "short", "long"),
    ("refuses", "cannot open the group holding this array (it names the axes from them)"),
)


def dimref_findings(meta: Mapping[str, Any], info: FormatInfo) -> Iterable[Finding]:
    """What each reader does with every NCZarr array whose references fail."""
    upper = info.layout == LAYOUT_V2_KEYS and uppercase_keys(meta)
    tables: list[tuple[str, dict[str, tuple[str, str]], str]]
    if info.layout == LAYOUT_V2:
        tables = [(NC410, _NC410_CURRENT, _TO_NCZARR)]
    elif info.layout == LAYOUT_V2_KEYS and not upper:
        tables = [(NC410, _NC410_V2_KEYS, _TO_NCZARR)]
    elif upper:
        tables = [(NC49, _NC490, _TO_NCZARR)]
    else:  # pure Zarr, NCZarr V1 (4.8.0, read only by 4.8)
        return
    declared = declared_dimensions(meta)
    for prefix in array_prefixes(meta):
        problem = _problem(meta, prefix, declared)
        if problem is None:
            continue
        where = node_path(prefix)
        xarray = upper and _named_by_refs(meta, prefix)
        for reader, table, fix in [*tables, *([(XARRAY, _XARRAY, _TO_ZARR)] if xarray else [])]:
            if problem.kind in table:
                severity, consequence = table[problem.kind]
                yield Finding(reader, severity, where, f"{problem.text}: {consequence}", fix)


def _problem(meta: Mapping[str, Any], prefix: str, declared: dict) -> RefProblem | None:
    zarray = meta.get(join_key(prefix, ZARRAY))
    if not isinstance(zarray, dict):
        return None
    try:
        record, key = nczarr_key(meta, prefix, ARRAY_KEYS, ZARRAY)
    except MetadataError:  # a .zattrs that is no object: another finding
        return None
    group = "/" + prefix.rpartition("/")[0]
    return reference_problem(record, zarray.get("shape"), group, declared, key or "")


def _named_by_refs(meta: Mapping[str, Any], prefix: str) -> bool:
    """xarray names the axes from ``_NCZARR_ARRAY``'s references: no
    ``_ARRAY_DIMENSIONS`` and the record in ``.zarray``, upper case."""
    attrs = meta.get(join_key(prefix, ZATTRS))
    if isinstance(attrs, dict) and ARRAY_DIMENSIONS in attrs:
        return False
    zarray = meta.get(join_key(prefix, ZARRAY))
    return isinstance(zarray, dict) and isinstance(zarray.get(ARRAY_KEYS[1]), dict)
