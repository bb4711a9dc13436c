"""numcodecs' array->array filters in Zarr v3: zarr-python's ``numcodecs.<id>`` codecs.

zarr-python 2 archives use numcodecs filters that turn one array into another
before the compressor: ``delta``, ``fixedscaleoffset``, ``quantize``, ``astype``,
``packbits``. zarr-python 3 (``zarr.codecs.numcodecs``, formerly ``numcodecs.zarr3``)
registers each as a v3 array->array codec named ``numcodecs.<id>`` whose
configuration is the numcodecs config without ``id``, and encodes with the very
numcodecs codec. So a chunk a v2 ``.zarray`` describes as ``filters: [f1 ... fn],
compressor: c`` is decoded byte for byte by the v3 chain ``numcodecs.f1 ...
numcodecs.fn, bytes, c`` when:

* the chunk is in C order (or has one axis): zarr-python hands the filters C-order
  chunks;
* the first filter takes the array's own type, little-endian (zarr-python 3 hands
  filters native little-endian chunks; a v2 filter reinterprets the chunk bytes as
  its ``dtype``), and every filter takes the type the one before gives;
* the ``bytes`` codec writes the last filter's output in that output's byte order
  (it would otherwise byte-swap what the filter wrote);
* ``quantize`` keeps its type (``astype`` equal to ``dtype``): zarr-python's
  ``numcodecs.quantize`` does not tell the ``bytes`` codec about another one.

What each filter takes and gives (numcodecs' ``encode``): ``delta`` and
``fixedscaleoffset`` and ``quantize`` take ``dtype`` and give ``astype``
(``dtype`` when absent); ``astype`` takes ``decode_dtype`` and gives
``encode_dtype``; ``packbits`` takes bool and gives bytes (``uint8``).

Elsewhere (F order, a big-endian input, types that do not chain, an array->array
filter after a bytes->bytes one) there is no byte-identical v3 form and the
functions here raise :class:`~nczarr.errors.UnsupportedError` naming the codec.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import UnsupportedError
from ..records import record

__all__ = [
    "ARRAY_FILTERS",
    "FilterType",
    "v3_filter_codecs",
    "v2_filter_endian",
    "parse_type",
    "V3_NUMPY",
]

#: numcodecs array->array filters with a zarr-python ``numcodecs.<id>`` v3 codec.
ARRAY_FILTERS = frozenset({"delta", "fixedscaleoffset", "quantize", "astype", "packbits"})

_NAMED = re.compile(r"^(bool|u?int(8|16|32|64)|float(16|32|64))$")
_TYPESTR = re.compile(r"^([<>|=]?)([biuf])(\d+)$")

#: Zarr v3 ``data_type`` -> (kind, itemsize) of the numpy type zarr-python uses.
V3_NUMPY = {
    "bool": ("b", 1),
    **{f"int{8 * n}": ("i", n) for n in (1, 2, 4, 8)},
    **{f"uint{8 * n}": ("u", n) for n in (1, 2, 4, 8)},
    **{f"float{8 * n}": ("f", n) for n in (2, 4, 8)},
}


@record
class FilterType:
    """A numpy type as a filter configuration names it (``"<f8"``, ``"int32"``, ``"|b1"``).

    Attributes
    ----------
    kind : str
        numpy's kind letter (``b``, ``i``, ``u``, ``f``).
    itemsize : int
    endian : {"little", "big"} or None
        ``None`` for one-byte types (no byte order).
    """

    kind: str
    itemsize: int
    endian: str | None

    def same_type(self, other: FilterType) -> bool:
        """The same numbers (kind and size), whatever the byte order."""
        return (self.kind, self.itemsize) == (other.kind, other.itemsize)

    def __str__(self) -> str:
        order = {"little": "<", "big": ">", None: "|"}[self.endian]
        return f"{order}{self.kind}{self.itemsize}"


def parse_type(text: Any) -> FilterType:
    """The :class:`FilterType` of a numpy type string, or UnsupportedError.

    Names without a byte order (``"float64"``, ``"=f8"``, ``"f8"``) are numpy's native
    order, little-endian on every platform nczarr runs on.
    """
    if isinstance(text, str) and _NAMED.match(text):
        kind, size = V3_NUMPY[text]
        return FilterType(kind, size, "little" if size > 1 else None)
    match = _TYPESTR.match(text) if isinstance(text, str) else None
    if match is None:
        raise UnsupportedError(f"filter type {text!r} is not a number type nczarr knows")
    order, kind, size = match.group(1), match.group(2), int(match.group(3))
    endian = None if size == 1 else ("big" if order == ">" else "little")
    return FilterType(kind, size, endian)


def filter_types(config: dict[str, Any]) -> tuple[FilterType, FilterType]:
    """``(takes, gives)`` of one array->array filter's encode, or UnsupportedError."""
    codec_id = config.get("id")
    if codec_id == "packbits":
        return FilterType("b", 1, None), FilterType("u", 1, None)
    if codec_id == "astype":
        return parse_type(config.get("decode_dtype")), parse_type(config.get("encode_dtype"))
    if codec_id not in ("delta", "fixedscaleoffset", "quantize"):
        raise UnsupportedError(f"codec {codec_id!r} is not an array->array filter with a v3 form")
    dtype = config.get("dtype")
    takes, gives = parse_type(dtype), parse_type(config.get("astype") or dtype)
    if codec_id == "quantize" and str(gives) != str(takes):
        raise UnsupportedError(
            f"codec 'quantize' with astype {config.get('astype')!r} other than dtype {dtype!r} "
            "has no Zarr v3 form (zarr-python's numcodecs.quantize keeps the type)"
        )
    return takes, gives


