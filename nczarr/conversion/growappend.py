"""Appending to an existing store along a dimension: ``nczarr.convert(src, dst,
append_dim="time")`` (and ``to_nczarr(mode="a")``, :mod:`nczarr.integrations.xarray_append`).

The store is the first part of the same plan a combine makes
(:mod:`nczarr.conversion.combine`, whose module doc says how a grown store is checked
and written): its metadata is loaded once and shown through a view
(:class:`~nczarr.readthrough.TranslatedView`), the sources are read as a combine reads
them, the chunks are written first, then the metadata that changed, behind a journal
(:mod:`nczarr.maps.pending`): a reader sees the store as it was or fully grown, and the
next append completes one killed while writing its metadata. Before anything is
written, the coordinate of the dimension must stay strictly monotonic at the seam
(:func:`check_seam`: a retried append is refused, not appended twice), and chunk
objects a killed append left beyond the store's extent are removed
(:func:`beyond_extent`). On S3 the append makes
its requests at once where it can: the store's chunks are written without a leaf-rule
probe each when its listing shows nothing they could clash with
(:func:`keeps_leaf_rule`), and its metadata in waves (:func:`_grown_waves`).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import InvalidModeError, TargetExistsError, warn_all
from ..keys import parent_keys
from ..load import loaded_metadata
from ..maps.base import ZMap
from ..maps.pending import decode_append_journal, encode_append_journal
from ..maps.replace import WRITING_MARK
from ..readthrough import TranslatedView
from ..records import replace
from ..translate.chunk_layout import chunk_coords
from ..translate.conventions import LAYOUT_V2, LAYOUT_ZARR, ZARR_JSON, ZARRAY
from ..translate.grow import GrowPlan
from ..translate.model import Variable
from ..translate.netcdf_forms import bool_as_byte
from ..translate.target import Target
from .apply import write_metadata
from .growcopy import execute
from .growparts import Part, PartOptions, part_of_view, read_part
from .growplan import (
    Location,
    dry_run_report,
    finish_report,
    names_of,
    plan_parts,
    report_of,
)
from .growsiblings import read_sources
from .growsources import Sources, detacher
from .journal import JOURNAL_KEY, remove_journal, remove_temporaries
from .locations import open_location, url_of
from .overlap import RealPaths, check_distinct_all
from .progress import ProgressArg, progress_callback
from .report import ConvertReport

__all__ = ["append", "beyond_extent", "check_seam", "keeps_leaf_rule"]


def _target_options(dst_map: ZMap, loaded: tuple[dict[str, Any], list[str]] | None) -> PartOptions:
    """The target's own format, as an append rewrites its metadata; ``loaded``: its
    metadata (:func:`~nczarr.load.loaded_metadata`, not read again), None to read it."""
    from ..load import detect, detect_loaded

    info = detect(dst_map) if loaded is None else detect_loaded(dst_map, loaded[0])
    layout = info.layout
    if layout not in (LAYOUT_V2, LAYOUT_ZARR):
        raise InvalidModeError(
            f"cannot append to {dst_map.url!r}: its layout is {layout}; run "
            "nczarr.migrate() on it first (current NCZarr or pure Zarr only)"
        )
    if layout == LAYOUT_V2:
        return PartOptions("nczarr", 2, False, info.consolidated, False)
    return PartOptions("zarr", info.zarr_format, False, info.consolidated, False)


def _changed(
    dst: ZMap, items: Sequence[tuple[str, bytes]], seen: Mapping[str, bytes]
) -> list[tuple[str, bytes]]:
    """The ``items`` that ``dst`` does not hold with these very bytes: ``seen``, the
    objects its metadata load read (only chunks are written since), the others read at
    once (on S3 one round trip, not one an object)."""
    unread = [key for key, _ in items if key not in seen]
    stored = {**seen, **(dst.getitems(unread) if unread else {})}
    return [(key, value) for key, value in items if stored.get(key) != value]


def _grown_waves(metadata: Sequence[tuple[str, bytes]]) -> list[list[tuple[str, bytes]]]:
    """``metadata`` (in :func:`order_metadata` order) in the order an append writes it:
    the nodes' other objects, then the array objects holding a shape (netcdf-c refuses
    a store whose array shapes and dimension sizes disagree, so the window where they
    do is kept short), then each root object. Each list is one wave: its objects are
    written at once (:meth:`~nczarr.maps.base.ZMap.setitems`, concurrent requests on
    S3), the waves one after another, so the root objects still come last."""
    root = [(k, v) for k, v in metadata if "/" not in k]
    nodes = [(k, v) for k, v in metadata if "/" in k]
    shaped = [(k, v) for k, v in nodes if k.rpartition("/")[2] in (ZARRAY, ZARR_JSON)]
    waves = [[kv for kv in nodes if kv not in shaped], shaped, *([kv] for kv in root)]
    return [wave for wave in waves if wave]


def _write_grown(
    dst: ZMap, changed: Sequence[tuple[str, bytes]], sources: Sequence[str], dimension: str
) -> tuple[str, ...]:
    """Write an append's ``changed`` metadata (:func:`_grown_waves`) after its journal,
    which holds it: from then on nczarr's readers see the grown store, and the next
    append completes this one if it is killed meanwhile. These are the objects of nodes
    just read and the root journal: leaves of a valid store below known directories,
    written without leaf-rule probes (on S3 a listing each, one after another)."""
    waves = _grown_waves(changed)
    with dst.trusted_writes():
        dst[JOURNAL_KEY] = encode_append_journal(
            [kv for wave in waves for kv in wave], sources, dimension
        )
        for wave in waves:
            dst.setitems(dict(wave))
        remove_journal(dst)
    dst.flush()
    return tuple(key for wave in waves for key, _ in wave)


def check_seam(plan: GrowPlan, readers: Any, names: Sequence[str]) -> None:
    """Refuse an append after which the coordinate variable of the dimension (netCDF's
    ``time(time)``: strictly monotonic, by CF) would no longer be so where the store
    ends and the first source begins: the same data appended a second time (a retried
    job). xarray's ``to_zarr(append_dim=)`` appends it silently; found by a differential
    hunt. The store's last two values give the direction (else the source's first
    two); missing values (:func:`_present`) are not judged, nor an empty source (only
    the store's end and the first source's start are compared). Both ends are read at
    once, one ``getitems`` each (one round trip on S3)."""
    try:
        coord = plan.dataset.find_variable(plan.dimension)
    except KeyError:
        return
    if coord.dimensions != (plan.dimension,) or coord.type in ("char", "string"):
        return
    old = readers[0].part.dataset.find_dimension(plan.dimension).size
    new = readers[1].part.dataset.find_dimension(plan.dimension).size
    if not old or not new:
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="nczarr-seam") as pool:
        ahead = pool.submit(readers[0].region_at_once, coord, [(max(old - 2, 0), old)])
        head = _present(coord, readers[1].region_at_once(coord, [(0, min(new, 2))]))
        tail = _present(coord, ahead.result())
    if not head or not tail or (len(tail) == 2 and tail[0] == tail[1]):
        return
    ends = tail if len(tail) == 2 else head if len(head) == 2 else None
    rising = None if ends is None else ends[1] > ends[0]
    step = head[0] - tail[-1]
    if step == 0 or (rising is True and step < 0) or (rising is False and step > 0):
        raise InvalidModeError(
            f"cannot append {names[1]} to {names[0]}: its {coord.path!r} starts at {head[0]} "
            f"where the store's ends at {tail[-1]}, so the coordinate would not stay "
            "strictly monotonic (the same data appended again?); nothing was changed"
        )


def _present(var: Variable, values: Any) -> list[Any]:
    """``values`` of ``var`` without its missing ones: NaN, its fill value, its
    ``_FillValue`` and ``missing_value``, netCDF's default fill of its type, and
    netcdf-c's rounded double fill (``9.96921e+36``, the fill_value of its double
    arrays, whose unwritten chunks hold the exact default)."""
    import numpy as np

    from ..ncfile.layout import DEFAULT_FILLS
    from ..translate.zarr2_fills import NC_FILL_DOUBLE, ROUNDED_FILL_DOUBLE

    flat = np.asarray(values).ravel()
    candidates = [var.fill_value, DEFAULT_FILLS.get(var.type)]
    if flat.dtype.kind == "f":  # (cast to an integer type they would be noise)
        candidates += [NC_FILL_DOUBLE, ROUNDED_FILL_DOUBLE]
    for name in ("_FillValue", "missing_value"):
        if name in var.attributes:
            candidates.extend(var.attributes[name].value)
    missing = set()
    for value in candidates:
        try:
            missing.add(np.asarray(value).astype(flat.dtype).item())
        except (TypeError, ValueError, OverflowError):
            continue
    return [v for v in flat.tolist() if v == v and v not in missing]


def beyond_extent(store: Part, dimension: str) -> list[str]:
    """The chunk objects of ``store`` (the part an append grows, as listed) that lie
    wholly beyond its arrays' extent along ``dimension``: what an append killed among
    its chunk copies left (the store still reads as before it). A later append that
    stores no chunk there (its source never wrote one: it reads as the fill value)
    would otherwise show the killed append's values."""
    arrays = {}
    for var in store.dataset.root.all_variables():
        if dimension in var.dimensions:
            axis = var.dimensions.index(dimension)
            spec = (axis, var.chunks[axis], var.shape[axis], len(var.shape))
            arrays[var.path.strip("/") + "/"] = spec
    stale = []
    for key in store.stored:
        prefix = key.rpartition("/")[0]
        while prefix and prefix + "/" not in arrays:  # a nested key: "v/0/1" of "v"
            prefix, _, _ = prefix.rpartition("/")
        spec = arrays.get(prefix + "/")
        if spec is None:
            continue
        axis, length, size, ndim = spec
        coords = chunk_coords(key[len(prefix) + 1 :], ndim)
        if coords is not None and coords[axis] * length >= size:
            stale.append(key)
    return sorted(stale)


