"""The Zarr v2 ``fill_value`` of a netCDF variable, as xarray will read it.

xarray's zarr engine takes a v2 ``fill_value`` for the array's ``_FillValue`` and
masks it. netcdf-c writes a ``fill_value`` for every variable, ``_FillValue``
attribute or not (netCDF's default fill: ``""`` for text, ``-127`` for a byte), and
netCDF4 masks the default fill of a variable without ``_FillValue`` for every numeric
type, ncdump for every one except ``byte`` and ``ubyte`` ("too risky"), never for text. So a Zarr v2
copy that kept such a ``fill_value`` would show NaN in xarray where netcdf-c's
readers show data. Per variable without a ``_FillValue`` attribute:

* netCDF text (``char``, ``string`` stored as bytes, and the variable-length
  ``string`` of a netCDF-4 file read as a source) whose fill is empty is
  written with ``fill_value`` null, as xarray writes its own text: xarray then masks
  nothing, and zarr-python and netcdf-c read the same values (an unwritten chunk is
  empty text with either fill);
* a ``byte`` (``ubyte``) variable keeps netCDF's default fill ``-127`` (``255``; with
  null netcdf-c would read the variable as unfilled, and zarr-python an unwritten
  chunk as 0), also as the Zarr v3 ``fill_value`` (GDAL's nodata), and a
  text variable a non-empty fill: the readers disagree, and a warning names the
  array and what xarray masks (``docs/conversion.md``, "Producers' conventions");
* a ``double`` variable of netcdf-c's whose fill is ``9.96921e+36`` (netcdf-c's
  ``"%g"`` text of NC_FILL_DOUBLE, another double than the default fill
  9.969209968386869e+36 its written chunks hold and netCDF4 masks): a *written copy*
  (``convert``, ``migrate``: :attr:`Target.written_copy
  <nczarr.translate.target.Target>`) says NC_FILL_DOUBLE itself, in every format
  (:func:`exact_default_fills`, applied by the dispatcher before any writer). xarray
  (Zarr v2) and GDAL then mask the default fill values netCDF4 masks in the source,
  where with ``9.96921e+36`` they masked none of them. What still differs is warned
  about, naming the array: the chunks the source never wrote, which netCDF4 reads from
  the source as ``9.96921e+36`` and does not mask, read from the copy as
  NC_FILL_DOUBLE, which netCDF4 (an NCZarr copy, or pure Zarr read by netcdf-c),
  xarray and GDAL mask. The NCZarr copy says NC_FILL_DOUBLE too: netCDF4 reading it
  masks what it masks in the source and those never-written chunks (a superset, never
  fewer). A view (``nczarr.view``, the xarray engine, ``open_zarr``) and the metadata
  of a combine or an append keep ``9.96921e+36``: the engine reads what netCDF4 reads
  from netcdf-c's store, and an append's target keeps its metadata. ``nczarr check``
  reports the rounded fill on netcdf-c's stores (``compat_types.rounded_double_fill``).
"""

from __future__ import annotations

from typing import Any

from ..records import replace
from .conventions import FILLVALUE, LAYOUT_NETCDF4
from .model import Dataset, Group, Variable

__all__ = [
    "NC_FILL_DOUBLE",
    "ROUNDED_FILL_DOUBLE",
    "exact_default_fills",
    "rounded_default_fills",
    "gdal_nodata_warnings",
    "masked_fill_warnings",
    "zarr2_fill",
]

#: netCDF's default double fill (NC_FILL_DOUBLE, ``9.9692099683868690e+36``)
NC_FILL_DOUBLE = 9.969209968386869e36
#: The double netcdf-c's ``"%g"`` text of NC_FILL_DOUBLE (``9.96921e+36``, the
#: ``fill_value`` of its double arrays without ``_FillValue``) reads as
ROUNDED_FILL_DOUBLE = 9.96921e36

#: netCDF's default fill of ``byte`` (NC_FILL_BYTE), which ncdump never masks
NC_FILL_BYTE = -127
#: netCDF's default fills of the one-byte types (NC_FILL_BYTE, NC_FILL_UBYTE), which
#: ncdump never masks ("too risky"; measured with ncdump 4.9.0) and netCDF4 masks
BYTE_DEFAULT_FILLS = {"byte": NC_FILL_BYTE, "ubyte": 255}


def _netcdf_text(var: Variable, layout: str | None = None) -> bool:
    """A char or byte-stored string variable (not xarray's unicode, vlen or bytes), or
    a string variable of a netCDF-4 file (``layout``: the dataset's)."""
    if var.type not in ("char", "string") or var.logical is not None:
        return False
    # a netCDF-4 file's strings are variable-length (text_storage "vlen-utf8") yet
    # netCDF text, which netCDF4 never masks
    return var.text_storage is None or (layout == LAYOUT_NETCDF4 and var.type == "string")


def _empty_text(value: Any) -> bool:
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return isinstance(value, str) and value.strip("\0") == ""


def zarr2_fill(var: Variable, layout: str | None = None) -> Any:
    """The model fill value a pure Zarr v2 ``.zarray`` says for ``var``: ``None`` for
    netCDF text without ``_FillValue`` whose fill is empty, else ``var.fill_value``.
    ``layout``: the dataset's (a netCDF-4 file's strings are netCDF text)."""
    if (
        FILLVALUE not in var.attributes
        and _netcdf_text(var, layout)
        and _empty_text(var.fill_value)
    ):
        return None
    return var.fill_value


