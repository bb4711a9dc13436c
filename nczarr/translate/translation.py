"""``Translation``: what a store looks like in another format, decided without I/O.

A source read into the model (:func:`nczarr.load.read_with_chunk_keys`) and a
:class:`~nczarr.translate.target.Target` go in; out come the translated metadata
objects, the chunk key mapping (:class:`ChunkLayout`: Zarr v3 ``c/0/1`` keys shown as
``0.1``, a bare root array's chunks, shards, NCZarr char arrays' extra axis), the
re-encoding plan (:func:`~nczarr.translate.recode_plan.plan_reencoding`) and the warnings. The
translated view (:class:`nczarr.readthrough.TranslatedView`) is a thin map over one,
and ``convert``, ``migrate`` and ``references`` read their plan from it.

Built in two pure steps: :func:`draft` selects the arrays (``include``/``exclude``,
so that the writer runs once, on what is kept) and plans the re-encoding; the
widths of variable-length strings shown as fixed-width NCZarr strings are the only
facts that need the chunks, so a draft names them (:attr:`Translation.to_measure`),
the view measures them, and :func:`finish` writes the metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..records import field, record, replace
from .chunk_layout import (
    ChunkLayout,
    KeyEncoding,
    TrailingAxis,
    chunk_coords,
    chunk_layout,
)
from .model import Dataset
from .netcdf_forms import bytes_as_text
from .recode_plan import Reencoding, plan_reencoding, with_maxstrlen
from .select import dropped_warning, select_dataset
from .target import Target
from .writer import write_target
from .zarr3_fills import nczarr_default_warnings

if TYPE_CHECKING:
    from .read_zarr3 import ChunkKeys

__all__ = [
    "ChunkLayout",
    "KeyEncoding",
    "TrailingAxis",
    "Translation",
    "chunk_coords",
    "chunk_layout",
    "draft",
    "finish",
]


@record
class Translation:
    """A source translated to a target: everything a view shows but the chunk bytes.

    Attributes
    ----------
    target
        The target, ``consolidated`` decided (:meth:`Target.resolved`).
    read
        The source as read, before selection.
    dataset
        The model as shown (selected; re-encoded arrays with the target's codecs).
    layout
        Where the shown chunks are in the source.
    reencoded
        Arrays (key prefixes) whose chunks are re-encoded, and how.
    metadata
        The metadata objects the writer produced (empty in a draft).
    warnings
        The reader's, the re-encoding's, the writer's and the selection's.
    left_out
        Paths (``/g/v``) of arrays the writer could not describe: not shown.
    widths
        Measured longest strings of variable-length string arrays shown fixed-width.
    selection
        ``(include, exclude)`` as given.
    source_keys, bare_root
        What :func:`draft` was given (the reader's Zarr v3 key encodings, whether the
        source's root is a bare array), so that another selection needs no new read.
    complete
        False for a draft (no metadata written yet).
    """

    target: Target
    read: Dataset
    dataset: Dataset
    layout: ChunkLayout
    reencoded: Mapping[str, Reencoding] = field(default_factory=dict)
    metadata: Mapping[str, bytes] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    widths: Mapping[str, int] = field(default_factory=dict)
    selection: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    source_keys: Mapping[str, ChunkKeys] = field(default_factory=dict)
    bare_root: bool = False
    complete: bool = False

    @property
    def to_measure(self) -> tuple[str, ...]:
        """Arrays whose variable-length strings become fixed-width (NCZarr strings):
        the longest string of their chunks sets the width (not yet measured)."""
        return tuple(
            path
            for path, item in self.reencoded.items()
            if item.source.text_storage == "vlen-utf8"
            and item.target.text_storage is None
            and path not in self.widths
        )


def draft(
    read: Dataset,
    chunk_keys: Mapping[str, ChunkKeys],
    target: Target,
    *,
    bare_root: bool = False,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    strict: bool = True,
) -> Translation:
    """The translation of ``read`` before its metadata is written: the selection, the
    chunk layout and the re-encoding plan (see :func:`finish`; whether shards are kept:
    :attr:`Target.keep_shards <nczarr.translate.target.Target>`). ``strict`` false: a
    pattern may match nothing in ``read`` (a combine's source; the combine checks the
    patterns against all its sources, :func:`~nczarr.translate.select.select_dataset`).

    Raises
    ------
    InvalidModeError
        An ``include``/``exclude`` pattern matches nothing (and ``strict``).
    """
    selected = select_dataset(read, include, exclude, strict=strict)
    planned, reencoded = plan_reencoding(
        selected, target.format, target.zarr_format, assembled=not target.keep_shards
    )
    layout = chunk_layout(read, selected, chunk_keys, bare_root=bare_root)
    return Translation(
        target=target,
        read=read,
        dataset=planned,
        layout=replace(
            layout,  # shards kept as shards are shown (and copied) as whole objects
            shards={a: s for a, s in layout.shards.items() if a in reencoded},
            recoded=frozenset(reencoded),
            complete={
                path: (item.source.shape, item.source.chunks)
                for path, item in reencoded.items()
                if item.absent_fill is not None
            },
        ),
        reencoded=reencoded,
        selection=(tuple(include or ()), tuple(exclude or ())),
        source_keys=chunk_keys,
        bare_root=bare_root,
    )


def _with_widths(
    dataset: Dataset, reencoded: Mapping[str, Reencoding], widths: Mapping[str, int]
) -> tuple[Dataset, dict[str, Reencoding]]:
    """The dataset and re-encodings with the measured string widths."""
    if not widths:
        return dataset, dict(reencoded)
    planned = with_maxstrlen(dataset, widths)
    return planned, {
        path: Reencoding(
            item.source,
            planned.find_variable(item.target.path),
            item.reason.replace(
                f"|S{item.target.maxstrlen}", f"|S{widths.get(path, item.target.maxstrlen)}"
            ),
        )
        for path, item in reencoded.items()
    }


def finish(translation: Translation, widths: Mapping[str, int] | None = None) -> Translation:
    """The complete translation: string widths applied, metadata written (once)."""
    widths = {**translation.widths, **(widths or {})}
    dataset, reencoded = _with_widths(translation.dataset, translation.reencoded, widths)
    layout = translation.layout
    target = translation.target
    if target.format == "nczarr":  # re-encoded fixed bytes stay netCDF strings (same keys)
        kept = {f"/{p}" for p in reencoded}
        dataset, as_text = bytes_as_text(dataset, kept)
        if target.stored:  # netCDF4 reads copies, zarr-python and xarray read views
            as_text += nczarr_default_warnings(dataset, translation.read.unmasked_defaults)
        dataset = replace(dataset, warnings=(*dataset.warnings, *as_text))
    written = write_target(dataset, target)
    if target.format == "nczarr":  # fixed bytes become char arrays with one more axis
        keys = dict(layout.keys)
        for var in dataset.root.all_variables():
            path = var.path.strip("/")
            if var.logical == "bytes" and path not in reencoded:
                # a Zarr v3 array's chunk keys (ChunkKeys) are mapped first
                keys[path] = TrailingAxis(var.dimension_separator, len(var.shape), keys.get(path))
        layout = replace(layout, keys=keys)
    left_out = set(written.skipped)  # arrays the writer could not describe
    dropped = dropped_warning(translation.read, dataset)
    return replace(
        translation,
        dataset=dataset,
        layout=layout.only([a for a in layout.arrays if a not in left_out]),
        reencoded=reencoded,
        metadata=written.metadata,
        warnings=(
            *dataset.warnings,
            *(r.message for r in reencoded.values()),
            *written.warnings,
            *dropped,
        ),
        left_out=tuple(sorted("/" + a for a in left_out)),
        widths=widths,
        complete=True,
    )
