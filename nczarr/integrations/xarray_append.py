"""``to_nczarr(ds, url, mode="a", append_dim=...)``: append a dataset to an NCZarr store.

The store decides how the new values are stored, not the dataset: each variable's
type, fill value, CF packing (``scale_factor``/``add_offset``, ``_Unsigned``), time
units and calendar, chunk shape and compression are read from the store and given to
the dataset as its encoding (a ``missing_value`` as an attribute), with the store's
attribute types. The dataset is then written as NCZarr into memory (every
check of ``to_nczarr`` runs there) and appended to the store by the engine of
``nczarr.convert(src, dst, append_dim=...)`` (:mod:`nczarr.conversion.growappend`, lent
through :mod:`nczarr.hooks`): chunks that line up are copied as they are, only the
store's partial last chunk is assembled again, the metadata is written last, and
every refusal (a variable missing, a variable without the dimension whose values
differ, an attribute that says what values mean and differs) comes before anything is
written. The store's global and variable attributes are kept (the dataset's differing
descriptive attributes are ignored, with a warning). The new part is encoded in memory
first: appending holds the encoded new data (not the store) in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import hooks
from ..errors import InvalidModeError, NCZarrError, UnsupportedError
from ..maps.base import ZMap
from ..maps.memory import MemoryMap
from ..translate.model import Dataset, Variable
from .xarray_backend import attribute_value  # a numpy value of the store's type

__all__ = ["append_dataset", "store_encoding"]

#: Attributes that become encoding entries (xarray's CF encoders read them there).
_ENCODED_ATTRIBUTES = ("scale_factor", "add_offset", "_Unsigned", "units", "calendar")

#: Attributes xarray's decoding moves into the encoding (which the store's replaces)
#: but refuses to encode beside a different ``_FillValue``: given back as attributes of
#: the store's type, which xarray writes as they are.
_KEPT_ATTRIBUTES = ("missing_value",)


def _single(value: Any) -> Any:
    return value[0] if isinstance(value, tuple) and len(value) == 1 else value


def store_encoding(var: Variable) -> dict[str, Any]:
    """The ``to_nczarr`` encoding that stores values as the store stores ``var``."""
    import numpy as np

    from ..translate.dtypes import nc_to_zarr_dtype

    enc: dict[str, Any] = {"chunksizes": tuple(var.chunks)}
    if var.type == "char" and var.dimensions:  # S<n> bytes: xarray adds the char axis
        enc["char_dim_name"] = var.dimensions[-1].rpartition("/")[2]
    if var.type not in ("char", "string"):
        enc["dtype"] = np.dtype(nc_to_zarr_dtype(var.type, var.endian, nczarr=False))
        fill = var.attributes.get("_FillValue")
        enc["_FillValue"] = _single(fill.value) if fill is not None else None
    for name in _ENCODED_ATTRIBUTES:
        if name in var.attributes:
            enc[name] = attribute_value(var.attributes[name])
    if "since" in str(enc.get("units", "")) and "calendar" not in enc:
        enc["calendar"] = "standard"  # CF's default, what the store means by none
    compressor = dict(var.compressor) if var.compressor else None
    if compressor is not None and compressor.get("id") == "zlib":
        enc["zlib"] = True
        enc["complevel"] = int(compressor.get("level", 4))
        enc["shuffle"] = any(f.get("id") == "shuffle" for f in var.filters)
    elif compressor is not None:
        enc["compressor"] = compressor
    return enc


def _encodings(obj: Any, model: Dataset) -> dict[str, dict[str, Any]]:
    """Per variable of ``obj``: the store's encoding (refusing variables it lacks)."""
    missing = [str(n) for n in obj.variables if f"/{n}" not in _paths(model)]
    if missing:
        raise InvalidModeError(
            f"cannot append: variable(s) {', '.join(missing)} are not in the store "
            "(nothing was written)"
        )
    out = {}
    for name in obj.variables:
        var = model.find_variable(f"/{name}")
        enc = store_encoding(var)
        for attr in _ENCODED_ATTRIBUTES:
            if attr in obj[name].attrs:  # already encoded by the caller: xarray refuses both
                enc.pop(attr, None)
        if obj[name].dtype.kind not in "mM":  # units of plain numbers are attributes
            enc.pop("units", None)
            enc.pop("calendar", None)
        out[str(name)] = enc
    return out


def _paths(model: Dataset) -> set[str]:
    return {v.path for v in model.root.all_variables()}


def append_dataset(
    obj: Any,
    url: str | os.PathLike[str] | ZMap,
    *,
    append_dim: str,
    storage_options: Mapping[str, Any] | None,
    encoding: Mapping[str, Mapping[str, Any]] | None,
    unlimited_dims: Iterable[str] | None,
    write: Callable[..., None],
) -> Any:
    """Append ``obj`` to the NCZarr store at ``url`` along ``append_dim`` (see the
    module doc); ``write`` is ``to_nczarr`` (for the in-memory part). Returns the
    engine's report."""
    import xarray as xr

    from ..load import read

    if isinstance(obj, xr.DataTree):
        raise UnsupportedError("to_nczarr(mode='a') appends a Dataset, not a DataTree")
    if encoding:
        raise InvalidModeError(
            "to_nczarr(mode='a') takes the encodings from the store: pass no encoding="
        )
    if append_dim not in obj.dims:
        raise InvalidModeError(f"cannot append: the dataset has no dimension {append_dim!r}")
    model = read(url) if isinstance(url, ZMap) else read(url, storage_options=storage_options)
    obj = obj.copy(deep=False)
    for name, enc in _encodings(obj, model).items():
        obj[name].encoding = enc
        var = model.find_variable(f"/{name}")
        kept = {
            a: attribute_value(var.attributes[a]) for a in _KEPT_ATTRIBUTES if a in var.attributes
        }
        if kept:
            obj[name].attrs = {**kept, **obj[name].attrs}
    unlimited = list(unlimited_dims or ()) or [
        d.name for d in model.root.dimensions.values() if d.unlimited and d.name in obj.dims
    ]
    part = MemoryMap()
    write(obj, part, mode="w-", unlimited_dims=unlimited)
    if hooks.appender is None:  # pragma: no cover - nczarr/__init__ installs it
        raise RuntimeError("no append engine installed (nczarr.hooks.appender)")
    try:
        return hooks.appender(
            part,
            url,
            append_dim=append_dim,
            target_options=storage_options,
            combine_attrs="override",
        )
    except NCZarrError as exc:  # the staged copy's memory:// name means nothing to a user
        if part.url not in str(exc):
            raise
        raise type(exc)(str(exc).replace(part.url, "the dataset")) from exc
