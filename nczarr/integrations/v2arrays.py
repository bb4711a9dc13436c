"""zarr-python Zarr v2 arrays built from metadata documents the caller already holds.

The engine holds every array's ``.zarray`` and ``.zattrs`` as documents (the translated
view's); opening each through zarr would read and parse them again through zarr's
event loop thread. Apart from :mod:`nczarr.integrations.fastpipeline` (the chunk
reads and writes), which the arrays built here use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from functools import lru_cache
from typing import Any

from .fastpipeline import fast_pipeline
from .zarr_store import ZarrStore

__all__ = ["open_v2_array", "v2_metadata"]


def open_v2_array(
    store: ZarrStore, path: str, zarray: Mapping[str, Any], zattrs: Mapping[str, Any] | None
) -> Any:
    """``zarr.open_array(store=store, path=path, mode="r", zarr_format=2)`` with this
    pipeline, built from metadata the caller already holds (the ``.zarray`` and
    ``.zattrs`` documents, e.g. a translated view's): the same ``zarr.Array``, without
    the two metadata reads through zarr's event loop thread (a hop each way per array,
    ~4x the CPU of libnetcdf's whole open for a few arrays) and without parsing JSON.

    It uses zarr-python's public ``zarr.Array.from_dict`` with the metadata of
    :func:`v2_metadata`; a zarr without it gets ``zarr.open_array``, which reads the
    same metadata through the store (slower, same array)."""
    import zarr
    from zarr.storage import StorePath

    from_dict = getattr(zarr.Array, "from_dict", None)
    with fast_pipeline():
        if from_dict is None:
            return zarr.open_array(store=store, path=path, mode="r", zarr_format=2)
        store._open_sync()
        return from_dict(StorePath(store, path), v2_metadata(zarray, zattrs))


def v2_metadata(zarray: Mapping[str, Any], zattrs: Mapping[str, Any] | None) -> Any:
    """zarr-python's ``ArrayV2Metadata.from_dict`` of ``.zarray`` and ``.zattrs``
    documents, with the data type resolved once per distinct ``dtype`` (and object
    codec): zarr's registry tries every data type it knows in turn, which was the
    largest part of opening an array. The rest is ``from_dict``'s own steps (fill
    value decoded by the data type, unknown keys left out, the constructor's checks);
    anything unusual (a structured dtype, an empty filter list, no ``zarr_format`` 2)
    goes to ``from_dict`` itself."""
    from zarr.core.metadata.v2 import ArrayV2Metadata, get_object_codec_id

    data = {**zarray, "attributes": dict(zattrs) if zattrs is not None else {}}
    name, filters = data.get("dtype"), data.get("filters")
    if not isinstance(name, str) or data.get("zarr_format") != 2 or filters == []:
        return ArrayV2Metadata.from_dict(data)
    compressor = data.get("compressor")
    codecs = (*filters, compressor) if filters is not None else (compressor,)
    dtype = _v2_dtype(name, get_object_codec_id(codecs))
    kwargs = {k: v for k, v in data.items() if k in _v2_fields()}
    kwargs["dtype"] = dtype
    if kwargs.get("fill_value") is not None:
        kwargs["fill_value"] = dtype.from_json_scalar(kwargs["fill_value"], zarr_format=2)
    return ArrayV2Metadata(**kwargs)


@lru_cache(maxsize=256)
def _v2_dtype(name: str, object_codec_id: str | None) -> Any:
    """zarr's data type (an immutable ``ZDType``) for a Zarr v2 ``dtype`` string."""
    from zarr.core.dtype import get_data_type_from_json

    spec = {"name": name, "object_codec_id": object_codec_id}
    return get_data_type_from_json(spec, zarr_format=2)


@lru_cache(maxsize=1)
def _v2_fields() -> frozenset[str]:
    """The keys ``ArrayV2Metadata.from_dict`` keeps (the constructor's arguments)."""
    from zarr.core.metadata.v2 import ArrayV2Metadata

    return frozenset({f.name for f in fields(ArrayV2Metadata)} - {"zarr_format"})
