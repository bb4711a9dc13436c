"""Growing a store: combine many sources along a dimension, or append to a target.

``convert([src1, src2, ...], dst, concat_dim="time")`` writes a new store holding the
sources concatenated; ``convert(src, dst, append_dim="time")`` appends ``src`` to the
existing store ``dst`` (the target is the first part of the same plan). The plan is
:func:`nczarr.translate.grow.plan_growth` (pure); here it is carried out:

* every check first: the parts agree (the plan refuses), variables without the
  dimension hold equal values in every part (read and compared here), the target is
  empty (or ``overwrite``/``resume``) or, for an append, a store whose metadata nczarr
  rewrites as it is (current NCZarr or pure Zarr with Zarr v2 chunk keys). A refusal
  writes nothing.
* chunks that are one source chunk are copied verbatim under their shifted key
  (kernel copies between directories, server-side copies on one S3 endpoint, bytes
  otherwise); the other target chunks are assembled from the parts' decoded values
  (:class:`nczarr.reencode.ChunkRecoder`) and encoded with the target's codecs. In an
  append, chunks of the target inside its old extent are never rewritten: only its
  partial last chunk is assembled again (its old values and the new ones), and
  replacing it is atomic, and invisible to readers of the old shape.
* the metadata is written last, arrays first and the root group last
  (:func:`nczarr.translate.order.order_metadata`), so a reader never sees a shape
  whose chunks are not all written. A combine carries convert's journal (``resume``);
  an append writes its own journal holding the new metadata just before writing it, so
  that an append killed in that window is completed by the next one.
* with ``client=`` the verbatim copies run on a dask cluster
  (:func:`nczarr.conversion.cluster.copy_chunks_on_cluster` over
  :class:`~nczarr.conversion.growcopy.ShiftedMap`, a read-only map showing a source's
  chunks under their target keys).

The parts are read by :mod:`nczarr.conversion.growparts`, the chunks written by
:mod:`nczarr.conversion.growcopy`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import InvalidModeError, TargetExistsError, UnsupportedTypeError, warn_all
from ..maps.base import ZMap
from ..maps.pending import decode_append_journal, encode_append_journal
from ..readthrough import TranslatedView
from ..translate.conventions import LAYOUT_V2, LAYOUT_ZARR, ZARR_JSON, ZARRAY
from ..translate.grow import GrowPlan, plan_growth
from ..translate.order import order_metadata
from ..translate.target import Target
from ..translate.writer import check_zarr_format, write_with_warnings
from .apply import delete_keys, write_metadata
from .growcopy import execute
from .growparts import Part, PartOptions, Reader, check_equal, part_of_view, read_part
from .journal import (
    JOURNAL_KEY,
    Journal,
    plan_digest,
    remove_journal,
    remove_temporaries,
    resume_mode,
    source_identity,
    write_journal,
)
from .locations import check_format, open_location, parsed_url, url_of, zip_target_options
from .overlap import check_distinct, location_of
from .progress import ProgressArg, progress_callback
from .report import ConvertReport

__all__ = ["append", "combine", "grow"]

#: Root metadata objects, removed first when overwriting a target.
_ROOT_OBJECTS = ("zarr.json", ".zgroup", ".zmetadata", ".zattrs")

Location = str | os.PathLike[str] | ZMap


# ------------------------------------------------------------------ entry points
def _names(locations: Sequence[Location]) -> list[str]:
    return [url_of(loc) for loc in locations]


def _report(
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


def _metadata(plan: GrowPlan, opts: PartOptions) -> tuple[list[tuple[str, bytes]], list[str]]:
    written = write_with_warnings(
        plan.dataset,
        opts.fmt,  # type: ignore[arg-type]
        noxarray=opts.noxarray,
        consolidated=opts.consolidated,
        netcdf_scalars=opts.netcdf_scalars,
        zarr_format=opts.zarr_format,
    )
    if written.skipped:
        raise UnsupportedTypeError(
            f"cannot write {', '.join('/' + p for p in written.skipped)} in {opts.fmt} "
            f"v{opts.zarr_format}: {'; '.join(written.warnings)}"
        )
    ordered = [(k, written.metadata[k]) for k in order_metadata(written.metadata)]
    return ordered, list(written.warnings)


def _plan_parts(
    parts: Sequence[Part],
    dim: str,
    names: Sequence[str],
    combine_attrs: str,
    opts: PartOptions,
    *,
    first_is_target: bool,
) -> tuple[GrowPlan, list[Reader], list[tuple[str, bytes]], list[str]]:
    """Plan the grown store from ``parts`` (the first being the target itself when
    appending), check that what is not grown agrees, write its metadata in memory and
    announce the warnings (the sources'; a target's own were said when it was written).
    Returns ``(plan, readers, metadata, warnings)``."""
    readers = [Reader(p) for p in parts]
    plan = plan_growth(
        [p.dataset for p in parts],
        dim,
        [p.stored for p in parts],
        names=names,
        combine_attrs=combine_attrs,  # type: ignore[arg-type]
        first_is_target=first_is_target,
    )
    check_equal(plan, readers, names)
    metadata, written_warnings = _metadata(plan, opts)
    warnings = [*plan.warnings, *written_warnings]
    for p in parts[1:] if first_is_target else parts:
        warnings += [w for w in p.warnings if w not in warnings]
    warn_all(warnings)
    return plan, readers, metadata, warnings


def _options(
    parsed: Any,
    mode: str | None,
    zarr_format: int | None,
    noxarray: bool | None,
    consolidated: bool | None,
    netcdf_scalars: bool,
) -> PartOptions:
    """The target's format and options: the arguments, else the URL's mode words."""
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
    return PartOptions(fmt, version, noxarray, consolidated, netcdf_scalars)


def _prepare_target(
    dst_map: ZMap,
    journal: Journal,
    metadata: Sequence[tuple[str, bytes]],
    keys: Sequence[str],
    overwrite: bool,
    resume: bool,
    url: str,
) -> str:
    """Clear (``overwrite``) or check (``resume``) a non-empty target, refuse it
    otherwise; write the journal. Returns what a resumed copy skips (as
    :func:`resume_mode`)."""
    skip = "none"
    if dst_map.search(""):
        if overwrite:
            delete_keys(dst_map, _ROOT_OBJECTS)
            dst_map.clear()
        elif resume:
            skip = resume_mode(dst_map, journal, dict(metadata), frozenset(keys), url)
        else:
            raise TargetExistsError(
                f"target {url!r} exists and is not empty: pass overwrite=True "
                "(--overwrite) to replace it, or resume=True (--resume) to continue an "
                "interrupted convert"
            )
    if overwrite or resume:
        remove_temporaries(dst_map)
    if skip != "content":  # sizes are trusted only for objects this combine wrote
        write_journal(dst_map, journal)
    return skip


def combine(
    sources: Sequence[Location],
    dst: Location,
    *,
    concat_dim: str,
    mode: str | None = None,
    workers: int = 8,
    overwrite: bool = False,
    resume: bool = False,
    combine_attrs: str = "identical",
    progress: ProgressArg = None,
    noxarray: bool | None = None,
    consolidated: bool | None = None,
    zarr_format: int | None = None,
    netcdf_scalars: bool = False,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    client: Any = None,
    batch_size: int | None = None,
) -> ConvertReport:
    """Write the ``sources`` concatenated along ``concat_dim`` into the new store ``dst``
    (what ``nczarr.convert([...], dst, concat_dim=...)`` does; see the module doc)."""
    start = time.perf_counter()
    if overwrite and resume:
        raise InvalidModeError("overwrite=True and resume=True exclude each other")
    sources = list(sources)
    parsed = parsed_url(dst)
    opts = _options(parsed, mode, zarr_format, noxarray, consolidated, netcdf_scalars)
    fmt = opts.fmt
    names = _names(sources)
    for src in sources:
        check_distinct(src, dst, src_options=source_options, dst_options=target_options)
    with ExitStack() as stack:
        on_chunk = progress_callback(progress, stack, unit="chunk")
        maps = [open_location(s, "r", source_options, stack) for s in sources]
        parts = [read_part(m, opts) for m in maps]
        plan, readers, metadata, warnings = _plan_parts(
            parts, concat_dim, names, combine_attrs, opts, first_is_target=False
        )
        report = _report(plan, names, url_of(dst), parts[0].dataset.layout, opts, warnings)
        dst_map = open_location(dst, "a", zip_target_options(dst, fmt, target_options), stack)
        keys = plan.target_chunk_keys
        journal = Journal(
            source="+".join(source_identity(location_of(m)) for m in maps),
            target_format=fmt,
            plan=plan_digest(fmt, metadata, keys),
        )
        skip = _prepare_target(dst_map, journal, metadata, keys, overwrite, resume, url_of(dst))
        cluster = {"client": client, "batch_size": batch_size, "workers": workers}
        copied, reencoded = execute(
            plan,
            readers,
            dst_map,
            workers=workers,
            skip=skip,
            progress=on_chunk,
            cluster=cluster,
        )
        if client is not None:
            remove_temporaries(dst_map)  # of a worker killed mid-write
        report.metadata_written = tuple(write_metadata(dst_map, metadata))
        remove_journal(dst_map)
        dst_map.flush()
    return _finish(report, copied, reencoded, start)


def _finish(
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


def _target_options(dst_map: ZMap) -> PartOptions:
    """The target's own format, as an append rewrites its metadata."""
    from ..load import detect

    info = detect(dst_map)
    layout = info.layout
    if layout not in (LAYOUT_V2, LAYOUT_ZARR):
        raise InvalidModeError(
            f"cannot append to {dst_map.url!r}: its layout is {layout}; run "
            "nczarr.migrate() on it first (current NCZarr or pure Zarr only)"
        )
    if layout == LAYOUT_V2:
        return PartOptions("nczarr", 2, False, info.consolidated, False)
    return PartOptions("zarr", info.zarr_format, False, info.consolidated, False)