def _stale(dst: ZMap, stale: Sequence[str], shown: str, dry_run: bool) -> tuple[str, ...]:
    """Delete ``stale`` chunk objects (:func:`beyond_extent`) before an append writes
    (a few at once on a map that makes round trips), or not in a dry run; the warning
    that says so, announced (none if there are none)."""
    if not stale:
        return ()
    if not dry_run:
        if dst.round_trips and len(stale) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(8, thread_name_prefix="nczarr-stale") as pool:
                list(pool.map(dst.delete_if_present, stale))
        else:
            for key in stale:
                dst.delete_if_present(key)
    named = ", ".join(repr(k) for k in stale[:5]) + (" ..." if len(stale) > 5 else "")
    message = (
        f"{shown}: {'would remove' if dry_run else 'removed'} {len(stale)} chunk objects "
        f"beyond the store's extent ({named}), left by an interrupted append: not part of "
        "the store, and not to be shown as part of this append"
    )
    warn_all([message])
    return (message,)


def keeps_leaf_rule(stored: Collection[str], keys: Iterable[str]) -> bool:
    """Whether writing chunk ``keys`` below the arrays of a store whose arrays hold
    ``stored`` (every object below them but their metadata, as the store's listing
    gave them: :func:`~.growparts.part_of_view`) keeps the leaf rule: no key is the
    directory of a stored object, and no stored object is the directory of a key (the
    arrays' own directories hold metadata). Then an append's chunks are written
    without a leaf-rule probe each (on S3 a listing each). A store with an object
    below a chunk's key, which only a foreign writer leaves, keeps the probes; one
    whose name has a segment starting with ``.`` (``v/3/.x``) is not in the listing a
    view gives, so it is not seen (the write then breaks nothing stored, only the
    tree's leaf rule there)."""
    directories = {parent for key in stored for parent in parent_keys(key)}
    return not any(
        key in directories or any(parent in stored for parent in parent_keys(key)) for key in keys
    )


