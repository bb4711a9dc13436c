"""Write a netCDF-4 model as Zarr v2 metadata objects: current NCZarr or pure Zarr.

:func:`write` is the one entry point (``nczarr.translate.write``, the function); it dispatches
to :mod:`~nczarr.translate.write_nczarr` (netcdf-c 4.9.3+ layout) or
:mod:`~nczarr.translate.write_zarr` (pure Zarr v2 that zarr-python 3 and xarray
read) or, with ``zarr_format=3``, :mod:`~nczarr.translate.write_zarr3` (pure Zarr
v3, one ``zarr.json`` per node). Writers are pure: a
:class:`~nczarr.translate.model.Dataset` in, a new ``dict[str, bytes]`` of metadata
objects out (``.zgroup``, ``.zattrs``,
``<path>/.zarray`` ...; keys relative to the store root, no leading ``/``). Chunk
data is never touched: translated metadata describes the very same chunk bytes.

:func:`write_with_warnings` also returns what the writer had to change to make
the target format correct (renamed dimensions in pure Zarr), as a
:class:`WriteResult`. Both take the options as keywords (the public face) and
build a :class:`~nczarr.translate.target.Target`; :func:`write_target` takes one
already validated. Every writer has the signature ``(dataset, target) -> WriteResult``
and is one line of :data:`WRITERS` (a new output format: a writer module and one line).

The helpers both writers share (JSON serialisation, ``_NCProperties``, consolidated
metadata, the ``.zarray`` document) live in :mod:`~nczarr.translate.write_common`, so
that no writer imports another or this dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from .conventions import FORMATS, ZMETADATA
from .model import Dataset
from .netcdf_forms import nczarr_forms
from .reserved_names import leave_out_reserved
from .target import Target, check_zarr_format
from .write_common import (
    WriteResult,
    consolidate,
    control_character_attribute_warnings,
    text_shuffle_warnings,
)
from .xarray_forms import char_warnings, packed_float_warnings
from .zarr2_fills import exact_default_fills

__all__ = [
    "FORMATS",
    "WRITERS",
    "Target",
    "WriteResult",
    "write",
    "write_target",
    "write_with_warnings",
    "check_zarr_format",
]


def _write_nczarr(dataset: Dataset, target: Target) -> WriteResult:
    """NCZarr, after what netCDF cannot type is put in netcdf4-engine forms."""
    # Imported here, as write_zarr3 below: a command imports only its target's writer.
    from .write_nczarr import integer_float_attribute_warnings, write_nczarr

    dataset, forms = nczarr_forms(dataset)  # bool and untyped JSON attributes
    written = write_nczarr(dataset, target)
    shuffle = text_shuffle_warnings(dataset)
    floats = integer_float_attribute_warnings(dataset)
    controls = control_character_attribute_warnings(dataset)
    return WriteResult(
        written.metadata,
        (*forms, *written.warnings, *floats, *controls, *shuffle),
        written.skipped,
    )


def _write_zarr(dataset: Dataset, target: Target) -> WriteResult:
    from .write_zarr import write_zarr  # and its naming rules: only for a Zarr v2 target

    written = write_zarr(dataset, target)
    shuffle = text_shuffle_warnings(dataset)
    controls = control_character_attribute_warnings(dataset)
    return WriteResult(written.metadata, (*written.warnings, *controls, *shuffle), written.skipped)


def _write_zarr3(dataset: Dataset, target: Target) -> WriteResult:
    from .write_zarr3 import write_zarr3  # and the v3 codec tables: only for a v3 target

    written = write_zarr3(dataset, target)  # consolidates itself (inside the root's zarr.json)
    shuffle = text_shuffle_warnings(dataset)
    return WriteResult(written.metadata, (*written.warnings, *shuffle), written.skipped)


#: ``(format, zarr_format)`` -> the writer. Zarr v2 writers leave ``.zmetadata`` to
#: :func:`write_target`.
WRITERS: dict[tuple[str, int], Callable[[Dataset, Target], WriteResult]] = {
    ("nczarr", 2): _write_nczarr,
    ("zarr", 2): _write_zarr,
    ("zarr", 3): _write_zarr3,
}


def write_target(dataset: Dataset, target: Target) -> WriteResult:
    """The metadata objects (and warnings) that describe ``dataset`` as ``target``
    (a written copy says NC_FILL_DOUBLE for netcdf-c's rounded default double fill:
    :func:`~nczarr.translate.zarr2_fills.exact_default_fills`; a pure Zarr copy names
    the packed arrays xarray decodes as float64 there, not float32, and the char arrays
    netCDF readers read as strings: :mod:`~nczarr.translate.xarray_forms`). Nodes named as the
    target's metadata objects are left out first, as arrays the target cannot describe
    (:func:`~nczarr.translate.reserved_names.leave_out_reserved`)."""
    dataset, reserved, left_out = leave_out_reserved(dataset, target)
    fills: list[str] = []
    if target.written_copy:
        dataset, fills = exact_default_fills(dataset, target.zarr_format)
        if target.format == "zarr":  # attribute types are JSON's there
            fills += packed_float_warnings(dataset) + char_warnings(dataset)
    written = WRITERS[(target.format, target.zarr_format)](dataset, target)
    if fills or reserved:
        written = WriteResult(
            written.metadata,
            (*reserved, *fills, *written.warnings),
            (*left_out, *written.skipped),
        )
    if target.zarr_format == 2 and target.write_consolidated:
        written.metadata[ZMETADATA] = consolidate(written.metadata)
    return written


def write(
    dataset: Dataset,
    format: Literal["nczarr", "zarr"] = "nczarr",
    *,
    noxarray: bool = False,
    consolidated: bool = False,
    netcdf_scalars: bool = False,
    zarr_format: int = 2,
) -> dict[str, bytes]:
    """The metadata objects that describe ``dataset`` in ``format``.

    Parameters
    ----------
    dataset : Dataset
        The netCDF-4 model (as a reader produced it, or built by hand).
    format : {"nczarr", "zarr"}
        ``"nczarr"``: the netcdf-c 4.9.3+ layout (everything in ``.zattrs``).
        ``"zarr"``: pure Zarr v2 without any ``_nczarr_*`` key.
    noxarray : bool
        Omit ``_ARRAY_DIMENSIONS`` (netcdf-c's ``mode=noxarray``).
    consolidated : bool
        Also write ``.zmetadata`` (``zarr_consolidated_format`` 1).
    netcdf_scalars : bool
        ``"zarr"`` only: write scalars as netcdf-c does in pure Zarr (shape ``[1]``,
        ``_ARRAY_DIMENSIONS: ["_scalar_"]``), which netcdf-c 4.10 reads, instead of
        0-d arrays (shape ``[]``), which zarr-python and xarray write and expect
        and which netcdf-c 4.10 silently leaves out. Zarr v2 only.
    zarr_format : {2, 3}
        For ``format="zarr"``: Zarr v2 (``.zgroup``/``.zarray``/``.zattrs``) or
        Zarr v3 (``zarr.json``; ``consolidated`` then fills the root's
        ``consolidated_metadata``). NCZarr is Zarr v2 only.

    Returns
    -------
    dict[str, bytes]
        Keys relative to the store root (``".zgroup"``, ``"g/v/.zarray"``).
        Use :func:`write_with_warnings` to also get the warnings.

    Raises
    ------
    InvalidModeError
        ``format`` is not one of :data:`FORMATS`, ``zarr_format`` is not 2 or 3, or
        Zarr v3 is asked for with NCZarr or ``netcdf_scalars``.
    """
    written = write_with_warnings(
        dataset,
        format,
        noxarray=noxarray,
        consolidated=consolidated,
        netcdf_scalars=netcdf_scalars,
        zarr_format=zarr_format,
    )
    return dict(written.metadata)


def write_with_warnings(
    dataset: Dataset,
    format: Literal["nczarr", "zarr"] = "nczarr",
    *,
    noxarray: bool = False,
    consolidated: bool = False,
    netcdf_scalars: bool = False,
    zarr_format: int = 2,
) -> WriteResult:
    """Like :func:`write`, returning a :class:`WriteResult` (metadata and warnings)."""
    target = Target(format, zarr_format, noxarray, bool(consolidated), netcdf_scalars)
    return write_target(dataset, target)
