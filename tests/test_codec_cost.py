"""A selection goes to the codec thread pool only when each chunk's codec call runs
long enough without the GIL for a second thread to pay
(``nczarr/integrations/codeccost.py``): Blosc-LZ4 chunks of 40 KB decode in a few
microseconds, less than the Python around each chunk, so two threads only took turns
at the GIL (+55 % CPU, no time saved); zlib chunks of the same size inflate for
~230 us and are decoded in parallel as before. Values are zarr-python's either way.
"""

from __future__ import annotations

import threading

import numcodecs
import numpy as np
import pytest
import zarr

from nczarr.integrations import fastpipeline
from nczarr.integrations.codeccost import codec_microseconds, threads_pay
from nczarr.integrations.fastpipeline import fast_pipeline

from .v2pairs import v2_pair

LZ4 = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)
ZLIB = numcodecs.Zlib(level=1)


@pytest.mark.parametrize(
    ("compressor", "nbytes", "encode", "expected"),
    [
        (LZ4, 40_000, False, False),  # ~16 us
        (LZ4, 160_000, False, True),  # ~64 us
        (LZ4, 4_000_000, False, True),
        (LZ4, 40_000, True, False),  # ~40 us
        (LZ4, 100_000, True, True),
        (ZLIB, 40_000, False, True),  # ~230 us
        (ZLIB, 8_000, False, False),
        (ZLIB, 40_000, True, True),
        (numcodecs.Blosc(cname="zlib"), 40_000, False, True),
        (numcodecs.Blosc(cname="zstd"), 40_000, True, True),  # encodes slowly
        (numcodecs.Zstd(level=1), 40_000, False, True),  # ~73 us
        (None, 100_000, False, False),  # no compressor: a copy
        (None, 400_000, False, True),
        (numcodecs.BZ2(level=1), 4_000, False, True),
    ],
)
def test_which_chunks_are_worth_a_thread(compressor, nbytes, encode, expected) -> None:
    assert threads_pay(compressor, nbytes, encode=encode) is expected


def test_a_codec_not_in_the_table_is_threaded_as_before() -> None:
    class Unknown(numcodecs.abc.Codec):
        codec_id = "someone-elses"

        def encode(self, buf):  # pragma: no cover - never called
            return buf

        def decode(self, buf, out=None):  # pragma: no cover - never called
            return buf

    assert codec_microseconds(Unknown(), 10) == float("inf")
    assert threads_pay(Unknown(), 10)


def _threads_of(monkeypatch, job: type) -> list[str]:
    """Names of the threads that ran a part of ``job`` (ReadJob or WriteJob)."""
    names: list[str] = []
    real = job._part

    def part(self, indices):
        names.append(threading.current_thread().name)
        return real(self, indices)

    monkeypatch.setattr(job, "_part", part)
    return names


@pytest.mark.parametrize(("compressor", "pooled"), [(LZ4, False), (ZLIB, True)])
def test_short_codec_calls_stay_in_the_calling_thread(monkeypatch, compressor, pooled) -> None:
    """1.9 MB of 40 KB chunks (over the 1 MB below which nothing is split): Blosc-LZ4
    in the calling thread, zlib in two parts, one on the pool; zarr's values."""
    values = np.round(np.random.default_rng(1).normal(size=(700, 700)) * 10, 2).astype("<f4")
    fast, ref = v2_pair(values, (100, 100), compressor=compressor)
    with zarr.config.set({"threading.max_workers": 2}):
        read_by = _threads_of(monkeypatch, fastpipeline.ReadJob)
        np.testing.assert_array_equal(fast[...], ref[...])
        reads = list(read_by)
        with fast_pipeline():
            writer = zarr.open_array(store=fast.store.with_read_only(False), mode="r+")
        writes = _threads_of(monkeypatch, fastpipeline.WriteJob)
        writer[...] = values + 1
        writes = list(writes)
    np.testing.assert_array_equal(ref[...], values)
    np.testing.assert_array_equal(fast[...], values + 1)
    for names in (reads, writes):
        on_pool = [n for n in names if n.startswith("nczarr-codec")]
        assert (len(names), bool(on_pool)) == ((2, True) if pooled else (1, False)), names
