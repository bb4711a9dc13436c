"""Blosc chunks are decoded into one reused buffer per part of a read, with zarr's values.

numcodecs allocates a new output for every chunk it decodes; with 4 MB chunks the
allocator returns fresh pages each time and the page faults were most of a read's
system time. :class:`~nczarr.integrations.chunkcodec.Scratch` decodes a Blosc
chunk (no filters, header declaring one chunk's bytes) into one buffer per part
of 256 KiB or more instead; everything else decodes as before (below that size the
allocator reuses memory, and numcodecs' ``out=`` path costs more than it saves).
Differential against zarr's own pipeline.
"""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
import zarr

from nczarr.integrations.calling_thread import get_basic_selection

from .v2pairs import v2_pair


def _pair(dtype: str, order: str, filters=None, shape=(700, 610), chunks=(300, 512)):
    """The same Blosc array in two stores: (nczarr's pipeline, zarr's own)."""
    values = np.random.default_rng(3).normal(size=shape).astype(dtype)
    compressor = numcodecs.Blosc(cname="lz4", shuffle=1)
    fast, ref = v2_pair(
        values, chunks, order=order, compressor=compressor, filters=filters, write_fast=True
    )
    return fast, ref, values


def _record_outs(monkeypatch) -> list[object]:
    outs: list[object] = []
    real = numcodecs.Blosc.decode

    def decode(self, buf, out=None):
        outs.append(out)
        return real(self, buf, out=out)

    monkeypatch.setattr(numcodecs.Blosc, "decode", decode)
    return outs


@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<i2"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_blosc_chunks_decode_into_one_buffer_with_zarrs_values(monkeypatch, dtype, order) -> None:
    fast, ref, values = _pair(dtype, order)
    expected = ref[...]
    np.testing.assert_array_equal(expected, values)
    outs = _record_outs(monkeypatch)
    with zarr.config.set({"threading.max_workers": 1}):  # one part: one buffer
        got = get_basic_selection(fast, (slice(None), slice(None)))
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype
    assert len(outs) == 3 * 2 and all(o is not None for o in outs)
    assert len({id(o) for o in outs}) == 1
    np.testing.assert_array_equal(fast[3:640, 2:529], values[3:640, 2:529])
    np.testing.assert_array_equal(fast[7], values[7])


def test_small_chunks_decode_as_before(monkeypatch) -> None:
    fast, ref, _ = _pair("<f4", "C", shape=(45, 31), chunks=(10, 8))  # 320-byte chunks
    outs = _record_outs(monkeypatch)
    np.testing.assert_array_equal(fast[...], ref[...])
    assert outs and all(o is None for o in outs)


def test_blosc_with_filters_decodes_as_before(monkeypatch) -> None:
    fast, ref, _ = _pair("<i4", "C", filters=[numcodecs.Delta(dtype="<i4")])
    outs = _record_outs(monkeypatch)
    np.testing.assert_array_equal(fast[...], ref[...])
    assert outs and all(o is None for o in outs)


def test_a_chunk_declaring_another_size_decodes_as_before(monkeypatch) -> None:
    fast, ref, _ = _pair("<f4", "C")
    short = numcodecs.Blosc(cname="lz4").encode(np.arange(40, dtype="<f4"))  # 40 values
    for array in (fast, ref):
        array.store_path.store.zmap["0.0"] = short
    outs = _record_outs(monkeypatch)
    errors = []
    for array in (fast, ref):
        with zarr.config.set({"threading.max_workers": 1}), pytest.raises(Exception) as caught:
            array[...]
        errors.append(type(caught.value))
    assert errors[0] is errors[1]
    assert outs[0] is None  # the short chunk was not decoded into the buffer
