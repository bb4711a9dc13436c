"""Per-source work of a combine done once: real paths resolved through shared parents
(:class:`nczarr.maps.overlap.RealPaths`), and later sources whose listing repeats the
previous one's (:mod:`nczarr.conversion.growsiblings`) still read as what they hold."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.maps.overlap import RealPaths

posix = pytest.mark.skipif(os.name != "posix", reason="symbolic links on POSIX")


@posix
def test_real_paths_are_realpath(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "a").mkdir(parents=True)
    (real / "b").mkdir()
    (tmp_path / "link").symlink_to(real)  # a link among the parents
    (real / "c").symlink_to(real / "a")  # a link as the last component
    (real / "d").symlink_to(tmp_path / "nowhere")  # a dangling link
    paths = [
        str(real / "a"),
        str(real / "b"),
        str(real / "c"),
        str(real / "d"),
        str(real / "missing"),
        str(tmp_path / "link" / "a"),
        str(tmp_path / "link" / "c"),
        str(tmp_path / "link" / "missing"),
        str(real / "a" / ".."),
        str(real / "a" / "."),
        str(real) + "/a/",
        str(real) + "//b",
        "relative/x",
        "/",
    ]
    resolve = RealPaths()
    for path in paths * 2:  # the second round answers from the remembered parents
        assert resolve(path) == os.path.realpath(path), path


def _day(path: Path, day: int, title: str = "daily", lat0: float = -89) -> None:
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 3)
        t = ds.createVariable("time", "f8", ("time",), chunksizes=(1,))
        t[:] = [day]
        ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(lat0, 89, 3)
        v = ds.createVariable("temp", "f4", ("time", "lat"), chunksizes=(1, 3))
        v[:] = np.full((1, 3), day, "f4")
        ds.title = title


def test_later_source_without_a_chunk(tmp_path: Path) -> None:
    """A source whose listing differs from the one before (a chunk not written) is
    planned from its own listing: its chunk is a fill value, not copied."""
    srcs = []
    for day in range(4):
        _day(tmp_path / f"d{day}", day)
        srcs.append(tmp_path / f"d{day}")
    os.remove(tmp_path / "d2" / "temp" / "0.0")
    report = nczarr.convert(srcs, tmp_path / "out", concat_dim="time")
    assert report.chunks_reencoded == 0
    assert not (tmp_path / "out" / "temp" / "2.0").exists()
    with netCDF4.Dataset(f"file://{tmp_path / 'out'}#mode=nczarr,file") as ds:
        temp = ds["temp"][:]
        assert np.ma.getmaskarray(temp)[2].all()
        assert temp[3].tolist() == [3, 3, 3]


def test_later_sources_disagreeing_are_refused(tmp_path: Path) -> None:
    """After sources read as the first's twin, one whose attribute or values differ
    is still refused, naming what differs; nothing is written."""
    srcs = []
    for day in range(5):
        _day(tmp_path / f"d{day}", day)
        srcs.append(tmp_path / f"d{day}")
    shutil.rmtree(srcs[3])
    _day(srcs[3], 3, title="other")
    with pytest.raises(nczarr.InvalidModeError, match="title"):
        nczarr.convert(srcs, tmp_path / "out", concat_dim="time")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    shutil.rmtree(srcs[3])
    _day(srcs[3], 3, lat0=-80)
    with pytest.raises(nczarr.InvalidModeError, match="'/lat'"):
        nczarr.convert(srcs, tmp_path / "out2", concat_dim="time")
    assert not (tmp_path / "out2").exists() or not any((tmp_path / "out2").iterdir())


#: Not needed to combine daily stores between directories (``concurrent.futures``
#: imports ``logging``: together ~20 ms of the command's start, 365 sources ~0.2 s).
HEAVY = (
    "numpy",
    "numcodecs",
    "zarr",
    "concurrent.futures",
    "logging",
    "pickle",
    "asyncio",
    "_hashlib",
)

RUN = """
import json, sys
from nczarr.cli import main
assert main(sys.argv[1:]) == 0
print(json.dumps(sorted(sys.modules)))
"""


def test_combine_command_imports_nothing_heavy(tmp_path: Path) -> None:
    srcs = []
    for day in range(3):
        _day(tmp_path / f"d{day}", day)
        srcs.append(str(tmp_path / f"d{day}"))
    out = subprocess.run(
        [sys.executable, "-c", RUN, "convert", *srcs, str(tmp_path / "out"), "--concat-dim=time"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    modules = set(json.loads(out.splitlines()[-1]))
    assert "nczarr.conversion.combine" in modules  # the combine ran
    assert not [m for m in HEAVY if m in modules]
    with netCDF4.Dataset(f"file://{tmp_path / 'out'}#mode=nczarr,file") as ds:
        assert ds["temp"][:, 0].tolist() == [0, 1, 2]
