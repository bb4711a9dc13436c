"""Planning a grown store (:mod:`nczarr.conversion.combine`): the target's options, the
parts' plan with its agreement checks and metadata, and the report (of a run or a dry
run). Shared by ``combine`` and ``append``."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Container, Sequence
from typing import Any

from ..errors import UnsupportedTypeError, warn_all
from ..maps.base import ZMap
from ..records import replace
from ..translate.grow import GrowPlan, plan_growth
from ..translate.order import array_nodes, order_metadata
from ..translate.target import Target
from ..translate.writer import check_zarr_format, write_target
from ..translate.zarr2_fills import exact_default_fills
from .apply import write_metadata
from .growcompare import check_equal
from .growparts import Part, PartOptions, assemble
from .growsources import Readers, Sources
from .locations import check_format, url_of
from .report import ConvertReport

__all__ = [
    "Location",
    "dry_run_report",
    "finish_report",
    "names_of",
    "part_options",
    "plan_parts",
    "report_of",
    "write_new_metadata",
    "write_plan_metadata",
]

#: What a grown store's sources and target may be given as.
Location = str | os.PathLike[str] | ZMap


def names_of(locations: Sequence[Location]) -> list[str]:
    return [url_of(loc) for loc in locations]


def report_of(
    plan: GrowPlan,
    names: Sequence[str],
    target: str,
    layout: str,
    opts: PartOptions,
    warnings: Sequence[str],
) -> ConvertReport:
    source = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1} more)"
    return ConvertReport(
        source=source,
        target=target,
        source_layout=layout,
        target_format=opts.fmt,
        arrays=sum(1 for _ in plan.dataset.root.all_variables()),
        warnings=tuple(warnings),
        zarr_format=opts.zarr_format,
    )


def write_plan_metadata(
    plan: GrowPlan, opts: PartOptions, *, new_store: bool
) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The grown store's metadata objects in write order, and the writer's warnings.
    A new store (a combine's) is a written copy as ``convert`` writes one
    (``Target.written_copy``: the same fills and the same warnings on what its readers
    make of it); an append writes the store's own metadata grown."""
    target = Target(
        opts.fmt,  # type: ignore[arg-type]
        opts.zarr_format,
        noxarray=opts.noxarray,
        consolidated=opts.consolidated,
        netcdf_scalars=opts.netcdf_scalars,
        written_copy=new_store,
    )
    written = write_target(plan.dataset, target)
    if written.skipped:
        raise UnsupportedTypeError(
            f"cannot write {', '.join('/' + p for p in written.skipped)} in {opts.fmt} "
            f"v{opts.zarr_format}: {'; '.join(written.warnings)}"
        )
    ordered = [(k, written.metadata[k]) for k in order_metadata(written.metadata)]
    return ordered, list(written.warnings)


def plan_parts(
    parts: Sequence[Part],
    dim: str,
    names: Sequence[str],
    combine_attrs: str,
    opts: PartOptions,
    *,
    first_is_target: bool,
    known_equal: Container[int] = frozenset(),
    sources: Sources | None = None,
) -> tuple[GrowPlan, Readers, list[tuple[str, bytes]], list[str]]:
    """Plan the grown store from ``parts`` (the first being the target itself when
    appending), check that what is not grown agrees (but in the parts ``known_equal``
    already, see :func:`~nczarr.conversion.growcompare.check_equal`), write its metadata
    in memory and announce the warnings (the sources'; a target's own were said when it
    was written). ``sources``: where parts kept without their map
    (:func:`~nczarr.conversion.growsources.detached`) are opened again. A new store
    (not ``first_is_target``) is a written copy (:func:`write_plan_metadata`):
    netcdf-c's rounded default double fill (no ``_FillValue``) becomes NC_FILL_DOUBLE
    in its metadata and in the chunks assembled, with ``convert``'s warning
    (:func:`~nczarr.translate.zarr2_fills.exact_default_fills`), and every warning
    ``convert`` gives on what its readers make of a copy is given; an append keeps the
    store's own fill and scalars.
    Returns ``(plan, readers, metadata, warnings)``."""
    # a part kept without its map: opened again (an append's part 0 is its target)
    readers = Readers(parts, sources, 1 if first_is_target else 0)
    plan = plan_growth(
        [p.dataset for p in parts],
        dim,
        [p.stored for p in parts],
        names=names,
        combine_attrs=combine_attrs,  # type: ignore[arg-type]
        first_is_target=first_is_target,
    )
    check_equal(plan, readers, names, known_equal)
    fills: list[str] = []
    if not first_is_target:  # a new store: its assembled chunks hold the exact fill
        exact, fills = exact_default_fills(plan.dataset, opts.zarr_format)
        plan = replace(plan, dataset=exact)
    metadata, written_warnings = write_plan_metadata(plan, opts, new_store=not first_is_target)
    warnings = [*plan.warnings, *fills, *written_warnings]
    for p in parts[1:] if first_is_target else parts:
        warnings += [w for w in p.warnings if w not in warnings]
    warn_all(warnings)
    return plan, readers, metadata, warnings