def _changed(dst: ZMap, key: str, value: bytes) -> bool:
    try:
        return dst[key] != value
    except KeyError:
        return True


def _grown_last(metadata: Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``metadata`` (in :func:`order_metadata` order) with the array objects holding a
    shape moved just before the root objects: netcdf-c refuses a store whose array
    shapes and dimension sizes disagree, so the window where they do is kept short."""
    root = [(k, v) for k, v in metadata if "/" not in k]
    nodes = [(k, v) for k, v in metadata if "/" in k]
    shaped = [(k, v) for k, v in nodes if k.rpartition("/")[2] in (ZARRAY, ZARR_JSON)]
    return [*(kv for kv in nodes if kv not in shaped), *shaped, *root]


def _finish_interrupted(dst: ZMap, shown: str) -> None:
    """Complete the metadata of an append killed while writing it, then refuse the new
    append (it may be a rerun of the same one); nothing if ``dst`` holds no journal.

    Raises
    ------
    TargetExistsError
        ``dst`` held an interrupted append (now complete) or an interrupted convert.
    """
    try:
        raw = dst[JOURNAL_KEY]
    except KeyError:
        return
    decoded = decode_append_journal(raw)
    if decoded is None:
        raise TargetExistsError(
            f"cannot append to {shown!r}: it holds an interrupted convert ({JOURNAL_KEY}); "
            "finish it with resume=True first (nothing was changed)"
        )
    pending, doc = decoded
    write_metadata(dst, pending)
    remove_journal(dst)
    dst.flush()
    raise TargetExistsError(
        f"{shown!r} held an append of {', '.join(doc.get('sources', []))} along "
        f"{doc.get('dimension')!r} interrupted while writing its metadata: that append is now "
        "complete and nothing else was appended; run this append again if it was another one"
    )


def _check_appendable(view: TranslatedView, shown: str) -> None:
    """Refuse a target whose chunks nczarr would not show under their own keys."""
    if view.keys_mapped or view.reencoded:
        arrays = sorted(view.reencoded) or ["(Zarr v3 chunk keys)"]
        raise InvalidModeError(
            f"cannot append to {shown!r}: nczarr shows the chunks of {', '.join(arrays)} "
            "re-encoded or under other keys; convert it first (nothing was changed)"
        )


def append(
    sources: Sequence[Location],
    dst: Location,
    *,
    append_dim: str,
    workers: int = 8,
    combine_attrs: str = "identical",
    progress: ProgressArg = None,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    client: Any = None,
    batch_size: int | None = None,
) -> ConvertReport:
    """Append ``sources`` to the existing store ``dst`` along ``append_dim`` (what
    ``nczarr.convert(src, dst, append_dim=...)`` does; see the module doc)."""
    start = time.perf_counter()
    sources = list(sources)
    names = [url_of(dst), *_names(sources)]
    for src in sources:
        check_distinct(src, dst, src_options=source_options, dst_options=target_options)
    with ExitStack() as stack:
        on_chunk = progress_callback(progress, stack, unit="chunk")
        dst_map = open_location(dst, "a", target_options, stack)
        if not dst_map.search(""):
            raise InvalidModeError(f"cannot append to {url_of(dst)!r}: it is empty or missing")
        _finish_interrupted(dst_map, url_of(dst))
        opts = _target_options(dst_map)
        target_view = TranslatedView.from_source(
            dst_map,
            Target(
                opts.fmt,  # type: ignore[arg-type]
                zarr_format=opts.zarr_format,
                consolidated=opts.consolidated,
            ),
        )
        _check_appendable(target_view, url_of(dst))
        maps = [open_location(s, "r", source_options, stack) for s in sources]
        parts = [part_of_view(target_view), *(read_part(m, opts) for m in maps)]
        plan, readers, metadata, warnings = _plan_parts(
            parts, append_dim, names, combine_attrs, opts, first_is_target=True
        )
        report = _report(plan, names[1:], url_of(dst), parts[1].dataset.layout, opts, warnings)
        cluster = {"client": client, "batch_size": batch_size, "workers": workers}
        copied, reencoded = execute(
            plan,
            readers,
            dst_map,
            workers=workers,
            skip="none",
            progress=on_chunk,
            cluster=cluster,
        )
        if client is not None:
            remove_temporaries(dst_map)  # of a worker killed mid-write
        metadata = _grown_last([(k, v) for k, v in metadata if _changed(dst_map, k, v)])
        # all chunks are written: from here on nczarr's readers see the grown store
        dst_map[JOURNAL_KEY] = encode_append_journal(metadata, names[1:], plan.dimension)
        report.metadata_written = tuple(write_metadata(dst_map, metadata))
        remove_journal(dst_map)
        dst_map.flush()
    return _finish(report, copied, reencoded, start)


#: ``convert`` arguments a grown store does not take yet, with their defaults.
_NOT_YET = {
    "dry_run": False,
    "include": None,
    "exclude": None,
}


def grow(src: Any, dst: Location, mode: str | None, args: Mapping[str, Any]) -> ConvertReport:
    """``convert`` with a list of sources, ``concat_dim`` or ``append_dim``: check the
    arguments and run :func:`combine` or :func:`append`."""
    concat_dim, append_dim = args.get("concat_dim"), args.get("append_dim")
    sources = [src] if isinstance(src, str | os.PathLike | ZMap) else list(src)
    if concat_dim is not None and append_dim is not None:
        raise InvalidModeError("concat_dim and append_dim exclude each other")
    if concat_dim is None and append_dim is None:
        raise InvalidModeError(
            f"convert got {len(sources)} sources: pass concat_dim= (--concat-dim) to combine "
            "them along a dimension"
        )
    given = [name for name, default in _NOT_YET.items() if args.get(name) != default]
    if given:
        raise InvalidModeError(
            f"{', '.join(given)} cannot be combined with concat_dim/append_dim (yet)"
        )
    common = {
        "workers": args.get("workers", 8),
        "combine_attrs": args.get("combine_attrs", "identical"),
        "progress": args.get("progress"),
        "source_options": args.get("source_options"),
        "target_options": args.get("target_options"),
        "client": args.get("client"),
        "batch_size": args.get("batch_size"),
    }
    if append_dim is not None:
        if mode is not None or args.get("zarr_format") is not None:
            raise InvalidModeError("an append keeps the target's format: pass no mode/zarr_format")
        if args.get("overwrite") or args.get("resume"):
            raise InvalidModeError("an append takes no overwrite/resume: rerun it to finish it")
        return append(sources, dst, append_dim=append_dim, **common)
    return combine(
        sources,
        dst,
        concat_dim=concat_dim,
        mode=mode,
        overwrite=bool(args.get("overwrite")),
        resume=bool(args.get("resume")),
        noxarray=args.get("noxarray"),
        consolidated=args.get("consolidated"),
        zarr_format=args.get("zarr_format"),
        netcdf_scalars=bool(args.get("netcdf_scalars")),
        **common,
    )
