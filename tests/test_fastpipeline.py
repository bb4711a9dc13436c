"""NCZarrCodecPipeline reads and writes exactly what zarr-python's own pipeline does.

Every case is differential: the same array, store and selection through
``BatchedCodecPipeline`` (zarr's default) and through ``NCZarrCodecPipeline``; values,
masks and the stored chunk bytes must be identical. Covered: edge chunks, C and F
order, both byte orders, fill values and missing chunks, filters, integer and
orthogonal/vectorized indexing, scalars, empty chunks on write.
"""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from nczarr import MemoryMap, ZarrStore
from nczarr.integrations.fastpipeline import NCZarrCodecPipeline, fast_pipeline

CODECS = {
    "blosc": (numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1), None),
    "zlib+shuffle": (numcodecs.Zlib(level=1), [numcodecs.Shuffle(elementsize=4)]),
    "none+delta": (None, [numcodecs.Delta(dtype="<i4")]),
    "zstd": (numcodecs.Zstd(level=1), None),
}


def _array(store: ZarrStore, fast: bool, **kwargs: object) -> zarr.Array:
    if fast:
        with fast_pipeline():
            return zarr.open_array(store=store, mode="r+", zarr_format=2, **kwargs)  # type: ignore[arg-type]
    return zarr.open_array(store=store, mode="r+", zarr_format=2, **kwargs)  # type: ignore[arg-type]


def _create(codec: str, dtype: str, order: str, shape: tuple[int, ...], chunks: tuple[int, ...]):
    compressor, filters = CODECS[codec]
    if codec == "none+delta":
        dtype = "<i4"
    store = ZarrStore(MemoryMap(mode="w"))
    zarr.create_array(
        store=store,
        shape=shape,
        chunks=chunks,
        dtype=dtype,
        zarr_format=2,
        order=order,  # type: ignore[arg-type]
        compressors=compressor,
        filters=filters,
        fill_value=-7,
    )
    return store, np.dtype(dtype)


def _values(shape: tuple[int, ...], dtype: np.dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.integers(-50, 50, size=shape)).astype(dtype)


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<i2"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_write_and_read_match_zarr(codec: str, dtype: str, order: str) -> None:
    shape, chunks = (37, 23), (10, 8)
    store, np_dtype = _create(codec, dtype, order, shape, chunks)
    values = _values(shape, np_dtype, 1)
    values[:10, :8] = -7  # one chunk all fill value: not stored
    ref_store, _ = _create(codec, dtype, order, shape, chunks)
    _array(store, fast=True)[...] = values
    _array(ref_store, fast=False)[...] = values
    assert dict(store.zmap.items()) == dict(ref_store.zmap.items())  # same chunk bytes
    assert "0.0" not in store.zmap
    fast, ref = _array(store, fast=True), _array(store, fast=False)
    assert isinstance(fast._async_array.codec_pipeline, NCZarrCodecPipeline)
    for sel in [
        (Ellipsis,),
        (slice(3, 29), slice(5, 22)),
        (4, slice(None)),
        (slice(None), 22),
        (36, 0),
        (slice(None, None, 3), slice(1, None, 5)),
    ]:
        got, want = fast[sel], ref[sel]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fast.oindex[[0, 5, 36], [2, 22]], ref.oindex[[0, 5, 36], [2, 22]])
    np.testing.assert_array_equal(
        fast.vindex[[0, 5, 36], [2, 22, 7]], ref.vindex[[0, 5, 36], [2, 22, 7]]
    )


def test_missing_chunks_read_as_fill_value() -> None:
    store, dtype = _create("blosc", "<f4", "C", (30, 30), (10, 10))
    _array(store, fast=False)[10:20, 10:20] = 1.5
    got = _array(store, fast=True)[...]
    want = np.full((30, 30), -7, dtype)
    want[10:20, 10:20] = 1.5
    np.testing.assert_array_equal(got, want)


def test_partial_chunk_writes_keep_the_rest() -> None:
    store, dtype = _create("zlib+shuffle", "<f4", "C", (30, 30), (10, 10))
    ref_store, _ = _create("zlib+shuffle", "<f4", "C", (30, 30), (10, 10))
    for s, fast in ((store, True), (ref_store, False)):
        a = _array(s, fast=fast)
        a[...] = np.arange(900, dtype=dtype).reshape(30, 30)
        a[3:14, 5:25] = 2.0  # partial chunks: read-modify-write
        a[0, 0] = 9.0
    assert dict(store.zmap.items()) == dict(ref_store.zmap.items())


