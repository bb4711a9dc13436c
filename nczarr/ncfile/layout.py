"""Where a netCDF file's chunks are: what the HDF5 and netCDF-3 readers both produce.

Pure: a :class:`SourceArray` per variable says, for each Zarr chunk key
(``"0.1"``, ``"0"`` for a scalar), which bytes of the file hold that chunk
(:class:`ChunkRef`). Contiguous data (netCDF-3 fixed variables, HDF5 contiguous
datasets) is cut along the first dimension into chunks of about
:data:`TARGET_CHUNK_BYTES` (:func:`cut_contiguous`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "DEFAULT_FILLS",
    "TARGET_CHUNK_BYTES",
    "ChunkRef",
    "SourceArray",
    "chunk_key",
    "cut_contiguous",
]

#: Size aimed at when cutting contiguous data into chunks (raw bytes).
TARGET_CHUNK_BYTES = 4 * 2**20

#: netCDF's default fill values (netcdf.h ``NC_FILL_*``), used when a variable has no
#: ``_FillValue``; float's is the float32 nearest 9.9692099683868690e+36.
DEFAULT_FILLS: dict[str, object] = {
    "byte": -127,
    "ubyte": 255,
    "short": -32767,
    "ushort": 65535,
    "int": -2147483647,
    "uint": 4294967295,
    "int64": -9223372036854775806,
    "uint64": 18446744073709551614,
    "float": 9.969209968386869e36,
    "double": 9.969209968386869e36,
    "char": "",
    "string": "",
}


class ChunkRef(NamedTuple):
    """A chunk's bytes: ``length`` bytes at ``offset`` of the file, then ``pad``
    bytes of fill (the ragged end of cut contiguous data), or, with ``reencode``,
    bytes the reader makes from the chunk's values. (A named tuple: a file's index
    holds one per chunk, made at open.)"""

    offset: int
    length: int
    pad: int = 0
    reencode: bool = False

    @property
    def size(self) -> int:
        return self.length + self.pad


@dataclass
class SourceArray:
    """One variable's chunks: Zarr chunk key -> :class:`ChunkRef`.

    ``fill`` is one value's bytes as stored (for padding); ``reason`` says why some
    or all chunks are re-encoded (None: all verbatim).
    """

    path: str  # key prefix, "g/v"
    chunks: dict[str, ChunkRef] = field(default_factory=dict)
    fill: bytes = b""
    reason: str | None = None


def chunk_key(coords: tuple[int, ...]) -> str:
    """The Zarr v2 chunk key of chunk ``coords`` (``"0"`` for a scalar)."""
    return ".".join(str(c) for c in coords) if coords else "0"


def rows_per_chunk(shape: tuple[int, ...], itemsize: int, target: int = TARGET_CHUNK_BYTES) -> int:
    """How many leading-dimension rows make a chunk of about ``target`` bytes."""
    row = itemsize * math.prod(shape[1:])
    if not shape or shape[0] == 0:
        return 1
    return max(1, min(shape[0], target // max(row, 1)))


def cut_contiguous(
    offset: int, shape: tuple[int, ...], itemsize: int, rows: int
) -> dict[str, ChunkRef]:
    """Chunks of ``rows`` leading rows of C-order data at ``offset``; the last one is
    padded with fill to a whole chunk (Zarr chunks all have the chunk shape)."""
    if not shape:
        return {"0": ChunkRef(offset, itemsize)}
    row = itemsize * math.prod(shape[1:])
    out: dict[str, ChunkRef] = {}
    if row == 0:
        return out
    tail = (0,) * (len(shape) - 1)
    for i, start in enumerate(range(0, shape[0], rows)):
        n = min(rows, shape[0] - start)
        out[chunk_key((i, *tail))] = ChunkRef(offset + start * row, n * row, (rows - n) * row)
    return out
