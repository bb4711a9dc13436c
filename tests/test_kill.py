"""SIGKILL a convert and a migrate at several points; the source survives, a rerun completes.

Each run happens in a subprocess that kills itself (``os.kill(os.getpid(), SIGKILL)``)
from a progress callback or from a map that dies just before storing a chosen key,
so no cleanup code of nczarr gets a chance to run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.conversion.journal import JOURNAL_KEY
from nczarr.maps.file import TEMP_PREFIX, FileMap

DATA = Path(__file__).parent / "data"

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import nczarr
    from nczarr.maps.file import FileMap

    what, src, dst, point = sys.argv[1:5]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def after(n):
        def progress(done, total):
            if done >= n:
                die()
        return progress

    class Dying(FileMap):
        def _store(self, key, value):
            if key == point:
                die()
            super()._store(key, value)

    if what == "convert-chunks":
        nczarr.convert(src, dst, mode="zarr", workers=4, progress=after(int(point)))
    elif what == "convert-key":
        nczarr.convert(src, Dying(dst, mode="a"), mode="zarr", workers=4)
    elif what == "migrate":
        nczarr.migrate(src, progress=after(int(point)))
    print("finished")
    """
)


# real SIGKILLs of subprocesses: the newest-Python CI run leaves these to the floor run
pytestmark = pytest.mark.long


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "victim.py"
    script.write_text(SCRIPT)
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120
    )


def _tree(root: Path) -> dict[str, bytes]:
    """Every key the directory holds, as nczarr's FileMap sees it (temp files excluded)."""
    if not root.exists():
        return {}
    with FileMap(root, mode="r") as m:
        return {k: m[k] for k in m}


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """An NCZarr store written by libnetcdf with 52 chunk objects."""
    path = tmp_path_factory.mktemp("kill") / "src.file"
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("y", 8)
        ds.createDimension("x", 10)
        v = ds.createVariable("v", "f8", ("y", "x"), chunksizes=(1, 2), zlib=True)
        v[:] = np.arange(80.0).reshape(8, 10) / 7
        g = ds.createGroup("g")
        w = g.createVariable("w", "i4", ("x",), chunksizes=(1,))
        w[:] = np.arange(10) * 3
        w.note = "in g"
    return path


