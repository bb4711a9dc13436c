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

This module also holds the helpers both writers share: JSON serialisation
(:func:`dumps`), the ``_NCProperties`` value, key joining and consolidated metadata.

Why NCZarr objects are written as compact JSON: netcdf-c (4.10.1, file map)
rewrites *every* ``.zgroup``, ``.zattrs`` and ``.zarray`` of a store opened for
writing when it closes it, in place and **without truncating** the file
(``zmap_file.c`` computes ``O_TRUNC`` and then drops it). When its text is shorter
than what was there, the object ends in stale bytes and no longer parses
(NC_ENCZARR on the next open). netcdf-c separates dict entries with ``", "`` and
``": "``; writing ``","`` and ``":"`` makes its rewrite of an unchanged object
``2 * n - 1`` bytes longer per dict of ``n`` entries, and that slack absorbs what netcdf-c writes
shorter than we do (numbers it prints with 6 significant digits, char attributes
whose text is a JSON scalar). See :mod:`~nczarr.translate.write_nczarr` for the
exact limits. Pure Zarr keeps netcdf-c's spacing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InvalidModeError
from .attrs import json_text, parse_json
from .conventions import NCPROPERTIES, NCZARR_FORMAT_VERSION, ZARR_METADATA_NAMES, ZMETADATA
from .dtypes import nc_to_zarr_dtype
from .model import Dataset, Group, Variable

__all__ = [
    "FORMATS",
    "WriteResult",
    "write",
    "write_with_warnings",
    "check_zarr_format",
    "dumps",
    "ncproperties",
]

#: Formats :func:`write` produces.
FORMATS = ("nczarr", "zarr")