def _finish_interrupted(dst: ZMap, shown: str, dry_run: bool = False) -> None:
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
    if raw == WRITING_MARK:
        raise TargetExistsError(
            f"cannot append to {shown!r}: it holds an unfinished to_nczarr write "
            f"({JOURNAL_KEY}); write it again with to_nczarr(mode='w') first (nothing was "
            "changed)"
        )
    if decoded is None:
        raise TargetExistsError(
            f"cannot append to {shown!r}: it holds an interrupted convert ({JOURNAL_KEY}); "
            "finish it with resume=True first (nothing was changed)"
        )
    pending, doc = decoded
    if dry_run:
        raise TargetExistsError(
            f"{shown!r} holds an append interrupted while writing its metadata: the next "
            "append completes it first (a dry run writes nothing)"
        )
    write_metadata(dst, pending)
    remove_journal(dst)
    dst.flush()
    raise TargetExistsError(
        f"{shown!r} held an append of {', '.join(doc.get('sources', []))} along "
        f"{doc.get('dimension')!r} interrupted while writing its metadata: that append is now "
        "complete and nothing else was appended; run this append again if it was another one"
    )


def _opened_target(
    dst_map: ZMap, shown: str, dry_run: bool, seen: dict[str, bytes]
) -> tuple[PartOptions, TranslatedView]:
    """The store an append grows: an interrupted append completed (and this one
    refused), its metadata loaded once (format, view, and into ``seen`` the bytes of
    what the append may change), refused if empty or not appendable."""
    _finish_interrupted(dst_map, shown, dry_run)
    loaded = loaded_metadata(dst_map, seen)  # read once: format, view, what changes
    if loaded is None and not dst_map.search(""):  # asked only when there is no store
        raise InvalidModeError(f"cannot append to {shown!r}: it is empty or missing")
    opts = _target_options(dst_map, loaded)
    target_view = TranslatedView.from_source(
        dst_map,
        Target(
            opts.fmt,  # type: ignore[arg-type]
            zarr_format=opts.zarr_format,
            consolidated=opts.consolidated,
        ),
        metadata=loaded,
    )
    _check_appendable(target_view, shown)
    return opts, target_view