@pytest.fixture(scope="module")
def reference(source, tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("ref") / "out.zarr"
    report = nczarr.convert(str(source), str(out), mode="zarr")
    assert report.chunks_copied == 50
    return _tree(out)


def _assert_incomplete(dst: Path) -> None:
    import zarr

    assert not (dst / ".zgroup").exists()
    with pytest.raises(Exception):  # noqa: B017 - any failure to open is what we want
        zarr.open_group(str(dst), mode="r")


@pytest.mark.parametrize("after", [1, 25, 50])
def test_convert_killed_during_chunks_then_resumed(after, source, reference, tmp_path):
    before = _tree(source)
    dst = tmp_path / "dst.zarr"
    proc = _run(tmp_path, "convert-chunks", str(source), str(dst), str(after))
    assert proc.returncode == -9, proc.stderr
    assert "finished" not in proc.stdout
    assert _tree(source) == before
    partial = _tree(dst)
    assert len(partial) >= after
    assert all(not k.rsplit("/", 1)[-1].startswith(".z") for k in partial)
    _assert_incomplete(dst)
    report = nczarr.convert(str(source), str(dst), mode="zarr", resume=True)
    assert report.chunks_skipped >= after  # every chunk reported done was complete
    assert report.chunks_skipped + report.chunks_copied == 50
    assert _tree(dst) == reference


@pytest.mark.parametrize("key", ["g/w/.zarray", "v/.zattrs", ".zattrs", ".zgroup"])
def test_convert_killed_during_metadata_then_resumed(key, source, reference, tmp_path):
    before = _tree(source)
    dst = tmp_path / "dst.zarr"
    proc = _run(tmp_path, "convert-key", str(source), str(dst), key)
    assert proc.returncode == -9, proc.stderr
    assert _tree(source) == before
    assert key not in _tree(dst)
    _assert_incomplete(dst)
    again = nczarr.convert(str(source), str(dst), mode="zarr", resume=True)
    assert again.chunks_skipped == 50 and again.chunks_copied == 0
    assert _tree(dst) == reference


def test_kill_leaves_target_refused_without_resume(source, tmp_path):
    dst = tmp_path / "dst.zarr"
    proc = _run(tmp_path, "convert-chunks", str(source), str(dst), "3")
    assert proc.returncode == -9
    with pytest.raises(nczarr.TargetExistsError, match="resume=True"):
        nczarr.convert(str(source), str(dst), mode="zarr")


def _is_metadata(key: str) -> bool:
    name = key.rsplit("/", 1)[-1]
    return name.startswith((".z", ".ncz"))


def _legacy(where: Path) -> Path:
    with zipfile.ZipFile(DATA / "ref_oldformat_v1.zip") as zf:
        top = zf.namelist()[0].split("/")[0]
        zf.extractall(where)
    return where / top


def test_migrate_killed_at_every_step_then_rerun(tmp_path):
    expected_store = _legacy(tmp_path / "expected")
    plan = nczarr.migrate(str(expected_store), dry_run=True)
    steps = len(plan.planned_keys) + len(plan.deleted_keys)
    nczarr.migrate(str(expected_store))
    expected = _tree(expected_store)
    assert steps >= 8
    points = sorted({1, 2, len(plan.planned_keys) - 1, len(plan.planned_keys), steps - 1})
    for point in points:
        store = _legacy(tmp_path / f"k{point}")
        chunks = {k: v for k, v in _tree(store).items() if not _is_metadata(k)}
        proc = _run(tmp_path, "migrate", str(store), "-", str(point))
        assert proc.returncode == -9, (point, proc.stderr)
        # still readable: the same variables as before
        model = nczarr.read(str(store))
        assert sorted(v.path for v in model.root.all_variables()) == ["/g1/pos", "/lat"]
        tree = _tree(store)
        assert {k: v for k, v in tree.items() if not _is_metadata(k)} == chunks
        nczarr.migrate(str(store))
        assert _tree(store) == expected, point
        assert os.path.exists(store / ".zgroup")


# ------------------------------------------------------------------ the real command, SIGKILLed
# SIGKILL of the real `nczarr` command at seeded random moments (anywhere from interpreter
# start-up to after the last write), then a rerun / --resume: the result must be byte for
# byte what an uninterrupted run gives, the source untouched, no temporaries left.
# NCZARR_KILL_RUNS=<n> runs n seeds per scenario instead of the default few.

KILL_RUNS = int(os.environ.get("NCZARR_KILL_RUNS", "3"))
ROOT = Path(__file__).resolve().parent.parent


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "nczarr.cli", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _finish(*args: str) -> None:
    proc = subprocess.run(_command(*args), capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr


def _kill_at(delay: float, *args: str, after: Path | None = None) -> bool:
    """Start the command and SIGKILL it ``delay`` s later -- counted from when ``after``
    appears, if given (so the kill lands among the writes, not in interpreter start-up).
    Returns whether the command was still running when killed."""
    import time

    proc = subprocess.Popen(
        _command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env()
    )
    if after is not None:
        deadline = time.monotonic() + 60
        while not after.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
    time.sleep(delay)
    alive = proc.poll() is None
    if alive:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=300)
    return alive


def _moment(rng: Any, seconds: float, dst: Path) -> dict[str, Any]:
    """A seeded kill moment: half of them anywhere in the run (start-up included), half
    counted from the target's creation (among the writes)."""
    if rng.random() < 0.5:
        return {"delay": rng.uniform(0.0, seconds * 1.1)}
    return {"delay": rng.uniform(0.0, seconds * 0.6), "after": dst}


def _temporaries(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(TEMP_PREFIX)]


@pytest.fixture(scope="module")
def big_source(tmp_path_factory) -> Path:
    """An NCZarr store with 1,610 chunk objects (a kill window worth hitting)."""
    path = tmp_path_factory.mktemp("bigkill") / "big.file"
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 40)
        v = ds.createVariable("v", "i4", ("t", "x"), chunksizes=(1, 1))
        v[:] = np.arange(1600).reshape(40, 40)
        g = ds.createGroup("g")
        w = g.createVariable("w", "f8", ("x",), chunksizes=(4,))
        w[:] = np.linspace(0, 1, 40)
    return path


