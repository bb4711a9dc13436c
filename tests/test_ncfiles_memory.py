"""What a netCDF-4 source holds per chunk (issue 18: memory flat in the number of
chunks): 8 bytes of index for a variable written whole, and an HDF5 metadata cache
of a fixed size (the library's own grows to 32 MB while walking a big chunk B-tree).
Peak memory itself is measured in ``benchmarks/ncfiles.py``, not here."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np

from nczarr.ncfile.h5chunks import METADATA_CACHE_BYTES
from nczarr.ncfile.source import NetCDFFileMap
from nczarr.ncfile.streamed import StreamedNetCDFFileMap

from .ncfiles import force_h5py


def _file(path: Path) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 64)
        whole = ds.createVariable("whole", "f4", ("t", "x"), zlib=True, chunksizes=(1, 16))
        whole[:] = np.arange(50 * 64, dtype="f4").reshape(50, 64)
        part = ds.createVariable("part", "i2", ("t", "x"), chunksizes=(10, 64))
        part[0:10] = 1
        part[30:40] = 2  # chunks 1, 2 and 4 never written
    return path


def test_a_variable_written_whole_costs_8_bytes_a_chunk(tmp_path: Path) -> None:
    with NetCDFFileMap(str(_file(tmp_path / "x.nc"))) as m:
        whole = m._arrays["whole"].chunks
        assert len(whole) == 200 and whole.dense and whole.nbytes == 200 * 8
        part = m._arrays["part"].chunks
        assert list(part) == ["0.0", "3.0"] and not part.dense
        assert m["whole/49.3"] == m._io.read(whole["49.3"].offset, whole["49.3"].length)


def test_the_hdf5_metadata_cache_has_a_fixed_size(tmp_path: Path, monkeypatch) -> None:
    """When h5py reads the file (here: the numpy-free reader declines it), its chunk
    B-tree walks run with the cache bounded."""

    force_h5py(monkeypatch)
    path = str(_file(tmp_path / "x.nc"))
    for cls in (NetCDFFileMap, StreamedNetCDFFileMap):
        with cls(path) as m:
            assert m._hdf5.backend == "h5py"
            config = m._hdf5.file.id.get_mdc_config()
            assert config.max_size == config.initial_size == METADATA_CACHE_BYTES
            assert config.incr_mode == 0 and config.flash_incr_mode == 0  # never grows
            whole = {f"whole/{t}.{x}" for t in range(50) for x in range(4)}
            assert set(m) == {*whole, "part/0.0", "part/3.0"}  # the keys as before
