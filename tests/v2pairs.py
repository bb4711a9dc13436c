"""One Zarr v2 array in two memory stores, read through nczarr's codec pipeline and
through zarr-python's own: the differential pair the engine's decode tests share."""

from __future__ import annotations

from typing import Any

import numpy as np
import zarr

from nczarr import MemoryMap, ZarrStore
from nczarr.integrations.fastpipeline import fast_pipeline


def v2_pair(
    values: np.ndarray,
    chunks: tuple[int, ...],
    *,
    order: str = "C",
    compressor: Any,
    filters: Any = None,
    fill_value: Any = -7,
    write_fast: bool = False,
) -> tuple[Any, Any]:
    """``values`` written to two Zarr v2 arrays (``write_fast``: through nczarr's
    pipeline); (the first opened with nczarr's pipeline, the second with zarr's)."""
    out = []
    for use_fast in (True, False):
        store = ZarrStore(MemoryMap(mode="w"))
        zarr.create_array(
            store=store,
            shape=values.shape,
            chunks=chunks,
            dtype=values.dtype,
            zarr_format=2,
            order=order,  # type: ignore[arg-type]
            fill_value=fill_value,
            compressors=compressor,
            filters=filters,
        )
        if write_fast:
            with fast_pipeline():
                zarr.open_array(store=store, mode="r+", zarr_format=2)[...] = values
        else:
            zarr.open_array(store=store, mode="r+", zarr_format=2)[...] = values
        if use_fast:
            with fast_pipeline():
                out.append(zarr.open_array(store=store, mode="r", zarr_format=2))
        else:
            out.append(zarr.open_array(store=store, mode="r", zarr_format=2))
    return out[0], out[1]
