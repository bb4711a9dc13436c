"""Write pure Zarr v2 that zarr-python 3, xarray and netcdf-c all read correctly.

Differences from the NCZarr writer (``docs/netcdf-c-layouts.md``
sections 2.3-2.6 and ``zarr-xarray-vs-netcdf-c.md``):

* no ``_nczarr_*`` key anywhere; ``_NCProperties`` stays in the root ``.zattrs``,
  except in a copy of a store without one (``Dataset.xarray_conventions``: xarray,
  zarr-python, GDAL), which keeps its producer's conventions (``|S<n>`` is bytes);
* char is ``"|S1"`` (zarr-python rejects ``">S1"``), 1-byte numbers ``"|u1"``/``"|i1"``;
* text fill values are base64 of the UTF-8 bytes, as the Zarr v2 spec says; netCDF
  text without ``_FillValue`` and an empty fill is written with ``fill_value`` null,
  which xarray does not mask (:mod:`~nczarr.translate.zarr2_fills`; a kept fill that
  xarray masks where netcdf-c's readers do not is warned about);
* scalars are 0-d arrays (shape ``[]``, chunks ``[]``, ``_ARRAY_DIMENSIONS: []``),
  what zarr-python and xarray write and expect; netcdf-c 4.10 silently leaves such
  arrays out, without an error, and Debian's netcdf-c 4.9.0 crashes reading
  them: a written copy (``convert``, ``migrate``) warns naming each such scalar
  (:func:`zero_d_scalar_warnings`). With ``netcdf_scalars`` they are written as netcdf-c writes them
  (shape and chunks ``[1]``, ``_ARRAY_DIMENSIONS: ["_scalar_"]``; the chunk key
  ``0`` is the same), which netcdf-c reads as scalars and zarr-python and xarray as
  1-element arrays of a dimension ``_scalar_``;
* attributes are untyped JSON, written as zarr-python and xarray write them:
  char -> JSON string, string -> a JSON string (one value: what xarray needs to
  decode ``units``, and what netcdf-c reads as that text) or a list of strings,
  numbers -> a scalar (one value) or a list, NaN/Inf -> the bare tokens
  ``NaN``/``Infinity``/``-Infinity`` (the strings would read as text in netcdf-c);
* ``_ARRAY_DIMENSIONS`` holds plain names. xarray and netcdf-c resolve a name in the
  array's own group, so when one group's arrays use two different dimensions with
  the same name and different sizes (a root ``x`` and the group's own ``x``), the
  one that netCDF scoping would *not* pick is renamed ``<name>_<n>`` and a warning
  says so.

Metadata a reader kept undecoded (bytes that are not UTF-8, which netcdf-c 4.9
writes for a char attribute ``"\\200"``) becomes the Latin-1 characters those bytes
stand for, with a warning: Zarr metadata is UTF-8 JSON, and zarr-python and xarray
refuse anything else.

Lost by design (a reader gives them back differently): unlimited dimensions
become fixed; dimensions no array uses disappear; attribute types are re-inferred
(byte/short/ubyte/ushort integers come back as int, float as double, a
one-valued string as char).
"""

from __future__ import annotations

from typing import Any

from ..keys import join_key
from .conventions import ARRAY_DIMENSIONS, NCPROPERTIES, SCALAR_DIM, ZARRAY, ZATTRS, ZGROUP
from .dtypes import encode_fill_value
from .lazymeta import LazyMetadata
from .model import Dataset, Variable
from .target import Target
from .write_common import WriteResult, dumps, group_key, ncproperties, zarray_document
from .xarray_forms import marked_text_warnings, text_encoding
from .zarr2_fills import masked_fill_warnings, zarr2_fill
from .zarr_names import add_utf8_json, dimension_names, plain_attributes

__all__ = ["write_zarr", "zarray_zarr", "dimension_names", "zero_d_scalar_warnings"]


