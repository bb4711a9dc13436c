"""What xarray's conventions make of a pure Zarr array (pure functions over its spec
and attributes): a numeric ``fill_value`` is a missing value, ``|S<n>`` bytes of
zarr-python's or xarray's are bytes, not netCDF text, unless xarray's ``_Encoding``
says UTF-8. Shared by the Zarr v2 (:mod:`nczarr.translate.tree`) and v3
(:mod:`nczarr.translate.read_zarr3`) readers; :func:`text_encoding` is the other side
of that marker, for the pure Zarr writers, and :func:`packed_float_warnings` names what
xarray decodes otherwise from a pure Zarr copy (float packing attributes become double),
:func:`char_warnings` what netCDF readers read otherwise (char becomes 1-byte strings).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..records import replace
from .arrayspec import ArraySpec
from .conventions import FILLVALUE, TEXT_ENCODING
from .model import Attribute, Dataset, Variable

__all__ = [
    "bytes_as_bytes",
    "char_warnings",
    "fill_as_missing",
    "marked_text_warnings",
    "packed_float_warnings",
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


#: the packing attributes whose numpy type xarray's CF decoding takes its float type from
_PACKING = ("scale_factor", "add_offset")
#: numpy's float type of a netCDF attribute type (any other type: not a float)
_FLOATS = {"float": "float32", "double": "float64"}


def _decoded_float(data: str, scale: str | None, offset: str | None) -> str:
    """The float type xarray's CF decoding gives packed values of netCDF type ``data``
    whose ``scale_factor``/``add_offset`` have these netCDF types (None: absent), as
    xarray's ``_choose_float_dtype`` (shared by its netcdf4 and zarr engines) says."""
    scale_float = _FLOATS.get(scale or "", "other")
    if scale is not None and offset is not None and scale == offset and scale in _FLOATS:
        return "float64" if data in ("int", "uint") else scale_float
    if offset is not None:
        return "float64"
    return scale_float if scale is not None else "float64"


def packed_float_warnings(dataset: Dataset) -> list[str]:
    """The warning (one, naming each array) for a pure Zarr copy of packed variables
    whose ``scale_factor``/``add_offset`` are netCDF ``float``: Zarr attributes are
    untyped JSON numbers, which xarray, zarr-python, netcdf-c and nczarr read as
    double, and xarray's CF decoding takes its float type from them, so it decodes the
    copy's values as float64 where it decoded the source's as float32 (netcdf-c's own
    pure Zarr loses the type alike; nothing a pure Zarr writer can say keeps it)."""
    named = []
    for var in dataset.root.all_variables():
        found = [var.attributes.get(name) for name in _PACKING]
        if var.logical is not None or all(a is None for a in found):
            continue
        types = [a.type if a is not None else None for a in found]
        as_json = ["double" if t is not None else None for t in types]
        if _decoded_float(var.type, *types) != _decoded_float(var.type, *as_json):
            named.append(repr(var.path))
    if not named:
        return []
    return [
        f"{'array' if len(named) == 1 else 'arrays'} {', '.join(named)}: packing "
        "attributes (scale_factor, add_offset) of netCDF type float are written as JSON "
        "numbers, which every reader of pure Zarr reads as double: xarray decodes the "
        "values as float64, not float32 as from the source"
    ]


def char_warnings(dataset: Dataset) -> list[str]:
    """The warning (one, naming each array) for a pure Zarr copy of netCDF ``char``
    variables: pure Zarr has no char type, so char is written as 1-byte fixed-width
    bytes (``|S1``, v3 ``null_terminated_bytes``), the very chunk bytes, which xarray's
    zarr engine and zarr-python read as the same bytes, but netCDF4 (netcdf-c reads its
    own pure Zarr so) and nczarr read as strings of one character: a netCDF reader of the
    copy, and an NCZarr copy of the copy, see ``string`` where the source had ``char``."""
    named = [repr(v.path) for v in dataset.root.all_variables() if v.type == "char"]
    if not named:
        return []
    return [
        f"{'array' if len(named) == 1 else 'arrays'} {', '.join(named)}: netCDF char is "
        "written as 1-byte fixed-width bytes (pure Zarr has no char type), which netCDF4 "
        "and nczarr read back as strings of one character, not char (xarray's zarr engine "
        "and zarr-python read the same bytes)"
    ]
