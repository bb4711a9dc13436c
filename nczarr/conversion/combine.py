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
  (:func:`nczarr.conversion.cluster.copy_chunks_on_cluster` over :class:`_Shifted`, a
  read-only map showing a source's chunks under their target keys).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidModeError, TargetExistsError, UnsupportedTypeError, warn_all
from ..load import read_with_chunk_keys
from ..maps.base import NOT_SUPPORTED, ZMap
from ..readthrough import TranslatedView
from ..reencode import ChunkRecoder, Reencoding, plan_reencoding
from ..translate.conventions import LAYOUT_V2, LAYOUT_ZARR, ZARRAY
from ..translate.dtypes import nc_to_zarr_dtype
from ..translate.grow import GrowPlan, chunk_key, plan_growth
from ..translate.model import Dataset, Variable
from ..translate.order import order_metadata
from ..translate.writer import check_zarr_format, write_with_warnings
from .apply import delete_keys, write_metadata
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
from .locations import check_format, open_location, parsed_url, url_of
from .overlap import check_distinct, location_of
from .progress import ProgressArg, progress_callback
from .report import ConvertReport

__all__ = ["append", "combine", "grow"]

#: Root metadata objects, removed first when overwriting a target.
_ROOT_OBJECTS = ("zarr.json", ".zgroup", ".zmetadata", ".zattrs")

Location = str | os.PathLike[str] | ZMap


@dataclass
class _Options:
    """What every part's view and the writer share."""

    fmt: str
    zarr_format: int
    noxarray: bool
    consolidated: bool
    netcdf_scalars: bool


# ------------------------------------------------------------------ reading parts
@dataclass(frozen=True)
class _Part:
    """One source as the engine reads it.

    ``chunks`` serves chunk bytes as ``dataset`` describes them (the map itself, or its
    translated view when some array is re-encoded or shown under other keys);
    ``verbatim`` is where a verbatim copy reads (the map itself unless the view maps
    keys, so that kernel and server-side copies apply).
    """

    dataset: Dataset
    stored: frozenset[str]
    chunks: ZMap
    verbatim: ZMap
    view: TranslatedView | None
    warnings: tuple[str, ...]

    def copy_source(self, key: str) -> ZMap:
        """Where chunk ``key`` is copied from."""
        if self.view is not None and self.view.reencoded_array(key) is not None:
            return self.view
        return self.verbatim


def _of_view(view: TranslatedView) -> _Part:
    return _Part(
        dataset=view.dataset,
        stored=frozenset(view.chunk_keys()),
        chunks=view,
        verbatim=view if view.keys_mapped else view.source,
        view=view,
        warnings=view.warnings,
    )


def _part(zmap: ZMap, opts: _Options) -> _Part:
    """``zmap`` as a part: read directly when nothing needs translating (the common
    case, and the cheap one: no metadata is written per source), else through a view."""
    if zmap.file_format() is None and not zmap.reencoded:
        dataset, v3_keys = read_with_chunk_keys(zmap)
        variables = list(dataset.root.all_variables())
        plain = (
            not v3_keys
            and not dataset.skipped
            and ZARRAY not in zmap  # a bare root array: shown under another prefix
            and not plan_reencoding(dataset, opts.fmt)[1]
            and not (opts.fmt == "nczarr" and any(v.logical == "bytes" for v in variables))
        )
        if plain:
            return _Part(
                dataset=dataset,
                stored=frozenset(_listed(zmap, variables)),
                chunks=zmap,
                verbatim=zmap,
                view=None,
                warnings=dataset.warnings,
            )
    return _of_view(_view(zmap, opts))


def _listed(zmap: ZMap, variables: Sequence[Variable]) -> Iterator[str]:
    """The chunk objects stored below each variable (no metadata objects)."""
    for var in variables:
        prefix = var.path.strip("/")
        for key in zmap.keys_below(prefix):
            rest = key[len(prefix) + 1 :]
            if key.startswith(prefix + "/") and not any(
                segment.startswith(".") for segment in rest.split("/")
            ):
                yield key


def _view(zmap: ZMap, opts: _Options) -> TranslatedView:
    view = TranslatedView(
        zmap,
        format=opts.fmt,  # type: ignore[arg-type]
        noxarray=opts.noxarray,
        consolidated=opts.consolidated,
        netcdf_scalars=opts.netcdf_scalars,
        zarr_format=opts.zarr_format,
    )
    missing = (*view.dataset.skipped, *view.left_out)
    if missing:
        raise UnsupportedTypeError(
            f"{zmap.url}: cannot combine: {', '.join(missing)} cannot be represented in "
            f"{opts.fmt} ({'; '.join(view.warnings)})"
        )
    return view


def _fill(var: Variable, dtype: np.dtype) -> Any:
    if var.fill_value is not None:
        return var.fill_value
    return "" if dtype.kind in "OUST" else 0


def _dtype(var: Variable) -> np.dtype:
    return np.dtype(
        nc_to_zarr_dtype(
            var.type, var.endian, var.maxstrlen, nczarr=False, text_storage=var.text_storage
        )
    )


class _Reader:
    """Decodes chunks of one part's arrays (as the part serves them), one recoder each."""

    def __init__(self, part: _Part) -> None:
        self.part = part
        self._recoders: dict[str, ChunkRecoder] = {}

    def recoder(self, var: Variable) -> ChunkRecoder:
        path = var.path.strip("/")
        if path not in self._recoders:
            own = self.part.dataset.find_variable(var.path)
            self._recoders[path] = ChunkRecoder(
                self.part.chunks, Reencoding(own, own, "combined"), path, None
            )
        return self._recoders[path]

    def region(self, var: Variable, box: Sequence[tuple[int, int]]) -> np.ndarray:
        """The values of ``box`` (``(start, stop)`` per axis) of ``var`` in this part."""
        own = self.part.dataset.find_variable(var.path)
        dtype = _dtype(own)
        out = np.full(tuple(b - a for a, b in box), _fill(own, dtype), dtype=dtype)
        ranges = [
            range(a // n, -(-b // n)) if b > a else range(0)
            for (a, b), n in zip(box, own.chunks, strict=True)
        ]
        recoder = self.recoder(var)
        for coords in np.ndindex(*(len(r) for r in ranges)):
            chunk = tuple(r[i] for r, i in zip(ranges, coords, strict=True))
            values = recoder.decode(chunk)
            if values is None:
                continue
            src, dst = [], []
            for c, n, (a, b) in zip(chunk, own.chunks, box, strict=True):
                lo, hi = max(a, c * n), min(b, (c + 1) * n)
                src.append(slice(lo - c * n, hi - c * n))
                dst.append(slice(lo - a, hi - a))
            out[tuple(dst)] = values[tuple(src)]
        return out


def _assemble(
    plan: GrowPlan, readers: Sequence[_Reader], path: str, coords: tuple[int, ...]
) -> bytes:
    """The target bytes of chunk ``coords`` of ``path``, from the parts' values."""
    var = plan.dataset.find_variable("/" + path)
    axis = var.dimensions.index(plan.dimension)
    dtype = _dtype(var)
    out = np.full(var.chunks, _fill(var, dtype), dtype=dtype)
    box = [
        (c * n, min((c + 1) * n, s)) for c, n, s in zip(coords, var.chunks, var.shape, strict=True)
    ]
    start, stop = box[axis]
    for reader, offset, length in zip(readers, plan.offsets, plan.lengths, strict=True):
        lo, hi = max(start, offset), min(stop, offset + length)
        if lo >= hi:
            continue
        part_box = list(box)
        part_box[axis] = (lo - offset, hi - offset)
        values = reader.region(var, part_box)
        _check_width(values, dtype, "/" + path)
        where = [slice(0, b - a) for a, b in box]
        where[axis] = slice(lo - start, hi - start)
        out[tuple(where)] = values
    encoder = ChunkRecoder(readers[0].part.chunks, Reencoding(var, var, "combined"), path, None)
    return encoder.encode_values(out)


def _check_width(values: np.ndarray, dtype: np.dtype, fqn: str) -> None:
    """Refuse text that a narrower target string width would cut (numpy would, silently)."""
    if dtype.kind != "S" or values.dtype.kind != "S" or values.dtype.itemsize <= dtype.itemsize:
        return
    longest = max((len(v) for v in values.ravel()), default=0)
    if longest > dtype.itemsize:
        raise UnsupportedTypeError(
            f"variable {fqn!r}: a value of {longest} bytes does not fit the target's string "
            f"width {dtype.itemsize} (the first source's); put the source with the longest "
            "strings first"
        )


def _check_equal(plan: GrowPlan, readers: Sequence[_Reader], names: Sequence[str]) -> None:
    """Refuse parts whose variables without the dimension hold other values."""
    for fqn in plan.compare:
        var = plan.dataset.find_variable(fqn)
        box = [(0, s) for s in var.shape] if not var.scalar else []
        first = readers[0].region(var, box) if not var.scalar else _scalar(readers[0], var)
        for i, reader in enumerate(readers[1:], 1):
            other = reader.region(var, box) if not var.scalar else _scalar(reader, var)
            if first.shape != other.shape or not _equal(first, other):
                raise InvalidModeError(
                    f"cannot combine {names[i]} and {names[0]}: variable {fqn!r} does not "
                    f"have the dimension {plan.dimension!r} and its values differ"
                )


def _scalar(reader: _Reader, var: Variable) -> np.ndarray:
    values = reader.recoder(var).decode(())
    own = reader.part.dataset.find_variable(var.path)
    if values is None:
        return np.asarray(_fill(own, _dtype(own)))
    return np.asarray(values)


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


# ------------------------------------------------------------------ copying
class _Shifted(ZMap):
    """Read-only: chunks of one source under their target keys (``moves``: target key ->
    source key), so that the cluster's copier, which copies a key to the same key,
    copies them. Pickles as the source map and the moves."""

    kind = "a source's chunks under their target keys"

    def __init__(self, source: ZMap, moves: Mapping[str, str]) -> None:
        super().__init__("r")
        self._source = source
        self._moves = dict(moves)

    def _load(self, key: str) -> bytes:
        try:
            skey = self._moves[key]
        except KeyError:
            raise KeyError(key) from None
        return self._source[skey]

    def getsize(self, key: str) -> int:
        try:
            skey = self._moves[key]
        except KeyError:
            raise KeyError(key) from None
        return self._source.getsize(skey)

    def _store(self, key: str, value: bytes) -> None:  # pragma: no cover - mode "r"
        raise KeyError(key)

    def _remove(self, key: str) -> None:  # pragma: no cover - mode "r"
        raise KeyError(key)

    def _list(self, prefix: str) -> Iterator[str]:
        for key in self._moves:
            if not prefix or key == prefix or key.startswith(prefix + "/"):
                yield key

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return (f"shifted:{self._source.url}", {})

    def location(self) -> Any:
        return self._source.location()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Shifted, (self._source, self._moves))


def _on_cluster(
    plan: GrowPlan,
    readers: Sequence[_Reader],
    dst: ZMap,
    cluster: Mapping[str, Any],
    skip: str,
    progress: Callable[[int, int], object] | None,
    total: int,
) -> tuple[tuple[int, int, int], list[Any]]:
    """Copy the plan's verbatim chunks of plain sources on a dask cluster (one batch of
    keys per task, :mod:`nczarr.conversion.cluster`); return the stats and the copies
    left for this process (chunks a translated view serves)."""
    from .cluster import DEFAULT_BATCH, copy_chunks_on_cluster

    by_part: dict[int, dict[str, str]] = {}
    local = []
    for c in plan.copies:
        part = readers[c.part].part
        if part.copy_source(c.source_key) is part.verbatim and part.verbatim is not part.view:
            by_part.setdefault(c.part, {})[c.target_key] = c.source_key
        else:
            local.append(c)
    written = skipped = nbytes = done = 0
    for index, moves in by_part.items():
        base = done

        def step(n: int, _: int, base: int = base) -> None:
            if progress is not None:
                progress(base + n, total)

        stats = copy_chunks_on_cluster(
            cluster["client"],
            _Shifted(readers[index].part.verbatim, moves),
            dst,
            list(moves),
            batch_size=cluster.get("batch_size") or DEFAULT_BATCH,
            workers=cluster.get("workers", 8),
            resume=skip != "none",
            verify=skip == "content",
            progress=step,
        )
        written, skipped, nbytes = (
            written + stats.copied,
            skipped + stats.skipped,
            nbytes + stats.bytes,
        )
        done += len(moves)
    return (written, skipped, nbytes), local


def _copy_one(src: ZMap, dst: ZMap, skey: str, dkey: str, skip: str) -> tuple[bool, int]:
    """Copy ``src[skey]`` to ``dst[dkey]`` the fastest way both maps allow; with ``skip``
    ``"size"`` or ``"content"`` (a resume), not if ``dst`` holds it complete already."""
    if skip == "content":
        try:
            if dst[dkey] == src[skey]:
                return False, 0
        except KeyError:
            pass
    elif skip == "size":
        try:
            if dst.getsize(dkey) == src.getsize(skey):
                return False, 0
        except KeyError:
            pass
    if dst.copy_support(src) is not None:
        result = dst.copy_from(src, skey, dkey, None, atomic=False)
        if isinstance(result, int):
            return True, result
        if result is not NOT_SUPPORTED:
            return True, src.getsize(skey)
    data = src[skey]
    dst[dkey] = data
    return True, len(data)


def _run(
    jobs: Sequence[Callable[[], tuple[bool, int]]],
    workers: int,
    serial: bool,
    progress: Callable[[int, int], object] | None,
    done: int,
    total: int,
) -> tuple[int, int, int]:
    """Run ``jobs`` (at most ``workers`` at once); return (written, skipped, bytes)."""
    written = skipped = nbytes = 0

    def record(result: tuple[bool, int]) -> None:
        nonlocal written, skipped, nbytes, done
        if result[0]:
            written += 1
            nbytes += result[1]
        else:
            skipped += 1
        done += 1
        if progress is not None:
            progress(done, total)

    if serial or workers == 1 or len(jobs) <= 1:
        for job in jobs:
            record(job())
        return written, skipped, nbytes
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nczarr-grow") as pool:
        for result in pool.map(lambda job: job(), jobs):
            record(result)
    return written, skipped, nbytes


def _execute(
    plan: GrowPlan,
    readers: Sequence[_Reader],
    dst: ZMap,
    *,
    workers: int,
    skip: str,
    progress: Callable[[int, int], object] | None,
    cluster: Mapping[str, Any] | None = None,
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Copy and assemble the plan's chunks into ``dst``; (copied, reencoded) stats.
    With ``cluster`` (``client``, ``batch_size``) the verbatim copies run on dask."""
    total = len(plan.copies) + len(plan.assembled)
    sources = [reader.part.verbatim for reader in readers]
    copies: Sequence[Any] = plan.copies
    remote = (0, 0, 0)
    if cluster is not None and cluster.get("client") is not None:
        remote, copies = _on_cluster(plan, readers, dst, cluster, skip, progress, total)

    def copier(c: Any) -> Callable[[], tuple[bool, int]]:
        src = readers[c.part].part.copy_source(c.source_key)
        return lambda: _copy_one(src, dst, c.source_key, c.target_key, skip)

    jobs = [copier(c) for c in copies]
    local = all(dst.copy_support(s) == "local" for s in sources[1:] or sources)
    with ExitStack() as stack:
        stack.enter_context(dst.session())
        for s in sources:
            stack.enter_context(s.session())
        copied = _run(jobs, workers, local, progress, sum(remote[:2]), total)
        copied = (copied[0] + remote[0], copied[1] + remote[1], copied[2] + remote[2])

    def assembler(path: str, coords: tuple[int, ...]) -> Callable[[], tuple[bool, int]]:
        def job() -> tuple[bool, int]:
            data = _assemble(plan, readers, path, coords)
            key = chunk_key(plan.dataset.find_variable("/" + path), coords)
            dst[key] = data  # atomic: an old partial chunk is replaced in one step
            return True, len(data)

        return job

    jobs = [assembler(path, coords) for path, coords in plan.assembled]
    reencoded = _run(jobs, workers, False, progress, len(plan.copies), total)
    return copied, reencoded


# ------------------------------------------------------------------ entry points
def _names(locations: Sequence[Location]) -> list[str]:
    return [url_of(loc) for loc in locations]


def _report(
    plan: GrowPlan,
    names: Sequence[str],
    target: str,
    layout: str,
    opts: _Options,
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


def _metadata(plan: GrowPlan, opts: _Options) -> tuple[list[tuple[str, bytes]], list[str]]:
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
    opts = _Options(fmt, version, noxarray, consolidated, netcdf_scalars)
    names = _names(sources)
    for src in sources:
        check_distinct(src, dst, src_options=source_options, dst_options=target_options)
    with ExitStack() as stack:
        on_chunk = progress_callback(progress, stack, unit="chunk")
        maps = [open_location(s, "r", source_options, stack) for s in sources]
        parts = [_part(m, opts) for m in maps]
        readers = [_Reader(p) for p in parts]
        plan = plan_growth(
            [p.dataset for p in parts],
            concat_dim,
            [p.stored for p in parts],
            names=names,
            combine_attrs=combine_attrs,  # type: ignore[arg-type]
        )
        _check_equal(plan, readers, names)
        metadata, written_warnings = _metadata(plan, opts)
        warnings = [*plan.warnings, *written_warnings]
        for p in parts:
            warnings += [w for w in p.warnings if w not in warnings]
        warn_all(warnings)
        report = _report(plan, names, url_of(dst), parts[0].dataset.layout, opts, warnings)
        dst_map = open_location(dst, "a", _zip_options(parsed, fmt, target_options), stack)
        keys = plan.target_chunk_keys
        journal = Journal(
            source="+".join(source_identity(location_of(m)) for m in maps),
            target_format=fmt,
            plan=plan_digest(fmt, metadata, keys),
        )
        skip = "none"
        if dst_map.search(""):
            if overwrite:
                delete_keys(dst_map, _ROOT_OBJECTS)
                dst_map.clear()
            elif resume:
                skip = resume_mode(dst_map, journal, dict(metadata), frozenset(keys), url_of(dst))
            else:
                raise TargetExistsError(
                    f"target {url_of(dst)!r} exists and is not empty: pass overwrite=True "
                    "(--overwrite) to replace it, or resume=True (--resume) to continue an "
                    "interrupted convert"
                )
        if overwrite or resume:
            remove_temporaries(dst_map)
        if skip != "content":  # sizes are trusted only for objects this combine wrote
            write_journal(dst_map, journal)
        cluster = {"client": client, "batch_size": batch_size, "workers": workers}
        copied, reencoded = _execute(
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


def _zip_options(
    parsed: Any, fmt: str, options: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """A new zip archive for NCZarr gets netcdf-c's layout (what netcdf-c reads)."""
    if (
        parsed is not None
        and parsed.storage == "zip"
        and fmt == "nczarr"
        and not os.path.exists(parsed.path)
        and "layout" not in (options or {})
    ):
        return {**(options or {}), "layout": "netcdf"}
    return options


def _target_options(dst_map: ZMap) -> _Options:
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
        return _Options("nczarr", 2, False, info.consolidated, False)
    return _Options("zarr", info.zarr_format, False, info.consolidated, False)


#: ``kind`` of the journal an append writes before its metadata.
_APPEND_KIND = "nczarr-append-journal"


def _changed(dst: ZMap, key: str, value: bytes) -> bool:
    try:
        return dst[key] != value
    except KeyError:
        return True


def _append_journal(
    metadata: Sequence[tuple[str, bytes]], sources: Sequence[str], dim: str
) -> bytes:
    """The journal of an append about to write ``metadata``: every chunk is written, so
    a later append can finish an interrupted metadata write (:func:`_finish_interrupted`)."""
    doc = {
        "kind": _APPEND_KIND,
        "sources": list(sources),
        "dimension": dim,
        "metadata": [[k, v.decode("utf-8")] for k, v in metadata],
    }
    return json.dumps(doc).encode("utf-8")


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
    try:
        doc = json.loads(raw)
        pending = [(str(k), str(v).encode("utf-8")) for k, v in doc["metadata"]]
        if doc.get("kind") != _APPEND_KIND:
            raise ValueError(doc.get("kind"))
    except (ValueError, KeyError, TypeError):
        raise TargetExistsError(
            f"cannot append to {shown!r}: it holds an interrupted convert ({JOURNAL_KEY}); "
            "finish it with resume=True first (nothing was changed)"
        ) from None
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
        target_view = TranslatedView(
            dst_map,
            format=opts.fmt,  # type: ignore[arg-type]
            consolidated=opts.consolidated,
            zarr_format=opts.zarr_format,
        )
        _check_appendable(target_view, url_of(dst))
        maps = [open_location(s, "r", source_options, stack) for s in sources]
        parts = [_of_view(target_view), *(_part(m, opts) for m in maps)]
        readers = [_Reader(p) for p in parts]
        plan = plan_growth(
            [p.dataset for p in parts],
            append_dim,
            [p.stored for p in parts],
            names=names,
            combine_attrs=combine_attrs,  # type: ignore[arg-type]
            first_is_target=True,
        )
        _check_equal(plan, readers, names)
        metadata, written_warnings = _metadata(plan, opts)
        warnings = [*plan.warnings, *written_warnings]
        for p in parts[1:]:
            warnings += [w for w in p.warnings if w not in warnings]
        warn_all(warnings)
        report = _report(plan, names[1:], url_of(dst), parts[1].dataset.layout, opts, warnings)
        cluster = {"client": client, "batch_size": batch_size, "workers": workers}
        copied, reencoded = _execute(
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
        metadata = [(k, v) for k, v in metadata if _changed(dst_map, k, v)]
        dst_map[JOURNAL_KEY] = _append_journal(metadata, names[1:], plan.dimension)
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
