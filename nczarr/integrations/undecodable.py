"""A variable the xarray engine shows but cannot decode: its codec is not available here.

netcdf-c keeps a variable whose filter it lacks in the dataset and fails only when its
data is read (``NC_ENOFILTER``), so xarray's netcdf4 engine opens such a file and
raises on that variable's values. zarr-python instead fails to build the array at all
(numcodecs' ``UnknownCodecError``), which failed ``open_dataset`` for the whole store
because of one array. :class:`UndecodableArray` stands in for the zarr array: the
variable keeps its shape, type and attributes, and a read raises
:class:`~nczarr.errors.UnsupportedError` naming the variable and the codec (the view
has warned about it already).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from xarray.backends.common import BackendArray
from xarray.coding.strings import create_vlen_dtype
from xarray.core import indexing

from ..errors import UnsupportedError
from ..translate.codecs import missing_codecs
from ..translate.model import Variable

__all__ = ["UndecodableArray", "undecodable_array"]


class UndecodableArray(BackendArray):
    """``shape`` and ``dtype`` of a variable whose every read raises ``message``."""

    __slots__ = ("_message", "dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, message: str) -> None:
        self.shape = shape
        self.dtype = dtype
        self._message = message

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        raise UnsupportedError(self._message)

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> Any:
        raise UnsupportedError(self._message)


def undecodable_array(var: Variable, zarray: Mapping[str, Any], url: str) -> UndecodableArray:
    """The stand-in for ``var`` (its Zarr v2 metadata ``zarray``, in the store at
    ``url``), naming the codecs numcodecs lacks."""
    missing = missing_codecs(zarray)
    text = var.type == "string" and var.logical != "bytes"
    dtype = create_vlen_dtype(str) if text else np.dtype(zarray["dtype"])
    return UndecodableArray(
        tuple(var.shape),
        dtype,
        f"{url}: variable {var.path!r}: its data cannot be decoded here: numcodecs has no "
        f"codec {', '.join(map(repr, missing))}",
    )
