"""What each reader would get wrong: pure rules over a store's metadata objects.

The readers are netcdf-c by release line (4.8, 4.9, 4.10+), zarr-python 3, xarray and
GDAL 3.12+ (:data:`READERS`; the ones people run today are :data:`CURRENT_READERS`).
Every rule is a fact about one of them, measured with the real library where it is
available here (libnetcdf 4.10 through netCDF4, zarr-python 3, xarray, libgdal 3.12:
the tests of ``nczarr check`` open the same stores with those readers and see the
problem happen) and taken from netcdf-c's code for the older releases
(``docs/netcdf-c-layouts.md``, sections 0, 2.4, 2.5, 4 and 5).

The rules live by job: one table of array quirks (:mod:`.compat_rules`, one rule per
entry, over the facts :mod:`.compat_facts` gathers), the store- and group-wide ones
(:mod:`.compat_store`), malformed Zarr v3 nodes below the root
(:mod:`.compat_v3_nodes`: the array rules skip them) and NCZarr dimension references
that fail (:mod:`.compat_dimrefs`), and the reader names and :class:`Finding`
(:mod:`.compat_base`). :func:`findings` takes the metadata objects as they are
stored (not as consolidated metadata claims them to be), the consolidated document if
any, and the keys whose JSON had trailing bytes, and returns one :class:`Finding` per
reader and problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from typing import Any

from ..errors import MetadataError, UnsupportedError
from .arrayspec import parse_array_metadata
from .compat_base import (
    CURRENT_READERS,
    GDAL,
    NC48,
    NC49,
    NC410,
    NETCDF_C,
    READERS,
    SEVERITIES,
    XARRAY,
    ZARR_PYTHON,
    Finding,
)
from .compat_dimrefs import dimref_findings
from .compat_facts import array_facts, array_prefixes
from .compat_rules import RULES
from .compat_store import (
    dimension_conflicts,
    float_attribute_types,
    layout_findings,
    stale_consolidated,
    trailing_bytes,
)
from .compat_store import (
    not_utf8 as not_utf8_findings,
)
from .compat_v3_nodes import v3_node_findings
from .conventions import LAYOUT_ZARR, ZARRAY, ZATTRS
from .detect import FormatInfo
from .jsontext import kind_of

__all__ = [
    "CURRENT_READERS",
    "GDAL",
    "NC48",
    "NC49",
    "NC410",
    "NETCDF_C",
    "READERS",
    "SEVERITIES",
    "XARRAY",
    "ZARR_PYTHON",
    "Finding",
    "findings",
    "needs_translation",
]


def _array_findings(
    meta: Mapping[str, Any], info: FormatInfo, *, translating_only: bool = False
) -> Iterable[Finding]:
    """Every rule of the table on every array of the store (a Zarr v3 node whose
    ``zarr.json`` is malformed: what each reader does with it, instead)."""
    malformed: set[str] = set()
    if info.zarr_format == 3:
        malformed, found = v3_node_findings(meta)
        yield from found
    if not translating_only:  # an array whose .zarray is no JSON object at all
        for key, value in meta.items():
            prefix, _, base = key.rpartition("/")
            if info.zarr_format == 2 and base == ZARRAY and not isinstance(value, dict):
                reason = f"{key!r} must hold a JSON object, got {kind_of(value)}"
                yield from _malformed(prefix, reason)
    for prefix in array_prefixes(meta, info.zarr_format):
        if prefix in malformed:
            continue
        try:
            facts = array_facts(meta, info, prefix)
            if info.zarr_format == 2:  # what nczarr's reader checks of it
                _well_formed(meta, prefix, info)
        except MetadataError as exc:
            if not translating_only:
                yield from _malformed(prefix, str(exc))
            continue
        for rule in RULES:
            if info.zarr_format not in rule.formats or (translating_only and not rule.translates):
                continue
            problem = rule.test(facts)
            if problem is not None:
                for reader in rule.readers:
                    yield Finding(reader, rule.severity, facts.where, problem, rule.fix)


def _well_formed(meta: Mapping[str, Any], prefix: str, info: FormatInfo) -> None:
    """Raise :class:`MetadataError` if the array's ``.zarray`` is malformed as nczarr's
    reader judges it; a valid type nczarr cannot carry is the rules' to report."""
    key = f"{prefix}/{ZARRAY}" if prefix else ZARRAY
    with suppress(UnsupportedError):
        parse_array_metadata(meta[key], key, nczarr=info.layout != LAYOUT_ZARR)


def _malformed(prefix: str, reason: str) -> Iterable[Finding]:
    """What the readers do with an array whose own metadata is malformed (measured on
    Zarr v2 with a ``shape`` that is text, an unknown ``dtype`` and a ``.zattrs`` that
    is not JSON): zarr-python cannot open that array and GDAL neither (it opens it
    without the attributes when only those are bad), xarray and netcdf-c (NC_ENCZARR)
    fail on the whole dataset;
    nczarr's readers skip it with a warning and ``convert`` writes a copy without it
    only if it is excluded."""
    where = "/" + prefix
    fix = f"nczarr convert URL OUT --exclude {where}"
    yield Finding(ZARR_PYTHON, "fails", where, f"cannot open the array: {reason}", fix)
    yield Finding(XARRAY, "fails", where, f"fails to open the whole dataset: {reason}", fix)
    for reader in NETCDF_C:
        problem = f"fails to open the whole dataset (NC_ENCZARR): {reason}"
        yield Finding(reader, "refuses", where, problem, fix)
    if ZATTRS in reason.split(":", 1)[0]:  # GDAL opens the array without its attributes
        problem = f"reads the array without its attributes and dimension names: {reason}"
        yield Finding(GDAL, "misreads", where, problem, fix)
    else:
        yield Finding(GDAL, "fails", where, f"cannot open the array: {reason}", fix)


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
        *trailing_bytes(trailing or {}),
        *not_utf8_findings(not_utf8),
        *layout_findings(meta, info),
        *_array_findings(meta, info),
    ]
    if info.zarr_format == 2:
        out.extend(dimref_findings(meta, info))
        out.extend(dimension_conflicts(meta))
        out.extend(stale_consolidated(meta, consolidated))
        out.extend(float_attribute_types(meta))
    order = {r: i for i, r in enumerate(READERS)}
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    unique = list(dict.fromkeys(out))
    return sorted(unique, key=lambda f: (order[f.reader], rank[f.severity], f.where))


def needs_translation(meta: Mapping[str, Any], info: FormatInfo) -> bool:
    """Whether zarr-python would refuse, fail on or misread the store as stored, in a
    way nczarr's translated view reads right.

    True for NCZarr (every generation) and for any store where a rule of the table
    marked ``translates`` fires for zarr-python (netcdf-c's ``">S1"`` char arrays,
    shuffle ``elementsize`` 0 or given as text, netcdf-c's pure-Zarr scalars, raw-text
    fill values ...): :func:`nczarr.open_zarr` then reads it through the translated
    view. Stores written by zarr-python or xarray,
    Zarr v3 included, read right as they are.
    """
    if info.format == "nczarr":
        return True
    if info.zarr_format != 2:
        return False
    wrong = ("refuses", "fails", "misreads")
    return any(
        f.reader == ZARR_PYTHON and f.severity in wrong
        for f in _array_findings(meta, info, translating_only=True)
    )
