"""Reader quirks of a whole store or group: its NCZarr generation, dimensions that
conflict, stale consolidated metadata, metadata objects that do not parse.

Pure functions over the metadata objects as stored; each yields
:class:`~nczarr.translate.compat_base.Finding` values (see
:mod:`~nczarr.translate.compat`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..keys import join_key
from .compat_base import (
    GDAL,
    NC48,
    NC49,
    NC410,
    NETCDF_C,
    READERS,
    XARRAY,
    ZARR_PYTHON,
    Finding,
    node_path,
)
from .compat_facts import array_prefixes, dtype_list, uppercase_keys
from .conventions import (
    ARRAY_DIMENSIONS,
    ARRAY_KEYS,
    LAYOUT_V1,
    LAYOUT_V2,
    LAYOUT_V2_KEYS,
    ZARR_METADATA_NAMES,
    ZARRAY,
    ZATTRS,
    ZMETADATA,
)
from .detect import FormatInfo, nczarr_key

__all__ = [
    "dimension_conflicts",
    "float_attribute_types",
    "layout_findings",
    "not_utf8",
    "stale_consolidated",
    "trailing_bytes",
]


_MIGRATE = "nczarr migrate URL"


def layout_findings(meta: Mapping[str, Any], info: FormatInfo) -> Iterable[Finding]:
    """What each netCDF-C release does with the store's NCZarr generation: the rule of
    the first entry of :data:`_LAYOUT_RULES` whose test holds (none: no finding)."""
    for applies, rule in _LAYOUT_RULES:
        if applies(meta, info):
            yield from rule(meta)
            return


def _zarr_v3(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """Zarr v3: no released netcdf-c reads it."""
    for reader in NETCDF_C:
        yield Finding(
            reader,
            "refuses",
            "/",
            "no released netcdf-c reads Zarr v3",
            "nczarr convert URL OUT --mode nczarr",
        )


def _nczarr_v1(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """The oldest NCZarr layout (4.8.0)."""
    yield Finding(
        NC48,
        "fails",
        "/",
        "4.8.0 reads this oldest NCZarr layout, 4.8.1 fails on its arrays",
        _MIGRATE,
    )
    yield Finding(NC49, "refuses", "/", "4.9.1/4.9.2 cannot read NCZarr V1 metadata", _MIGRATE)
    yield Finding(
        NC410,
        "misreads",
        "/",
        "reads it as pure Zarr: NCZarr dimensions and attribute types are ignored",
        _MIGRATE,
    )


def _nczarr_4_9_0(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """4.8.1/4.9.0 metadata objects (``_NCZARR_*`` keys in upper case)."""
    chars = [p for p in array_prefixes(meta) if "<U1" in dtype_list(meta[join_key(p, ZARRAY)])]
    if chars:
        problem = (
            f"refuses the whole dataset (NCZarr error -137): 4.9.3+ no longer read "
            f"4.8.1/4.9.0 metadata and its char dtype '<U1' (e.g. {node_path(chars[0])})"
        )
        yield Finding(NC410, "refuses", "/", problem, _MIGRATE)
    else:
        yield Finding(
            NC410,
            "misreads",
            "/",
            "reads 4.8.1/4.9.0 (_NCZARR_*) metadata as pure Zarr: dimensions, attribute "
            "types and _NCZARR_ATTR are not understood",
            _MIGRATE,
        )


def _nczarr_4_9_2(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """4.9.1/4.9.2 metadata (``_nczarr_*`` keys in ``.zgroup``/``.zarray``)."""
    yield Finding(
        NC48,
        "misreads",
        "/",
        "reads 4.9.1/4.9.2 (_nczarr_* in .zgroup/.zarray) metadata as pure Zarr",
        None,
    )
    yield Finding(
        NC410,
        "read-only",
        "/",
        "opens 4.9.1/4.9.2 metadata read-only (writes fail with NC_EPERM)",
        _MIGRATE,
    )
    for prefix in array_prefixes(meta):
        content, _ = nczarr_key(meta, prefix, ARRAY_KEYS, ZARRAY)
        if isinstance(content, dict) and content.get("storage") == "scalar":
            yield Finding(
                NC410,
                "refuses",
                node_path(prefix),
                "crashes (segfault in libnetcdf 4.10.1) on a 4.9.2-style scalar "
                "('storage': 'scalar')",
                _MIGRATE,
            )


def _nczarr_current(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """The current NCZarr layout (metadata in ``.zattrs``), 4.9.3 on."""
    for reader, versions in ((NC48, "4.8"), (NC49, "4.9.0-4.9.2")):
        yield Finding(
            reader,
            "misreads",
            "/",
            f"{versions} read the current NCZarr layout (metadata in .zattrs) as pure "
            "Zarr: 4.9.3 and later read it as NCZarr",
            None,
        )


_LayoutTest = Callable[[Mapping[str, Any], FormatInfo], bool]
#: ``(test, rule)`` per NCZarr generation, tried in order; the first that holds applies.
_LAYOUT_RULES: tuple[tuple[_LayoutTest, Callable[[Mapping[str, Any]], Iterable[Finding]]], ...] = (
    (lambda meta, info: info.zarr_format == 3, _zarr_v3),
    (lambda meta, info: info.layout == LAYOUT_V1, _nczarr_v1),
    (lambda meta, info: info.layout == LAYOUT_V2_KEYS and uppercase_keys(meta), _nczarr_4_9_0),
    (lambda meta, info: info.layout == LAYOUT_V2_KEYS, _nczarr_4_9_2),
    (lambda meta, info: info.layout == LAYOUT_V2, _nczarr_current),
)


def dimension_conflicts(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """One ``_ARRAY_DIMENSIONS`` name with two lengths: per group (netcdf-c 4.10, xarray)
    and across the store (netcdf-c before 4.10 puts every such dimension at the root)."""
    per_group: dict[str, dict[str, set[int]]] = {}
    per_store: dict[str, set[int]] = {}
    for prefix in array_prefixes(meta):
        attrs = meta.get(join_key(prefix, ZATTRS))
        shape = meta[join_key(prefix, ZARRAY)].get("shape")
        dims = attrs.get(ARRAY_DIMENSIONS) if isinstance(attrs, dict) else None
        if not (isinstance(dims, list) and isinstance(shape, list) and len(dims) == len(shape)):
            continue
        group = prefix.rpartition("/")[0]
        for name, size in zip(dims, shape, strict=True):
            if isinstance(name, str) and isinstance(size, int):
                per_group.setdefault(group, {}).setdefault(name, set()).add(size)
                per_store.setdefault(name, set()).add(size)
    fix = "nczarr convert URL OUT (renames the conflicting dimension, with a warning)"
    for group, names in sorted(per_group.items()):
        for name, sizes in sorted(names.items()):
            if len(sizes) > 1:
                problem = (
                    f"dimension {name!r} has lengths {sorted(sizes)} in one group: "
                    "the group cannot be opened"
                )
                yield Finding(NC410, "refuses", node_path(group), problem, fix)
                yield Finding(XARRAY, "refuses", node_path(group), problem, fix)
    for name, sizes in sorted(per_store.items()):
        if len(sizes) > 1:
            for reader in (NC48, NC49):
                yield Finding(
                    reader,
                    "refuses",
                    "/",
                    f"dimension {name!r} has lengths {sorted(sizes)}: releases before 4.10 "
                    "put it at the root once",
                    fix,
                )


def _same_json(a: Any, b: Any) -> bool:
    """Equal JSON documents (a NaN equals a NaN here: both are the token ``NaN``)."""
    if a == b:
        return True
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def stale_consolidated(
    meta: Mapping[str, Any], consolidated: Mapping[str, Any] | None
) -> Iterable[Finding]:
    if consolidated is None:
        return
    entries = consolidated.get("metadata") if isinstance(consolidated, dict) else None
    if not isinstance(entries, dict):
        return
    stored = {
        k: v
        for k, v in meta.items()
        if k.rpartition("/")[2] in ZARR_METADATA_NAMES and k != ZMETADATA
    }
    stale = sorted(k for k in entries if not _same_json(stored.get(k), entries[k]))
    missing = sorted(k for k in stored if k not in entries)
    if not (stale or missing):
        return
    first = (stale or missing)[0]
    problem = (
        f".zmetadata disagrees with {len(stale) + len(missing)} metadata object(s) "
        f"(e.g. {first!r}): readers that trust it see the old metadata"
    )
    fix = "delete .zmetadata, then nczarr convert URL OUT --consolidated"
    for reader in (ZARR_PYTHON, XARRAY):
        yield Finding(reader, "misreads", ZMETADATA, problem, fix)
    yield Finding(NC410, "misreads", ZMETADATA, problem + " (with mode=...,consolidated)", fix)


def trailing_bytes(trailing: Mapping[str, int]) -> Iterable[Finding]:
    for key, extra in sorted(trailing.items()):
        root = "/" not in key
        problem = (
            f"{extra} stale bytes after the JSON document (netcdf-c's non-truncating "
            "rewrite): the object does not parse"
        )
        fix = f"truncate {key} after its JSON document (drop the last {extra} bytes)"
        for reader in READERS:
            yield Finding(reader, "refuses" if root else "fails", key, problem, fix)


def not_utf8(keys: Iterable[str]) -> Iterable[Finding]:
    for key in sorted(keys):
        root = "/" not in key
        problem = (
            "metadata is not UTF-8 (netcdf-c 4.9 writes a char attribute's raw bytes): "
            "its JSON parser raises UnicodeDecodeError"
        )
        fix = "nczarr convert URL OUT --mode zarr"
        yield Finding(ZARR_PYTHON, "refuses" if root else "fails", key, problem, fix)
        yield Finding(XARRAY, "refuses", key, problem, fix)


_FLOAT_CODES = frozenset({"<f4", "<f8", ">f4", ">f8", "f4", "f8"})


def _integers(value: Any) -> tuple[bool, bool]:
    """(some value is a JSON integer, every value is)."""
    items = value if isinstance(value, list) else [value]
    ints = [isinstance(v, int) and not isinstance(v, bool) for v in items]
    return any(ints), bool(ints) and all(ints)


def float_attribute_types(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """NCZarr float/double attributes written as JSON integers (netcdf-c writes the
    double 1.0 as ``1``): readers that ignore ``_nczarr_attr`` read integers.
    zarr-python and xarray read each JSON integer as an int; GDAL types a list
    with one float in it as float (measured in tests/test_attribute_float_types.py)."""
    for key, doc in sorted(meta.items()):
        prefix, _, base = key.rpartition("/")
        if base != ZATTRS or not isinstance(doc, dict):
            continue
        record = doc.get("_nczarr_attr")
        types = record.get("types") if isinstance(record, dict) else None
        if not isinstance(types, dict):
            continue
        floats = {
            name: _integers(doc[name])
            for name, code in types.items()
            if isinstance(code, str) and code in _FLOAT_CODES and name in doc
        }
        some = sorted(name for name, (any_int, _) in floats.items() if any_int)
        every = sorted(name for name, (_, all_int) in floats.items() if all_int)
        for readers, names in (((ZARR_PYTHON, XARRAY), some), ((GDAL,), every)):
            if not names:
                continue
            problem = (
                f"reads the float attribute(s) {', '.join(map(repr, names))} as integers: "
                "written as 1, not 1.0, and this reader ignores NCZarr's recorded types"
            )
            for reader in readers:
                yield Finding(
                    reader,
                    "misreads",
                    node_path(prefix),
                    problem,
                    "nczarr convert URL OUT --mode nczarr",
                )
