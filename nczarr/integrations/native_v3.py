"""Sharded Zarr v3 arrays the xarray engine reads as Zarr v3: zarr-python over the source.

Why
---
The engine's model (dimensions, typed attributes, what is left out) comes from the
translated view (:mod:`nczarr.readthrough`), whose metadata is Zarr v2. A sharded Zarr
v3 array has no Zarr v2 form, so through the view every inner chunk was re-encoded
(zarr-python read the shard on a private event loop, numcodecs encoded the chunk again,
zarr-python decoded it once more): 6x xarray's zarr engine's CPU time. zarr-python
reads Zarr v3 shards itself, so such an array is opened by zarr-python from the
source's own ``zarr.json`` over the source map: chunk keys, codecs and shards as stored
(the shards go to zarr-python's sharding codec, which reads the shard index and the
inner chunks asked for). Nothing is re-encoded.

The other arrays of a Zarr v3 source need no re-encoding: the view passes their chunk
objects through verbatim (only the key is mapped, ``c/0/1`` shown as ``0.1``; their
codecs have a byte-identical Zarr v2 form), and the engine's batched reads
(:mod:`.fastpipeline`) decode them at ~3x the throughput of zarr-python's own v3
pipeline (``benchmarks/engine_pure_zarr.py``, docs/performance.md), so they stay there.

What the translation changes for netCDF semantics is kept on the v3 metadata: the fill
value is the one the view shows (a ``_FillValue`` attribute replacing the Zarr
``fill_value``), so chunks never written read as they did through the view. An array the
view would re-encode for another reason than its shards, or whose metadata zarr-python
cannot take as stored, is read through the view as before.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError, warn_all
from ..keys import join_key
from ..maps.base import ZMap
from ..maps.open import open_source
from ..readthrough import TranslatedView
from ..records import record, replace
from ..translate.conventions import ZARR_JSON, ZARRAY
from ..translate.target import Target
from ..translate.write_common import control_character_attribute_warnings
from ..translate.zarr2_fills import masked_fill_warnings
from .zarr_store import ZarrStore

__all__ = ["NativeArray", "engine_view", "native_arrays", "open_native"]


@record
class NativeArray:
    """One array read as Zarr v3 from the source: where it is there, and its metadata
    (a zarr-python ``ArrayV3Metadata``, with the view's fill value)."""

    path: str
    metadata: Any


def engine_view(
    src: str | os.PathLike[str] | ZMap, storage_options: Mapping[str, Any] | None = None
) -> tuple[TranslatedView, dict[str, NativeArray]]:
    """The Zarr v2 translated view of ``src`` (as :func:`nczarr.view` builds it) and the
    sharded arrays (key prefixes as shown) zarr-python reads as Zarr v3 from the source.

    The view's warnings are announced, except two kinds that do not hold for the
    engine: a sharded array read as Zarr v3 is not re-encoded (no "chunks re-encoded"
    warning for it), and the engine masks by the netCDF attributes, not by a kept Zarr
    v2 ``fill_value`` (no "xarray masks ..." warning, which is about xarray's zarr
    engine on the view).
    The map is closed with the view when opened here from a URL.
    """
    zmap, owned = open_source(src, storage_options, caller="view")
    try:
        meta, lenient = _metadata(zmap)
        view = TranslatedView.from_source(
            zmap,
            Target("zarr"),
            owns_source=owned,
            metadata=(meta, lenient) if meta is not None else None,
        )
    except BaseException:
        if owned:
            zmap.close()
        raise
    native = native_arrays(view, meta or {})
    recoded = view.translation.reencoded
    skip = {recoded[path].message for path in native if path in recoded}
    skip.update(masked_fill_warnings(view.dataset))
    # about JSON a copy would write, not about what the engine reads
    skip.update(control_character_attribute_warnings(view.dataset))
    warn_all([w for w in view.warnings if w not in skip], stacklevel=4)
    return view, native


def _metadata(zmap: ZMap) -> tuple[dict[str, Any] | None, list[str]]:
    """The source's parsed metadata objects (None: a netCDF file, or not loadable here,
    so that the view reports the error itself) and the lenient reader's warnings."""
    from ..load import load_metadata

    lenient: list[str] = []
    if zmap.file_format() is not None:
        return None, lenient
    try:
        return load_metadata(zmap, warnings=lenient), lenient
    except MetadataError:
        return None, []


def native_arrays(view: TranslatedView, meta: Mapping[str, Any]) -> dict[str, NativeArray]:
    """The sharded arrays of ``view`` that zarr-python reads as Zarr v3 from its source.

    ``meta``: the source's parsed metadata objects (:func:`nczarr.load.load_metadata`).
    An array qualifies when the source holds it as a Zarr v3 array, the view would
    re-encode it for its shards and for nothing else, and zarr-python takes its
    ``zarr.json`` (with the view's fill value).
    """
    translation = view.translation
    layout = translation.layout
    shown: Mapping[str, bytes] | None = None  # the view's metadata, copied when needed
    out: dict[str, NativeArray] = {}
    bare = _bare_root(meta, layout.arrays)
    for path in layout.arrays:
        source_path = layout.source_prefix.get(path, "" if bare else path)
        doc = meta.get(join_key(source_path, ZARR_JSON))
        if not isinstance(doc, dict) or doc.get("zarr_format") != 3:
            continue  # (the common case: no copy of the view's metadata, no .zarray text)
        item = translation.reencoded.get(path)
        if item is None:
            continue  # its chunks pass the view verbatim, to the batched v2 reads
        if item.target != replace(item.source, shards=None):
            continue  # re-encoded for more than its shards: the view's values
        if shown is None:
            shown = view.metadata
        zarray = shown.get(join_key(path, ZARRAY))
        if zarray is None:
            continue
        metadata = _v3_metadata(doc, zarray)
        if metadata is not None:
            out[path] = NativeArray(source_path, metadata)
    return out


def _bare_root(meta: Mapping[str, Any], arrays: tuple[str, ...]) -> bool:
    """Whether the source's root is itself a Zarr v3 array (shown as the one variable)."""
    root = meta.get(ZARR_JSON)
    return len(arrays) == 1 and isinstance(root, dict) and root.get("node_type") == "array"


def _v3_metadata(doc: dict[str, Any], zarray: bytes) -> Any:
    """zarr-python's metadata of the v3 array ``doc`` with the fill value of the view's
    ``.zarray`` (None when zarr-python cannot take it: the view reads that array)."""
    from zarr.core.dtype import get_data_type_from_json
    from zarr.core.metadata.v2 import ArrayV2Metadata
    from zarr.core.metadata.v3 import ArrayV3Metadata

    try:
        with warnings.catch_warnings():  # zarr-python's notes on unstable data types
            warnings.simplefilter("ignore")
            dtype = get_data_type_from_json(doc["data_type"], zarr_format=3)
            shown = ArrayV2Metadata.from_dict({**json.loads(zarray), "attributes": {}})
            fill = shown.fill_value
            fill = dtype.default_scalar() if fill is None else dtype.cast_scalar(fill)
            return ArrayV3Metadata.from_dict(
                {**doc, "fill_value": dtype.to_json_scalar(fill, zarr_format=3)}
            )
    except Exception:  # anything zarr-python refuses: that array is read through the view
        return None


def open_native(store: ZarrStore, array: NativeArray) -> Any:
    """The ``zarr.Array`` of ``array`` over ``store`` (the source map's store), built from
    the metadata already parsed (no read through zarr's event loop); its basic
    selections are read in the calling thread (:mod:`.shardread`) when zarr-python's
    codecs for it decode synchronously."""
    from zarr import Array
    from zarr.core.array import AsyncArray
    from zarr.storage import StorePath

    from .shardread import ShardedArray, shard_plan

    store._open_sync()
    opened = Array(AsyncArray(metadata=array.metadata, store_path=StorePath(store, array.path)))
    plan = shard_plan(opened, store.zmap, array.path)
    # basic selections (all of ``.load()``, every dask chunk) read in the calling thread
    return opened if plan is None else ShardedArray.over(opened, plan)