def _masked_fill_warning(var: Variable, layout: str | None) -> str | None:
    if FILLVALUE in var.attributes or var.logical is not None:
        return None
    fill = zarr2_fill(var, layout)
    if fill is None:
        return None
    if _unmasked_byte_default(var):
        return (
            f"{var.path!r}: the Zarr v2 fill_value {fill} (netCDF's default {var.type} "
            f"fill; there is no _FillValue attribute) is kept, so xarray masks the values "
            f"{fill} as missing (NaN), as netCDF4 does, where ncdump and xarray's "
            f"netcdf4 engine show them as data"
        )
    if _netcdf_text(var, layout):
        return (
            f"{var.path!r}: the Zarr v2 fill_value {fill!r} (there is no _FillValue "
            f"attribute) is kept, so xarray masks the text {fill!r} as missing (NaN), "
            f"where netcdf-c's readers show it as text"
        )
    if var.type in ("int64", "uint64"):  # found by a differential hunt: said nowhere
        return (
            f"{var.path!r}: the Zarr v2 fill_value {fill} (there is no _FillValue "
            f"attribute) is kept, so xarray masks it and reads the variable as float64: "
            f"its integers beyond 2**53 lose precision there, where the source's readers "
            f"(netCDF4, xarray on netCDF or Zarr v3) read them exactly"
        )
    return None


def _unmasked_byte_default(var: Variable) -> bool:
    """A byte/ubyte without ``_FillValue`` whose fill is netCDF's default for its type:
    netCDF4 masks it, ncdump and xarray's netcdf4 engine do not."""
    if FILLVALUE in var.attributes or var.logical is not None:
        return False
    default = BYTE_DEFAULT_FILLS.get(var.type)
    return (
        default is not None and var.fill_value == default and not isinstance(var.fill_value, bool)
    )


def gdal_nodata_warnings(dataset: Dataset) -> list[str]:
    """Zarr v3: one warning per byte/ubyte whose default fill (no ``_FillValue``) is the
    v3 ``fill_value``, which GDAL takes as nodata: GDAL masks it, as netCDF4 does, where
    ncdump and xarray (which masks a v3 array by ``_FillValue`` only) show data. No v3
    ``fill_value`` agrees with every reader (another value would be GDAL's nodata)."""
    return [
        f"{v.path!r}: the Zarr v3 fill_value {v.fill_value} (netCDF's default {v.type} "
        f"fill; there is no _FillValue attribute) is GDAL's nodata, so GDAL masks the "
        f"values {v.fill_value}, as netCDF4 does, where ncdump, xarray and xarray's "
        f"netcdf4 engine show them as data"
        for v in dataset.root.all_variables()
        if _unmasked_byte_default(v)
    ]


def masked_fill_warnings(dataset: Dataset) -> list[str]:
    """One warning per variable whose kept v2 ``fill_value`` xarray masks where
    netcdf-c's readers show data (see the module docstring)."""
    found = (_masked_fill_warning(v, dataset.layout) for v in dataset.root.all_variables())
    return [w for w in found if w is not None]


def _rounded_default(var: Variable) -> bool:
    """A double without ``_FillValue`` whose fill is netcdf-c's ``9.96921e+36``.

    In the model only netcdf-c's convention leaves a fill without ``_FillValue`` (the
    readers give the ``fill_value`` of xarray's, zarr-python 2's and GDAL's Zarr v2 a
    ``_FillValue`` attribute), bar a Zarr v3 array of zarr-python's own: what its
    readers read of it differs by the same rounding, and the warning says so."""
    fill = var.fill_value
    return (
        var.type == "double"
        and var.logical is None
        and FILLVALUE not in var.attributes
        and isinstance(fill, float)
        and fill == ROUNDED_FILL_DOUBLE
    )


def _exact_default_warning(var: Variable, zarr_format: int) -> str:
    masked = (
        "so GDAL masks those values as netCDF4 does (xarray masks a Zarr v3 array by a "
        "_FillValue attribute only, and there is none: it masks nothing)"
        if zarr_format == 3
        else "so xarray and GDAL mask those values as netCDF4 does"
    )
    readers = "netCDF4 and GDAL" if zarr_format == 3 else "netCDF4, xarray and GDAL"
    return (
        f"{var.path!r}: the fill_value 9.96921e+36 (netcdf-c's text of the default double "
        f"fill; there is no _FillValue attribute) is written as NC_FILL_DOUBLE "
        f"{NC_FILL_DOUBLE!r}, the default fill the source's chunks hold and netCDF4 masks, "
        f"{masked}; but the chunks the source never wrote, which netCDF4 reads from the "
        f"source as 9.96921e+36 and does not mask, read from the copy as NC_FILL_DOUBLE, "
        f"which {readers} mask"
    )


def rounded_default_fills(dataset: Dataset) -> list[Variable]:
    """The variables whose fill is netcdf-c's ``9.96921e+36`` for the default double
    fill (no ``_FillValue``): what a written copy changes."""
    return [v for v in dataset.root.all_variables() if _rounded_default(v)]


def exact_default_fills(dataset: Dataset, zarr_format: int = 2) -> tuple[Dataset, list[str]]:
    """``dataset`` with NC_FILL_DOUBLE for netcdf-c's rounded default double fill, and
    one warning per changed array (see the module docstring): what a written copy in
    Zarr ``zarr_format`` describes. Unchanged (the same object, no warning) when there
    is nothing to change."""
    changed = rounded_default_fills(dataset)
    if not changed:
        return dataset, []

    def group(g: Group) -> Group:
        variables = {
            name: replace(v, fill_value=NC_FILL_DOUBLE) if _rounded_default(v) else v
            for name, v in g.variables.items()
        }
        return replace(g, variables=variables, groups={n: group(c) for n, c in g.groups.items()})

    return replace(dataset, root=group(dataset.root)), [
        _exact_default_warning(v, zarr_format) for v in changed
    ]