def test_scalar_array() -> None:
    store = ZarrStore(MemoryMap(mode="w"))
    zarr.create_array(store=store, shape=(), dtype="<f8", zarr_format=2, fill_value=0.0)
    _array(store, fast=True)[...] = 4.25
    assert _array(store, fast=False)[...] == 4.25
    assert _array(store, fast=True)[()] == 4.25


def test_outside_fast_pipeline_zarr_default_is_kept() -> None:
    store, _ = _create("blosc", "<f4", "C", (10, 10), (5, 5))
    array = zarr.open_array(store=store, mode="r")
    assert type(array._async_array.codec_pipeline).__name__ == "BatchedCodecPipeline"


@settings(max_examples=25, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 20), st.integers(1, 20)),
    chunks=st.tuples(st.integers(1, 7), st.integers(1, 7)),
    start=st.tuples(st.integers(0, 19), st.integers(0, 19)),
    seed=st.integers(0, 10),
)
def test_random_selections_match_zarr(
    shape: tuple[int, int], chunks: tuple[int, int], start: tuple[int, int], seed: int
) -> None:
    store, dtype = _create("blosc", ">i4", "F", shape, chunks)
    values = _values(shape, dtype, seed)
    _array(store, fast=True)[...] = values
    sel = tuple(slice(min(s, n - 1), None) for s, n in zip(start, shape, strict=True))
    np.testing.assert_array_equal(_array(store, fast=True)[sel], values[sel])
    np.testing.assert_array_equal(_array(store, fast=False)[sel], values[sel])


def test_whole_chunk_io_bypasses_zarrs_per_chunk_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads and whole-chunk writes of a Zarr v2 array in a ZarrStore never reach the
    inherited per-chunk path (a task and thread hops per chunk)."""
    from zarr.core.codec_pipeline import BatchedCodecPipeline

    store, dtype = _create("blosc", "<f4", "C", (40, 24), (10, 8))
    array = _array(store, fast=True)
    values = _values((40, 24), dtype, 3)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("per-chunk pipeline used")

    monkeypatch.setattr(BatchedCodecPipeline, "read", refuse)
    monkeypatch.setattr(BatchedCodecPipeline, "write", refuse)
    monkeypatch.setattr(BatchedCodecPipeline, "read_batch", refuse)
    array[...] = values
    np.testing.assert_array_equal(array[...], values)
    np.testing.assert_array_equal(array[3:37, 1:23], values[3:37, 1:23])
    monkeypatch.undo()
    np.testing.assert_array_equal(_array(store, fast=False)[...], values)


def test_large_selections_split_over_the_pool_match_zarr() -> None:
    """Over 1 MB the chunks are read, decoded and encoded in parallel parts."""
    shape, chunks = (700, 610), (64, 100)
    store, dtype = _create("zlib+shuffle", "<f4", "C", shape, chunks)
    ref_store, _ = _create("zlib+shuffle", "<f4", "C", shape, chunks)
    values = _values(shape, dtype, 5)
    with zarr.config.set({"threading.max_workers": 3}):
        _array(store, fast=True)[...] = values
        _array(ref_store, fast=False)[...] = values
        assert dict(store.zmap.items()) == dict(ref_store.zmap.items())
        np.testing.assert_array_equal(_array(store, fast=True)[...], values)
        np.testing.assert_array_equal(_array(store, fast=True)[1:699, 7:], values[1:699, 7:])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_other_stores_and_zarr_v3_use_zarrs_own_path(zarr_format: int) -> None:
    """Selected globally, the pipeline leaves what it does not handle to zarr."""
    from zarr.storage import MemoryStore

    values = np.arange(60, dtype="<f8").reshape(6, 10)
    with fast_pipeline():
        for store in (MemoryStore(), ZarrStore(MemoryMap(mode="w"))):
            array = zarr.create_array(
                store=store, shape=(6, 10), chunks=(4, 4), dtype="<f8", zarr_format=zarr_format
            )
            assert isinstance(array._async_array.codec_pipeline, NCZarrCodecPipeline)
            array[...] = values
            array[1:3, 2:9] = -1.0
            want = values.copy()
            want[1:3, 2:9] = -1.0
            np.testing.assert_array_equal(array[...], want)
            np.testing.assert_array_equal(zarr.open_array(store=store, mode="r")[...], want)