def write_zarr(dataset: Dataset, target: Target | None = None) -> WriteResult:
    """Every metadata object of ``dataset`` as pure Zarr v2, and the warnings.

    Parameters
    ----------
    dataset : Dataset
        The model to write.
    target : Target
        Its options: ``noxarray`` omits ``_ARRAY_DIMENSIONS`` (readers then see
        anonymous dimensions; with ``netcdf_scalars`` a scalar then reads as a
        1-element array); ``netcdf_scalars`` writes scalars as shape ``[1]`` with
        ``_ARRAY_DIMENSIONS: ["_scalar_"]`` (netcdf-c's convention) instead of 0-d
        arrays. ``consolidated`` is the dispatcher's (:mod:`~nczarr.translate.writer`).

    Returns
    -------
    WriteResult
        The objects (parents before children), one warning per renamed
        dimension, one per kept ``fill_value`` xarray masks where netcdf-c's
        readers show data and, for a written copy (``target.written_copy``), one per
        scalar written as a 0-d array (:func:`zero_d_scalar_warnings`).
    """
    target = target or Target("zarr")
    noxarray, netcdf_scalars = target.noxarray, target.netcdf_scalars
    out = LazyMetadata()  # serialised when asked for (the engine wants documents)
    warnings: list[str] = masked_fill_warnings(dataset)
    if target.written_copy:  # a view is read by zarr-python and xarray, not netcdf-c
        warnings += zero_d_scalar_warnings(dataset, target)
        if not noxarray and not netcdf_scalars:
            warnings += marked_text_warnings(dataset)

    def utf8(key: str, doc: dict[str, Any]) -> None:
        add_utf8_json(out, key, doc, warnings)

    for group in dataset.root.walk():
        prefix = group_key(group)
        out[join_key(prefix, ZGROUP)] = dumps({"zarr_format": 2})
        attrs = plain_attributes(group.attributes.values())
        if group.path in ("", "/") and not dataset.xarray_conventions:
            attrs[NCPROPERTIES] = ncproperties(dataset)
        utf8(join_key(prefix, ZATTRS), attrs)
        names, group_warnings = dimension_names(dataset, group)
        warnings.extend(group_warnings)
        for var in group.variables.values():
            vprefix = join_key(prefix, var.name)
            zarray = zarray_zarr(var, netcdf_scalars=netcdf_scalars, layout=dataset.layout)
            utf8(join_key(vprefix, ZARRAY), zarray)
            vattrs = plain_attributes(var.attributes.values())
            if not noxarray:
                if not netcdf_scalars:  # a copy for netcdf-c: see marked_text_warnings
                    vattrs |= text_encoding(var)
                vattrs[ARRAY_DIMENSIONS] = (
                    [SCALAR_DIM]
                    if var.scalar and netcdf_scalars
                    else [names[d] for d in var.dimensions]
                )
            utf8(join_key(vprefix, ZATTRS), vattrs)
    return WriteResult(out, tuple(warnings))


def zarray_zarr(
    var: Variable, *, netcdf_scalars: bool = False, layout: str | None = None
) -> dict[str, Any]:
    """The pure-Zarr ``.zarray`` document of one variable (scalars are 0-d, or shape
    ``[1]`` with ``netcdf_scalars``; ``layout``: the dataset's, see ``zarr2_fill``)."""
    # zarr-python keeps the fill value of "<U" and "|O" arrays as text (base64 is for "|S").
    # netCDF text without _FillValue gets null, which xarray does not mask (zarr2_fills).
    fill = encode_fill_value(zarr2_fill(var, layout), var.type, nczarr=var.text_storage is not None)
    return zarray_document(var, nczarr=False, fill_value=fill, netcdf_scalars=netcdf_scalars)


def zero_d_scalar_warnings(dataset: Dataset, target: Target) -> list[str]:
    """One warning per netCDF scalar a pure Zarr v2 ``target`` writes as a 0-d array.

    netcdf-c reads pure Zarr v2 (``#mode=zarr``), but not 0-d arrays: libnetcdf 4.10
    leaves the variable out of the dataset, without an error (netCDF4 lists the
    other variables), and Debian's netcdf-c 4.9.0 lists it as a scalar and crashes
    (segmentation fault) reading its value. Measured in
    ``tests/test_zarr_scalars_netcdf_c.py``. Nothing for ``netcdf_scalars`` (shape
    ``[1]``, which netcdf-c reads), NCZarr or Zarr v3 (which no netcdf-c reads).
    """
    if target.format != "zarr" or target.zarr_format != 2 or target.netcdf_scalars:
        return []
    return [
        f"array {var.path!r}: a netCDF scalar, written as a 0-d Zarr array (shape []) "
        "as zarr-python and xarray write it; netcdf-c 4.10 (#mode=zarr) leaves it out "
        "of the dataset without an error, and netcdf-c 4.9.0 crashes reading it: "
        "netcdf_scalars=True (CLI --netcdf-scalars) writes scalars as netcdf-c does "
        "(shape [1], dimension _scalar_), or convert to NCZarr"
        for var in dataset.root.all_variables()
        if var.scalar
    ]
