"""Large zlib chunks (netcdf-c's zlib + shuffle) read with zarr's values, fewer copies.

From 256 KiB on, :class:`~nczarr.integrations.chunkcodec.Scratch` inflates a zlib
chunk (libdeflate, the ``fast`` extra) into one reused buffer and undoes the shuffle
straight into the output array when the chunk is read whole; a whole chunk that is
one contiguous block of the output (no filters) is inflated or Blosc-decoded straight
into it. Differential against zarr-python's own pipeline, with libdeflate and with it
taken away; damaged chunks fail as before.
"""

from __future__ import annotations

import zlib

import numcodecs
import numpy as np
import pytest
import zarr

from nczarr import MemoryMap, inflate
from nczarr.integrations import chunkcodec, fastpipeline
from nczarr.integrations.calling_thread import get_basic_selection

from .v2pairs import v2_pair


@pytest.fixture(params=["libdeflate", "zlib"])
def fast(request, monkeypatch) -> bool:
    if request.param == "zlib":
        monkeypatch.setattr(inflate, "_decode", False)
        return False
    monkeypatch.setattr(inflate, "_decode", None)
    assert inflate.fast_available()
    return True


def _pair(dtype, order, compressor, filters, shape=(700, 610), chunks=(300, 512)):
    """The same array in two stores: (nczarr's pipeline, zarr's own), and its values."""
    values = np.round(np.random.default_rng(3).normal(size=shape) * 10, 2).astype(dtype)
    fast, ref = v2_pair(values, chunks, order=order, compressor=compressor, filters=filters)
    return fast, ref, values


def _count_usual(monkeypatch) -> list[int]:
    """Calls of the usual per-chunk decode (``decode_v2``) by the pipeline."""
    calls: list[int] = []
    real = fastpipeline.decode_v2
    monkeypatch.setattr(fastpipeline, "decode_v2", lambda *a: calls.append(1) or real(*a))
    return calls


SHUFFLED = [numcodecs.Shuffle(4)]


@pytest.mark.parametrize(
    ("dtype", "filters"),
    [("<f4", SHUFFLED), (">f4", SHUFFLED), ("<f8", [numcodecs.Shuffle(8)]), ("<i2", None)],
)
@pytest.mark.parametrize("order", ["C", "F"])
def test_large_zlib_chunks_read_zarrs_values(fast, monkeypatch, dtype, filters, order) -> None:
    reader, ref, values = _pair(dtype, order, numcodecs.Zlib(level=1), filters)
    expected = ref[...]
    np.testing.assert_array_equal(expected, values)
    calls = _count_usual(monkeypatch)
    with zarr.config.set({"threading.max_workers": 1}):
        got = get_basic_selection(reader, (slice(None), slice(None)))
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype
    # 6 chunks, 2 of them whole (the others are edge chunks, copied from the buffer):
    # with libdeflate none goes the usual way; without it every one does
    assert len(calls) == (0 if fast else 6)
    for sel in [(slice(3, 640), slice(2, 529)), (7,), (slice(None, None, 2), 600)]:
        np.testing.assert_array_equal(reader[sel], values[sel])
    np.testing.assert_array_equal(reader.oindex[[5, 1, 650], :], values[[5, 1, 650], :])
    np.testing.assert_array_equal(
        reader.vindex[[5, 1, 650], [3, 600, 0]], values[[5, 1, 650], [3, 600, 0]]
    )


def test_shuffled_whole_chunks_are_unshuffled_into_the_output(fast, monkeypatch) -> None:
    """Copies per whole zlib + shuffle chunk: inflate, unshuffle into the output; no
    intermediate array is copied in."""
    reader, _ref, values = _pair("<f4", "C", numcodecs.Zlib(level=1), SHUFFLED)
    whole = []
    real = chunkcodec.Scratch.decode

    def decode(self, codec, data, spec, dtype, target=None):
        result = real(self, codec, data, spec, dtype, target)
        whole.append(result is not None and result is target)
        return result

    monkeypatch.setattr(chunkcodec.Scratch, "decode", decode)
    with zarr.config.set({"threading.max_workers": 1}):
        np.testing.assert_array_equal(reader[...], values)
    assert whole == ([True, False, True, False, False, False] if fast else [False] * 6)


