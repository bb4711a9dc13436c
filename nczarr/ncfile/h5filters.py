"""An HDF5 dataset's filter pipeline as Zarr (numcodecs) codecs.

Pure over the filter pipeline as read from the file (``(id, values, name)`` each). Filters
with a Zarr codec that decodes the same bytes (deflate -> ``zlib``, shuffle,
fletcher32, zstd, bzip2, blosc) map one to one, in HDF5's order: the pipeline runs
fletcher32 -> shuffle -> deflate on write, so the Zarr filters list fletcher32
first. Anything else is a reason the chunks must be re-encoded.
"""

from __future__ import annotations

from typing import Any

from .values import text

__all__ = ["codecs", "reencoded_chain", "split_codecs"]

_DEFLATE, _SHUFFLE, _FLETCHER32 = 1, 2, 3
_ZSTD, _BZIP2, _BLOSC = 32015, 307, 32001
_BLOSC_NAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")
_COMPRESSORS = ("zlib", "zstd", "bz2", "blosc")


def _codec(code: int, values: tuple[int, ...], itemsize: int) -> dict[str, Any] | None:
    """The numcodecs config of one HDF5 filter, or None when it has none."""
    if code == _DEFLATE:
        return {"id": "zlib", "level": int(values[0]) if values else 6}
    if code == _SHUFFLE:
        return {"id": "shuffle", "elementsize": itemsize}
    if code == _FLETCHER32:
        return {"id": "fletcher32"}
    if code == _ZSTD:
        return {"id": "zstd", "level": int(values[0]) if values else 3}
    if code == _BZIP2:
        return {"id": "bz2", "level": int(values[0]) if values else 9}
    if code == _BLOSC and len(values) >= 7:
        return {
            "id": "blosc",
            "cname": _BLOSC_NAMES[values[6]] if values[6] < 6 else "lz4",
            "clevel": int(values[4]),
            "shuffle": int(values[5]),
            "blocksize": 0,
        }
    return None


def codecs(
    pipeline: list[tuple[int, tuple[int, ...], str]], itemsize: int
) -> tuple[list[dict[str, Any]], str | None]:
    """The stored filter ``pipeline`` as numcodecs configs in HDF5's order, and None, or
    the configs so far and the reason it has no byte-identical Zarr form."""
    out: list[dict[str, Any]] = []
    for code, values, name in pipeline:
        config = _codec(code, values, itemsize)
        if config is None:
            label = text(name) or str(code)
            return out, f"HDF5 filter {label!r} (id {code}) has no Zarr codec"
        out.append(config)
    ids = [c["id"] for c in out]
    if 4 % itemsize and "fletcher32" in ids and "shuffle" in ids[ids.index("fletcher32") :]:
        return out, (
            f"shuffle after fletcher32 on a {itemsize}-byte type leaves a buffer "
            "numcodecs' shuffle refuses"
        )
    return out, None


def split_codecs(
    configs: list[dict[str, Any]],
) -> tuple[tuple[dict[str, Any], ...], dict[str, Any] | None]:
    """``(filters, compressor)``: the last codec is the compressor when it compresses."""
    if configs and configs[-1]["id"] in _COMPRESSORS:
        return tuple(configs[:-1]), configs[-1]
    return tuple(configs), None


def reencoded_chain(
    configs: list[dict[str, Any]], itemsize: int, is_text: bool
) -> tuple[tuple[dict[str, Any], ...], dict[str, Any] | None]:
    """The codecs re-encoded chunks get: the stored ones a Zarr reader decodes (less
    fletcher32 when it made shuffle impossible), zlib when none compresses."""
    if is_text:
        return ({"id": "vlen-utf8"},), {"id": "zlib", "level": 1}
    kept = [c for c in configs if c["id"] in ("shuffle", *_COMPRESSORS)]
    if not kept or kept[-1]["id"] == "shuffle":
        kept = [{"id": "shuffle", "elementsize": itemsize}, {"id": "zlib", "level": 1}]
    return split_codecs(kept)
