"""Zarr v3 codec chains -> Zarr v2 (``order``, byte order, ``filters``, ``compressor``).

A v3 array lists its codecs as one chain: array->array codecs, exactly one
array->bytes codec, then bytes->bytes codecs. A chunk written by that chain can be
described by Zarr v2 metadata *without re-encoding* only when v2's fixed pipeline
(elements in ``order`` with the dtype's byte order, then ``filters``, then
``compressor``) produces the very same bytes. :func:`v2_pipeline` finds that
description or raises :class:`~nczarr.errors.UnsupportedError` naming the codec
(the reader then skips the array: chunk bytes are never re-encoded).

Equivalences (each checked byte for byte in ``tests/test_zarr3.py``):

* ``transpose`` -> ``order``: the identity permutation is ``"C"``, the reversed one
  ``"F"`` (a C-order serialisation of the transposed chunk is the F-order one);
  any other permutation has no v2 form;
* ``bytes`` -> the byte order of the v2 dtype (``endian``; 1-byte types have none);
* ``gzip`` -> numcodecs ``gzip`` (``level``); ``zstd`` -> numcodecs ``zstd``
  (``level``; ``checksum`` kept when true: numcodecs writes the same frame);
  ``blosc`` -> numcodecs ``blosc`` (``cname``, ``clevel``, ``shuffle`` names ->
  0/1/2, ``blocksize``; ``typesize`` only when it is not the item size, since v2
  takes it from the array); ``crc32c`` -> numcodecs ``crc32c`` (4-byte little-endian
  checksum at the end);
* zarr-python's ``numcodecs.<id>`` wrappers of bytes->bytes numcodecs codecs ->
  ``<id>`` with the same configuration;
* ``vlen-utf8`` -> the numcodecs ``vlen-utf8`` filter (dtype ``"|O"``): zarr-python 3
  encodes with numcodecs' ``VLenUTF8``.

The last bytes->bytes codec becomes the v2 ``compressor``, the earlier ones
``filters`` (v2 applies filters first, then the compressor).

Not expressible (the array is skipped): ``vlen-bytes`` and any other array->bytes
codec, other permutations, and codecs without a known numcodecs equivalent.
``sharding_indexed`` (one object holds many chunks) is not expressible either; the
reader describes a sharded array by its inner codecs and re-encodes its chunks.

The other direction, :func:`v3_codecs`, writes the chain of a Zarr v3 array that
decodes the very chunk bytes a Zarr v2 ``.zarray`` describes. It makes the choices
of zarr-python's own migration (``zarr.metadata.migrate_v3``): ``order: "F"`` ->
``transpose`` with the reversed axes, the dtype's byte order -> ``bytes``
``endian``, v2 ``blosc``/``zstd``/``gzip`` compressors -> the v3 core codecs of
the same name (they wrap the same numcodecs codec), every other numcodecs codec ->
its ``numcodecs.<id>`` wrapper (``numcodecs.zarr3``). Unlike zarr-python's
migration, which accepts only array->array v2 filters, netcdf-c's filters
(``shuffle``, ``fletcher32``, ``zlib`` ...) work on bytes, so they follow
``bytes`` as bytes->bytes codecs, before the compressor, exactly where v2 applies
them. numcodecs' array->array filters (``delta``, ``fixedscaleoffset``, ``quantize``,
``astype``, ``packbits``) leading the v2 filters become zarr-python's array->array
``numcodecs.<id>`` codecs before ``bytes``, which then writes the last filter's output
in that output's byte order (:mod:`~nczarr.translate.codecs_v3_filters` says when that
is byte-identical; elsewhere the array is refused); the v2 reader maps them back.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import MetadataError, UnsupportedError
from ..records import record
from .codecs_v3_filters import ARRAY_FILTERS, V3_NUMPY, v2_filter_endian, v3_filter_codecs

__all__ = ["V2Pipeline", "v2_pipeline", "v3_codecs", "codec_name", "BLOSC_SHUFFLE"]

#: v3 blosc shuffle names -> the integers of numcodecs' Blosc.
BLOSC_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}

#: numcodecs ids whose zarr-python v3 wrapper (``numcodecs.<id>``) is bytes->bytes and
#: encodes exactly as the v2 codec of the same id.
_NUMCODECS_BYTES = frozenset(
    {
        "zlib",
        "gzip",
        "bz2",
        "lzma",
        "lz4",
        "zstd",
        "blosc",
        "shuffle",
        "crc32",
        "crc32c",
        "adler32",
        "fletcher32",
    }
)

_ARRAY_TO_BYTES = frozenset({"bytes", "endian", "sharding_indexed", "vlen-utf8", "vlen-bytes"})


@record
class V2Pipeline:
    """The v2 description of a v3 codec chain.

    Attributes
    ----------
    order : {"C", "F"}
    endian : {"little", "big"}
    filters : tuple of dict
        numcodecs configs, applied in order before the compressor.
    compressor : dict or None
    """

    order: Literal["C", "F"]
    endian: Literal["little", "big"]
    filters: tuple[dict[str, Any], ...]
    compressor: dict[str, Any] | None


def codec_name(codec: Any) -> tuple[str, dict[str, Any]]:
    """``(name, configuration)`` of one v3 codec entry (a dict, or a bare name string).

    Raises
    ------
    MetadataError
        Neither a string nor an object with a string ``name``.
    """
    if isinstance(codec, str) and codec:
        return codec, {}
    if not isinstance(codec, dict) or not isinstance(codec.get("name"), str):
        raise MetadataError(f"codec must be a name or an object with a 'name', got {codec!r}")
    config = codec.get("configuration") or {}
    if not isinstance(config, dict):
        raise MetadataError(f"codec {codec['name']!r}: 'configuration' must be an object")
    return codec["name"], config


def _permutation_order(config: dict[str, Any], ndim: int) -> Literal["C", "F"]:
    order = config.get("order")
    if order in ("C", "F"):  # early zarr-python 3 pre-releases
        return order  # type: ignore[return-value]
    if not isinstance(order, list) or sorted(order) != list(range(ndim)):
        raise MetadataError(f"transpose order {order!r} is not a permutation of {ndim} axes")
    if order == list(range(ndim)):
        return "C"
    if order == list(range(ndim))[::-1]:
        return "F"
    raise UnsupportedError(
        f"codec 'transpose' with order {order!r} has no Zarr v2 equivalent (only the "
        "identity (C) and reversed (F) axis orders do)"
    )


def _bytes_codec(name: str, config: dict[str, Any], itemsize: int) -> dict[str, Any]:
    """The numcodecs config of one v3 bytes->bytes codec, or UnsupportedError."""
    if name == "gzip":
        return {"id": "gzip", "level": config.get("level", 5)}
    if name == "zstd":
        out: dict[str, Any] = {"id": "zstd", "level": config.get("level", 0)}
        if config.get("checksum", False):
            out["checksum"] = True
        return out
    if name == "blosc":
        shuffle = config.get("shuffle", "noshuffle")
        if shuffle not in BLOSC_SHUFFLE:
            raise MetadataError(f"codec 'blosc': unknown shuffle {shuffle!r}")
        out = {
            "id": "blosc",
            "cname": config.get("cname", "lz4"),
            "clevel": config.get("clevel", 5),
            "shuffle": BLOSC_SHUFFLE[shuffle],
            "blocksize": config.get("blocksize", 0),
        }
        typesize = config.get("typesize")
        if typesize not in (None, itemsize):
            out["typesize"] = typesize
        return out
    if name == "crc32c":
        return {"id": "crc32c"}
    if name.startswith("numcodecs.") and name.split(".", 1)[1] in _NUMCODECS_BYTES:
        return {"id": name.split(".", 1)[1], **config}
    raise UnsupportedError(f"codec {name!r} has no byte-identical Zarr v2 (numcodecs) equivalent")


def v2_pipeline(codecs: Any, *, ndim: int, itemsize: int) -> V2Pipeline:
    """Describe a v3 ``codecs`` chain in Zarr v2 terms, or refuse.

    Parameters
    ----------
    codecs : list
        The ``codecs`` of a v3 array's ``zarr.json``.
    ndim, itemsize : int
        Rank of the array and bytes per element.

    Raises
    ------
    UnsupportedError
        The chain has no byte-identical v2 equivalent; the message names the codec.
    MetadataError
        The chain is malformed (no array->bytes codec, not a list ...).
    """
    if not isinstance(codecs, list) or not codecs:
        raise MetadataError(f"'codecs' must be a non-empty list, got {codecs!r}")
    order: Literal["C", "F"] = "C"
    endian: Literal["little", "big"] = "little"
    compressors: list[dict[str, Any]] = []
    filters_first: list[dict[str, Any]] = []
    seen_bytes = False
    bytes_endian = "little"
    for entry in codecs:
        name, config = codec_name(entry)
        if not seen_bytes:
            if name == "transpose":
                step = _permutation_order(config, ndim)
                order = "F" if (order == "F") != (step == "F") else "C"
                continue
            if name == "vlen-utf8":  # numcodecs' VLenUTF8 writes the very same bytes
                filters_first.append({"id": "vlen-utf8"})
                seen_bytes = True
                continue
            if name in ("bytes", "endian"):
                value = config.get("endian", "little")
                if value not in ("little", "big"):
                    raise MetadataError(f"codec 'bytes': endian must be little or big: {value!r}")
                endian = value if itemsize > 1 else "little"
                bytes_endian = value
                seen_bytes = True
                continue
            if name.startswith("numcodecs.") and name.split(".", 1)[1] in ARRAY_FILTERS:
                filters_first.append({"id": name.split(".", 1)[1], **config})
                continue
            if name in _ARRAY_TO_BYTES:
                raise UnsupportedError(
                    f"codec {name!r} has no byte-identical Zarr v2 equivalent"
                    + (" (a shard object holds many chunks)" if name == "sharding_indexed" else "")
                )
            raise UnsupportedError(
                f"codec {name!r} (before the array->bytes codec) has no byte-identical Zarr v2 "
                "equivalent"
            )
        if name in _ARRAY_TO_BYTES or name == "transpose":
            raise MetadataError(f"codec {name!r} after the array->bytes codec")
        compressors.append(_bytes_codec(name, config, itemsize))
    if not seen_bytes:
        raise MetadataError("the codec chain has no array->bytes codec (such as 'bytes')")
    if ndim <= 1:
        order = "C"
    leading = [c for c in filters_first if c["id"] in ARRAY_FILTERS]
    if leading:
        endian = v2_filter_endian(  # type: ignore[assignment]
            leading, bytes_endian=bytes_endian, order=order, ndim=ndim, itemsize=itemsize
        )
    compressor = compressors[-1] if compressors else None
    return V2Pipeline(order, endian, (*filters_first, *compressors[:-1]), compressor)


#: numcodecs Blosc's shuffle integers -> the v3 names (inverse of :data:`BLOSC_SHUFFLE`).
_BLOSC_SHUFFLE_NAMES = {v: k for k, v in BLOSC_SHUFFLE.items()}


def _v3_codec(config: dict[str, Any], itemsize: int) -> dict[str, Any]:
    """The v3 bytes->bytes codec for one numcodecs config, or UnsupportedError."""
    codec_id = config.get("id")
    params = {k: v for k, v in config.items() if k != "id"}
    if codec_id == "gzip":
        return {"name": "gzip", "configuration": {"level": params.get("level", 1)}}
    if codec_id == "zstd":
        return {
            "name": "zstd",
            "configuration": {
                "level": params.get("level", 0),
                "checksum": bool(params.get("checksum", False)),
            },
        }
    if codec_id == "blosc":
        shuffle = params.get("shuffle", 1)
        if shuffle == -1:  # numcodecs' AUTOSHUFFLE: bit shuffle for 1-byte items, else byte
            shuffle = 2 if itemsize == 1 else 1
        if shuffle not in _BLOSC_SHUFFLE_NAMES:
            raise UnsupportedError(f"codec 'blosc' with shuffle {shuffle!r} has no v3 form")
        return {
            "name": "blosc",
            "configuration": {
                "typesize": params.get("typesize", itemsize) or itemsize,
                "cname": params.get("cname", "lz4"),
                "clevel": params.get("clevel", 5),
                "shuffle": _BLOSC_SHUFFLE_NAMES[shuffle],
                "blocksize": params.get("blocksize", 0),
            },
        }
    if codec_id == "crc32c":
        return {"name": "crc32c"}
    if codec_id in _NUMCODECS_BYTES:
        return {"name": f"numcodecs.{codec_id}", "configuration": params}
    if codec_id in ARRAY_FILTERS:
        raise UnsupportedError(
            f"codec {codec_id!r} after a bytes->bytes filter has no Zarr v3 form (v3 applies "
            "array->array codecs before the bytes codec)"
        )
    raise UnsupportedError(
        f"codec {codec_id!r} has no byte-identical Zarr v3 codec (nczarr writes v3 only "
        f"for the numcodecs codecs {', '.join(sorted(_NUMCODECS_BYTES | ARRAY_FILTERS))})"
    )


def v3_codecs(
    *,
    order: Literal["C", "F"],
    endian: Literal["little", "big"] | None,
    filters: tuple[dict[str, Any], ...] | list[dict[str, Any]],
    compressor: dict[str, Any] | None,
    ndim: int,
    itemsize: int,
    data_type: Any = None,
) -> list[dict[str, Any]]:
    """The Zarr v3 ``codecs`` chain that decodes the chunks a v2 ``.zarray`` describes.

    Parameters
    ----------
    order, filters, compressor
        As in the v2 ``.zarray`` (numcodecs configs, as the readers normalise them).
    endian
        Byte order of the elements; ``None`` for types without one (1-byte numbers,
        fixed-width bytes): the ``bytes`` codec then has no configuration.
    ndim, itemsize
        Rank of the array and bytes per element.
    data_type
        The array's v3 ``data_type``, checked against what a leading array->array
        filter takes (``None``: not checked).

    Raises
    ------
    UnsupportedError
        A filter or compressor without a byte-identical v3 codec (the message names
        it); the writer leaves the array out.

    Examples
    --------
    >>> v3_codecs(order="C", endian="big", filters=[{"id": "shuffle", "elementsize": 4}],
    ...           compressor={"id": "zlib", "level": 1}, ndim=1, itemsize=4)
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'name': 'bytes', 'configuration': {'endian': 'big'}},
     {'name': 'numcodecs.shuffle', 'configuration': {'elementsize': 4}},
     {'name': 'numcodecs.zlib', 'configuration': {'level': 1}}]
    """
    chain: list[dict[str, Any]] = []
    if order == "F" and ndim > 1:
        chain.append({"name": "transpose", "configuration": {"order": list(range(ndim))[::-1]}})
    rest = list(filters)
    leading = []
    while rest and rest[0].get("id") in ARRAY_FILTERS:
        leading.append(rest.pop(0))
    if leading:
        array = V3_NUMPY.get(data_type) if isinstance(data_type, str) else None
        if data_type is not None and array is None:
            raise UnsupportedError(
                f"codec {leading[0].get('id')!r} on data_type {data_type!r} has no v3 form"
            )
        codecs, gives = v3_filter_codecs(leading, array=array, order=order, ndim=ndim)
        chain.extend(codecs)
        # the bytes codec writes the last filter's output in its own byte order
        endian = gives.endian or (endian and "little")  # type: ignore[assignment]
        itemsize = gives.itemsize
    if endian is None:
        chain.append({"name": "bytes"})
    else:
        chain.append({"name": "bytes", "configuration": {"endian": endian}})
    for config in (*rest, *([compressor] if compressor is not None else [])):
        chain.append(_v3_codec(config, itemsize))
    return chain
