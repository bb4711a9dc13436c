"""Kernel copies of large chunks run in threads, at most one a core; small ones in the
calling thread (issues 18 and 20: a combine's local sources and a ``.nc`` file's byte
ranges; :func:`nczarr.maps.kernelcopy.copy_threads` decides for both). Whatever the
threads, the combined store holds every source chunk byte for byte under its shifted
key, progress is counted in order, and a failing batch stops the combine before the
root metadata is written."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

import nczarr
from nczarr.conversion import growcopy
from nczarr.maps import kernelcopy

from .growing import days, expected_temp, read_nc
from .kernelthreads import machine, serial_cases


def _copy_threads_seen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that ran each source's batch of kernel copies."""
    names: list[str] = []
    real = growcopy._copy_pairs

    def copy_pairs(*args, **kwargs):
        names.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(growcopy, "_copy_pairs", copy_pairs)
    return names


def _source_chunks(src: Path, shift: int) -> dict[str, bytes]:
    """``temp``'s chunk files of a two-day source (one chunk along time), under the
    key they take in a combine where it starts at chunk ``shift``."""
    out = {}
    for path in (src / "temp").iterdir():
        if path.name.startswith("."):
            continue
        first, _, rest = path.name.partition(".")
        out[f"{int(first) + shift}.{rest}"] = path.read_bytes()
    return out


@pytest.mark.parametrize("cores", [2, 3])
def test_large_chunks_of_later_sources_are_copied_in_threads(tmp_path, monkeypatch, cores):
    srcs = days(tmp_path, 6)
    machine(monkeypatch, cores, 8)  # these chunks are "large"
    names = _copy_threads_seen(monkeypatch)
    seen: list[tuple[int, int]] = []
    report = nczarr.convert(
        srcs,
        tmp_path / "out",
        concat_dim="time",
        workers=8,
        progress=lambda done, total: seen.append((done, total)),
    )
    me = threading.current_thread().name
    assert names[0] == me  # the first source is copied here: its sizes decide
    threaded = [n for n in names[1:] if n != me]
    assert len(threaded) == len(srcs) - 1, names
    assert all(n.startswith("nczarr-kernel") for n in threaded)
    assert len(set(threaded)) <= min(cores, 8)
    assert report.chunks_reencoded == 0
    total = report.chunks_copied
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (total, total)
    for i, src in enumerate(srcs):  # one temp chunk a source, at its shifted key
        for key, data in _source_chunks(src, i).items():
            assert (tmp_path / "out" / "temp" / key).read_bytes() == data
    got = read_nc(tmp_path / "out")
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 12))
    np.testing.assert_array_equal(got["time"], np.arange(12))


@serial_cases
def test_small_chunks_or_one_core_copy_in_the_calling_thread(
    tmp_path, monkeypatch, cores, threshold
):
    srcs = days(tmp_path, 4)
    machine(monkeypatch, cores, threshold)
    names = _copy_threads_seen(monkeypatch)
    nczarr.convert(srcs, tmp_path / "out", concat_dim="time", workers=8)
    assert names == [threading.current_thread().name] * len(srcs)
    np.testing.assert_array_equal(read_nc(tmp_path / "out")["temp"], expected_temp(0, 8))


def test_a_failing_threaded_batch_stops_the_combine_before_the_root(tmp_path, monkeypatch):
    srcs = days(tmp_path, 6)
    machine(monkeypatch, 2, 8)
    real = growcopy._copy_pairs
    calls = []

    def copy_pairs(src, dst, pairs, *rest):
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device (injected)")
        return real(src, dst, pairs, *rest)

    monkeypatch.setattr(growcopy, "_copy_pairs", copy_pairs)
    with pytest.raises(OSError, match="injected"):
        nczarr.convert(srcs, tmp_path / "out", concat_dim="time", workers=8)
    assert calls[2].startswith("nczarr-kernel")
    assert not (tmp_path / "out" / ".zgroup").exists()  # root metadata is written last
    assert not [t for t in threading.enumerate() if t.name.startswith("nczarr-kernel")]
    report = nczarr.convert(srcs, tmp_path / "out", concat_dim="time", resume=True)
    assert report.chunks_reencoded == 0
    np.testing.assert_array_equal(read_nc(tmp_path / "out")["temp"], expected_temp(0, 12))


def test_copy_threads_are_at_most_one_a_core(monkeypatch):
    monkeypatch.setattr(kernelcopy, "usable_cores", lambda: 2)
    assert [kernelcopy.copy_threads(w) for w in (1, 2, 8)] == [1, 2, 2]
    monkeypatch.setattr(kernelcopy, "usable_cores", lambda: 16)
    assert kernelcopy.copy_threads(8) == 8


def test_usable_cores_falls_back_where_the_platform_says_less(monkeypatch):
    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5})
        assert kernelcopy.usable_cores() == 3
        monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert kernelcopy.usable_cores() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # undeterminable
    assert kernelcopy.usable_cores() == 1
    monkeypatch.setattr(os, "process_cpu_count", lambda: 4, raising=False)
    assert kernelcopy.usable_cores() == 4


def test_ranges_of_one_file_copied_in_threads_without_pread(tmp_path, monkeypatch):
    """Where the platform has no ``pread`` (Windows) nor a kernel copy, threads
    copying ranges of one open file share its position: each seek and read is one
    step, or a thread reads where another sought."""
    from concurrent.futures import ThreadPoolExecutor

    for name in ("copy_file_range", "sendfile", "pread"):
        monkeypatch.delattr(os, name, raising=False)
    step = 16 * 1024
    data = os.urandom(step * 64)
    (tmp_path / "src").write_bytes(data)
    fd = os.open(tmp_path / "src", os.O_RDONLY | getattr(os, "O_BINARY", 0))

    def copy(i: int) -> bytes:
        out = tmp_path / f"r{i}"
        fd_out = os.open(out, os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        try:
            kernelcopy.copy_range(fd, fd_out, (i % 64) * step, step)
        finally:
            os.close(fd_out)
        return out.read_bytes()

    try:
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(copy, range(2048)))
    finally:
        os.close(fd)
    assert all(g == data[(i % 64) * step :][:step] for i, g in enumerate(got))
