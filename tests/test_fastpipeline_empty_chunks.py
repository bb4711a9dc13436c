"""Empty chunks on write: NCZarrCodecPipeline stores exactly the chunks zarr-python's own
pipeline stores, while answering "is this chunk all fill value?" from the first element
when that one already differs (zarr's full test broadcasts and compares every element).

Differential against zarr's default pipeline: NaN fill values (xarray's default for
floats), signed zeros (zarr compares zeros by bit pattern), integer fills, chunks whose
first element is the fill value and the rest not, and chunks that are all fill.
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.core.buffer import cpu

from nczarr import MemoryMap, ZarrStore
from nczarr.integrations import chunkcodec, fastpipeline
from nczarr.integrations.fastpipeline import fast_pipeline

SHAPE, CHUNKS = (8, 6), (4, 3)  # 2 x 2 chunks, all complete


def _write(values: np.ndarray, fill: object, fast: bool) -> dict[str, bytes]:
    store = ZarrStore(MemoryMap(mode="w"))
    kwargs = {"shape": values.shape, "chunks": CHUNKS, "dtype": values.dtype, "fill_value": fill}
    zarr.create_array(store=store, zarr_format=2, **kwargs)  # type: ignore[arg-type]
    if fast:
        with fast_pipeline():
            array = zarr.open_array(store=store, mode="r+", zarr_format=2)
    else:
        array = zarr.open_array(store=store, mode="r+", zarr_format=2)
    array[...] = values
    return {k: v for k, v in store.zmap.items() if not k.startswith(".")}


def _cases() -> list[tuple[str, np.ndarray, object]]:
    nan = np.full(SHAPE, np.nan, "<f4")
    nan[0, 0] = 1.0  # first chunk: first element data, rest fill
    nan[4, 0] = np.nan  # second-row chunk left all NaN except below
    nan[5, 1] = 2.0  # ... whose first element is the fill, another not
    zeros = np.zeros(SHAPE, "<f8")
    zeros[0:4, 0:3] = -0.0  # a chunk of negative zeros: not the fill 0.0 by bits
    zeros[0, 3] = -0.0  # first element -0.0, rest +0.0
    ints = np.full(SHAPE, -7, "<i2")
    ints[0, 0] = 3
    ints[5, 5] = 1  # first element is the fill, a later one is not
    data = np.arange(48, dtype=">f4").reshape(SHAPE)
    data[0:4, 0:3] = 9.5  # a whole chunk of the fill value
    return [
        ("nan-fill", nan, np.nan),
        ("signed-zero", zeros, 0.0),
        ("int-fill", ints, -7),
        ("data", data, 9.5),
        ("neg-zero-fill", -zeros, -0.0),
    ]


@pytest.mark.parametrize("name, values, fill", _cases(), ids=[c[0] for c in _cases()])
def test_stored_chunks_match_zarr(name: str, values: np.ndarray, fill: object) -> None:
    fast, ref = _write(values, fill, True), _write(values, fill, False)
    assert sorted(fast) == sorted(ref), name
    assert fast == ref


def test_a_chunk_of_data_skips_the_full_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk whose first element is not the fill value is never compared in full;
    one whose first element is the fill value is (and is stored when another differs)."""
    calls: list[tuple[int, ...]] = []
    original = cpu.NDBuffer.all_equal

    def counting(self: cpu.NDBuffer, other: object, equal_nan: bool = True) -> bool:
        calls.append(self.shape)
        return original(self, other, equal_nan)

    monkeypatch.setattr(cpu.NDBuffer, "all_equal", counting)
    values = np.arange(48, dtype="<f4").reshape(SHAPE) + 1  # no element is the fill 0
    values[4, 3] = 0.0  # chunk (1, 1) starts with the fill value, the rest is data
    stored = _write(values, 0.0, True)
    assert sorted(stored) == ["0.0", "0.1", "1.0", "1.1"]
    assert calls == [CHUNKS]  # only chunk (1, 1) went through zarr's full test


_DTYPES = st.sampled_from(["<f4", ">f8", "<i2", "|u1", "|b1", "<i8"])


@settings(max_examples=80, deadline=None)
@given(
    dtype=_DTYPES,
    pool=st.lists(st.sampled_from([0.0, -0.0, 1.0, np.nan, -7.0, 255.0]), min_size=1, max_size=3),
    fill=st.sampled_from([0.0, -0.0, 1.0, np.nan, -7.0, None]),
    seed=st.integers(0, 2**16),
)
def test_all_fill_agrees_with_zarrs_test(
    dtype: str, pool: list[float], fill: float | None, seed: int
) -> None:
    np_dtype = np.dtype(dtype)
    if np_dtype.kind != "f" and fill is not None and not np.isfinite(fill):
        return  # no NaN fill value for integers or booleans
    rng = np.random.default_rng(seed)
    with np.errstate(invalid="ignore", over="ignore"):
        raw = np.array(pool)[rng.integers(0, len(pool), size=CHUNKS)]
        values = (raw if np_dtype.kind == "f" else np.nan_to_num(raw)).astype(np_dtype)
        typed_fill = None if fill is None else np.array(fill).astype(np_dtype)[()]
    chunk = cpu.NDBuffer.from_ndarray_like(values)
    assert fastpipeline._all_fill(chunk, typed_fill) == chunk.all_equal(typed_fill)


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(["<f4", ">f8", "<i2", "|u1", "<c8"]),
    elementsize=st.sampled_from([1, 2, 4, 8]),
    shape=st.tuples(st.integers(0, 9), st.integers(1, 7)),
    seed=st.integers(0, 2**16),
)
def test_shuffle_gives_numcodecs_bytes(
    dtype: str, elementsize: int, shape: tuple[int, int], seed: int
) -> None:
    """The write path's shuffle is numcodecs' Shuffle, byte for byte (or its error)."""
    import numcodecs

    raw = np.random.default_rng(seed).integers(0, 256, size=shape[0] * shape[1] * 16)
    values = raw.astype("u1").view(dtype)[: shape[0] * shape[1]].reshape(shape)
    try:
        want = numcodecs.Shuffle(elementsize).encode(values)
    except ValueError:
        with pytest.raises(ValueError):
            chunkcodec.shuffle_bytes(values, elementsize)
        return
    got = chunkcodec.shuffle_bytes(values, elementsize)
    assert bytes(got) == bytes(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
