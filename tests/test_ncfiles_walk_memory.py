"""Reading a netCDF-4 chunk index allocates nothing per chunk beyond the index itself
(issue 18: memory flat in the number of chunks): the walk's grid-order check makes
the expected chunk offsets lazily (``itertools.product`` would hold every offset
along the first axis, ~36 bytes a chunk)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import netCDF4
import numpy as np

from nczarr.ncfile.source import NetCDFFileMap


def _file(path: Path, chunks: int) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", chunks)
        ds.createDimension("x", 2)
        v = ds.createVariable("v", "f4", ("n", "x"), chunksizes=(1, 2))
        v[:] = np.arange(2 * chunks, dtype="f4").reshape(chunks, 2)
    return path


def _opened_peak(path: Path) -> tuple[int, int]:
    """Python's peak allocation while the file is opened, and its index's bytes."""
    tracemalloc.start()
    try:
        with NetCDFFileMap(str(path)) as m:
            peak = tracemalloc.get_traced_memory()[1]
            index = m._arrays["v"].chunks
            assert index.dense
            return peak, index.nbytes
    finally:
        tracemalloc.stop()


def test_the_walk_holds_nothing_per_chunk_but_the_index(tmp_path: Path) -> None:
    _opened_peak(_file(tmp_path / "warm.nc", 10))  # imports and caches: not counted
    small, small_index = _opened_peak(_file(tmp_path / "small.nc", 2_000))
    big, big_index = _opened_peak(_file(tmp_path / "big.nc", 40_000))
    per_chunk = (big - small) / 38_000
    assert (big_index - small_index) / 38_000 == 8
    assert per_chunk < 12, per_chunk  # the 8-byte index (array growth) and nothing else