def part_options(
    parsed: Any,
    mode: str | None,
    zarr_format: int | None,
    noxarray: bool | None,
    consolidated: bool | None,
    netcdf_scalars: bool,
    selection: tuple[Sequence[str] | None, Sequence[str] | None] = (None, None),
) -> PartOptions:
    """The target's format and options: the arguments, else the URL's mode words.
    The ``selection``'s patterns are checked against all the sources together
    (:attr:`PartOptions.matched`: a pattern may name what only some sources hold)."""
    fmt = check_format(
        mode if mode is not None else (parsed.format if parsed is not None else None) or "nczarr",
        "mode",
    )
    version = zarr_format or (parsed.zarr_version if parsed is not None else None) or 2
    version = check_zarr_format(fmt, version, netcdf_scalars=netcdf_scalars)
    if noxarray is None:
        noxarray = parsed is not None and not parsed.xarray_dimensions
    if consolidated is None:
        consolidated = bool(parsed is not None and parsed.consolidated)
    return PartOptions(
        fmt, version, noxarray, consolidated, netcdf_scalars, *selection, matched=set()
    )


def finish_report(
    report: ConvertReport,
    copied: tuple[int, int, int],
    reencoded: tuple[int, int, int],
    start: float,
) -> ConvertReport:
    report.chunks_copied = copied[0]
    report.chunks_reencoded = reencoded[0]
    report.chunks_skipped = copied[1] + reencoded[1]
    report.bytes_copied = copied[2] + reencoded[2]
    report.seconds = time.perf_counter() - start
    return report


def dry_run_report(
    report: ConvertReport,
    plan: GrowPlan,
    readers: Readers,
    metadata: Sequence[tuple[str, bytes]],
    start: float,
) -> ConvertReport:
    """The report of a dry run: the keys that would be written (chunks, then metadata),
    their bytes, and how many chunks would be copied verbatim and re-encoded. The
    re-encoded chunks are assembled (read and encoded, one at a time) to count their
    bytes; nothing is written."""
    report.dry_run = True
    report.planned_keys = (*plan.target_chunk_keys, *(k for k, _ in metadata))
    copied = _copied_bytes(plan, readers)
    assembled = sum(len(assemble(plan, readers, path, coords)) for path, coords in plan.assembled)
    report.planned_bytes = copied + assembled + sum(len(v) for _, v in metadata)
    report.chunks_copied = len(plan.copies)
    report.chunks_reencoded = len(plan.assembled)
    report.seconds = time.perf_counter() - start
    return report


#: Sources whose chunk sizes a dry run asks for at once when their maps make round
#: trips (S3: a ``HeadObject`` a chunk), each source's sizes asked concurrently.
SIZES_WINDOW = 8


