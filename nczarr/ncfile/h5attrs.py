"""netCDF types and attributes of HDF5 objects read by h5py, as netcdf-c shows them.

h5py is imported lazily (:func:`~nczarr.ncfile.h5nodes.import_h5py`): reading a
netCDF-3 file, or a netCDF-4 file the numpy-free reader reads, needs no h5py.
netcdf-c's bookkeeping attributes (:data:`~nczarr.ncfile.h5nodes.HIDDEN_ATTRIBUTES`)
are not user attributes; names come in creation order, as netcdf-c lists them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MetadataError
from ..translate.conventions import DTYPE_TO_NC
from ..translate.model import Attribute
from .h5nodes import HIDDEN_ATTRIBUTES
from .values import text

__all__ = ["attributes", "nc_type", "ordered_links"]


def ordered_links(node: Any, h5py: Any) -> list[str]:
    """Link names of a group in creation order (netcdf-c tracks it), else by name."""
    names: list[str] = []
    try:
        node.id.links.iterate(
            lambda n: names.append(n.decode("utf-8")), idx_type=h5py.h5.INDEX_CRT_ORDER
        )
    except Exception:  # creation order not tracked: name order
        return list(node.keys())
    return names


def _attr_names(obj: Any, h5py: Any) -> list[str]:
    names: list[str] = []
    try:
        h5py.h5a.iterate(
            obj.id, lambda n: names.append(n.decode("utf-8")), index_type=h5py.h5.INDEX_CRT_ORDER
        )
    except Exception:
        return list(obj.attrs.keys())
    return names


def nc_type(dtype: np.dtype, h5py: Any) -> str | None:
    """The netCDF type of an HDF5 dtype, or None for a user-defined type."""
    info = h5py.check_string_dtype(dtype)
    if info is not None:
        return "string" if info.length is None else ("char" if info.length == 1 else None)
    if h5py.check_enum_dtype(dtype) is not None or dtype.names or dtype.kind in "OV":
        return None
    return DTYPE_TO_NC.get(f"{dtype.kind}{dtype.itemsize}")


def _char_text(attr_id: Any, value: Any, h5py: Any) -> str:
    """A char attribute's text, every byte netcdf-c stores (``nc_get_att_text``).

    netcdf-c writes a char attribute as one fixed-length HDF5 string of exactly its
    length, marked null-terminated; h5py reads such a string up to its first NUL, so
    ``"ab\\0cd"`` read as ``"ab"``, silently. The stored bytes are read unconverted
    instead: a NUL inside the text is kept (ncdump prints ``"ab\\000cd"``, netCDF4
    ``"abcd"``; the writers warn that netcdf-c reads it back from JSON as ``"u0000"``),
    trailing NULs (a C terminator, or a null-padded string's padding) are left out, as
    ncdump and netCDF4 leave them out. A variable-length string stays h5py's.
    """
    file_type = attr_id.get_type()
    if not isinstance(file_type, h5py.h5t.TypeStringID) or file_type.is_variable_str():
        return "".join(text(v) for v in np.asarray(value).reshape(-1))
    size = file_type.get_size()
    raw = np.zeros(attr_id.shape, dtype=f"V{size}")
    attr_id.read(raw, mtype=file_type)  # the file's own type: no conversion, no truncation
    data = raw.tobytes()
    items = [data[i : i + size] for i in range(0, len(data), size)]
    return "".join(text(item.rstrip(b"\x00")) for item in items)


def _attribute(obj: Any, name: str, h5py: Any, what: str) -> Attribute:
    """One attribute in the model's form; a MetadataError for a user-defined type."""
    attr_id = obj.attrs.get_id(name)
    dtype = attr_id.dtype
    kind = nc_type(dtype, h5py)
    if kind is None and h5py.check_string_dtype(dtype) is not None:
        kind = "char"  # netcdf-c writes a char attribute as one fixed-length string
    if kind is None:
        raise MetadataError(f"{what}: attribute {name!r} has a user-defined type ({dtype})")
    value = obj.attrs[name]
    if isinstance(value, h5py.Empty):
        return Attribute(name, kind, "" if kind == "char" else ())
    if kind == "char":
        return Attribute(name, "char", _char_text(attr_id, value, h5py))
    if kind == "string":
        arr = np.asarray(value, dtype=object).reshape(-1)
        return Attribute(name, "string", tuple(text(v) for v in arr))
    arr = np.asarray(value).reshape(-1)
    return Attribute(name, kind, tuple(v.item() for v in arr))


def attributes(obj: Any, h5py: Any, what: str) -> dict[str, Attribute]:
    """The user attributes of a group or dataset, in creation order."""
    return {
        name: _attribute(obj, name, h5py, what)
        for name in _attr_names(obj, h5py)
        if name not in HIDDEN_ATTRIBUTES
    }
