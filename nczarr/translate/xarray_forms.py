"""What xarray's conventions make of a pure Zarr array (pure functions over its spec
and attributes): a numeric ``fill_value`` is a missing value, ``|S<n>`` bytes of
zarr-python's or xarray's are bytes, not netCDF text, unless xarray's ``_Encoding``
says UTF-8. Shared by the Zarr v2 (:mod:`nczarr.translate.tree`) and v3
(:mod:`nczarr.translate.read_zarr3`) readers; :func:`text_encoding` is the other side
of that marker, for the pure Zarr writers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .arrayspec import ArraySpec
from .conventions import FILLVALUE, TEXT_ENCODING
from .model import Attribute, Dataset, Variable

__all__ = [
    "bytes_as_bytes",
    "fill_as_missing",
    "marked_text_warnings",
    "text_encoding",
    "utf8_marker",
    "utf8_text",
]


def fill_as_missing(attrs: dict[str, Attribute], spec: ArraySpec) -> dict[str, Attribute]:
    """``attrs`` with a ``_FillValue`` equal to a numeric array's ``fill_value``.

    Nothing changes for text and bool arrays (xarray writes them with ``fill_value``
    null), without a fill value, or when a ``_FillValue`` attribute exists already.
    """
    nc_type = spec.dtype.nc_type
    if (
        spec.fill_value is None
        or nc_type in ("char", "string")
        or spec.dtype.logical is not None
        or FILLVALUE in attrs
    ):
        return attrs
    return {**attrs, FILLVALUE: Attribute(FILLVALUE, nc_type, (spec.fill_value,))}


def utf8_text(spec: ArraySpec, attrs: Mapping[str, Attribute]) -> bool:
    """A fixed-width bytes array (``|S<n>``, v3 ``null_terminated_bytes``) with
    ``_Encoding: "utf-8"``: xarray decodes it into ``str``, and nczarr's pure Zarr
    writers mark netCDF strings so. It is read as netCDF text, without the attribute
    (the ``string`` type says it; xarray's decoder would fail on text, and NCZarr
    copies carry none); :func:`text_encoding` writes it back in pure Zarr."""
    dtype = spec.dtype
    encoding = attrs.get(TEXT_ENCODING)
    return (
        dtype.nc_type == "string"
        and dtype.text_storage is None
        and dtype.logical is None
        and encoding is not None
        and utf8_marker(encoding.value)
    )


def utf8_marker(value: Any) -> bool:
    """Whether the value of an ``_Encoding`` attribute says UTF-8."""
    return isinstance(value, str) and value.lower().replace("-", "") == "utf8"


def text_encoding(var: Variable) -> dict[str, Any]:
    """``{"_Encoding": "utf-8"}`` for a netCDF ``string`` stored as fixed-width UTF-8
    bytes (``|S<n>``, v3 ``null_terminated_bytes``), else nothing: what a pure Zarr
    writer adds to such an array's attributes (not with ``noxarray``).

    netCDF4 reads such a variable as text (an NCZarr string, netcdf-c's pure Zarr);
    zarr-python reads bytes, and so would xarray without the marker, by which it
    decodes them into ``str`` (the chunks stay verbatim). Every source: an NCZarr
    store, or a pure Zarr one whose marker :func:`utf8_text` read and dropped (an
    xarray store, an earlier copy). A variable holding its own ``_Encoding`` (an
    NCZarr or netCDF source's attribute, kept in the model) keeps it as written.
    ``|S1`` is not marked: a netCDF ``char`` is stored so in pure Zarr and read back
    (as netCDF4 reads it) as a string of one character, and a marker would make a copy
    of that copy differ from it.
    """
    if (
        var.type != "string"
        or var.text_storage is not None
        or var.logical is not None
        or TEXT_ENCODING in var.attributes
        or var.maxstrlen == 1  # "|S1": netCDF's char, read back as a 1-character string
    ):
        return {}
    return {TEXT_ENCODING: "utf-8"}


def marked_text_warnings(dataset: Dataset) -> list[str]:
    """The warning (one, naming each array) for a Zarr v2 copy whose netCDF strings
    :func:`text_encoding` marks: xarray's netcdf4 engine, reading the copy through
    netcdf-c (``#mode=zarr``), fails on them (netCDF4 returns ``str`` and xarray
    decodes the ``_Encoding`` it sees again: "'str' object has no attribute
    'decode'"). A copy written for netcdf-c (``netcdf_scalars``) has no marker."""
    named = [repr(v.path) for v in dataset.root.all_variables() if text_encoding(v)]
    if not named:
        return []
    return [
        f"{'array' if len(named) == 1 else 'arrays'} {', '.join(named)}: netCDF strings "
        "written as fixed-width UTF-8 with xarray's _Encoding 'utf-8', which xarray's zarr "
        "engine reads as str; xarray's netcdf4 engine fails on it through netcdf-c "
        "(#mode=zarr URLs; netCDF4 itself reads str): pass netcdf_scalars=True "
        "(--netcdf-scalars) for a copy meant for netcdf-c, which leaves the marker out"
    ]


def bytes_as_bytes(spec: ArraySpec) -> ArraySpec:
    """``|S<n>`` (Zarr v3 ``null_terminated_bytes``) that zarr-python or xarray wrote
    holds numpy bytes, not netCDF text (netcdf-c and nczarr write it for char/strings)."""
    dtype = spec.dtype
    if dtype.nc_type != "string" or dtype.text_storage is not None or dtype.logical:
        return spec
    return replace(spec, dtype=replace(dtype, logical="bytes"))
