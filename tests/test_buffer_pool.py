"""Large-chunk reads reuse their decode buffers from one read to the next, and undo
the shuffle in blocks, with zarr's values.

A 4 MB buffer allocated afresh for every read came back as new pages whenever the C
allocator had returned its memory meanwhile (page faults on every write, in some
processes and not others); :mod:`nczarr.integrations.bufferpool` keeps a bounded set
of idle buffers instead. Unshuffling a whole chunk one byte plane at a time wrote the
whole output once per byte of an element; it is now done a block of rows at a time.
Differential against zarr-python's own pipeline.
"""

from __future__ import annotations

import os
import threading
import warnings
import zlib

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from nczarr import inflate
from nczarr.integrations import bufferpool, chunkcodec, fastpipeline
from nczarr.integrations.bufferpool import BufferPool
from nczarr.integrations.calling_thread import get_basic_selection

from .v2pairs import v2_pair


def test_a_buffer_given_back_is_the_next_taken_of_its_size() -> None:
    pool = BufferPool(1 << 20)
    first = pool.take(4096)
    assert first.dtype == np.uint8 and first.shape == (4096,)
    pool.give(first)
    assert pool.held == 4096
    assert pool.take(8192) is not first  # another size: a new buffer
    assert pool.take(4096) is first
    assert pool.held == 0
    assert pool.take(4096) is not first  # taken: not handed out twice


def test_the_pool_keeps_no_more_idle_bytes_than_its_bound() -> None:
    pool = BufferPool(10_000)
    kept, over = pool.take(6000), pool.take(6000)
    pool.give(kept)
    pool.give(over)  # 12,000 idle bytes would pass the bound: let go
    assert pool.held == 6000
    assert pool.take(6000) is kept and pool.take(6000) is not over
    pool.give(pool.take(20_000))  # larger than the bound: never kept
    assert pool.held == 0
    pool.give(kept)
    pool.clear()
    assert pool.held == 0 and pool.take(6000) is not kept


def test_a_pool_of_no_bytes_keeps_nothing() -> None:
    pool = BufferPool(0)
    buffer = pool.take(100)
    pool.give(buffer)
    assert pool.held == 0 and pool.take(100) is not buffer


def test_threads_never_share_a_taken_buffer() -> None:
    pool = BufferPool(1 << 22)
    errors: list[str] = []

    def work(slot: int) -> None:
        for _ in range(300):
            buffer = pool.take(1024)
            buffer[:] = slot  # another thread holding it would change it
            if not (buffer == slot).all():
                errors.append(f"buffer shared with thread {slot}")
            pool.give(buffer)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pool.held <= 4 * 1024


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_a_forked_child_takes_buffers_though_a_thread_held_the_lock_at_fork() -> None:
    pool = bufferpool.POOL
    kept = pool.take(4096)
    pool.give(kept)
    with pool._lock, warnings.catch_warnings():  # a thread holding it at the fork
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
        pid = os.fork()
        if pid == 0:  # the child: the lock is new (else take() would wait forever)
            code = 3
            try:
                if not pool._lock.acquire(blocking=False):
                    code = 2
                else:
                    pool._lock.release()
                    code = 0 if pool.held == 0 and pool.take(4096) is not kept else 1
            finally:
                os._exit(code)  # never back into pytest
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert pool.take(4096) is kept  # the parent's pool is as it was


def _pair(dtype, order, filters, shape, chunks):
    """The same zlib array in two stores: (nczarr's pipeline, zarr's own), its values."""
    values = np.round(np.random.default_rng(5).normal(size=shape) * 10, 2).astype(dtype)
    compressor = numcodecs.Zlib(level=1)
    fast, ref = v2_pair(
        values, chunks, order=order, compressor=compressor, filters=filters, fill_value=7
    )
    return fast, ref, values


@pytest.fixture
def pool(monkeypatch) -> BufferPool:
    """A fresh pool in place of the shared one, recording the buffers it hands out."""
    fresh = BufferPool(bufferpool.POOL_BYTES)
    monkeypatch.setattr(chunkcodec, "POOL", fresh)
    return fresh


def _taken(pool: BufferPool, monkeypatch) -> list[int]:
    addresses: list[int] = []
    real = pool.take

    def take(nbytes: int) -> np.ndarray:
        buffer = real(nbytes)
        addresses.append(buffer.ctypes.data)
        return buffer

    monkeypatch.setattr(pool, "take", take)
    return addresses


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_second_read_decodes_into_the_first_reads_buffers(pool, monkeypatch, order) -> None:
    reader, ref, values = _pair("<f4", order, [numcodecs.Shuffle(4)], (700, 610), (300, 512))
    np.testing.assert_array_equal(ref[...], values)
    taken = _taken(pool, monkeypatch)
    with zarr.config.set({"threading.max_workers": 1}):
        np.testing.assert_array_equal(get_basic_selection(reader, ...), values)
        first = list(taken)
        assert first and pool.held == len(first) * 4 * 300 * 512  # all given back
        taken.clear()
        np.testing.assert_array_equal(get_basic_selection(reader, ...), values)
    assert sorted(taken) == sorted(first)


def test_a_read_that_fails_gives_no_buffer_back(pool, monkeypatch) -> None:
    reader, _ref, values = _pair("<f4", "C", [numcodecs.Shuffle(4)], (700, 610), (300, 512))
    zmap = reader.store.zmap
    good = zmap["1.1"]
    zmap["1.1"] = good[: len(good) // 2]  # truncated: the read fails on it
    with zarr.config.set({"threading.max_workers": 1}), pytest.raises(zlib.error):
        get_basic_selection(reader, ...)
    assert pool.held == 0
    zmap["1.1"] = good
    with zarr.config.set({"threading.max_workers": 1}):
        np.testing.assert_array_equal(get_basic_selection(reader, ...), values)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 23), min_size=1, max_size=3),
    data=st.data(),
    dtype=st.sampled_from(["<f4", ">f4", "<f8", "<i2", ">i8", "|u1"]),
    order=st.sampled_from(["C", "F"]),
    block=st.sampled_from([1, 5, 64, 1 << 15]),
)
def test_unshuffling_in_blocks_reads_zarrs_values(shape, data, dtype, order, block) -> None:
    """Every chunk goes through the reused buffers (the size threshold lowered), and
    the shuffle is undone a few rows at a time, for any shape, order and type."""
    chunks = [data.draw(st.integers(1, n), label="chunk") for n in shape]
    itemsize = np.dtype(dtype).itemsize
    reader, ref, values = _pair(
        dtype, order, [numcodecs.Shuffle(itemsize)], tuple(shape), tuple(chunks)
    )
    blocks: list[int] = []
    real = chunkcodec._planes_into
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastpipeline, "SCRATCH_BYTES", 1)
        patch.setattr(chunkcodec, "UNSHUFFLE_BLOCK", block)
        patch.setattr(chunkcodec, "_planes_into", lambda *a: blocks.append(1) or real(*a))
        got = get_basic_selection(reader, ...)
    np.testing.assert_array_equal(ref[...], values)
    np.testing.assert_array_equal(got, values)
    assert got.dtype == ref[...].dtype
    # libdeflate inflated every chunk and the shuffle went through the blocks (one
    # byte a value: numcodecs' own Shuffle, no planes)
    assert inflate.fast_available()
    stored = [key for key in reader.store.zmap if not key.rsplit("/", 1)[-1].startswith(".")]
    assert len(blocks) == (0 if itemsize == 1 else len(stored))
