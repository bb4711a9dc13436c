"""Values that do not fit the integer type they are packed into: refused, naming them.

xarray's CF encoding (which ``to_nczarr`` uses, as ``to_netcdf`` and ``to_zarr`` do)
packs a float variable into an integer ``dtype`` as ``round((x - add_offset) /
scale_factor)`` and casts with numpy: a value outside the integer type's range wraps
around silently (400.0 with ``scale_factor`` 0.01 into ``int16`` reads back as
-255.36). An append takes its packing from the store, so data a little outside the
store's range is the common case. Found by a differential hunt; xarray and netCDF4
write such values wrapped too, nczarr refuses them.

In-memory data is checked before anything is encoded; dask data is checked block by
block as it is computed (no second pass over the data), so a refusal comes while the
chunks are written: an append computes its data before it touches the store.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ..errors import ValueRangeError

__all__ = ["checked_packing"]


def checked_packing(ds: Any, path: str) -> Any:
    """``ds`` (one group's xarray Dataset) with every float variable encoded as an
    integer checked: in-memory data now, dask data as each block is computed.

    Raises
    ------
    ValueRangeError
        A value packs outside its integer type's range (names the variable, the value
        and the packing).
    """
    lazy = {}
    for name, var in ds.variables.items():
        check = _checker(var, f"{path.rstrip('/')}/{name}")
        if check is None:
            continue
        data = var.data
        if hasattr(data, "dask") and hasattr(data, "map_blocks"):
            lazy[name] = var.copy(data=data.map_blocks(check, dtype=data.dtype))
        else:
            check(np.asarray(data))
    if not lazy:
        return ds
    coords = {k: v for k, v in lazy.items() if k in ds.coords}
    data_vars = {k: v for k, v in lazy.items() if k not in ds.coords}
    return ds.assign_coords(coords).assign(data_vars)


def _checker(var: Any, where: str) -> Any:
    """The block check of one variable (None: not a float packed into an integer)."""
    try:
        dtype = np.dtype(var.encoding.get("dtype", var.dtype))
    except TypeError:
        return None  # xarray's encoder names a dtype it cannot use
    if dtype.kind not in "iu" or var.dtype.kind != "f":
        return None
    unsigned = var.encoding.get("_Unsigned", var.attrs.get("_Unsigned"))
    if dtype.kind == "i" and str(unsigned).lower() == "true":
        dtype = np.dtype(f"u{dtype.itemsize}")  # netCDF's unsigned convention
    scale = var.encoding.get("scale_factor", var.attrs.get("scale_factor", 1))
    offset = var.encoding.get("add_offset", var.attrs.get("add_offset", 0))
    return partial(_check, dtype=dtype, scale=scale, offset=offset, where=where)


def _check(block: np.ndarray, *, dtype: np.dtype, scale: Any, offset: Any, where: str) -> Any:
    """``block`` unchanged if each finite value packs into ``dtype`` (NaN becomes the
    fill value); else :class:`ValueRangeError`."""
    values = np.asarray(block, dtype="f8")
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return block
    info = np.iinfo(dtype)
    packed = np.around((finite - float(offset)) / float(scale))
    outside = (packed < info.min) | (packed > info.max)
    if outside.any():
        value, to = float(finite[outside][0]), float(packed[outside][0])
        raise ValueRangeError(
            f"variable {where!r}: value {value!r} packs to {to!r} "
            f"(scale_factor {scale!r}, add_offset {offset!r}), outside {dtype.name}'s "
            f"range [{info.min}, {info.max}]: it would wrap around; widen the packing or "
            "the type, or clip the data"
        )
    return block