def _chain(
    configs: list[dict[str, Any]] | tuple[dict[str, Any], ...],
    array: tuple[str, int] | None,
    order: str,
    ndim: int,
) -> FilterType:
    """Check that ``configs`` chain byte-identically (see the module); the last output."""
    names = ", ".join(repr(c.get("id")) for c in configs)
    if order == "F" and ndim > 1:
        raise UnsupportedError(f"codec {names} on an F-order array has no byte-identical v3 form")
    takes, gives = filter_types(configs[0])
    if array is not None and (takes.kind, takes.itemsize) != array:
        raise UnsupportedError(
            f"codec {configs[0].get('id')!r} takes {takes} but the array holds "
            f"{array[0]}{array[1]}: no byte-identical v3 form"
        )
    if takes.endian == "big":
        raise UnsupportedError(
            f"codec {configs[0].get('id')!r} takes big-endian {takes}: zarr-python 3 hands "
            "filters little-endian chunks, so it has no byte-identical v3 form"
        )
    for config in configs[1:]:
        takes, next_gives = filter_types(config)
        if str(takes) != str(gives):
            raise UnsupportedError(
                f"codec {config.get('id')!r} takes {takes} after a filter giving {gives}: "
                "no byte-identical v3 form"
            )
        gives = next_gives
    return gives


def v3_filter_codecs(
    configs: list[dict[str, Any]] | tuple[dict[str, Any], ...],
    *,
    array: tuple[str, int] | None,
    order: str,
    ndim: int,
) -> tuple[list[dict[str, Any]], FilterType]:
    """The v3 codecs of the leading array->array filters of a v2 array.

    Parameters
    ----------
    configs : sequence of dict
        The numcodecs configs (non-empty), each ``id`` in :data:`ARRAY_FILTERS`.
    array : (kind, itemsize) or None
        The array's numbers (``("f", 8)``), checked against the first filter's input.
    order, ndim
        The v2 ``order`` and the rank.

    Returns
    -------
    (list of dict, FilterType)
        The ``numcodecs.<id>`` codecs, and the type the ``bytes`` codec serialises.

    Raises
    ------
    UnsupportedError
        No byte-identical v3 form; the message names the codec.
    """
    gives = _chain(configs, array, order, ndim)
    codecs = [
        {"name": f"numcodecs.{c['id']}", "configuration": {k: v for k, v in c.items() if k != "id"}}
        for c in configs
    ]
    return codecs, gives


def v2_filter_endian(
    configs: list[dict[str, Any]] | tuple[dict[str, Any], ...],
    *,
    bytes_endian: str,
    order: str,
    ndim: int,
    itemsize: int,
) -> str:
    """The byte order of the v2 array whose filters are a v3 chain's ``numcodecs.<id>``.

    The v3 chain ``configs``, ``bytes`` (``bytes_endian``) must be what
    :func:`v3_filter_codecs` writes; a v2 filter reinterprets the chunk as its input
    type, so the v2 array is little-endian (its first filter's input).

    Raises
    ------
    UnsupportedError
        The chain has no byte-identical v2 form; the message names the codec.
    """
    gives = _chain(configs, None, order, ndim)
    first = filter_types(configs[0])[0]
    if first.itemsize != itemsize:
        raise UnsupportedError(
            f"codec {configs[0].get('id')!r} takes {first} on an array of {itemsize}-byte "
            "items: no byte-identical Zarr v2 form"
        )
    if gives.endian is not None and gives.endian != bytes_endian:
        raise UnsupportedError(
            f"codec 'bytes' writes {bytes_endian}-endian what codec {configs[-1].get('id')!r} "
            f"gives as {gives}: no byte-identical Zarr v2 form"
        )
    return "little"
