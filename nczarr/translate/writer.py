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
:class:`WriteResult`.

The helpers both writers share (JSON serialisation, ``_NCProperties``, consolidated
metadata, the ``.zarray`` document) live in :mod:`~nczarr.translate.write_common`, so
that no writer imports another or this dispatcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InvalidModeError
from .conventions import FORMATS, ZMETADATA
from .model import Dataset
from .netcdf_forms import nczarr_forms
from .write_common import consolidate, text_shuffle_warnings
from .write_nczarr import (
    integer_float_attribute_warnings,
    unreadable_codec_warnings,
    write_nczarr,
)
from .write_zarr import write_zarr
from .write_zarr3 import write_zarr3

__all__ = ["FORMATS", "WriteResult", "write", "write_with_warnings", "check_zarr_format"]


@dataclass(frozen=True)
class WriteResult:
    """What a writer produced.

    Attributes
    ----------
    metadata : dict[str, bytes]
        Metadata objects by key, in writing order (parents before children).
    warnings : tuple[str, ...]
        Changes the target format forced (each names the object and what changed).
    skipped : tuple[str, ...]
        Key prefixes (``"g/v"``) of arrays the target format cannot describe; they
        have no metadata, and their chunks must not be copied.
    """

    metadata: dict[str, bytes] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()


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
    return write_with_warnings(
        dataset,
        format,
        noxarray=noxarray,
        consolidated=consolidated,
        netcdf_scalars=netcdf_scalars,
        zarr_format=zarr_format,
    ).metadata


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
    if check_zarr_format(format, zarr_format, netcdf_scalars=netcdf_scalars) == 3:
        metadata, warnings, skipped = write_zarr3(
            dataset, noxarray=noxarray, consolidated=consolidated
        )
        warnings = [*warnings, *text_shuffle_warnings(dataset)]
        return WriteResult(metadata, tuple(warnings), tuple(skipped))
    if format == "nczarr":
        dataset, forms = nczarr_forms(dataset)  # bool and untyped JSON attributes
        metadata = write_nczarr(dataset, noxarray=noxarray)
        warnings = [
            *forms,
            *unreadable_codec_warnings(dataset),
            *integer_float_attribute_warnings(dataset),
        ]
    elif format == "zarr":
        metadata, warnings = write_zarr(dataset, noxarray=noxarray, netcdf_scalars=netcdf_scalars)
    else:
        raise InvalidModeError(
            f"invalid format {format!r}: expected one of {', '.join(map(repr, FORMATS))}"
        )
    warnings = [*warnings, *text_shuffle_warnings(dataset)]
    if consolidated:
        metadata[ZMETADATA] = consolidate(metadata)
    return WriteResult(metadata, tuple(warnings))


def check_zarr_format(format: str, zarr_format: Any, *, netcdf_scalars: bool = False) -> int:
    """Validate a ``(format, zarr_format)`` pair; return the Zarr format (2 or 3).

    Raises
    ------
    InvalidModeError
        ``zarr_format`` is not 2 or 3; ``format`` is ``"nczarr"`` with 3 (NCZarr is
        defined over Zarr v2; netcdf-c's v3 drafts are not a stable format); or
        ``netcdf_scalars`` with 3 (it is for netcdf-c, which reads no Zarr v3).
    """
    if isinstance(zarr_format, bool) or zarr_format not in (2, 3):
        raise InvalidModeError(f"invalid zarr_format {zarr_format!r}: expected 2 or 3")
    if zarr_format == 3 and format != "zarr":
        if format not in FORMATS:
            raise InvalidModeError(
                f"invalid format {format!r}: expected one of {', '.join(map(repr, FORMATS))}"
            )
        raise InvalidModeError(
            f"zarr_format=3 is written for format 'zarr' only, not {format!r}: NCZarr is "
            "Zarr v2 (netcdf-c reads no stable NCZarr over Zarr v3)"
        )
    if zarr_format == 3 and netcdf_scalars:
        raise InvalidModeError(
            "netcdf_scalars is for netcdf-c readers, which do not read Zarr v3: "
            "use it with zarr_format=2"
        )
    return int(zarr_format)
