"""One Zarr v2 array document (``.zarray``) -> the :class:`ArraySpec` every reader shares (pure).

Shape, chunks, dtype (numpy and netCDF), fill value, codecs, order and dimension
separator, each checked with a message naming the key; the two numcodecs string
forms zarr-python 2 writes (``vlen-utf8`` and string ``categorize``) read as netCDF
strings. The tree of groups and dimensions is :mod:`~nczarr.translate.tree`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError, UnsupportedError
from ..records import record
from .attrs import json_text_safe
from .codecs import normalize_codecs
from .dtypes import ZarrDtype, decode_fill_value, fill_value_note, parse_dtype
from .jsontext import kind_of

__all__ = ["MAX_EXTENT", "ArraySpec", "check_extent", "parse_array_metadata"]


@record
class ArraySpec:
    """A validated ``.zarray``: everything a Variable needs except names and dimensions."""

    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: ZarrDtype
    fill_value: Any
    compressor: dict[str, Any] | None
    filters: tuple[dict[str, Any], ...]
    order: str
    dimension_separator: str
    warnings: tuple[str, ...] = ()
    shards: tuple[int, ...] | None = None
    shard_index: dict[str, Any] | None = None
    #: Zarr v3 arrays whose ``_FillValue`` replaced ``fill_value``: what absent chunks
    #: hold (``Variable.absent_fill``).
    absent_fill: Any = None


def _int_list(value: Any, what: str, key: str, *, positive: bool) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise MetadataError(f"{key!r}: {what!r} must be a list of integers, got {value!r}")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < (1 if positive else 0):
            bound = "positive" if positive else "non-negative"
            raise MetadataError(f"{key!r}: {what!r} must hold {bound} integers, got {value!r}")
    check_extent(tuple(value), what, key)
    return tuple(value)


#: Largest number of elements (along one axis or in all) an array or chunk may have:
#: numpy, and so zarr-python and xarray, index with signed 64-bit integers.
MAX_EXTENT = 2**63 - 1


def check_extent(values: tuple[int, ...], what: str, key: str) -> None:
    """Refuse a shape (or chunk shape) numpy cannot index, naming ``key``."""
    if math.prod(values) > MAX_EXTENT or any(v > MAX_EXTENT for v in values):
        raise MetadataError(
            f"{key!r}: {what!r} {list(values)} holds more than 2**63 - 1 elements, "
            "more than any reader can index"
        )


def parse_array_metadata(zarray: Any, key: str, *, nczarr: bool) -> ArraySpec:
    """Validate one ``.zarray`` and decode its dtype, fill value and codecs.

    Parameters
    ----------
    zarray : Any
        Parsed JSON of the ``.zarray`` object at ``key``.
    nczarr : bool
        NCZarr dataset: ``">S1"``/``"<U1"`` are char and text fill values are raw.

    Raises
    ------
    UnsupportedError
        The dtype has no netCDF-4 equivalent (callers skip the array).
    MetadataError
        Anything malformed, naming ``key``.
    """
    if not isinstance(zarray, dict):
        raise MetadataError(f"{key!r} must hold a JSON object, got {kind_of(zarray)}")
    zarr_format = zarray.get("zarr_format", 2)
    if zarr_format != 2:
        raise MetadataError(f"{key!r}: zarr_format must be 2, got {zarr_format!r}")
    for required in ("shape", "chunks", "dtype"):
        if required not in zarray:
            raise MetadataError(f"{key!r}: missing {required!r}")
    shape = _int_list(zarray["shape"], "shape", key, positive=False)
    chunks = _int_list(zarray["chunks"], "chunks", key, positive=True)
    if len(chunks) != len(shape):
        raise MetadataError(
            f"{key!r}: 'chunks' {list(chunks)} and 'shape' {list(shape)} differ in rank"
        )
    try:
        dtype = _vlen_string(zarray) or parse_dtype(zarray["dtype"], nczarr=nczarr)
    except UnsupportedError as exc:
        raise UnsupportedError(f"{key!r}: {exc}") from None
    except MetadataError as exc:
        raise MetadataError(f"{key!r}: {exc}") from None
    try:
        raw_text = nczarr or dtype.text_storage is not None  # "<U"/"|O" fills are text
        fill = decode_fill_value(zarray.get("fill_value"), dtype, raw_text=raw_text)
        if _is_string_categorize(zarray) and not isinstance(zarray.get("fill_value"), str):
            fill = ""  # code 0, no label: numcodecs' Categorize decodes it to ""
    except ValueError as exc:
        raise MetadataError(
            f"{key!r}: invalid fill_value {json_text_safe(zarray.get('fill_value'))} "
            f"for dtype {zarray['dtype']!r}: {exc}"
        ) from None
    order = zarray.get("order", "C")
    if order not in ("C", "F"):
        raise MetadataError(f"{key!r}: 'order' must be 'C' or 'F', got {order!r}")
    separator = zarray.get("dimension_separator", ".")
    if separator is None:
        separator = "."
    if separator not in (".", "/"):
        raise MetadataError(f"{key!r}: 'dimension_separator' must be '.' or '/', got {separator!r}")
    compressor, filters, warnings = normalize_codecs(
        zarray.get("compressor"), zarray.get("filters"), dtype.itemsize, where=repr(key)
    )
    note = fill_value_note(zarray.get("fill_value"), dtype, fill)
    if note is not None:
        warnings = [*warnings, f"{key!r}: {note}"]
    return ArraySpec(
        shape, chunks, dtype, fill, compressor, filters, order, separator, tuple(warnings)
    )


def _is_string_categorize(zarray: Mapping[str, Any]) -> bool:
    """An object array whose first filter is numcodecs' ``categorize`` with string labels
    (zarr-python 2's categoricals): its chunks decode to those strings."""
    filters = zarray.get("filters")
    first = filters[0] if isinstance(filters, list) and filters else None
    if not (isinstance(first, dict) and first.get("id") == "categorize"):
        return False
    labels = first.get("labels")
    return isinstance(labels, list) and all(isinstance(label, str) for label in labels)


def _vlen_string(zarray: dict[str, Any]) -> ZarrDtype | None:
    """``"|O"`` whose first filter is numcodecs' ``vlen-utf8``: variable-length strings.

    Raises
    ------
    UnsupportedError
        Another object array: the message names its object codec (``json2``,
        ``categorize`` ...) rather than blaming netCDF, since the limit is nczarr's
        reader, whatever the target.
    """
    if zarray["dtype"] not in ("|O", "O", "<O", ">O"):
        return None
    filters = zarray.get("filters")
    first = filters[0] if isinstance(filters, list) and filters else None
    codec = first.get("id") if isinstance(first, dict) else None
    if codec == "vlen-utf8":
        return ZarrDtype("string", "little", 1, text_storage="vlen-utf8")
    labels = first.get("labels") if codec == "categorize" and isinstance(first, dict) else None
    if _is_string_categorize(zarray):  # decodes to strings: carried as variable-length text
        return ZarrDtype("string", "little", 1, text_storage="vlen-utf8")
    what = f"object codec {codec!r}" if codec else "no object codec"
    if isinstance(labels, list):
        what += f" (string labels {labels[:5]!r}{' ...' if len(labels) > 5 else ''})"
    raise UnsupportedError(
        f"dtype {zarray['dtype']!r} with {what}: nczarr reads object arrays only as "
        "variable-length UTF-8 strings (numcodecs 'vlen-utf8'), so it cannot carry this "
        "array to any target yet; zarr-python 2 reads it"
    )
