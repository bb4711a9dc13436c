"""A verbatim file -> file convert through the CLI imports none of the heavy libraries.

At 1,600 chunks ``cp -r`` costs ~65 ms of CPU; importing numpy, numcodecs, asyncio or the
remote backends costs as much again (docs/performance.md, issue 17). The command's
process is what a user runs, so the modules it imports are part of the copy floor.
These tests run the real command in a fresh interpreter on a store netcdf-c wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import zarr

from nczarr.translate.codecs import ALWAYS_REGISTERED, is_known_codec

#: Not needed to copy chunk files verbatim between two directories.
HEAVY = (
    "numpy",
    "numcodecs",
    "zarr",
    "xarray",
    "dask",
    "h5py",
    "netCDF4",
    "fsspec",
    "asyncio",
    "zipfile",
    "concurrent.futures",
    "logging",
    "shutil",
    "lzma",
    "random",
    "queue",  # the threaded copy's; a copy between directories runs in the calling thread
    "hashlib",  # loads OpenSSL; the journal's SHA-256 comes from CPython's built-in module
)

RUN = """
import json, sys
from nczarr.cli import main
assert main(sys.argv[1:]) == 0
print(json.dumps(sorted(sys.modules)))
"""


def _nczarr_store(path: Path) -> Path:
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("y", 6)
        ds.createDimension("x", 4)
        v = ds.createVariable("v", "f8", ("y", "x"), chunksizes=(3, 2), zlib=True, shuffle=True)
        v.units = "K"
        v[:] = np.arange(24.0).reshape(6, 4)
    return path


def _modules_after(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_cli_convert_file_to_file_imports_no_heavy_module(tmp_path: Path) -> None:
    src = _nczarr_store(tmp_path / "src.file")
    out = tmp_path / "out.zarr"
    loaded = _modules_after("convert", "--mode", "zarr", str(src), str(out))
    assert not [m for m in HEAVY if m in loaded]
    # the result is the dataset (zarr-python, the oracle, reads it in this process)
    assert np.array_equal(
        zarr.open_array(str(out / "v"), mode="r")[:], np.arange(24.0).reshape(6, 4)
    )


def test_cli_convert_to_nczarr_imports_no_heavy_module(tmp_path: Path) -> None:
    src = _nczarr_store(tmp_path / "src.file")
    first = tmp_path / "pure.zarr"
    _modules_after("convert", "--mode", "zarr", str(src), str(first))
    out = tmp_path / "back.file"
    loaded = _modules_after("convert", "--mode", "nczarr", str(first), str(out))
    assert not [m for m in HEAVY if m in loaded]
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
        assert np.array_equal(ds["v"][:], np.arange(24.0).reshape(6, 4))


def test_always_registered_codecs_are_registered_by_numcodecs() -> None:
    from numcodecs.registry import codec_registry

    assert set(codec_registry) >= ALWAYS_REGISTERED


@pytest.mark.parametrize("codec_id", ["zlib", "crc32c", "no-such-codec-anywhere"])
def test_is_known_codec_answers_as_the_registry(codec_id: str) -> None:
    from numcodecs.registry import codec_registry

    assert is_known_codec(codec_id) is (codec_id in codec_registry)


def _day(path: Path, day: int) -> Path:
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 4)
        t = ds.createVariable("time", "f8", ("time",), chunksizes=(1,))
        x = ds.createVariable("x", "f8", ("x",))
        v = ds.createVariable("v", "f4", ("time", "x"), chunksizes=(1, 4), zlib=True)
        t[0], x[:], v[0, :] = day, np.arange(4.0), np.arange(4.0) + day
    return path


def test_cli_aligned_combine_imports_no_heavy_module(tmp_path: Path) -> None:
    """Combining chunk-aligned sources copies chunks under shifted keys and compares the
    variables without the dimension by their bytes: numpy only when a chunk is assembled."""
    days = [str(_day(tmp_path / f"d{i}.file", i)) for i in range(3)]
    out = tmp_path / "all.file"
    loaded = _modules_after("convert", *days, str(out), "--concat-dim", "time")
    threads = ("concurrent.futures", "logging", "queue")  # the sources are copied by a thread pool
    assert not [m for m in HEAVY if m in loaded and m not in threads]
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
        assert ds["time"][:].tolist() == [0.0, 1.0, 2.0]
        assert np.array_equal(ds["v"][:], np.arange(4.0) + np.arange(3.0)[:, None])
