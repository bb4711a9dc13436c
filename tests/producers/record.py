"""How a producer's reading is written down: JSON records the tests compare against.

Runs inside the side environments (old numpy, zarr 2.18, GDAL's Python...), so it
uses only the standard library and numpy. An array is recorded exactly: its numpy
dtype string, its shape and its bytes in base64 (NaN, NaT, byte strings and
fixed-width unicode all survive); object arrays (variable-length strings) as a list.
Attribute values are recorded as JSON, numpy scalars and arrays becoming numbers and
lists, with ``{"$type": ...}`` beside them so that a float32 ``scale_factor`` and a
float64 one are told apart.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np

__all__ = ["encode_array", "decode_array", "encode_value", "dump"]


def encode_array(value: Any) -> dict[str, Any]:
    """An array (or masked array) as ``{"dtype", "shape", "b64" | "items", "mask"?}``."""
    mask = None
    if isinstance(value, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(value)
        value = value.data
    array = np.asarray(value)
    out: dict[str, Any] = {"dtype": array.dtype.str, "shape": list(array.shape)}
    if array.dtype.kind in "OT":  # objects, numpy 2 StringDType
        out["dtype"] = "|O"
        out["items"] = [_jsonable(v) for v in array.reshape(-1).tolist()]
    else:
        out["b64"] = base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")
        if array.dtype.names:
            out["descr"] = [list(d) for d in array.dtype.descr]
    if mask is not None:
        out["mask"] = [bool(m) for m in mask.reshape(-1)]
    return out


def decode_array(record: dict[str, Any]) -> np.ndarray:
    """The array :func:`encode_array` recorded (without its mask)."""
    shape = tuple(record["shape"])
    if "items" in record:
        out = np.empty(len(record["items"]), dtype=object)
        out[:] = record["items"]
        return out.reshape(shape)
    dtype = np.dtype([tuple(d) for d in record["descr"]]) if "descr" in record else record["dtype"]
    raw = base64.b64decode(record["b64"])
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return {"$str": str(value)}  # cftime dates, pandas objects


def encode_value(value: Any) -> Any:
    """An attribute value as JSON, typed when it is a numpy scalar or array."""
    if isinstance(value, np.ndarray):
        return {"$type": value.dtype.str, "value": _jsonable(value.tolist())}
    if isinstance(value, np.generic):
        return {"$type": value.dtype.str, "value": _jsonable(value.item())}
    return _jsonable(value)


def dump(record: dict[str, Any], path: str) -> None:
    """Write ``record`` as sorted, indented JSON."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1, sort_keys=True, allow_nan=False)
        handle.write("\n")
