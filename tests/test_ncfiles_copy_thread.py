"""A local ``.nc`` file's small chunks are copied into a directory in the calling
thread, whatever ``workers`` says (issue 18: each chunk is a byte range the kernel
copies; for small chunks threads only added the interpreter's lock handoffs), and
without counting the plan's keys first; chunks averaging
``THREADED_COPY_BYTES`` or more are copied in at most one thread a core (a large
chunk's kernel copy overlaps another thread's), and a source with re-encoded chunks
or a target that is not a plain directory gets ``workers`` threads. The
chunk index's fast paths (key suffix tables, HDF5's walk taken in grid order)
serve the keys and bytes HDF5 stores, in any write order."""

from __future__ import annotations

import threading
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.conversion import apply
from nczarr.maps import kernelcopy
from nczarr.maps.file import FileMap
from nczarr.ncfile.layout import ChunkIndex, chunk_key
from nczarr.ncfile.source import NetCDFFileMap

from .ncfiles import stored_chunks


def _chunked(path: Path, *, strings: bool = False, order=None) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("y", 4)
        ds.createDimension("x", 6)
        v = ds.createVariable(
            "v", "f4", ("t", "y", "x"), compression="zlib", chunksizes=(1, 2, 3), fill_value=-1.0
        )
        for t in order if order is not None else range(5):
            v[t] = np.arange(24, dtype="f4").reshape(4, 6) + 100 * t
        if strings:
            s = ds.createVariable("s", str, ("y",))
            s[:] = np.array(["a", "bb", "ccc", "dddd"], dtype=object)
    return path


def _threads_of_copies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    real = NetCDFFileMap.copy_chunk_to

    def copy_chunk_to(self, dst, key):
        names.append(threading.current_thread().name)
        return real(self, dst, key)

    monkeypatch.setattr(NetCDFFileMap, "copy_chunk_to", copy_chunk_to)
    return names


@pytest.mark.parametrize("mode", ["nczarr", "zarr"])
def test_a_local_nc_file_is_copied_in_the_calling_thread(tmp_path, monkeypatch, mode):
    src = _chunked(tmp_path / "a.nc")
    names = _threads_of_copies(monkeypatch)
    report = nczarr.convert(str(src), str(tmp_path / "out"), mode, workers=8)
    assert report.chunks_copied == 5 * 2 * 2 == len(names)
    assert set(names) == {threading.current_thread().name}
    stored = stored_chunks(src, "v")
    if mode == "zarr":
        for key, data in stored.items():
            assert (tmp_path / "out" / "v" / key).read_bytes() == data
        values = zarr.open_group(str(tmp_path / "out"), mode="r")["v"][:]
        with netCDF4.Dataset(src) as ds:
            np.testing.assert_array_equal(values, ds["v"][:])


def test_reencoded_chunks_keep_the_copy_threads(tmp_path, monkeypatch):
    src = _chunked(tmp_path / "s.nc", strings=True)
    names = _threads_of_copies(monkeypatch)
    with pytest.warns(nczarr.NCZarrWarning):
        nczarr.convert(str(src), str(tmp_path / "out"), "zarr", workers=4)
    assert any(name.startswith("nczarr-copy-") for name in names), names
    assert threading.current_thread().name not in names


def test_the_kernel_copy_asks_for_a_plain_local_pair(tmp_path):
    src = _chunked(tmp_path / "k.nc")

    class Custom(FileMap):
        def _store(self, key, value):  # a subclass customising writes gets the bytes
            super()._store(key, value)

    with NetCDFFileMap(str(src)) as m:
        assert m.copy_threads(FileMap(str(tmp_path / "d"), "w"), 8) == 1
        assert m.copy_threads(Custom(str(tmp_path / "c"), "w"), 8) == 8
    strings = _chunked(tmp_path / "s.nc", strings=True)
    with NetCDFFileMap(str(strings)) as m:
        assert m.copy_threads(FileMap(str(tmp_path / "e"), "w"), 8) == 8


def test_large_chunks_are_copied_in_a_thread_a_core(tmp_path, monkeypatch):
    src = _chunked(tmp_path / "l.nc")
    monkeypatch.setattr(kernelcopy, "usable_cores", lambda: 2)
    with NetCDFFileMap(str(src)) as m:
        assert m.copy_threads(FileMap(str(tmp_path / "d"), "w"), 8) == 1
        monkeypatch.setattr(kernelcopy, "THREADED_COPY_BYTES", 16)  # these chunks are "large"
        assert m.copy_threads(FileMap(str(tmp_path / "d2"), "w"), 8) == 2
        assert m.copy_threads(FileMap(str(tmp_path / "d3"), "w"), 1) == 1
    names = _threads_of_copies(monkeypatch)
    report = nczarr.convert(str(src), str(tmp_path / "out"), "zarr", workers=4)
    assert report.chunks_copied == 5 * 2 * 2
    assert set(names) <= {"nczarr-copy-0", "nczarr-copy-1"}, names
    assert threading.current_thread().name not in names
    for key, data in stored_chunks(src, "v").items():
        assert (tmp_path / "out" / "v" / key).read_bytes() == data


