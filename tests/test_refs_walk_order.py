"""The Parquet writer of a ``.nc`` file's set when its HDF5 chunk walk does not come
in grid order: a chunk arriving after its cell was written as the fill chunk.

HDF5 promises no order for ``chunk_iter``. Every index netcdf-c writes (version 1
B-trees) walks in grid order, and so do the fixed-array, version 2 B-tree and
extensible-array indexes of ``libver="latest"`` files when the unlimited dimension is
the first; the extensible array with the unlimited dimension elsewhere walks in
another order (nczarr's own HDF5 reader reads it; HDF5 2.0 reports wrong offsets for
it, so through h5py nczarr refuses that file as a corrupt index). So the real walk of
a real file is replayed here in reverse and shuffled: the writer, fsspec's Parquet
writer and the reader are the real ones.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.errors import NCZarrWarning
from nczarr.ncfile.h5pure_nodes import PureNode
from nczarr.ncfile.h5py_nodes import H5pyNode

from .refreaders import netcdf_values, read_saved, refs_job


def _make(path: Path) -> None:
    """(t unlimited, x): 6 x 4 chunks of 1 x 2, records 2 and 4 never written; one
    variable plain, one deflated."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 8)
        v = ds.createVariable("v", "i4", ("t", "x"), chunksizes=(1, 2), fill_value=-5)
        w = ds.createVariable("w", "f4", ("t", "x"), chunksizes=(1, 2), zlib=True)
        for t in (5, 0, 3, 1):
            v[t, :] = np.arange(8) + 10 * t
            w[t, :] = np.arange(8) * 0.5 + t


#: The datasets whose walks were replayed (the patch must be the walk that runs).
_REPLAYED: list[str] = []


def _replayed(order: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every walk visit the real chunks in ``order`` ("reversed", "shuffled"),
    whichever HDF5 reader read the file."""
    for node in (PureNode, H5pyNode):
        real = node.each_chunk

        def each_chunk(ds: Any, visit: Any, real: Any = real) -> None:
            _REPLAYED.append(ds.name)
            seen: list[tuple] = []
            real(ds, lambda *chunk: seen.append(chunk))
            if order == "reversed":
                seen.reverse()
            else:
                random.Random(3).shuffle(seen)
            assert [c[0] for c in seen] != sorted(c[0] for c in seen)
            for chunk in seen:
                visit(*chunk)

        monkeypatch.setattr(node, "each_chunk", each_chunk)


@pytest.mark.parametrize("record_size", [3, 5, 100])
@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_late_chunk_replaces_its_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str, record_size: int
) -> None:
    """Chunks arriving after their cell was passed (and written as the fill chunk,
    possibly in a record file already written) read as the file's values; only the
    cells of the records never written are announced as missing."""
    path = tmp_path / "src.nc"
    _make(path)
    _REPLAYED.clear()
    _replayed(order, monkeypatch)
    out = tmp_path / "t.parq"
    with pytest.warns(NCZarrWarning) as caught:
        counts = nczarr.write_references(str(path), out, record_size=record_size)
    said = [str(w.message) for w in caught if w.category is NCZarrWarning]
    assert any("array /v: 8 chunk(s) missing" in s for s in said), said
    assert any("array /w: 8 chunk(s) missing" in s for s in said), said
    assert counts["pointers"] == 32
    assert {"/v", "/w"} <= set(_REPLAYED)  # the replayed walks are the ones that ran
    (got,) = read_saved(refs_job(out, "zarr"))
    assert got == netcdf_values(str(path), masked=False)
