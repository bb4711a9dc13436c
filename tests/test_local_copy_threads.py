"""A convert between two local directories copies by the kernel in the calling thread
while chunks are small, and in at most one thread a core once the first
:data:`~nczarr.conversion.localcopy.PROBE` copies prove them large (a large chunk's
kernel copy overlaps another's). Whatever the threads: every chunk byte for byte,
progress in order from the calling thread, a failure raised before the root metadata
is written, and a resume completes it."""

from __future__ import annotations

import threading
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.conversion import localcopy
from nczarr.maps.file import FileMap

from .kernelthreads import machine, serial_cases
from .ncoracle import nc_url

#: ``v``'s chunks: 30 along t, 2 along y.
CHUNKS = 60


def _store(path: Path) -> Path:
    """An NCZarr store written by netCDF4: ``v(t=30, y=4)`` in chunks of (1, 2)."""
    with netCDF4.Dataset(nc_url(path), "w", format="NETCDF4") as ds:
        ds.createDimension("t", 30)
        ds.createDimension("y", 4)
        v = ds.createVariable("v", "f8", ("t", "y"), chunksizes=(1, 2), zlib=True)
        v[:] = np.arange(120, dtype="f8").reshape(30, 4)
    return path


def _batches_seen(monkeypatch: pytest.MonkeyPatch) -> list[list]:
    """(thread name, keys) of each ``copy_many`` batch a convert hands a directory."""
    seen: list[tuple[str, int]] = []
    real = FileMap.copy_many

    def copy_many(self, other, keys):
        entry = [threading.current_thread().name, 0]
        seen.append(entry)

        def counted():  # lazily, as the copier hands keys over
            for key in keys:
                entry[1] += 1
                yield key

        return real(self, other, counted())

    monkeypatch.setattr(FileMap, "copy_many", copy_many)
    return seen


def test_large_chunks_are_copied_in_threads_after_the_probe(tmp_path, monkeypatch):
    src = _store(tmp_path / "src")
    machine(monkeypatch, 2, 8)  # these chunks are "large"
    seen = _batches_seen(monkeypatch)
    progress: list[tuple[str, int, int]] = []
    report = nczarr.convert(
        src,
        tmp_path / "out",
        workers=8,
        progress=lambda d, t: progress.append((threading.current_thread().name, d, t)),
    )
    me = threading.current_thread().name
    assert report.chunks_copied == CHUNKS
    assert seen[0] == [me, localcopy.PROBE]
    rest = seen[1:]
    assert sum(n for _, n in rest) == CHUNKS - localcopy.PROBE
    assert {name for name, _ in rest} <= {"nczarr-kernel_0", "nczarr-kernel_1"}, rest
    assert all(n <= localcopy.BATCH for _, n in rest)
    assert {name for name, _, _ in progress} == {me}
    done = [d for _, d, _ in progress]
    assert done == sorted(done) and done[-1] == progress[-1][2]
    for i in range(30):
        for j in range(2):
            key = f"v/{i}.{j}"
            assert (tmp_path / "out" / key).read_bytes() == (src / key).read_bytes()
    with netCDF4.Dataset(nc_url(tmp_path / "out")) as ds:
        np.testing.assert_array_equal(ds["v"][:], np.arange(120).reshape(30, 4))


@serial_cases
def test_small_chunks_or_one_core_copy_in_the_calling_thread(
    tmp_path, monkeypatch, cores, threshold
):
    src = _store(tmp_path / "src")
    machine(monkeypatch, cores, threshold)
    seen = _batches_seen(monkeypatch)
    report = nczarr.convert(src, tmp_path / "out", workers=8)
    assert report.chunks_copied == CHUNKS
    assert {name for name, _ in seen} == {threading.current_thread().name}
    with netCDF4.Dataset(nc_url(tmp_path / "out")) as ds:
        np.testing.assert_array_equal(ds["v"][:], np.arange(120).reshape(30, 4))


def test_a_failing_batch_stops_before_the_root_and_a_resume_completes(tmp_path, monkeypatch):
    src = _store(tmp_path / "src")
    machine(monkeypatch, 2, 8)
    real = localcopy._copy_batch
    calls: list[str] = []

    def copy_batch(*args):
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device (injected)")
        return real(*args)

    monkeypatch.setattr(localcopy, "_copy_batch", copy_batch)
    with pytest.raises(OSError, match="injected"):
        nczarr.convert(src, tmp_path / "out", workers=8)
    assert calls[2].startswith("nczarr-kernel")
    assert not (tmp_path / "out" / ".zgroup").exists()  # root metadata is written last
    assert not [t for t in threading.enumerate() if t.name.startswith("nczarr-kernel")]
    monkeypatch.setattr(localcopy, "_copy_batch", real)
    report = nczarr.convert(src, tmp_path / "out", resume=True)
    assert report.chunks_copied + report.chunks_skipped == CHUNKS
    with netCDF4.Dataset(nc_url(tmp_path / "out")) as ds:
        np.testing.assert_array_equal(ds["v"][:], np.arange(120).reshape(30, 4))


