"""``to_nczarr``'s chunk writes without zarr's per-chunk objects; Blosc called directly.

:func:`~nczarr.integrations.calling_thread.set_basic_selection` is ``array[sel] = value``
for whole chunks of a numpy value, written by the pipeline's own write job in the
calling thread (no ``StorePath``/``ArraySpec`` per chunk, no event-loop hop); anything
else goes to zarr. Differential: the stored objects equal those zarr-python's own
pipeline stores. ``encode_v2`` calls ``numcodecs.blosc.compress`` directly for
contiguous arrays of numbers: the same bytes as ``Blosc.encode``.
"""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
import zarr

from nczarr import MemoryMap, ZarrStore
from nczarr.integrations import chunkcodec, fastpipeline
from nczarr.integrations.calling_thread import set_basic_selection
from nczarr.integrations.chunkcodec import encode_v2
from nczarr.integrations.fastpipeline import fast_pipeline

CODECS = {
    "zlib+shuffle": (numcodecs.Zlib(level=1), [numcodecs.Shuffle(4)]),
    "blosc": (numcodecs.Blosc(cname="lz4", shuffle=1), None),
    "none": (None, None),
}


def _array(
    codec: str, fast: bool, *, shape=(70, 45), chunks=(20, 15), dtype="<f4", write_empty=False, **kw
):
    compressor, filters = CODECS[codec]
    store = ZarrStore(MemoryMap(mode="w"))
    zarr.create_array(
        store=store,
        shape=shape,
        chunks=chunks,
        dtype=dtype,
        zarr_format=2,
        fill_value=0,
        compressors=compressor,
        filters=filters,
        **kw,
    )
    with zarr.config.set({"array.write_empty_chunks": write_empty}):
        if fast:
            with fast_pipeline():
                return zarr.open_array(store=store, mode="r+", zarr_format=2)
        return zarr.open_array(store=store, mode="r+", zarr_format=2)


def _objects(array) -> dict[str, bytes]:
    zmap = array.store.zmap
    return {k: zmap[k] for k in zmap if not k.rsplit("/", 1)[-1].startswith(".")}


def _values(shape=(70, 45), dtype="<f4") -> np.ndarray:
    values = np.round(np.random.default_rng(4).normal(size=shape) * 10, 2).astype(dtype)
    values[:20, :15] = 0  # one chunk of fill values: not stored
    return values


def _spy_pipeline_write(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = fastpipeline.NCZarrCodecPipeline.write

    async def write(self, *args, **kwargs):
        calls.append(1)
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(fastpipeline.NCZarrCodecPipeline, "write", write)
    return calls


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("order", ["C", "F"])
def test_whole_array_write_stores_zarrs_objects(monkeypatch, codec, order) -> None:
    values = _values()
    ours, theirs = _array(codec, True, order=order), _array(codec, False, order=order)
    theirs[...] = values
    calls = _spy_pipeline_write(monkeypatch)
    set_basic_selection(ours, ..., values)
    assert calls == []  # not through zarr's __setitem__
    assert _objects(ours) == _objects(theirs)
    assert "0.0" not in _objects(ours)  # the fill-valued chunk, as zarr leaves it out
    np.testing.assert_array_equal(ours[...], values)


def test_write_empty_chunks_kept(monkeypatch) -> None:
    values = _values()
    ours, theirs = _array("blosc", True, write_empty=True), _array("blosc", False, write_empty=True)
    theirs[...] = values
    set_basic_selection(ours, ..., values)
    assert "0.0" in _objects(ours)
    assert _objects(ours) == _objects(theirs)


def test_an_empty_chunk_deletes_a_stored_one() -> None:
    values = _values()
    ours = _array("zlib+shuffle", True)
    ours[...] = values + 1
    assert "0.0" in _objects(ours)
    set_basic_selection(ours, ..., values)
    assert "0.0" not in _objects(ours)
    np.testing.assert_array_equal(ours[...], values)


@pytest.mark.parametrize(
    ("selection", "value"),
    [
        ((slice(5, 50), slice(None)), lambda v: v[5:50]),  # partial chunks
        ((slice(None), 3), lambda v: v[:, 3]),  # a dropped axis
        (..., lambda v: v.astype("f8")),  # another dtype: zarr converts
        (..., lambda v: v.tolist()),  # not a numpy array
        (..., lambda v: 7.5),  # a scalar
    ],
)
def test_anything_else_is_zarrs_own_write(monkeypatch, selection, value) -> None:
    values = _values()
    ours, theirs = _array("zlib+shuffle", True), _array("zlib+shuffle", False)
    for array in (ours, theirs):
        array[...] = values + 1
    theirs[selection] = value(values)
    calls = _spy_pipeline_write(monkeypatch)
    set_basic_selection(ours, selection, value(values))
    assert calls == [1]
    assert _objects(ours) == _objects(theirs)


def test_read_only_array_refused_as_zarr_refuses() -> None:
    ours = _array("blosc", True)
    with fast_pipeline():
        reader = zarr.open_array(store=ours.store.with_read_only(True), mode="r", zarr_format=2)
    with pytest.raises(Exception) as theirs:
        reader[...] = _values()
    with pytest.raises(type(theirs.value)):
        set_basic_selection(reader, ..., _values())


class _Spec:
    def __init__(self, shape, dtype, order):
        self.shape, self.order = shape, order
        self._dtype = np.dtype(dtype)

    @property
    def dtype(self):
        spec = self

        class _D:
            def to_native_dtype(self):
                return spec._dtype

        return _D()


@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<i2", "u1", "<i8"])
@pytest.mark.parametrize("cname", ["lz4", "zstd"])
@pytest.mark.parametrize("shuffle", [0, 1, 2])
def test_blosc_direct_encode_is_numcodecs(monkeypatch, dtype, cname, shuffle) -> None:
    from zarr.codecs._v2 import V2Codec

    compressor = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle)
    codec = V2Codec(filters=None, compressor=compressor)
    whole = (np.random.default_rng(1).normal(size=(40, 30)) * 100).astype(dtype)
    direct = []
    real = chunkcodec.blosc_compress
    monkeypatch.setattr(chunkcodec, "blosc_compress", lambda *a: direct.append(1) or real(*a))
    for block, order in [(whole[:20, :15], "C"), (whole, "C"), (whole[:20, :15], "F")]:
        spec = _Spec(block.shape, dtype, order)
        expected = compressor.encode(block.astype(dtype, order=order))
        assert encode_v2(codec, block, spec) == bytes(expected)
    assert len(direct) == 3  # every block went to compress directly