#: Written as ``_NCProperties`` when the model carries none (``version=2``, as netcdf-c
#: parses it; the ``nczarr`` entry is the NCZarr format version).
_NCPROPERTIES_TEMPLATE = "version=2,nczarr={nczarr},nczarr-python={version}"


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
        Also write ``.zmetadata`` (``zarr_consolidated_format`` 1); for Zarr v3, the
        root ``zarr.json``'s ``consolidated_metadata``.
    zarr_format : {2, 3}
        For ``format="zarr"``: Zarr v2 (``.zgroup``/``.zarray``/``.zattrs``) or
        Zarr v3 (``zarr.json``). NCZarr is Zarr v2 only.

    Returns
    -------
    dict[str, bytes]
        Keys relative to the store root (``".zgroup"``, ``"g/v/.zarray"``).
        Use :func:`write_with_warnings` to also get the warnings.

    Raises
    ------
    InvalidModeError
        ``format`` is not one of :data:`FORMATS`, ``zarr_format`` is not 2 or 3, or
        NCZarr is asked for in Zarr v3.
    """
    return write_with_warnings(
        dataset, format, noxarray=noxarray, consolidated=consolidated, zarr_format=zarr_format
    ).metadata


def write_with_warnings(
    dataset: Dataset,
    format: Literal["nczarr", "zarr"] = "nczarr",
    *,
    noxarray: bool = False,
    consolidated: bool = False,
    zarr_format: int = 2,
) -> WriteResult:
    """Like :func:`write`, returning a :class:`WriteResult` (metadata and warnings)."""
    check_zarr_format(format, zarr_format)
    if zarr_format == 3:
        from .write_zarr3 import write_zarr3

        metadata, warnings, skipped = write_zarr3(
            dataset, noxarray=noxarray, consolidated=consolidated
        )
        return WriteResult(metadata, tuple(warnings), tuple(skipped))
    if format == "nczarr":
        from .write_nczarr import unreadable_codec_warnings, write_nczarr

        metadata = write_nczarr(dataset, noxarray=noxarray)
        warnings = unreadable_codec_warnings(dataset)
    elif format == "zarr":
        from .write_zarr import write_zarr

        metadata, warnings = write_zarr(dataset, noxarray=noxarray)
    else:
        raise InvalidModeError(
            f"invalid format {format!r}: expected one of {', '.join(map(repr, FORMATS))}"
        )
    if consolidated:
        metadata[ZMETADATA] = consolidate(metadata)
    return WriteResult(metadata, tuple(warnings))


def check_zarr_format(format: str, zarr_format: Any) -> int:
    """Validate a ``(format, zarr_format)`` pair; return the Zarr format (2 or 3).

    Raises
    ------
    InvalidModeError
        ``zarr_format`` is not 2 or 3, or ``format`` is ``"nczarr"`` with 3 (NCZarr
        is defined over Zarr v2; netcdf-c's v3 drafts are not a stable format).
    """
    if isinstance(zarr_format, bool) or zarr_format not in (2, 3):
        raise InvalidModeError(f"invalid zarr_format {zarr_format!r}: expected 2 or 3")
    if zarr_format == 3 and format != "zarr":
        raise InvalidModeError(
            f"zarr_format=3 is written for format 'zarr' only, not {format!r}: NCZarr is "
            "Zarr v2 (netcdf-c reads no stable NCZarr over Zarr v3)"
        )
    return int(zarr_format)


# ------------------------------------------------------------------ shared helpers
def dumps(value: Any, *, compact: bool = False) -> bytes:
    """Serialise a metadata document as UTF-8 JSON.

    By default in netcdf-c's style: dict entries separated by ``", "`` and
    ``": "``, list items by ``","``. With ``compact`` there is no whitespace at all
    (``","`` and ``":"``): the NCZarr writer uses that so that netcdf-c's in-place,
    non-truncating rewrite of an object is longer than ours by ``2 * n - 1`` bytes
    per dict of ``n`` entries (see the module docstring). Non-ASCII text is written
    as UTF-8, never as ``\\u`` escapes (netcdf-c 4.10's parser does not decode
    those); numbers are written as :func:`~nczarr.translate.attrs.json_text` writes
    them (a :class:`~nczarr.translate.attrs.JSONFloat` keeps its text, other floats
    use ``repr``, full precision). Callers encode NaN and infinities as strings
    beforehand.
    """
    return (_compact(value) if compact else json_text(value)).encode("utf-8")


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        items = (f"{json_text(str(k))}:{_compact(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_compact(v) for v in value) + "]"
    return json_text(value)


def ncproperties(dataset: Dataset) -> str:
    """The ``_NCProperties`` text to write: the model's own if it has one, else ours."""
    attr = dataset.root.attributes.get(NCPROPERTIES)
    if attr is not None and isinstance(attr.value, str) and attr.value:
        return attr.value
    from .. import __version__

    return _NCPROPERTIES_TEMPLATE.format(nczarr=NCZARR_FORMAT_VERSION, version=__version__)


def group_key(group: Group) -> str:
    """The key prefix of a group (``""`` for the root, ``"g/h"`` below it)."""
    return group.path.strip("/")


def join(prefix: str, name: str) -> str:
    """``prefix/name``, or ``name`` at the root."""
    return f"{prefix}/{name}" if prefix else name


def walk(group: Group) -> Iterator[Group]:
    """Groups depth first, parents before children (the writing order)."""
    return group.walk()


def consolidate(metadata: dict[str, bytes]) -> bytes:
    """The ``.zmetadata`` document for a set of metadata objects.

    Every ``.zgroup``/``.zarray``/``.zattrs`` object is included (parsed), in the
    order given, under ``"metadata"``, with ``"zarr_consolidated_format": 1``.
    Numbers keep their exact text (JSON-valued char attributes stay byte-identical).
    """
    inner: dict[str, Any] = {}
    for key, value in metadata.items():
        if key.rsplit("/", 1)[-1] in ZARR_METADATA_NAMES and key != ZMETADATA:
            inner[key] = parse_json(value, key=key)
    return dumps({"metadata": inner, "zarr_consolidated_format": 1})


def zarray_document(var: Variable, *, nczarr: bool, fill_value: Any) -> dict[str, Any]:
    """The ``.zarray`` of one variable in netcdf-c's key order, shared by both writers.

    NCZarr stores a scalar as shape/chunks ``[1]`` (what netcdf-c reads), pure Zarr
    as a 0-d array; ``dtype`` follows the format (``>S1`` vs ``|S1`` for char);
    ``fill_value`` is already encoded by the caller; ``dimension_separator`` is
    written only when it is ``"/"``.
    """
    scalar_shape: list[int] = [1] if nczarr else []
    doc: dict[str, Any] = {
        "zarr_format": 2,
        "shape": scalar_shape if var.scalar else list(var.shape),
        "dtype": nc_to_zarr_dtype(var.type, var.endian, var.maxstrlen, nczarr=nczarr),
        "chunks": scalar_shape if var.scalar else list(var.chunks),
        "fill_value": fill_value,
        "order": var.order,
        "compressor": var.compressor,
        "filters": list(var.filters) if var.filters else None,
    }
    if var.dimension_separator == "/":
        doc["dimension_separator"] = "/"
    return doc