def _check_appendable(view: TranslatedView, shown: str) -> None:
    """Refuse a target whose chunks nczarr would not show under their own keys, or
    that holds arrays nczarr leaves out (its grown metadata would drop them)."""
    left_out = [*view.dataset.skipped, *view.left_out]
    if left_out:
        raise InvalidModeError(
            f"cannot append to {shown!r}: nczarr leaves out {', '.join(left_out)} "
            f"({'; '.join(w for w in view.warnings if w.startswith('skipped array'))}), "
            "and the grown metadata would drop them; convert the store without them first "
            "(nothing was changed)"
        )
    sharded = sorted(
        v.path.strip("/") for v in view.dataset.root.all_variables() if v.shards is not None
    )
    if sharded and not view.reencoded:
        raise InvalidModeError(
            f"cannot append to {shown!r}: {', '.join(sharded)} stored in Zarr v3 shards, and "
            "an append writes chunks, not shards (nothing was changed)"
        )
    if view.reencoded:
        raise InvalidModeError(
            f"cannot append to {shown!r}: nczarr shows the chunks of "
            f"{', '.join(sorted(view.reencoded))} re-encoded; convert it first (nothing "
            "was changed)"
        )
    if view.keys_mapped:
        raise InvalidModeError(
            f"cannot append to {shown!r}: it is a Zarr v3 store, and appends go to NCZarr "
            "and Zarr v2 stores only; combine the store and the new sources into a new "
            "store instead (convert([store, source, ...], dst, concat_dim=...)), or convert "
            "it to Zarr v2 first (nothing was changed)"
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
    dry_run: bool = False,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
) -> ConvertReport:
    """Append ``sources`` to the existing store ``dst`` along ``append_dim`` (what
    ``nczarr.convert(src, dst, append_dim=...)`` does; see the module doc).
    ``include``/``exclude`` select the variables of every source (the store keeps all of
    its own, so they must match them; a pattern need match in one source only, one that
    matches in none is refused); ``dry_run`` reports the plan, writes nothing."""
    start = time.perf_counter()
    sources = list(sources)
    names = [url_of(dst), *names_of(sources)]
    real = RealPaths()  # the sources' real paths: the overlap check, then their maps
    check_distinct_all(
        sources, dst, src_options=source_options, dst_options=target_options, realpath=real
    )
    with ExitStack() as stack:
        on_chunk = progress_callback(progress, stack, unit="chunk")
        dst_map = open_location(dst, "r" if dry_run else "a", target_options, stack)
        seen: dict[str, bytes] = {}  # its metadata objects' bytes, for _changed
        opts, target_view = _opened_target(dst_map, url_of(dst), dry_run, seen)
        # patterns checked against all the sources together (read_sources; not the store)
        selected = replace(opts, include=include, exclude=exclude, matched=set())
        # each source opened, read and closed in turn, opened again for its copies
        opened = Sources(sources, source_options, real, stack, lambda m: read_part(m, selected))
        read, _ = read_sources(
            (opened.open(i) for i in range(len(opened))), selected, done=detacher(opened, None)
        )
        if opts.fmt == "nczarr":  # bool is byte there (netcdf_forms): compare so
            read = [replace(p, dataset=bool_as_byte(p.dataset)) for p in read]
        parts = [part_of_view(target_view), *read]
        plan, readers, metadata, warnings = plan_parts(
            parts, append_dim, names, combine_attrs, opts, first_is_target=True, sources=opened
        )
        check_seam(plan, readers, names)
        report = report_of(plan, names[1:], url_of(dst), parts[1].dataset.layout, opts, warnings)
        stale = beyond_extent(parts[0], plan.dimension)
        report.warnings = (*report.warnings, *_stale(dst_map, stale, url_of(dst), dry_run))
        if dry_run:
            changed = _changed(dst_map, metadata, seen)
            return dry_run_report(report, plan, readers, changed, start)
        cluster = {"client": client, "batch_size": batch_size, "workers": workers}
        with ExitStack() as trust:
            if keeps_leaf_rule(parts[0].stored, plan.target_chunk_keys):
                trust.enter_context(dst_map.trusted_writes())  # no probe a chunk
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
        changed = _changed(dst_map, metadata, seen)
        report.metadata_written = _write_grown(dst_map, changed, names[1:], plan.dimension)
    return finish_report(report, copied, reencoded, start)