@pytest.mark.parametrize(
    "compressor", [numcodecs.Zlib(level=1), numcodecs.Blosc(cname="lz4", shuffle=1)]
)
def test_contiguous_whole_chunks_decode_straight_into_the_output(
    fast, monkeypatch, compressor
) -> None:
    """Chunks spanning whole rows are one contiguous block of the output: decoded into it."""
    reader, ref, values = _pair("<f4", "C", compressor, None, shape=(500, 300), chunks=(230, 300))
    np.testing.assert_array_equal(ref[...], values)
    outs = []
    real = numcodecs.Blosc.decode

    def spy(self, buf, out=None):
        outs.append(out)
        return real(self, buf, out=out)

    monkeypatch.setattr(numcodecs.Blosc, "decode", spy)
    calls = _count_usual(monkeypatch)
    with zarr.config.set({"threading.max_workers": 1}):
        got = get_basic_selection(reader, ...)
    np.testing.assert_array_equal(got, values)
    if type(compressor) is numcodecs.Blosc:
        # two whole chunks into the output itself, the edge chunk into the buffer
        assert len(outs) == 3 and all(o is not None for o in outs)
        assert len({id(o) for o in outs}) == 3
        assert calls == []
    else:
        assert len(calls) == (0 if fast else 3)


@pytest.mark.parametrize("damage", ["adler", "truncate", "garbage", "longer"])
def test_damaged_large_zlib_chunks_fail_as_before(fast, damage) -> None:
    reader, ref, _ = _pair("<f4", "C", numcodecs.Zlib(level=1), SHUFFLED)
    zmap = reader.store.zmap
    good = zmap["0.0"]
    bad = {
        "adler": good[:-1] + bytes([good[-1] ^ 1]),
        "truncate": good[: len(good) // 2],
        "garbage": good[:40] + bytes(100) + good[140:],
        "longer": zlib.compress(bytes(4 * 300 * 512 + 4), 1),
    }[damage]
    for store_map in (zmap, ref.store.zmap):
        store_map["0.0"] = bad
    with pytest.raises(Exception) as theirs:
        ref[...]
    with pytest.raises(Exception) as ours:
        get_basic_selection(reader, ...)
    assert type(ours.value) is type(theirs.value)


@pytest.mark.parametrize("concurrent", [False, True])
def test_large_chunks_fetched_one_at_a_time_from_sequential_maps(
    fast, monkeypatch, concurrent
) -> None:
    """A map that reads one key after another (files, zips, memory) gives large chunks
    one ``getitems`` each, so each chunk's bytes are freed before the next is read; a
    map awaiting its storage (``async_reads``: S3's concurrent requests) gets a part's
    chunks in one call."""
    reader, _ref, values = _pair("<f4", "C", numcodecs.Zlib(level=1), SHUFFLED)
    monkeypatch.setattr(MemoryMap, "async_reads", concurrent)
    calls: list[int] = []
    real = MemoryMap.getitems

    def getitems(self, keys):
        keys = list(keys)
        calls.append(len(keys))
        return real(self, keys)

    monkeypatch.setattr(MemoryMap, "getitems", getitems)
    with zarr.config.set({"threading.max_workers": 1}):
        got = get_basic_selection(reader, ...)
    np.testing.assert_array_equal(got, values)
    assert calls == ([6] if concurrent else [1] * 6)


def test_a_view_over_a_concurrent_map_is_not_read_one_by_one(monkeypatch) -> None:
    from nczarr.integrations.fastpipeline import _sequential_reads

    class View(MemoryMap):
        def __init__(self, inner):
            super().__init__(mode="r")
            self._inner = inner

        @property
        def source(self):
            return self._inner

    plain = MemoryMap(mode="w")
    assert _sequential_reads(plain) and _sequential_reads(View(plain))
    monkeypatch.setattr(MemoryMap, "async_reads", True)
    assert not _sequential_reads(plain)
    monkeypatch.setattr(MemoryMap, "async_reads", False)
    remote = MemoryMap(mode="w")
    monkeypatch.setattr(type(remote), "async_reads", property(lambda self: self is remote))
    assert not _sequential_reads(View(remote)) and not _sequential_reads(View(View(remote)))
