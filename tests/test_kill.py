"""SIGKILL a convert and a migrate at several points; the source survives, a rerun completes.

Each run happens in a subprocess that kills itself (``os.kill(os.getpid(), SIGKILL)``)
from a progress callback or from a map that dies just before storing a chosen key,
so no cleanup code of nczarr gets a chance to run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.maps.file import FileMap

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