@pytest.mark.parametrize("with_progress", [False, True])
def test_copy_threads_hand_back_one_sum_each_unless_progress_follows_each_key(
    tmp_path, monkeypatch, with_progress
):
    """Without a progress callback the calling thread sleeps through a threaded copy:
    each thread hands back one sum when done, not a result a key (1,000 wake-ups of
    the calling thread for a 400 MB ``.nc`` file); with one, every key is reported."""
    import queue

    src = _chunked(tmp_path / "q.nc")
    monkeypatch.setattr(kernelcopy, "usable_cores", lambda: 2)
    monkeypatch.setattr(kernelcopy, "THREADED_COPY_BYTES", 16)  # threads for these chunks
    handed: list[object] = []

    class Counted(queue.SimpleQueue):
        def put(self, item, *args, **kwargs):
            if item is not None:  # None: a thread says it is done
                handed.append(item)
            super().put(item, *args, **kwargs)

    monkeypatch.setattr(queue, "SimpleQueue", Counted)
    seen: list[tuple[int, int]] = []
    with NetCDFFileMap(str(src)) as m:
        keys = [k for k in m if not k.rsplit("/", 1)[-1].startswith(".")]
        stats = apply.copy_chunks(
            m,
            FileMap(str(tmp_path / "d"), "w"),
            keys,
            workers=4,
            progress=(lambda done, total: seen.append((done, total))) if with_progress else None,
        )
    assert (stats.copied, stats.skipped) == (len(keys), 0) == (20, 0)
    assert stats.bytes == sum(len(d) for d in stored_chunks(src, "v").values())
    if with_progress:
        assert len(handed) == 20 and seen == [(n, 20) for n in range(1, 21)]
    else:
        assert len(handed) == 2 and seen == []  # one sum a thread


def test_a_failing_key_feed_is_raised_not_waited_for(tmp_path, monkeypatch):
    """The keys a threaded copy takes may come from lazy listings (resume, server-side
    copies): one that fails is raised in the calling thread, which used to wait for
    ever on a worker that had died."""
    src = _chunked(tmp_path / "f.nc")
    monkeypatch.setattr(kernelcopy, "usable_cores", lambda: 2)
    monkeypatch.setattr(kernelcopy, "THREADED_COPY_BYTES", 16)

    class Failing(list):
        def __iter__(self):
            yield from list(list.__iter__(self))[:3]
            raise OSError("listing v/ failed")

    outcome: list[BaseException | object] = []

    def run() -> None:
        with NetCDFFileMap(str(src)) as m:
            keys = Failing((k, None, None) for k in m if "/." not in f"/{k}")
            try:
                apply.copy_chunks(m, FileMap(str(tmp_path / "d"), "w"), [], sized=keys)
            except BaseException as exc:
                outcome.append(exc)
            else:
                outcome.append("no error")

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(timeout=60)
    assert not runner.is_alive(), "the copy waits for a worker that died"
    assert len(outcome) == 1 and isinstance(outcome[0], OSError)
    assert str(outcome[0]) == "listing v/ failed"


class _Uncountable(list):
    def __len__(self):  # the copy must not count the keys when nothing reports them
        raise AssertionError("keys counted")


def test_the_serial_copy_does_not_count_the_keys(tmp_path):
    src = _chunked(tmp_path / "n.nc")
    with NetCDFFileMap(str(src)) as m, FileMap(str(tmp_path / "out"), "w") as dst:
        keys = _Uncountable(k for k in m)
        stats = apply.copy_chunks(m, dst, keys, workers=8)
        assert stats.copied == 20
        for key in keys:
            assert dst[key] == m[key]


@pytest.mark.parametrize("order", [[4, 0, 2], [0, 1, 3, 4], [3, 2, 1, 0]])
def test_any_write_order_indexes_the_stored_chunks(tmp_path, order):
    src = _chunked(tmp_path / "o.nc", order=order)
    stored = stored_chunks(src, "v")
    with NetCDFFileMap(str(src)) as m:
        keys = [k for k in m if k.startswith("v/")]
        assert sorted(keys) == sorted(f"v/{k}" for k in stored)
        for key, data in stored.items():
            assert m[f"v/{key}"] == data


@pytest.mark.parametrize("grid", [(3, 2, 4), (5, 1, 1), (2, 3), (2, 1025), ()])
def test_index_keys_and_lookups_match_the_coordinates(grid):
    dense, sparse = ChunkIndex(grid), ChunkIndex(grid)
    count = int(np.prod(grid)) if grid else 1
    coords = list(np.ndindex(*grid)) if grid else [()]
    for i, c in enumerate(coords):
        dense.add(tuple(c), 10 * i, 5, reencode=False)
    for i, c in reversed(list(enumerate(coords))[::2]):
        sparse.add(tuple(c), 10 * i, 5, reencode=False)
    expected = [chunk_key(tuple(int(x) for x in c)) for c in coords]
    assert list(dense) == expected and len(dense) == count
    assert list(sparse) == expected[::2]
    for i, key in enumerate(expected):
        assert dense[key].offset == 10 * i
        assert (key in sparse) == (i % 2 == 0)
    for bad in (
        "01.0.0",
        "1.00.0",
        "1.0.0.0",
        "1.",
        ".0",
        "+1.0.0",
        "1.-0.0",
        " 1.0.0",
        "\u0661.0.0",
    ):
        assert bad not in dense and bad not in sparse
    assert ".".join(str(n) for n in grid) not in dense  # one past every axis


def test_key_suffix_tables_are_shared_and_bounded():
    from nczarr.ncfile import layout

    a, b = ChunkIndex((3, 2, 4)), ChunkIndex((9, 2, 4))
    assert a._suffixes is b._suffixes and a._suffixes is not None  # one table per inner grid
    assert ChunkIndex((2, layout.SUFFIX_LIMIT + 1))._suffixes is None  # keys made per chunk
