"""``open_zarr``: the shortcut from a dataset URL to a zarr-python group.

In read mode a store holding netcdf-c metadata (which zarr-python misreads) is opened
through the translated view (:mod:`nczarr.readthrough`). Kept apart from
:mod:`~nczarr.integrations.zarr_store` so that the store adapter does not depend on
the view, which itself uses the adapter (to read sharded arrays it re-encodes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..maps.base import ZMap
from .zarr_store import ZarrStore

if TYPE_CHECKING:
    import zarr

__all__ = ["open_zarr"]


def open_zarr(
    url: str | ZMap,
    mode: str = "r",
    *,
    storage_options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> zarr.Group:
    """Open the Zarr group at a dataset URL through nczarr's maps.

    Any URL :func:`~nczarr.maps.open.open_map` accepts (a directory, a ``.zip``,
    ``s3://...``, ``file://...#mode=nczarr,file``, ``zip::s3://...``), or an open
    map, opens as a zarr-python group:
    ``zarr.open_group(store=ZarrStore(open_map(url, mode)), mode=mode, **kwargs)``.

    In read mode a store with netcdf-c metadata (NCZarr of any generation, or pure
    Zarr that netcdf-c wrote: see
    :func:`~nczarr.translate.compat.needs_translation`) is read through the
    translated view (:func:`nczarr.view` with ``mode="zarr"``), so zarr-python gets
    the numbers and text netCDF4 reads (it would otherwise decode netcdf-c's
    ``{"id": "shuffle", "elementsize": 0}`` to wrong numbers and refuse char
    arrays); what the view could not carry is announced as
    :class:`~nczarr.errors.NCZarrWarning`. Stores written by zarr-python or xarray
    are opened as they are (Zarr v3 included). Writes always go to the store itself.

    The group is a :class:`~nczarr.integrations.fastgroup.FastGroup` (a
    ``zarr.Group``): its arrays use nczarr's codec pipeline, which reads a selection's
    Zarr v2 chunks with one ``getitems`` on the map and decodes them in batches
    (:mod:`nczarr.integrations.fastpipeline`); values are zarr-python's.

    Parameters
    ----------
    url
        Where the dataset lives, or an open map (left open; its own mode decides
        what can be written).
    mode
        ``"r"``, ``"r+"``, ``"a"``, ``"w"`` or ``"w-"`` (zarr/h5py meaning), used for
        both the map and the group.
    storage_options
        Options for opening ``url`` (see :func:`~nczarr.maps.open.open_map`).
    **kwargs
        Passed to :func:`zarr.open_group` (``zarr_format``, ``path``, ...).
    """
    import zarr

    from ..maps.open import open_map

    if isinstance(url, ZMap):
        if storage_options:
            raise TypeError(
                f"open_zarr got an open map {url!r}: storage options apply to URLs only, "
                f"got {sorted(storage_options)}"
            )
        zmap, owned = url, False
    else:
        zmap, owned = open_map(url, mode, storage_options=storage_options), True
    if mode == "r":
        zmap = _translated_if_needed(zmap, owned)
    from .fastgroup import FastGroup

    # its arrays read and write through nczarr's codec pipeline (batched chunk reads)
    return FastGroup(zarr.open_group(store=ZarrStore(zmap), mode=mode, **kwargs)._async_group)


def _translated_if_needed(zmap: ZMap, owned: bool = True) -> ZMap:
    """``zmap``, or a translated view of it (owning it when ``owned``) when it holds
    netcdf-c metadata."""
    from ..errors import MetadataError, warn_all
    from ..load import STALE_CONSOLIDATED, load_metadata
    from ..maps.pending import pending_view
    from ..translate.compat import needs_translation
    from ..translate.detect import detect_format

    if zmap.file_format() is not None:  # a .nc file: always through the view
        return _view(zmap, owned)
    lenient: list[str] = []
    try:
        meta = load_metadata(zmap, warnings=lenient)
        translate = needs_translation(meta, detect_format(meta))
    except MetadataError:
        return zmap  # not a store nczarr reads: let zarr-python say what is wrong
    if not translate:
        # zarr-python reads it as stored; say what it will misread (a stale .zmetadata)
        warn_all([m for m in lenient if STALE_CONSOLIDATED in m])
        # an append killed among its metadata writes: the metadata it was writing
        return pending_view(zmap, owns_source=owned)
    return _view(zmap, owned, metadata=(meta, lenient))  # every object is read once


def _view(zmap: ZMap, owned: bool, **options: Any) -> ZMap:
    """The translated view of ``zmap`` as pure Zarr, its warnings announced; ``zmap``
    closed (when ``owned``) if the view cannot be built."""
    from ..errors import warn_all
    from ..readthrough import TranslatedView
    from ..translate.target import Target

    try:
        view = TranslatedView.from_source(zmap, Target("zarr"), owns_source=owned, **options)
    except BaseException:
        if owned:
            zmap.close()
        raise
    warn_all(view.warnings, stacklevel=5)
    return view
