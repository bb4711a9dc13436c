"""Write pure Zarr v2 that zarr-python 3, xarray and netcdf-c all read correctly.

Differences from the NCZarr writer (``docs/netcdf-c-layouts.md``
sections 2.3-2.6 and ``zarr-xarray-vs-netcdf-c.md``):

* no ``_nczarr_*`` key anywhere; ``_NCProperties`` stays in the root ``.zattrs``;
* char is ``"|S1"`` (zarr-python rejects ``">S1"``), 1-byte numbers ``"|u1"``/``"|i1"``;
* text fill values are base64 of the UTF-8 bytes, as the Zarr v2 spec says;
* scalars are 0-d arrays (shape ``[]``, chunks ``[]``, ``_ARRAY_DIMENSIONS: []``);
* attributes are untyped JSON chosen so that a reader's type inference gives the
  type back where JSON can say it: char -> JSON string, string -> list of strings,
  numbers -> a scalar (one value) or a list, NaN/Inf -> ``"NaN"``/``"Infinity"``;
* ``_ARRAY_DIMENSIONS`` holds plain names. xarray and netcdf-c resolve a name in the
  array's own group, so when one group's arrays use two different dimensions with
  the same name and different sizes (a root ``x`` and the group's own ``x``), the
  one that netCDF scoping would *not* pick is renamed ``<name>_<n>`` and a warning
  says so.

Lost by design (a reader gives them back differently): unlimited dimensions
become fixed; dimensions no array uses disappear; attribute types are re-inferred
(byte/short/ubyte/ushort integers come back as int, float as double).
"""

from __future__ import annotations

from typing import Any

from ..keys import join_key
from .conventions import ARRAY_DIMENSIONS, NCPROPERTIES, ZARRAY, ZATTRS, ZGROUP
from .dtypes import encode_fill_value
from .model import Dataset, Variable
from .write_common import dumps, group_key, ncproperties, zarray_document
from .zarr_names import dimension_names, plain_attributes

__all__ = ["write_zarr", "zarray_zarr", "dimension_names"]


def write_zarr(dataset: Dataset, *, noxarray: bool = False) -> tuple[dict[str, bytes], list[str]]:
    """Every metadata object of ``dataset`` as pure Zarr v2, and the warnings.

    Parameters
    ----------
    dataset : Dataset
        The model to write.
    noxarray : bool
        Omit ``_ARRAY_DIMENSIONS`` (readers then see anonymous dimensions).

    Returns
    -------
    (dict[str, bytes], list[str])
        The objects (parents before children) and one warning per renamed
        dimension.
    """
    out: dict[str, bytes] = {}
    warnings: list[str] = []
    for group in dataset.root.walk():
        prefix = group_key(group)
        out[join_key(prefix, ZGROUP)] = dumps({"zarr_format": 2})
        attrs = plain_attributes(group.attributes.values())
        if group.path in ("", "/"):
            attrs[NCPROPERTIES] = ncproperties(dataset)
        out[join_key(prefix, ZATTRS)] = dumps(attrs)
        names, group_warnings = dimension_names(dataset, group)
        warnings.extend(group_warnings)
        for var in group.variables.values():
            vprefix = join_key(prefix, var.name)
            out[join_key(vprefix, ZARRAY)] = dumps(zarray_zarr(var))
            vattrs = plain_attributes(var.attributes.values())
            if not noxarray:
                vattrs[ARRAY_DIMENSIONS] = [names[d] for d in var.dimensions]
            out[join_key(vprefix, ZATTRS)] = dumps(vattrs)
    return out, warnings


def zarray_zarr(var: Variable) -> dict[str, Any]:
    """The pure-Zarr ``.zarray`` document of one variable (scalars are 0-d)."""
    fill = encode_fill_value(var.fill_value, var.type, nczarr=False)
    return zarray_document(var, nczarr=False, fill_value=fill)
