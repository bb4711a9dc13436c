"""Chunks decoded without numcodecs' input normalisation, with numcodecs' own results.

:func:`~nczarr.integrations.chunkcodec.decompress` calls the function ``Blosc.decode``
and ``Zlib.decode`` end in directly for ``bytes`` (the normalisation cost about as
much as a 40 KB Blosc chunk's decompression), and
:func:`~nczarr.integrations.chunkcodec.unshuffle` runs numcodecs' unshuffle loop into
an uninitialised buffer. Both are compared with the codecs' own ``decode``, and the
reads through the engine's pipeline with zarr-python's.
"""

from __future__ import annotations

from types import SimpleNamespace

import numcodecs
import numpy as np
import pytest
import zarr

from nczarr import MemoryMap, ZarrStore
from nczarr.integrations.calling_thread import get_basic_selection
from nczarr.integrations.chunkcodec import decode_v2, decompress, unshuffle
from nczarr.integrations.fastpipeline import fast_pipeline

COMPRESSORS = [
    numcodecs.Blosc(cname="lz4", clevel=4, shuffle=1),
    numcodecs.Blosc(cname="zstd", clevel=1, shuffle=2),
    numcodecs.Zlib(level=1),
    numcodecs.Zlib(level=9),
]


def _values(dtype: str = "<f4", n: int = 10_000) -> np.ndarray:
    rng = np.random.default_rng(5)
    return np.round(rng.normal(size=n) * 10, 2).astype(dtype)


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=repr)
def test_decompress_bytes_equals_the_codecs_decode(compressor) -> None:
    data = bytes(compressor.encode(_values()))
    got = decompress(compressor, data)
    assert type(got) is bytes
    assert got == bytes(compressor.decode(data))


@pytest.mark.parametrize("compressor", COMPRESSORS, ids=repr)
def test_decompress_bytes_skips_decode_and_other_buffers_use_it(monkeypatch, compressor) -> None:
    data = bytes(compressor.encode(_values()))
    calls: list[object] = []
    real = type(compressor).decode

    def decode(self, buf, out=None):
        calls.append(buf)
        return real(self, buf, out=out)

    monkeypatch.setattr(type(compressor), "decode", decode)
    decompress(compressor, data)
    assert calls == []  # bytes: the direct call
    view = memoryview(data)
    assert bytes(decompress(compressor, view)) == decompress(compressor, data)
    assert calls == [view]  # anything else: the codec's own decode


def test_decompress_damaged_blosc_and_zlib_raise_like_decode() -> None:
    for compressor in (numcodecs.Blosc(), numcodecs.Zlib()):
        bad = bytes(compressor.encode(_values()))[:10]
        with pytest.raises(Exception) as own:
            compressor.decode(bad)
        with pytest.raises(type(own.value)):
            decompress(compressor, bad)


@pytest.mark.parametrize("size", [2, 4, 8, 3, 16, 17, 24])
def test_unshuffle_equals_shuffle_decode(size: int) -> None:
    f = numcodecs.Shuffle(elementsize=size)
    data = bytes(f.encode(np.arange(size * 999, dtype=np.uint8)))
    got = unshuffle(f, data)
    want = f.decode(data)
    assert got.dtype == want.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    assert got.flags.writeable  # as numcodecs' own output
    assert got.ndim == 1 and got.flags.c_contiguous


def test_unshuffle_of_nothing() -> None:
    f = numcodecs.Shuffle(elementsize=4)
    np.testing.assert_array_equal(unshuffle(f, b""), f.decode(b""))


@pytest.mark.parametrize("size", [0, 1])
def test_unshuffle_without_shuffling_is_numcodecs_copy(size: int) -> None:
    f = numcodecs.Shuffle(elementsize=size)
    data = bytes(range(40))
    np.testing.assert_array_equal(unshuffle(f, data), f.decode(data))


def test_unshuffle_of_a_partial_element_raises_like_numcodecs() -> None:
    f = numcodecs.Shuffle(elementsize=4)
    with pytest.raises(ValueError, match="multiple of elementsize"):
        unshuffle(f, bytes(10))


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<i8", ">u2"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_zlib_shuffle_chunks_read_zarrs_values(dtype: str, order: str) -> None:
    """Differential: zlib + shuffle arrays through the engine's read and zarr's own."""
    shape, chunks = (230, 170), (100, 60)
    values = np.round(np.random.default_rng(2).normal(size=shape) * 100).astype(dtype)
    store = ZarrStore(MemoryMap(mode="w"))
    size = np.dtype(dtype).itemsize
    zarr.create_array(
        store=store,
        shape=shape,
        chunks=chunks,
        dtype=dtype,
        zarr_format=2,
        order=order,
        fill_value=3,
        compressors=numcodecs.Zlib(level=1),
        filters=[numcodecs.Shuffle(elementsize=size)],
    )
    zarr.open_array(store=store, mode="r+", zarr_format=2)[:200, :] = values[:200]
    ref = zarr.open_array(store=store, mode="r", zarr_format=2)
    with fast_pipeline():
        fast = zarr.open_array(store=store, mode="r", zarr_format=2)
    for sel in [(slice(None), slice(None)), (slice(5, 219, 3), slice(3, None, 7)), (7, 9)]:
        got = get_basic_selection(fast, sel)
        want = ref[sel]
        np.testing.assert_array_equal(got, want)
        if np.ndim(want):
            assert got.dtype == want.dtype


def test_decode_v2_of_unshuffled_bytes_is_the_v2codec_view() -> None:
    from zarr.codecs._v2 import V2Codec

    compressor, f = numcodecs.Zlib(level=1), numcodecs.Shuffle(elementsize=4)
    values = _values().reshape(100, 100)
    data = bytes(compressor.encode(f.encode(values)))

    class Spec:  # the two attributes decode_v2 reads
        shape, order = (100, 100), "C"

    got = decode_v2(V2Codec(filters=(f,), compressor=compressor), data, Spec, np.dtype("<f4"))
    np.testing.assert_array_equal(got, values)
    assert got.shape == (100, 100) and got.dtype == np.dtype("<f4")


def _reference_encode(compressor, filters, chunk: np.ndarray, dtype: str, order: str) -> bytes:
    """numcodecs' own encode, as zarr-python's V2Codec runs it."""
    data = np.asarray(chunk).astype(dtype, order=order)
    for f in filters:
        data = f.encode(data)
    return bytes(compressor.encode(data))


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f8", "<i2", "|u1"])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("size", [None, 4, 8, 2])
def test_encode_v2_blocks_of_an_array_give_numcodecs_bytes(dtype: str, order: str, size) -> None:
    from nczarr.integrations.chunkcodec import encode_v2

    big = np.round(np.random.default_rng(9).normal(size=(60, 50)) * 100).astype("<f4")
    filters = () if size is None else (numcodecs.Shuffle(elementsize=size),)

    spec = SimpleNamespace(
        dtype=SimpleNamespace(to_native_dtype=lambda: np.dtype(dtype)), shape=(20, 30), order=order
    )
    from zarr.codecs._v2 import V2Codec

    for compressor in (numcodecs.Zlib(level=1), numcodecs.Blosc(cname="lz4")):
        codec = V2Codec(filters=filters, compressor=compressor)
        for source in (big.astype(dtype), np.asfortranarray(big.astype(dtype))):
            block = source[10:30, 5:35]  # a view, not contiguous
            got = encode_v2(codec, block, spec)
            assert type(got) is bytes
            assert got == _reference_encode(compressor, filters, block, dtype, order)
