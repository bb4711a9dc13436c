"""Growing a store: combine many sources along a dimension, or append to a target.

``convert([src1, src2, ...], dst, concat_dim="time")`` writes a new store holding the
sources concatenated; ``convert(src, dst, append_dim="time")`` appends ``src`` to the
existing store ``dst`` (the target is the first part of the same plan). The plan is
:func:`nczarr.translate.grow.plan_growth` (pure); here it is carried out:

* every check first: the parts agree (the plan refuses), variables without the
  dimension hold equal values in every part (read and compared:
  :mod:`nczarr.conversion.growcompare`), the target is empty (or
  ``overwrite``/``resume``) or, for an append, a store whose metadata nczarr rewrites
  as it is (current NCZarr or pure Zarr with Zarr v2 chunk keys) and whose coordinate
  stays strictly monotonic (:mod:`nczarr.conversion.growappend`). A refusal writes
  nothing.
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
  an append writes its own journal holding the new metadata just before writing it:
  nczarr's readers read the grown store from it (:mod:`nczarr.maps.pending`), and the
  next append completes an append killed in that window.
* with ``client=`` the verbatim copies run on a dask cluster, runs of whole sources
  per task (:mod:`nczarr.conversion.growcluster`: each task opens its own sources on
  the worker and copies their chunks directory to directory).
* locally, each source's verbatim copies are one batch
  (:meth:`~nczarr.maps.base.ZMap.copy_pairs`): between directories, each directory is
  opened and verified once and every chunk costs ``cp``'s system calls.
* other copies (into zip or S3, from zip, S3 or netCDF files) run concurrently a few
  sources at a time (:data:`~nczarr.conversion.growcopy.WINDOW`): a bounded number
  of sources is open at once whatever the target (:mod:`nczarr.conversion.growsources`).

The parts are read by :mod:`nczarr.conversion.growparts`, planned (and reported) by
:mod:`nczarr.conversion.growplan`, the chunks written by
:mod:`nczarr.conversion.growcopy`; an append is
:mod:`nczarr.conversion.growappend`. ``include``/``exclude`` select the same variables
in every source (a pattern that matches in one source only is valid for all: it may
name a variable only some sources hold; one that matches in none is refused before
anything is written); ``dry_run`` plans, counts and writes nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import InvalidModeError, TargetExistsError
from ..maps.base import ZMap
from ..maps.replace import check_replaceable
from .growappend import append
from .growcopy import execute
from .growparts import read_part
from .growplan import (
    Location,
    dry_run_report,
    finish_report,
    part_options,
    plan_parts,
    report_of,
    write_new_metadata,
)
from .growsiblings import read_sources
from .growsources import Compared, Names, Sources, detacher
from .journal import (  # its SHA-256: CPython's own, without loading OpenSSL
    Journal,
    SourceIdentities,
    clear_target,
    plan_digest,
    remove_journal,
    remove_temporaries,
    resume_mode,
    source_identity,
    write_journal,
)
from .locations import open_location, parsed_url, url_of, zip_target_options
from .overlap import DistinctTarget, RealPaths
from .progress import ProgressArg, progress_callback
from .report import ConvertReport

__all__ = ["append", "combine", "grow"]


# ------------------------------------------------------------------ entry points
def _prepare_target(
    dst_map: ZMap,
    journal: Journal,
    metadata: Sequence[tuple[str, bytes]],
    keys: Sequence[str],
    modes: tuple[bool, bool],
    url: str,
    stack: ExitStack,
) -> str:
    """Clear (``overwrite``) or check (``resume``) a non-empty target, refuse it
    otherwise; then trust the writes (``stack`` holds the block) and write the journal.
    Returns what a resumed copy skips (as :func:`resume_mode`). ``modes``:
    ``(overwrite, resume)``.

    The target then holds nothing but the journal, or an earlier run of this very
    combine: the plan's keys form a valid tree, so they are written without leaf-rule
    probes (on S3 a listing and a HEAD a key, ~1/6 of a combine's requests)."""
    skip = "none"
    overwrite, resume = modes
    names = dst_map.search("")
    if names:
        if overwrite:
            check_replaceable(dst_map, url, names)
            clear_target(dst_map)
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
    stack.enter_context(dst_map.trusted_writes())
    if skip != "content":  # sizes are trusted only for objects this combine wrote
        write_journal(dst_map, journal)
    return skip


def _checked(
    sources: Sources, target: DistinctTarget, real: RealPaths, identities: SourceIdentities
) -> Iterator[ZMap]:
    """Each source opened in turn, refused if it overlaps the target (before anything
    is written: the sources are only read until all are), its identity added to the
    journal's; a directory map's real root, resolved when it was opened, serves both."""
    for index in range(len(sources)):
        zmap = sources.open(index)
        resolved = zmap.real_root
        target.check(zmap, real=resolved)
        where = zmap.location()
        if resolved is not None and where.kind == "local":
            identities.add(source_identity(where, lambda _, r=resolved: r))
        else:
            identities.add(source_identity(where, real))
        yield zmap


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
    dry_run: bool = False,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
) -> ConvertReport:
    """Write the ``sources`` concatenated along ``concat_dim`` into the new store ``dst``
    (what ``nczarr.convert([...], dst, concat_dim=...)`` does; see the module doc).
    ``include``/``exclude`` select the same variables in every source; ``dry_run``
    reports the plan (:func:`_dry_run`) and writes nothing."""
    start = time.perf_counter()
    if overwrite and resume:
        raise InvalidModeError("overwrite=True and resume=True exclude each other")
    sources = sources if isinstance(sources, list) else list(sources)
    parsed = parsed_url(dst)
    opts = part_options(
        parsed, mode, zarr_format, noxarray, consolidated, netcdf_scalars, (include, exclude)
    )
    fmt = opts.fmt
    names = Names(sources)  # made when a message needs one
    real = RealPaths()  # the sources' real paths: their maps, the overlap check, the journal
    with ExitStack() as stack:
        on_chunk = progress_callback(progress, stack, unit="chunk")
        opened = Sources(sources, source_options, real, stack, lambda m: read_part(m, opts))
        target = DistinctTarget(dst, target_options, real)
        # each source opened, checked, read and closed in turn (memory flat)
        identities = SourceIdentities()
        compared = Compared(concat_dim, names)  # parts compared while open
        done = detacher(opened, compared)
        checked = _checked(opened, target, real, identities)
        parts, compared.known = read_sources(  # on S3 with a client: read on its workers
            checked, opts, concat_dim, done=done, client=client
        )
        plan, readers, metadata, warnings = plan_parts(
            parts,
            concat_dim,
            names,
            combine_attrs,
            opts,
            first_is_target=False,
            known_equal=compared,
            sources=opened,
        )
        report = report_of(plan, names, url_of(dst), parts[0].dataset.layout, opts, warnings)
        del parts, compared  # the readers hold the parts (memory: kept per source)
        if dry_run:
            return dry_run_report(report, plan, readers, metadata, start)
        dst_map = open_location(dst, "a", zip_target_options(dst, fmt, target_options), stack)
        skip = _prepare_target(  # the journal and the key list are not kept for the copies
            dst_map,
            Journal(identities.text(), fmt, plan_digest(fmt, metadata, plan.target_chunk_keys)),
            metadata,
            plan.target_chunk_keys,
            (overwrite, resume),
            url_of(dst),
            stack,
        )
        cluster = {"client": client, "batch_size": batch_size, "workers": workers}
        copied, reencoded = execute(
            plan, readers, dst_map, workers=workers, skip=skip, progress=on_chunk, cluster=cluster
        )
        if client is not None:
            remove_temporaries(dst_map)  # of a worker killed mid-write
        report.metadata_written = tuple(write_new_metadata(dst_map, metadata))
        remove_journal(dst_map)
        dst_map.flush()
    return finish_report(report, copied, reencoded, start)


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
    common = {
        "workers": args.get("workers", 8),
        "combine_attrs": args.get("combine_attrs", "identical"),
        "progress": args.get("progress"),
        "source_options": args.get("source_options"),
        "target_options": args.get("target_options"),
        "client": args.get("client"),
        "batch_size": args.get("batch_size"),
        "dry_run": bool(args.get("dry_run")),
        "include": args.get("include"),
        "exclude": args.get("exclude"),
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