@pytest.fixture(scope="module")
def big_reference(big_source, tmp_path_factory) -> tuple[dict[str, bytes], float]:
    """The uninterrupted result, and how long the command took."""
    import time

    out = tmp_path_factory.mktemp("bigref") / "out.zarr"
    start = time.perf_counter()
    _finish("convert", str(big_source), str(out), "--mode", "zarr")
    return _tree(out), time.perf_counter() - start


@pytest.mark.parametrize("seed", range(KILL_RUNS))
def test_cli_convert_sigkilled_at_random_then_resumed(seed, big_source, big_reference, tmp_path):
    import random

    reference, seconds = big_reference
    rng = random.Random(seed)
    before = _tree(big_source)
    dst = tmp_path / "dst.zarr"
    _kill_at(
        rng.uniform(0.0, seconds * 1.1), "convert", str(big_source), str(dst), "--mode", "zarr"
    )
    if rng.random() < 0.5:  # kill the resume too
        _kill_at(
            rng.uniform(0.0, seconds),
            "convert",
            str(big_source),
            str(dst),
            "--mode",
            "zarr",
            "--resume",
        )
    _finish("convert", str(big_source), str(dst), "--mode", "zarr", "--resume")
    assert _tree(dst) == reference
    assert _tree(big_source) == before
    assert _temporaries(dst) == []


@pytest.mark.parametrize("seed", range(KILL_RUNS))
def test_cli_overwrite_sigkilled_at_random_then_resumed(seed, big_source, big_reference, tmp_path):
    import random

    reference, seconds = big_reference
    rng = random.Random(1000 + seed)
    dst = tmp_path / "dst.zarr"
    # an older target with chunks of the same sizes and other bytes
    old = {
        k: (bytes(len(v)) if "/" in k and not k.rsplit("/", 1)[1].startswith(".") else v)
        for k, v in reference.items()
    }
    with FileMap(dst, mode="a") as m:
        for key, value in old.items():
            m[key] = value
    args = ("convert", str(big_source), str(dst), "--mode", "zarr")
    moment = _moment(rng, seconds, dst / JOURNAL_KEY)  # the journal: the old content is gone
    _kill_at(moment.pop("delay"), *args, "--overwrite", **moment)
    proc = subprocess.run(
        _command(*args, "--resume"), capture_output=True, text=True, env=_env(), timeout=300
    )
    if proc.returncode != 0:
        # killed before the old content was gone: resume refuses, overwrite finishes the job
        assert "cannot resume" in proc.stderr or "differs" in proc.stderr, proc.stderr
        _finish(*args, "--overwrite")
    assert _tree(dst) == reference
    assert _temporaries(dst) == []


@pytest.mark.parametrize("seed", range(KILL_RUNS))
def test_cli_migrate_sigkilled_at_random_then_rerun(seed, tmp_path):
    import random
    import time

    expected_store = _legacy(tmp_path / "expected")
    start = time.perf_counter()
    _finish("migrate", str(expected_store))
    seconds = time.perf_counter() - start
    expected = _tree(expected_store)
    rng = random.Random(2000 + seed)
    store = _legacy(tmp_path / "victim")
    chunks = {k: v for k, v in _tree(store).items() if not _is_metadata(k)}
    _kill_at(rng.uniform(0.0, seconds * 1.1), "migrate", str(store))
    model = nczarr.read(str(store))  # readable whenever it was killed
    assert sorted(v.path for v in model.root.all_variables()) == ["/g1/pos", "/lat"]
    _finish("migrate", str(store))
    tree = _tree(store)
    assert tree == expected
    assert {k: v for k, v in tree.items() if not _is_metadata(k)} == chunks
    assert _temporaries(store) == []
