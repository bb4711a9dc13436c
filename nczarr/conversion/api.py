"""``convert``: copy a dataset into another format (or the same one, cleaned up).

A translated view (:func:`nczarr.view`) plus a copy: the view says what the metadata
of the target is and which chunk objects pass through unchanged;
:mod:`nczarr.conversion.plan` orders the writes and :mod:`nczarr.conversion.apply`
performs them. Chunk bytes are copied verbatim whenever the target's readers decode
them to the producer's values (a Zarr v3 source's chunks go byte for byte to their
Zarr v2 keys). The few arrays for which that is not so (strings for NCZarr, sharded
arrays, codecs netcdf-c lacks: :mod:`nczarr.reencode`) have their chunks decoded and
encoded again, in the same worker pool, and are named in the report and warnings.
Arrays no target can represent make ``convert`` raise unless they are excluded.

Safety: chunks are written first, then array metadata, then groups, the root group
last, so an interrupted convert never leaves a target that opens as a complete
dataset; ``resume=True`` finishes it. (Rewriting a store in place is
:mod:`nczarr.conversion.migrate`.)
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import InvalidModeError, TargetExistsError, warn_all
from ..maps.base import ZMap
from ..maps.replace import check_replaceable
from ..readthrough import TranslatedView
from ..records import record
from ..translate.conventions import ZARR_JSON, ZARRAY
from ..translate.target import Target
from .apply import CopyStats, copy_chunks, write_metadata
from .journal import (
    Journal,
    check_only_planned,
    clear_target,
    plan_digest,
    remove_journal,
    remove_temporaries,
    resume_mode,
    source_identity,
    write_journal,
)
from .locations import open_location, target_of, url_of, zip_target_options
from .overlap import check_distinct, location_of
from .plan import Plan, build_plan, check_representable, split_chunks
from .progress import Progress, ProgressArg, progress_callback
from .report import ConvertReport

__all__ = ["convert"]


@record
class _Request:
    """What :func:`convert` was asked, resolved and validated at the edge."""

    src: str | os.PathLike[str] | ZMap
    dst: str | os.PathLike[str] | ZMap
    target: Target
    source_options: Mapping[str, Any] | None
    target_options: Mapping[str, Any] | None
    include: Sequence[str] | None
    exclude: Sequence[str] | None
    overwrite: bool
    resume: bool
    workers: int
    client: Any
    batch_size: int | None

    @property
    def src_url(self) -> str:
        return url_of(self.src)

    @property
    def dst_url(self) -> str:
        return url_of(self.dst)


@record(frozen=False)
class _Copier:
    """Copies chunk keys into the target: here, or on a dask cluster."""

    dst: ZMap
    request: _Request
    skip: str = "none"  # what a resume may skip: "none", "size" or "content"
    trusted: bool = False

    def __call__(self, src: ZMap, keys: Sequence[str], progress: Progress | None) -> CopyStats:
        request = self.request
        if request.client is not None and not keys:
            return CopyStats()
        resume, verify = self.skip != "none", self.skip == "content"
        if request.client is None:
            return copy_chunks(
                src,
                self.dst,
                keys,
                workers=request.workers,
                resume=resume,
                verify=verify,
                progress=progress,
            )
        from .cluster import DEFAULT_BATCH, copy_chunks_on_cluster

        return copy_chunks_on_cluster(
            request.client,
            src,
            self.dst,
            keys,
            batch_size=request.batch_size or DEFAULT_BATCH,
            workers=request.workers,
            resume=resume,
            verify=verify,
            trusted=self.trusted,
            progress=progress,
        )


# ------------------------------------------------------------------ helpers
def reencoded_arrays(translated: TranslatedView, plan: Plan) -> tuple[tuple[str, str], ...]:
    """``(FQN, reason)`` of the planned arrays whose chunks are re-encoded."""
    kept = {
        key.rpartition("/")[0] for key, _ in plan.metadata if key.endswith((ZARRAY, ZARR_JSON))
    }  # zarr.json of groups too: harmless, only array paths are looked up
    return tuple(
        ("/" + path, reason) for path, reason in translated.reencoded.items() if path in kept
    )


def _offset(progress: Progress | None, done: int, total: int) -> Progress | None:
    """``progress`` for the second of two copies: counts continue from ``done``."""
    if progress is None:
        return None
    return lambda n, _: progress(done + n, total)


def _is_list(src: Any) -> bool:
    return not isinstance(src, str | os.PathLike | ZMap) and isinstance(src, Sequence)


def _grow(src: Any, dst: Any, mode: str | None, args: Mapping[str, Any]) -> ConvertReport:
    """``convert`` with ``concat_dim`` or ``append_dim``: :mod:`nczarr.conversion.combine`."""
    from .combine import grow

    return grow(src, dst, mode, args)


# ------------------------------------------------------------------ convert
def convert(
    src: str | os.PathLike[str] | ZMap | Sequence[str | os.PathLike[str] | ZMap],
    dst: str | os.PathLike[str] | ZMap,
    mode: str | None = None,
    *,
    workers: int = 8,
    overwrite: bool = False,
    resume: bool = False,
    dry_run: bool = False,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    progress: ProgressArg = None,
    noxarray: bool | None = None,
    consolidated: bool | None = None,
    zarr_format: int | None = None,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    client: Any = None,
    batch_size: int | None = None,
    netcdf_scalars: bool = False,
    concat_dim: str | None = None,
    append_dim: str | None = None,
    combine_attrs: str = "identical",
) -> ConvertReport:
    """Convert the dataset at ``src`` into ``mode`` format at ``dst``.

    Parameters
    ----------
    src, dst
        URLs (``file:///x.zip#mode=nczarr,zip``, ``s3://bucket/key``, plain paths)
        or open maps. Any layout the readers accept is a valid source; ``src`` is
        opened read-only and never modified.
    mode
        ``"nczarr"`` or ``"zarr"``. Omitted: the format of ``dst``'s ``#mode=``
        fragment, else ``"nczarr"``.
    workers
        Concurrent chunk copies (memory holds at most ``workers`` chunks). Copies the
        kernel makes between local files (directory to directory, a local ``.nc`` file
        into a directory, a combine's local sources) use fewer: one thread for small
        chunks, at most one a core for chunks of 256 KB and more
        (:mod:`nczarr.maps.kernelcopy`).
    overwrite
        Replace a non-empty ``dst`` (its root metadata is removed first, then the rest)
        if it is a store: a target whose root holds no Zarr or NCZarr metadata (a
        folder of other files) is refused (:mod:`nczarr.maps.replace`).
    resume
        Continue an interrupted convert into ``dst``. Chunks this convert already
        wrote (the target's journal says so, see :mod:`nczarr.conversion.journal`) are skipped
        when their size is the source's; a target without a journal is resumed only
        if it holds nothing the plan does not write, and then chunks are compared
        byte for byte. A target of another convert is refused.
    dry_run
        Plan only: the report lists ``planned_keys`` and ``planned_bytes``.
    include, exclude
        Variable (or group) FQNs or bare names to keep / leave out.
    progress
        A callable ``progress(done, total)`` in chunk objects, called after each
        chunk; ``True`` for a progress bar on stderr; ``False``/``None`` for none.
    noxarray, consolidated
        Writer options (no ``_ARRAY_DIMENSIONS``/``dimension_names``; write
        consolidated metadata: ``.zmetadata``, or in Zarr v3 the root ``zarr.json``'s
        ``consolidated_metadata``). ``None``: from ``dst``'s fragment (``noxarray``,
        ``consolidated`` mode words).
    zarr_format
        With ``mode="zarr"``: 2 (``.zarray``/``.zgroup``) or 3 (``zarr.json``, what
        zarr-python 3 and xarray write by default; chunks are still copied
        verbatim, under the same keys: see :mod:`nczarr.translate.write_zarr3`).
        ``None``: the ``v2``/``v3`` mode word of ``dst``'s fragment
        (``file:///x.zarr#mode=zarr,v3,file``), else 2.
    source_options, target_options
        Storage options for opening ``src`` / ``dst`` from URLs (``anon=True``,
        ``endpoint_url``, ``profile``, ... see :func:`nczarr.open_map`); one per side,
        since the two often live on different servers.
    client
        A ``distributed.Client``: the chunk copies run on its cluster, in batches of
        ``batch_size`` keys per task (default
        :data:`nczarr.conversion.cluster.DEFAULT_BATCH`); the metadata is written here, root
        last, after every batch succeeded. The maps must be reachable from the
        workers (S3, a shared directory); a zip archive target is refused. See
        docs/scaling.md.
    concat_dim, append_dim, combine_attrs
        Grow a store (:mod:`nczarr.conversion.combine`): ``src`` a list of sources
        written concatenated along ``concat_dim`` into the new store ``dst``, or one
        source (or a list) appended to the existing store ``dst`` along
        ``append_dim``. Attributes must be equal in every source, unless
        ``combine_attrs="override"`` (the first source's win, with a warning).
    netcdf_scalars
        Pure Zarr target only: write netCDF scalars as netcdf-c does (shape ``[1]``,
        ``_ARRAY_DIMENSIONS: ["_scalar_"]``) so that netcdf-c 4.10, which leaves 0-d
        arrays out, reads them; zarr-python and xarray then see 1-element arrays.
        Default: 0-d arrays, what zarr-python and xarray write and expect.

    Everything that is not a verbatim copy (arrays skipped, dimensions renamed,
    metadata decoded leniently, codecs netcdf-c cannot read ...) is announced as an
    :class:`~nczarr.errors.NCZarrWarning` and listed in ``report.warnings``.

    Raises
    ------
    TargetExistsError
        ``dst`` exists and is not empty, and neither ``overwrite`` nor ``resume``
        was given; or ``resume`` was given and ``dst`` holds another convert's
        objects; or ``overwrite`` was given and ``dst`` is no store. Nothing is
        changed.
    InvalidModeError
        Bad ``mode``, ``overwrite`` together with ``resume``, overlapping source
        and target (under any name: links, mounts, ``..``; checked before anything is
        opened for writing), an include/exclude pattern that matches nothing, or
        ``zarr_format=3`` with ``mode="nczarr"`` or ``netcdf_scalars``.
    TypeError
        ``progress`` is not a bool, None or a callable.
    UnsupportedTypeError
        An array the selection keeps has no netCDF-4 / target form (complex,
        datetime ...); the message names it. Nothing is written.
    """
    if concat_dim is not None or append_dim is not None or _is_list(src):
        return _grow(src, dst, mode, locals())
    start = time.perf_counter()
    request = _Request(
        src,
        dst,
        target_of(
            dst,
            mode,
            noxarray=noxarray,
            consolidated=consolidated,
            zarr_format=zarr_format,
            netcdf_scalars=netcdf_scalars,
        ),
        source_options,
        target_options,
        include,
        exclude,
        overwrite,
        resume,
        workers,
        client,
        batch_size,
    )
    if overwrite and resume:
        raise InvalidModeError("overwrite=True and resume=True exclude each other")
    # Before anything is opened: a target that is the source, or inside it, or holds
    # it, under any name (symbolic link, bind mount, '..', hard link) is refused.
    check_distinct(src, dst, src_options=source_options, dst_options=target_options)
    with ExitStack() as stack:
        on_chunk = progress_callback(progress, stack, unit="chunk")
        translated, plan = _plan(request, stack)
        report = _report(request, translated, plan)
        if dry_run:
            return _dry_run(report, translated, plan, start)
        copier = _prepare_target(request, translated, plan, stack)
        _copy(copier, translated, plan, report, on_chunk)
        _note_strays(report, translated)
        _finish(copier, plan, report)
    report.seconds = time.perf_counter() - start
    return report


# ------------------------------------------------------------------ the steps
def _plan(request: _Request, stack: ExitStack) -> tuple[TranslatedView, Plan]:
    """Open the source, translate it (the selection applied: the writer runs once on
    what is kept) and plan the writes. Its warnings go out once, with the report's."""
    src_map = open_location(request.src, "r", request.source_options, stack)
    translated = TranslatedView.from_source(
        src_map, request.target, include=request.include, exclude=request.exclude
    )
    stack.callback(translated.close)
    check_representable(translated, request.include, request.exclude)
    return translated, build_plan(translated)


def _report(request: _Request, translated: TranslatedView, plan: Plan) -> ConvertReport:
    """The report of the planned convert (counts are filled in as the copy goes); its
    warnings announced."""
    report = ConvertReport(
        source=request.src_url,
        target=request.dst_url,
        source_layout=translated.dataset.layout,
        target_format=request.target.format,
        arrays=plan.arrays,
        # stray objects among re-encoded chunks: warned by the view as it listed them
        warnings=(*plan.warnings, *translated.stray_keys.values()),
        reencoded=reencoded_arrays(translated, plan),
        zarr_format=request.target.zarr_format,
    )
    warn_all(plan.warnings)
    return report


def _dry_run(
    report: ConvertReport, translated: TranslatedView, plan: Plan, start: float
) -> ConvertReport:
    """The report of a dry run: every key that would be written and their bytes."""
    source, verbatim, reencoded = split_chunks(translated, plan.chunk_keys)
    report.dry_run = True
    report.planned_keys = plan.keys
    report.planned_bytes = (
        sum(source.getsize(k) for k in verbatim)
        + sum(translated.getsize(k) for k in reencoded)
        + plan.metadata_bytes
    )
    _note_strays(report, translated)
    report.seconds = time.perf_counter() - start
    return report


def _note_strays(report: ConvertReport, translated: TranslatedView) -> None:
    """Add to the report the stray objects among re-encoded chunks that the view warned
    about as the plan's keys were listed (lazily, during the copy or the dry run)."""
    found = [w for w in translated.stray_keys.values() if w not in report.warnings]
    report.warnings = (*report.warnings, *found)


def _prepare_target(
    request: _Request, translated: TranslatedView, plan: Plan, stack: ExitStack
) -> _Copier:
    """Open the target, check it is empty (or empty it, or check what a resume may
    skip) and put the journal in it, before the first chunk."""
    options = zip_target_options(request.dst, request.target.format, request.target_options)
    dst_map = open_location(request.dst, "a", options, stack)
    check_distinct(translated.source, dst_map, dst_name=request.dst_url)
    journal = Journal(
        source=source_identity(location_of(translated.source)),
        target_format=request.target.format,
        # no chunk keys: the copy lists the source once (a resume checks the target's
        # keys against the plan instead, see journal.py)
        plan=plan_digest(request.target.format, plan.metadata),
    )
    copier = _Copier(dst_map, request)
    # A target verified empty (or emptied) receives exactly the plan's keys and the
    # journal, which form a valid tree: no per-key leaf-rule probes (one request per
    # chunk on S3).
    names = dst_map.search("")  # the root level: empty, or what an overwrite replaces
    copier.trusted = not names or _clear_or_resume(copier, journal, plan, names)
    if request.overwrite or request.resume:
        remove_temporaries(dst_map)
    if copier.trusted:
        stack.enter_context(dst_map.trusted_writes())
    if copier.skip != "content":
        # Skipping by size is sound only for objects this convert wrote (see journal.py).
        write_journal(dst_map, journal)
    return copier


def _clear_or_resume(copier: _Copier, journal: Journal, plan: Plan, names: list[str]) -> bool:
    """A non-empty target (``names``: its root level): emptied (``overwrite``, a store
    only) or checked for a resume (it holds only keys of this plan and the journal:
    still a valid tree); else refused."""
    dst_map, request = copier.dst, copier.request
    if request.overwrite:
        check_replaceable(dst_map, request.dst_url, names)
        clear_target(dst_map)
    elif request.resume:
        metadata, chunks = dict(plan.metadata), frozenset(plan.chunk_keys)
        copier.skip = resume_mode(dst_map, journal, metadata, chunks, request.dst_url)
        if copier.skip == "size":  # this convert's journal, whose digest has no chunk keys
            check_only_planned(dst_map, metadata, chunks, request.dst_url)
    else:
        raise TargetExistsError(
            f"target {request.dst_url!r} exists and is not empty: pass overwrite=True "
            "(--overwrite) to replace it, or resume=True (--resume) to continue an "
            "interrupted convert"
        )
    return True


def _copy(
    copier: _Copier,
    translated: TranslatedView,
    plan: Plan,
    report: ConvertReport,
    on_chunk: Progress | None,
) -> None:
    """Copy the chunks: verbatim from the source (kernel or server-side copies where
    the maps offer them), then those of re-encoded arrays through the view, which
    decodes and encodes them again in the same worker pool (at most ``workers``
    chunks in memory)."""
    source, verbatim, reencoded = split_chunks(translated, plan.chunk_keys)
    # The keys are listed from the source as they are copied; only a progress report
    # needs their number first (a walk of its own).
    total = len(plan.chunk_keys) if on_chunk is not None else 0
    stats = copier(source, verbatim, _offset(on_chunk, 0, total))
    restats = (
        copier(translated, reencoded, _offset(on_chunk, stats.copied + stats.skipped, total))
        if translated.reencoded
        else CopyStats()
    )
    report.chunks_copied = stats.copied
    report.chunks_reencoded = restats.copied
    report.chunks_skipped = stats.skipped + restats.skipped
    report.bytes_copied = stats.bytes + restats.bytes


def _finish(copier: _Copier, plan: Plan, report: ConvertReport) -> None:
    """Write the metadata, root last, then remove the journal."""
    dst_map = copier.dst
    if copier.request.client is not None:
        # A worker killed mid-write left its temporary file; nothing of this run
        # writes any more: remove them all before the root metadata.
        remove_temporaries(dst_map)
    report.metadata_written = tuple(write_metadata(dst_map, plan.metadata))
    remove_journal(dst_map)
    dst_map.flush()