def _small_then_large(path: Path) -> Path:
    """``a(t=40)`` in 40 chunks of one f8 (8 bytes), then ``v(t=40, y=64)`` in 40
    chunks of 64 f8 (512 bytes), both uncompressed: plan order lists ``a`` first."""
    with netCDF4.Dataset(nc_url(path), "w", format="NETCDF4") as ds:
        ds.createDimension("t", 40)
        ds.createDimension("y", 64)
        ds.createVariable("a", "f8", ("t",), chunksizes=(1,))[:] = np.arange(40)
        v = ds.createVariable("v", "f8", ("t", "y"), chunksizes=(1, 64))
        v[:] = np.arange(40 * 64, dtype="f8").reshape(40, 64)
    return path


def test_small_chunks_listed_first_do_not_decide_for_large_ones(tmp_path, monkeypatch):
    src = _small_then_large(tmp_path / "src")
    machine(monkeypatch, 2, 256)
    seen = _batches_seen(monkeypatch)
    report = nczarr.convert(src, tmp_path / "out", workers=8)
    me = threading.current_thread().name
    assert report.chunks_copied == 80
    serial = sum(n for name, n in seen if name == me)
    assert 3 * localcopy.PROBE <= serial < 80  # the runs of a, of a and v, of v
    assert any(name.startswith("nczarr-kernel") for name, _ in seen), seen
    with netCDF4.Dataset(nc_url(tmp_path / "out")) as ds:
        np.testing.assert_array_equal(ds["v"][:], np.arange(40 * 64).reshape(40, 64))
        np.testing.assert_array_equal(ds["a"][:], np.arange(40))


def test_no_copy_thread_writes_after_a_progress_callback_raised(tmp_path, monkeypatch):
    src = _store(tmp_path / "src")
    machine(monkeypatch, 2, 8)
    real = localcopy._copy_batch

    def slow_batch(*args):  # batches still in flight when the callback raises
        threading.Event().wait(0.05)
        return real(*args)

    monkeypatch.setattr(localcopy, "_copy_batch", slow_batch)

    def progress(done, total):
        if done > localcopy.PROBE:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nczarr.convert(src, tmp_path / "out", workers=8, progress=progress)
    assert not [t for t in threading.enumerate() if t.name.startswith("nczarr-kernel")]
    written = sorted(p.name for p in (tmp_path / "out" / "v").iterdir())
    threading.Event().wait(0.2)
    assert sorted(p.name for p in (tmp_path / "out" / "v").iterdir()) == written


def test_copy_chunks_joins_its_threads_before_a_callback_error_leaves_it(tmp_path, monkeypatch):
    """While the error's traceback is alive (an ``except`` block of the caller), no
    copy thread runs or writes any more."""
    from nczarr.conversion.apply import copy_chunks

    src = _store(tmp_path / "src")
    machine(monkeypatch, 2, 8)
    real = localcopy._copy_batch

    def slow_batch(*args):
        threading.Event().wait(0.05)
        return real(*args)

    monkeypatch.setattr(localcopy, "_copy_batch", slow_batch)

    def progress(done, total):
        if done > localcopy.PROBE:
            raise RuntimeError("progress failed")

    keys = [f"v/{i}.{j}" for i in range(30) for j in range(2)]
    with FileMap(str(src), "r") as s, FileMap(str(tmp_path / "out"), "w") as d:
        try:
            copy_chunks(s, d, keys, workers=8, progress=progress)
        except RuntimeError:
            alive = [t.name for t in threading.enumerate() if t.name.startswith("nczarr-kernel")]
            written = sorted(p.name for p in (tmp_path / "out" / "v").iterdir())
            threading.Event().wait(0.2)
            assert not alive
            assert sorted(p.name for p in (tmp_path / "out" / "v").iterdir()) == written
        else:
            raise AssertionError("the callback's error was not raised")


def test_a_map_taking_every_key_at_once_loses_none(tmp_path, monkeypatch):
    """A directory map's ``copy_many`` may take its keys ahead of its copies: whatever
    it took is copied by it, whether or not threads would take over."""
    src = _store(tmp_path / "src")
    machine(monkeypatch, 2, 8)
    real = FileMap.copy_many

    def eager(self, other, keys):
        return real(self, other, list(keys))

    monkeypatch.setattr(FileMap, "copy_many", eager)
    report = nczarr.convert(src, tmp_path / "out", workers=8)
    assert report.chunks_copied == CHUNKS
    for i in range(30):
        for j in range(2):
            key = f"v/{i}.{j}"
            assert (tmp_path / "out" / key).read_bytes() == (src / key).read_bytes()
