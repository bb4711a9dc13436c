"""``migrate``: rewrite a store's metadata in place, as current NCZarr or pure Zarr.

Only metadata objects are read, written or deleted, so the cost does not depend on
the number of chunks. New metadata (arrays, groups, root last) is written before any
legacy object is deleted, and objects that already hold the right bytes are skipped:
killed at any point, the store still reads and a rerun finishes the job. A run that
writes marks the store with :data:`RUNNING` meanwhile, so that only the rerun of a
killed run walks the tree (every chunk) for the temporaries of its atomic writes. Stores whose
chunks the new metadata could not describe (Zarr v3 keys, re-encoded arrays) are
refused before anything is written; :func:`~nczarr.conversion.api.convert` writes a
copy instead.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import UnsupportedError, warn_all
from ..load import load_metadata
from ..maps.base import ZMap
from ..readthrough import TranslatedView
from ..translate.conventions import LAYOUT_V2, LAYOUT_ZARR, V1_OBJECT_NAMES, ZARR_JSON
from ..translate.detect import detect_format
from ..translate.select import check_matched, matched_patterns
from ..translate.target import Target
from ..translate.zarr2_fills import rounded_default_fills
from .apply import delete_keys, write_metadata
from .journal import remove_temporaries
from .locations import check_format, open_location, url_of
from .plan import check_representable, legacy_candidates, order_metadata
from .progress import Progress, ProgressArg, progress_callback
from .report import ConvertReport

__all__ = ["RUNNING", "migrate"]

#: Written at the root while a migrate writes (a rerun that finds it looks for the killed
#: run's temporaries everywhere); its name is a metadata object's (``.ncz``), read by no
#: reader and never a legacy object.
RUNNING = ".nczarr-migrating"

#: The layout ``migrate(to=...)`` produces.
_CURRENT_LAYOUT = {"nczarr": LAYOUT_V2, "zarr": LAYOUT_ZARR}


def _legacy_keys(zmap: ZMap, dataset: Any, metadata: Mapping[str, bytes]) -> list[str]:
    """Existing metadata objects the new layout does not use, safe to delete.

    A standard Zarr object (``.zarray``, ``.zattrs``, ``.zgroup``) is deleted only at a
    node the new metadata describes, so an array the writer could not translate
    keeps what makes it readable; NCZarr V1 objects and stale ``.zmetadata`` always go.
    """
    nodes = {key.rpartition("/")[0] for key in metadata}
    out = []
    for key in legacy_candidates(dataset):
        if key in metadata:
            continue
        node, _, name = key.rpartition("/")
        stale = name in V1_OBJECT_NAMES or name == ".zmetadata" or node in nodes
        if stale and key in zmap:
            out.append(key)
    return out


def _check_migratable(zmap: ZMap, translated: Any, fmt: str) -> None:
    """Refuse, before anything is written, a store whose chunks ``migrate`` cannot keep.

    ``migrate`` rewrites metadata only. Zarr v3 chunks sit under other keys than
    Zarr v2 metadata names (``x/c/0`` for ``x/0``), and re-encoded arrays need new chunk
    bytes: new metadata over the old chunks would read as fill values or garbage.
    """
    url = zmap.url
    if ZARR_JSON in zmap:
        raise UnsupportedError(
            f"{url}: cannot migrate a Zarr v3 store in place: its chunk keys (x/c/0) are not "
            f"the Zarr v2 keys (x/0) {fmt} metadata names; use convert() (nczarr convert) to "
            "write a copy. Nothing was changed."
        )
    if fmt == "nczarr":
        fixed = [v.path for v in translated.dataset.root.all_variables() if v.logical == "bytes"]
        if fixed:
            raise UnsupportedError(
                f"{url}: cannot migrate in place to {fmt}: fixed-width bytes arrays "
                f"({', '.join(fixed)}) become netCDF char arrays with one more dimension, "
                "whose chunks sit under other keys; use convert() (nczarr convert) to write "
                "a copy. Nothing was changed."
            )
    if translated.reencoded:
        arrays = "; ".join(f"/{path} ({why})" for path, why in translated.reencoded.items())
        raise UnsupportedError(
            f"{url}: cannot migrate in place to {fmt}: migrate rewrites metadata only, and "
            f"these arrays need their chunks re-encoded: {arrays}. Use convert() (nczarr "
            "convert) to write a copy. Nothing was changed."
        )


def _misread_as_stored(meta: dict[str, Any], dataset: Any, fmt: str) -> bool:
    """Whether pure Zarr in the current layout still needs its metadata rewritten:
    netcdf-c's own pure Zarr (``<i1``/``>S1`` dtypes, shuffle ``elementsize`` 0) is
    what zarr-python refuses or misreads, and its ``fill_value`` 9.96921e+36 for the
    default double fill what xarray and GDAL mask in place of the default fill values
    (:func:`~nczarr.translate.zarr2_fills.exact_default_fills`), so
    ``migrate(to="zarr")`` rewrites it."""
    if fmt != "zarr":
        return False
    if rounded_default_fills(dataset):
        return True
    from ..translate.compat import needs_translation  # the reader rules: migrate only

    return needs_translation(meta, detect_format(meta))


def migrate(
    url: str | os.PathLike[str] | ZMap,
    to: str = "nczarr",
    dry_run: bool = False,
    *,
    progress: ProgressArg = None,
    storage_options: Mapping[str, Any] | None = None,
    exclude: Sequence[str] | None = None,
) -> ConvertReport:
    """Rewrite the metadata of the store at ``url`` in place, as current NCZarr or pure Zarr.

    ``to="nczarr"`` upgrades a legacy NCZarr store (layouts ``nczarr-v1``,
    ``nczarr-v2-keys``) to the layout netcdf-c 4.10 opens read-write; ``to="zarr"``
    turns NCZarr into pure Zarr (and back with ``to="nczarr"``). Only metadata
    objects are read, written or deleted: the cost does not depend on the number of
    chunks.

    A store already in the target layout keeps its metadata byte for byte (netcdf-c's
    own formatting included). Otherwise the order is: new metadata (arrays, groups,
    root last), skipping objects that already hold the right bytes, then deletion of
    the legacy objects the new layout does not use. Killed at any point, the store
    still reads (per-object mixed layouts) and a rerun finishes the job; a second run
    changes nothing.

    Parameters
    ----------
    progress
        ``progress(done, total)`` in metadata objects written or deleted; ``True``
        for a progress bar on stderr; ``False``/``None`` for none.
    storage_options
        Options for opening ``url`` (``endpoint_url``, ``profile``, ... see
        :func:`nczarr.open_map`).
    exclude
        Arrays (FQNs or bare names) the rewritten metadata may leave out: an array
        the readers skip (a type the target cannot hold, malformed metadata) is
        otherwise refused, since new metadata without it would hide it from netCDF
        readers. Its own objects and chunks stay in the store either way.

    What the new metadata cannot carry verbatim is announced as an
    :class:`~nczarr.errors.NCZarrWarning` and listed in ``report.warnings``.

    Raises
    ------
    UnsupportedError
        A Zarr v3 store (its chunk keys are not Zarr v2 keys), or arrays whose chunks
        would have to be re-encoded for ``to`` (see :mod:`nczarr.reencode`): raised
        before anything is written; :func:`convert` writes a copy instead.
    UnsupportedTypeError
        The metadata would be rewritten without an array the readers skip, which
        ``exclude`` does not name (before anything is written).
    """
    start = time.perf_counter()
    fmt = check_format(to, "target format")
    with ExitStack() as stack:
        on_object = progress_callback(progress, stack, unit="object")
        zmap = open_location(url, "r" if dry_run else "r+", storage_options, stack)
        translated, meta = _translate(zmap, fmt)
        changed, legacy = _changes(zmap, translated, meta, fmt)
        if exclude:  # a pattern that names nothing is a typo, not a silent no-op
            check_matched(None, exclude, matched_patterns(translated.dataset, None, exclude))
        if changed or legacy:  # new metadata: an array it leaves out is hidden
            check_representable(translated, None, exclude, verb="migrate")
        dataset, metadata = translated.dataset, translated.metadata
        report = ConvertReport(
            source=url_of(url),
            target=url_of(url),
            source_layout=dataset.layout,
            target_format=fmt,
            arrays=sum(1 for _ in dataset.root.all_variables()),
            warnings=tuple(translated.warnings),
            operation="migrate",
        )
        warn_all(report.warnings)
        if dry_run:
            report.dry_run = True
            report.planned_keys = tuple(changed)
            report.planned_bytes = sum(len(metadata[k]) for k in changed)
            report.deleted_keys = tuple(legacy)
        else:
            _rewrite(zmap, metadata, changed, legacy, report, on_object)
    report.seconds = time.perf_counter() - start
    return report


def _translate(zmap: ZMap, fmt: str) -> tuple[TranslatedView, dict[str, Any]]:
    """The store translated to ``fmt``, refused if ``migrate`` cannot keep its chunks,
    and its metadata objects (read once: the view and :func:`_misread_as_stored`
    share them; a file source has none)."""
    lenient: list[str] = []
    own = zmap.file_format() is not None
    meta = {} if own else load_metadata(zmap, warnings=lenient)
    # current NCZarr migrated to NCZarr keeps its metadata (:func:`_changes`): no copy
    kept = fmt == "nczarr" and bool(meta) and detect_format(meta).layout == LAYOUT_V2
    translated = TranslatedView.from_source(
        zmap,
        Target(fmt, written_copy=not kept),  # type: ignore[arg-type]
        metadata=None if own else (meta, lenient),
    )
    _check_migratable(zmap, translated, fmt)
    return translated, meta


def _changes(
    zmap: ZMap, translated: TranslatedView, meta: dict[str, Any], fmt: str
) -> tuple[list[str], list[str]]:
    """The metadata keys to write (in order, those not already holding the right
    bytes) and the legacy keys to delete."""
    metadata = translated.metadata
    order = order_metadata(metadata)
    if translated.dataset.layout == _CURRENT_LAYOUT[fmt] and not _misread_as_stored(
        meta, translated.dataset, fmt
    ):
        # Already in the target layout (the root is written last, so a killed run
        # never gets here with metadata left to write): keep the objects as they
        # are, byte for byte, and only remove what an interrupted run left behind.
        order = []
    changed = []
    for key in order:
        try:
            if zmap[key] == metadata[key]:
                continue
        except KeyError:
            pass
        changed.append(key)
    return changed, _legacy_keys(zmap, translated.dataset, metadata)


def _rewrite(
    zmap: ZMap,
    metadata: Mapping[str, bytes],
    changed: list[str],
    legacy: list[str],
    report: ConvertReport,
    on_object: Progress | None,
) -> None:
    """Write the new metadata (root last), then delete the legacy objects and the
    temporary files of a run killed mid-write (its rerun lands here).

    :data:`RUNNING` is written before the first write and removed after the last, so
    a rerun knows when a killed run may have left temporaries beside any object it
    wrote, and only then walks the whole tree (every chunk) for them; otherwise only
    the root directory, where :data:`RUNNING`'s own write may have left one, is listed.
    """
    total = len(changed) + len(legacy)
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if on_object is not None:
            on_object(done, total)

    killed = RUNNING in zmap
    if total and not killed:
        zmap[RUNNING] = b"nczarr migrate\n"
    written = write_metadata(
        zmap, ((k, bytes(metadata[k])) for k in changed), skip_equal=True, progress=step
    )
    report.deleted_keys = tuple(delete_keys(zmap, legacy, progress=step))
    report.metadata_written = tuple(written)
    if killed:
        remove_temporaries(zmap)
    else:
        zmap.remove_temporaries([""])
    if total or killed:
        del zmap[RUNNING]
    zmap.flush()