def _copied_bytes(plan: GrowPlan, readers: Readers) -> int:
    """The bytes of the plan's verbatim copies (each source chunk's size). Sizes that
    are round trips (S3, HTTP) are asked for :data:`SIZES_WINDOW` sources at a time, in
    threads, their sources kept open meanwhile (``readers.keep``, closed by
    ``readers.finish``): 365 sources of 3 chunks waited for 1095 ``HeadObject`` one
    after another. Local sizes (a ``stat``) are asked here, in order; sizes the source's
    listing gave are not asked, and past those each source's are listed a variable at a
    time where that is fewer requests (:meth:`~.growparts.Part.known_sizes`)."""
    from collections import deque

    total = 0
    pool: Any = None
    window: deque[tuple[int, Any]] = deque()
    try:
        for part, group in itertools.groupby(plan.copies, key=lambda c: c.part):
            src = readers[part].part
            asked = [(src.copy_source(c.source_key), c.source_key) for c in group]
            known = src.sizes or {}
            if all(zmap is src.verbatim and key in known for zmap, key in asked):
                total += sum(known[key] for _, key in asked)
                continue
            if not any(zmap.round_trips for zmap, _ in asked):
                total += sum(zmap.getsize(key) for zmap, key in asked)
                continue
            if pool is None:
                from concurrent.futures import ThreadPoolExecutor

                pool = ThreadPoolExecutor(SIZES_WINDOW, thread_name_prefix="nczarr-sizes")
            readers.keep(part)  # not closed by another reader's release meanwhile
            window.append((part, pool.submit(_bytes_of, src, asked)))
            while len(window) > SIZES_WINDOW:
                total += _sizes_of(window.popleft(), readers)
        while window:
            total += _sizes_of(window.popleft(), readers)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return total


def _bytes_of(src: Part, asked: Sequence[tuple[ZMap, str]]) -> int:
    """The sum of the sizes of the chunks ``asked`` (where each is copied from, its
    key) of part ``src``: known ones (:meth:`~.growparts.Part.known_sizes`), the rest
    asked."""
    known = src.known_sizes({key for zmap, key in asked if zmap is src.verbatim})
    return sum(
        known[key] if zmap is src.verbatim and key in known else zmap.getsize(key)
        for zmap, key in asked
    )


def _sizes_of(asked: tuple[int, Any], readers: Readers) -> int:
    """One source's :func:`_bytes_of` (its map closed after, if opened for it)."""
    part, future = asked
    try:
        return future.result()
    finally:
        readers.finish(part)


def write_new_metadata(dst: ZMap, metadata: Sequence[tuple[str, bytes]]) -> list[str]:
    """:func:`write_metadata` of a new store's ``metadata`` (in :func:`order_metadata`
    order: arrays, groups deepest first, root last). Into a target that makes round
    trips the arrays' objects are written in waves, each one ``setitems`` (concurrent
    requests): every array's first object (``.zattrs``), then every array's second,
    so each array's objects keep their order; then the groups' and the root's in
    order, after every array's: the root still comes last, so a store killed meanwhile
    is no store (a resume finishes it). On S3 at 100 ms a request the 10 objects of a
    daily series took ~3 s one after another."""
    if not dst.round_trips:
        return write_metadata(dst, metadata)
    nodes = array_nodes(dict(metadata)) - {""}  # a root array's objects: written last
    if len(nodes) < 2:
        return write_metadata(dst, metadata)
    cut = next(
        (i for i, (key, _) in enumerate(metadata) if key.rpartition("/")[0] not in nodes),
        len(metadata),
    )
    for wave in _waves(metadata[:cut]):
        dst.setitems(wave)
    return [*(key for key, _ in metadata[:cut]), *write_metadata(dst, metadata[cut:])]


def _waves(items: Sequence[tuple[str, bytes]]) -> list[dict[str, bytes]]:
    """``items`` (several arrays' objects, each array's in order) as waves: the first
    object of every array, then the second..."""
    position: dict[str, int] = {}
    waves: list[dict[str, bytes]] = []
    for key, value in items:
        node = key.rpartition("/")[0]
        at = position[node] = position.get(node, -1) + 1
        if at == len(waves):
            waves.append({})
        waves[at][key] = value
    return waves
