"""What each reader would get wrong: pure rules over a store's metadata objects.

The readers are netcdf-c by release line (4.8, 4.9, 4.10+), zarr-python 3 and xarray.
Every rule here is a fact about one of them, measured with the real library where it is
available here (libnetcdf 4.10.1 through netCDF4, zarr-python 3, xarray: the tests of
``nczarr check`` open the same stores with those readers and see the problem
happen) and taken from netcdf-c's code for the older releases
(``docs/netcdf-c-layouts.md``, sections 0, 2.4, 2.5, 4 and 5).

:func:`findings` takes the metadata objects as they are stored (not as consolidated
metadata claims them to be), the consolidated document if any, and the keys whose
JSON had trailing bytes, and returns one :class:`Finding` per reader and problem.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..keys import join_key
from .conventions import (
    ARRAY_DIMENSIONS,
    ARRAY_KEYS,
    LAYOUT_V1,
    LAYOUT_V2,
    LAYOUT_V2_KEYS,
    NETCDF_C_CODECS,
    SCALAR_DIM,
    SUPERBLOCK_KEYS,
    ZARR_METADATA_NAMES,
    ZARRAY,
    ZATTRS,
    ZGROUP,
    ZMETADATA,
)
from .detect import FormatInfo, nczarr_key

__all__ = ["READERS", "SEVERITIES", "Finding", "findings", "needs_translation"]

NC48 = "netcdf-c 4.8"
NC49 = "netcdf-c 4.9"
NC410 = "netcdf-c 4.10+"
ZARR_PYTHON = "zarr-python 3"
XARRAY = "xarray"
NETCDF_C = (NC48, NC49, NC410)

#: The readers :func:`findings` speaks for, in report order.
READERS = (*NETCDF_C, ZARR_PYTHON, XARRAY)

#: How bad a finding is, worst first: the reader cannot open the dataset (or the
#: group), cannot read one array, silently returns other values, types or shapes than
#: the producer wrote, silently leaves something out, or opens it read-only.
SEVERITIES = ("refuses", "fails", "misreads", "ignores", "read-only")

#: Data types zarr-python 3 has no data type for (an explicit byte order on one-byte
#: types, netcdf-c's ``>S1`` char); one such array also breaks listing its group.
_ZARR_PYTHON_REJECTS = frozenset({">S1", "<S1", "<u1", ">u1", "<i1", ">i1", "<b1", ">b1"})


@dataclass(frozen=True)
class Finding:
    """One thing one reader would get wrong.

    Attributes
    ----------
    reader : str
        One of :data:`READERS`.
    severity : str
        One of :data:`SEVERITIES`.
    where : str
        The array or group path (``/g/v``), or the metadata key, concerned.
    problem : str
        What the reader does, in one sentence.
    fix : str or None
        The nczarr command (or step) that makes the store right for that reader;
        ``URL`` and ``OUT`` stand for the store and a new location.
    """

    reader: str
    severity: str
    where: str
    problem: str
    fix: str | None = None


def _path(prefix: str) -> str:
    return "/" + prefix


def _arrays(meta: Mapping[str, Any]) -> list[str]:
    """Key prefixes of every Zarr v2 array (``""`` for a bare root array)."""
    out = []
    for key in meta:
        prefix, _, base = key.rpartition("/")
        if base == ZARRAY and isinstance(meta[key], dict):
            out.append(prefix)
    return sorted(out)


def _dtypes(zarray: Mapping[str, Any]) -> list[str]:
    dtype = zarray.get("dtype")
    if isinstance(dtype, str):
        return [dtype]
    if isinstance(dtype, list):  # structured: [[name, dtype], ...]
        return [d[1] for d in dtype if isinstance(d, list) and len(d) > 1 and isinstance(d[1], str)]
    return []


def _codecs(zarray: Mapping[str, Any]) -> list[dict[str, Any]]:
    filters = zarray.get("filters") or []
    compressor = zarray.get("compressor")
    codecs = [c for c in filters if isinstance(c, dict)] if isinstance(filters, list) else []
    return [*codecs, *([compressor] if isinstance(compressor, dict) else [])]


def _netcdf_c_refuses_dtype(dtype: str) -> bool:
    """Pure-Zarr data types on which netcdf-c fails to open the whole dataset."""
    kind = dtype[1:2] if dtype[:1] in "<>|=" else dtype[:1]
    return kind in ("U", "O", "M", "m", "c", "b", "V") or dtype[1:] == "f2"


def _uppercase_keys(meta: Mapping[str, Any]) -> bool:
    root = meta.get(ZGROUP)
    return isinstance(root, dict) and SUPERBLOCK_KEYS[1] in root


def _layout_findings(meta: Mapping[str, Any], info: FormatInfo) -> Iterable[Finding]:
    migrate = "nczarr migrate URL"
    if info.zarr_format == 3:
        for reader in NETCDF_C:
            yield Finding(
                reader,
                "refuses",
                "/",
                "no released netcdf-c reads Zarr v3",
                "nczarr convert URL OUT --mode nczarr",
            )
        return
    if info.layout == LAYOUT_V1:
        yield Finding(
            NC48,
            "fails",
            "/",
            "4.8.0 reads this oldest NCZarr layout, 4.8.1 fails on its arrays",
            migrate,
        )
        yield Finding(NC49, "refuses", "/", "4.9.1/4.9.2 cannot read NCZarr V1 metadata", migrate)
        yield Finding(
            NC410,
            "misreads",
            "/",
            "reads it as pure Zarr: NCZarr dimensions and attribute types are ignored",
            migrate,
        )
    elif info.layout == LAYOUT_V2_KEYS and _uppercase_keys(meta):
        chars = [p for p in _arrays(meta) if "<U1" in _dtypes(meta[join_key(p, ZARRAY)])]
        if chars:
            problem = (
                f"refuses the whole dataset (NCZarr error -137): 4.9.3+ no longer read "
                f"4.8.1/4.9.0 metadata and its char dtype '<U1' (e.g. {_path(chars[0])})"
            )
            yield Finding(NC410, "refuses", "/", problem, migrate)
        else:
            yield Finding(
                NC410,
                "misreads",
                "/",
                "reads 4.8.1/4.9.0 (_NCZARR_*) metadata as pure Zarr: dimensions, attribute "
                "types and _NCZARR_ATTR are not understood",
                migrate,
            )
    elif info.layout == LAYOUT_V2_KEYS:
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
            migrate,
        )
        for prefix in _arrays(meta):
            content, _ = nczarr_key(meta, prefix, ARRAY_KEYS, ZARRAY)
            if isinstance(content, dict) and content.get("storage") == "scalar":
                yield Finding(
                    NC410,
                    "refuses",
                    _path(prefix),
                    "crashes (segfault in libnetcdf 4.10.1) on a 4.9.2-style scalar "
                    "('storage': 'scalar')",
                    migrate,
                )
    elif info.layout == LAYOUT_V2:
        for reader, versions in ((NC48, "4.8"), (NC49, "4.9.0-4.9.2")):
            yield Finding(
                reader,
                "misreads",
                "/",
                f"{versions} read the current NCZarr layout (metadata in .zattrs) as pure "
                "Zarr: 4.9.3 and later read it as NCZarr",
                None,
            )


def _array_findings(meta: Mapping[str, Any], info: FormatInfo, prefix: str) -> Iterable[Finding]:
    zarray = meta[join_key(prefix, ZARRAY)]
    attrs = meta.get(join_key(prefix, ZATTRS))
    attrs = attrs if isinstance(attrs, dict) else {}
    where = _path(prefix)
    dtypes = _dtypes(zarray)
    nczarr_layout = info.format == "nczarr"
    to_zarr = "nczarr convert URL OUT --mode zarr"
    to_nczarr = "nczarr convert URL OUT --mode nczarr"

    rejected = [d for d in dtypes if d in _ZARR_PYTHON_REJECTS]
    if rejected:
        problem = (
            f"has no data type for {rejected[0]!r}: the array cannot be read and listing "
            "its group fails"
        )
        yield Finding(ZARR_PYTHON, "fails", where, problem, to_zarr)
        yield Finding(
            XARRAY,
            "refuses",
            where,
            f"cannot open the group holding this array (zarr-python rejects {rejected[0]!r})",
            to_zarr,
        )
    if not (nczarr_layout and info.layout == LAYOUT_V2_KEYS and _uppercase_keys(meta)):
        refused = [d for d in dtypes if _netcdf_c_refuses_dtype(d)]
        if refused:
            for reader in NETCDF_C:
                yield Finding(
                    reader,
                    "refuses",
                    where,
                    f"fails to open the whole dataset on data type {refused[0]!r}",
                    to_nczarr,
                )

    for codec in _codecs(zarray):
        cid = codec.get("id")
        if cid == "shuffle" and "elementsize" in codec:
            size = codec["elementsize"]
            if isinstance(size, str):
                yield Finding(
                    ZARR_PYTHON,
                    "fails",
                    where,
                    f"shuffle elementsize given as text {size!r} (netcdf-c 4.9): numcodecs "
                    "raises TypeError",
                    to_zarr,
                )
                yield Finding(XARRAY, "fails", where, "cannot decode this array", to_zarr)
            elif size == 0:
                problem = (
                    "shuffle elementsize 0 means 'the item size' to netcdf-c and 'no "
                    "shuffle' to numcodecs: returns wrong numbers, silently"
                )
                yield Finding(ZARR_PYTHON, "misreads", where, problem, to_zarr)
                yield Finding(XARRAY, "misreads", where, problem, to_zarr)
    codecs = _codecs(zarray)
    unknown = sorted({str(c.get("id")) for c in codecs if c.get("id") not in NETCDF_C_CODECS})
    if unknown:
        for reader in (NC49, NC410):
            yield Finding(
                reader,
                "fails",
                where,
                f"has no filter for codec {', '.join(unknown)}: reading the data fails "
                "(NC_ENOFILTER)",
                to_nczarr,
            )
    if codecs:
        yield Finding(
            NC48,
            "misreads",
            where,
            "4.8 ignores codecs: compressed or filtered chunks are read as raw values",
            None,
        )

    shape = zarray.get("shape")
    dims = attrs.get(ARRAY_DIMENSIONS)
    nczarr_array, _ = nczarr_key(meta, prefix, ARRAY_KEYS, ZARRAY)
    nczarr_scalar = isinstance(nczarr_array, dict) and (
        nczarr_array.get("scalar") in (1, True) or nczarr_array.get("storage") == "scalar"
    )
    swapped = [d for d in dtypes if d[:1] == ">" and d[-1:] not in ("1", "")]
    if swapped and zarray.get("fill_value") is not None and info.zarr_format == 2:
        yield Finding(
            NC410,
            "misreads",
            where,
            f"returns the fill value byte-swapped where a chunk of this {swapped[0]!r} "
            "array was never written (a netcdf-c 4.10 bug, also in files it wrote itself)",
            None,
        )
    if nczarr_layout and nczarr_scalar and any(c.get("id") == "blosc" for c in codecs):
        yield Finding(
            NC410,
            "refuses",
            where,
            "fails to open the whole dataset on a blosc-compressed scalar (Filter error -132)",
            "nczarr convert URL OUT --mode nczarr (re-encodes the scalar)",
        )
    if shape == []:
        for reader in NETCDF_C:
            yield Finding(
                reader,
                "ignores",
                where,
                "drops a 0-d array (shape []) with only a log message: the scalar is missing",
                "nczarr convert URL OUT --mode zarr --netcdf-scalars",
            )
    elif (nczarr_layout and nczarr_scalar) or dims == [SCALAR_DIM]:
        for reader in (ZARR_PYTHON, XARRAY):
            yield Finding(
                reader,
                "misreads",
                where,
                "shows a netCDF scalar as a 1-element 1-D array (dimension _scalar_)",
                to_zarr,
            )
    if isinstance(shape, list) and shape and not (nczarr_scalar and nczarr_layout):
        if dims is None:
            legacy = isinstance(nczarr_array, dict) and info.layout == LAYOUT_V2_KEYS
            if not (legacy and _uppercase_keys(meta)):
                yield Finding(
                    XARRAY,
                    "refuses",
                    where,
                    "no _ARRAY_DIMENSIONS: xarray cannot name the array's dimensions",
                    to_zarr,
                )
        elif isinstance(dims, list) and len(dims) != len(shape):
            yield Finding(
                XARRAY,
                "refuses",
                where,
                f"_ARRAY_DIMENSIONS has {len(dims)} names for {len(shape)} dimensions",
                None,
            )
            if len(dims) < len(shape):
                yield Finding(
                    NC410,
                    "refuses",
                    where,
                    "crashes (segfault in 4.10.1) on _ARRAY_DIMENSIONS shorter than the rank",
                    None,
                )

    fill = zarray.get("fill_value")
    if isinstance(fill, str) and fill and any(d.lstrip("<>|").startswith("S") for d in dtypes):
        try:
            base64.b64decode(fill, validate=True)
        except (binascii.Error, ValueError):
            yield Finding(
                ZARR_PYTHON,
                "fails",
                where,
                f"fill_value {fill!r} is raw text (netcdf-c's way), not base64 as Zarr v2 requires",
                to_zarr,
            )


def _dimension_conflicts(meta: Mapping[str, Any]) -> Iterable[Finding]:
    """One ``_ARRAY_DIMENSIONS`` name with two lengths: per group (netcdf-c 4.10, xarray)
    and across the store (netcdf-c before 4.10 puts every such dimension at the root)."""
    per_group: dict[str, dict[str, set[int]]] = {}
    per_store: dict[str, set[int]] = {}
    for prefix in _arrays(meta):
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
                yield Finding(NC410, "refuses", _path(group), problem, fix)
                yield Finding(XARRAY, "refuses", _path(group), problem, fix)
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


def _stale_consolidated(
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
    stale = sorted(k for k in entries if stored.get(k) != entries[k])
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


def _trailing_bytes(trailing: Mapping[str, int]) -> Iterable[Finding]:
    for key, extra in sorted(trailing.items()):
        root = "/" not in key
        problem = (
            f"{extra} stale bytes after the JSON document (netcdf-c's non-truncating "
            "rewrite): the object does not parse"
        )
        fix = f"truncate {key} after its JSON document (drop the last {extra} bytes)"
        for reader in READERS:
            yield Finding(reader, "refuses" if root else "fails", key, problem, fix)


def _not_utf8(keys: Iterable[str]) -> Iterable[Finding]:
    for key in sorted(keys):
        root = "/" not in key
        problem = (
            "metadata is not UTF-8 (netcdf-c 4.9 writes a char attribute's raw bytes): "
            "its JSON parser raises UnicodeDecodeError"
        )
        fix = "nczarr convert URL OUT --mode zarr"
        yield Finding(ZARR_PYTHON, "refuses" if root else "fails", key, problem, fix)
        yield Finding(XARRAY, "refuses", key, problem, fix)


def findings(
    meta: Mapping[str, Any],
    info: FormatInfo,
    *,
    consolidated: Mapping[str, Any] | None = None,
    trailing: Mapping[str, int] | None = None,
    not_utf8: Iterable[str] = (),
) -> list[Finding]:
    """Every problem each reader would have with a store, worst first per reader.

    Parameters
    ----------
    meta
        The metadata objects as stored (parsed JSON by key), not consolidated copies.
    info
        :func:`~nczarr.translate.detect.detect_format` of ``meta``.
    consolidated
        The parsed ``.zmetadata`` document, when the store has one.
    trailing
        Keys of objects whose JSON document is followed by stray bytes, with their count.
    not_utf8
        Keys of objects that are not UTF-8 text (netcdf-c reads them; zarr-python,
        and so xarray, does not).
    """
    out: list[Finding] = [
        *_trailing_bytes(trailing or {}),
        *_not_utf8(not_utf8),
        *_layout_findings(meta, info),
    ]
    if info.zarr_format == 2:
        for prefix in _arrays(meta):
            out.extend(_array_findings(meta, info, prefix))
        out.extend(_dimension_conflicts(meta))
        out.extend(_stale_consolidated(meta, consolidated))
    order = {r: i for i, r in enumerate(READERS)}
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    unique = list(dict.fromkeys(out))
    return sorted(unique, key=lambda f: (order[f.reader], rank[f.severity], f.where))


def needs_translation(meta: Mapping[str, Any], info: FormatInfo) -> bool:
    """Whether zarr-python would refuse, fail on or misread the store as stored.

    True for NCZarr (every generation) and for any store :func:`findings` says
    zarr-python cannot read right (netcdf-c's ``">S1"`` char arrays, shuffle
    ``elementsize`` 0 or given as text, netcdf-c's pure-Zarr scalars, raw-text fill
    values ...): :func:`nczarr.open_zarr` then reads it through the translated view.
    Stores written by zarr-python or xarray, Zarr v3 included, read right as they are.
    """
    if info.format == "nczarr":
        return True
    wrong = ("refuses", "fails", "misreads")
    return any(f.reader == ZARR_PYTHON and f.severity in wrong for f in findings(meta, info))
