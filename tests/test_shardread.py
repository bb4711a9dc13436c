"""Sharded Zarr v3 arrays read in the calling thread (``nczarr.integrations.shardread``).

The engine reads a basic selection of a sharded array through the source map and
zarr-python's own codecs, without zarr's event loop. zarr-python reading the same store
is the oracle: every selection (integers, slices with steps, ellipsis, partial edge
shards, shards and inner chunks never written, the index at the start, inner codecs
that transpose, swap bytes or compress) gives zarr-python's values; an array whose
codecs cannot decode synchronously is read by zarr-python itself.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.codecs import (
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)
from zarr.codecs.numcodecs import Zlib

import nczarr
from nczarr.errors import CorruptChunkError
from nczarr.integrations import shardread
from nczarr.integrations.native_v3 import engine_view, open_native
from nczarr.integrations.shardread import ShardedArray, shard_plan
from nczarr.integrations.shardselect import normalize, out_shape, project
from nczarr.integrations.zarr_store import ZarrStore

SELECTIONS: list[Any] = [
    (slice(None), slice(None), slice(None)),
    Ellipsis,
    (0, 0, 0),
    (-1, -1, -1),
    (4, slice(2, 11), 3),
    (slice(1, 9, 3), slice(None, None, 4), slice(0, 7, 2)),
    (slice(5, 9), Ellipsis),
    (slice(8, 9), slice(12, 13), slice(6, 7)),
    (slice(3, 3), slice(None), 0),
]

# name: (create_array keywords beyond shape/dtype, how the array is written)
ARRAYS: dict[str, dict[str, Any]] = {
    "default": {"chunks": (2, 3, 2), "shards": (4, 6, 4)},
    "index_at_start": {
        "serializer": ShardingCodec(
            chunk_shape=(2, 3, 2),
            codecs=[BytesCodec(), ZstdCodec()],
            index_codecs=[BytesCodec(), Crc32cCodec()],
            index_location="start",
        ),
        "chunks": (4, 6, 4),
        "compressors": None,
    },
    "transpose_big_endian_gzip": {
        "serializer": ShardingCodec(
            chunk_shape=(2, 3, 2),
            codecs=[TransposeCodec(order=(2, 1, 0)), BytesCodec(endian="big"), GzipCodec()],
            index_codecs=[BytesCodec()],
        ),
        "chunks": (4, 6, 4),
        "compressors": None,
    },
    # decoded synchronously from zarr-python 3.4 on; before, zarr-python reads it
    "numcodecs_zlib": {
        "serializer": ShardingCodec(chunk_shape=(2, 3, 2), codecs=[BytesCodec(), Zlib(level=3)]),
        "chunks": (4, 6, 4),
        "compressors": None,
    },
}


#: zarr-python decodes a nested sharding only asynchronously (and the view skips it)
NESTED: dict[str, Any] = {
    "serializer": ShardingCodec(
        chunk_shape=(2, 6, 4),
        codecs=[ShardingCodec(chunk_shape=(2, 3, 2), codecs=[BytesCodec(), ZstdCodec()])],
    ),
    "chunks": (4, 6, 4),
    "compressors": None,
}


def _write(path: Path, arrays: dict[str, dict[str, Any]] = ARRAYS) -> dict[str, Any]:
    """The arrays of ``arrays`` (shape 10 x 14 x 7: partial edge shards; a shard and
    inner chunks never written) in a Zarr v3 group; zarr-python's reading of them."""
    group = zarr.open_group(path, mode="w", zarr_format=3)
    values = np.arange(10 * 14 * 7, dtype="<i4").reshape(10, 14, 7) - 300
    for name, kw in arrays.items():
        array = group.create_array(
            name,
            shape=values.shape,
            dtype="<i4",
            fill_value=-7,
            dimension_names=("z", "y", "x"),
            config={"write_empty_chunks": False},
            **kw,
        )
        array[:8, :12, :] = values[:8, :12, :]  # shards (2, *, *) and (*, 2, *) never written
        array[0:2, 0:3, 0:2] = -7  # an inner chunk of fill only: not written
        array[4:8, 0:6, 0:4] = -7  # a whole shard of fill only: not written
    theirs = zarr.open_group(path, mode="r")
    return {name: theirs[name] for name in arrays}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("shardread") / "s.zarr"
    return path, _write(path)


@pytest.fixture(scope="module")
def ours(store: tuple[Path, dict[str, Any]]) -> Any:
    view, native = engine_view(store[0])
    source = ZarrStore(view.source, read_only=True)
    yield {name: open_native(source, array) for name, array in native.items()}
    view.close()


@pytest.mark.parametrize("name", list(ARRAYS))
@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
def test_values_are_zarr_pythons(store, ours, name: str, selection: Any) -> None:
    expected = store[1][name][selection]
    got = ours[name][selection]
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype


def test_every_zarr_the_project_supports_has_the_fast_path() -> None:
    """zarr-python 3.1.6 to 3.x (pyproject): not one release's chunk grid classes."""
    assert shardread.supported()


def test_every_array_of_the_engine_is_read_here(ours) -> None:
    """Every array whose codecs decode synchronously: numcodecs' do from zarr-python
    3.4 on (zarr-python's ``Zlib`` says which)."""
    expected = set(ARRAYS)
    if not callable(getattr(Zlib(), "_decode_sync", None)):
        expected.discard("numcodecs_zlib")
    assert {name for name, array in ours.items() if isinstance(array, ShardedArray)} == expected


def test_a_codec_without_synchronous_decode_is_read_by_zarr(tmp_path: Path) -> None:
    """A nested sharding has no synchronous decode: no plan, zarr-python reads it."""
    theirs = _write(tmp_path / "n.zarr", {"nested": NESTED})["nested"]
    zmap = nczarr.open_map(str(tmp_path / "n.zarr"), mode="r")
    array = zarr.open_array(store=ZarrStore(zmap), path="nested", mode="r")
    assert shard_plan(array, zmap, "nested") is None
    default = _write(tmp_path / "d.zarr", {"default": ARRAYS["default"]})["default"]
    dmap = nczarr.open_map(str(tmp_path / "d.zarr"), mode="r")
    plan = shard_plan(zarr.open_array(store=ZarrStore(dmap), path="default"), dmap, "default")
    assert plan is not None
    np.testing.assert_array_equal(theirs[...], default[...])


def test_no_read_goes_through_zarrs_event_loop(store, ours, monkeypatch) -> None:
    """Basic selections are read by the calling thread: no ``ZarrStore.get`` call, no
    thread started, and the map is called from this thread only."""
    calls: list[str] = []
    threads: set[int] = set()
    real_get = ZarrStore.get

    async def get(self, key, prototype=None, byte_range=None):
        calls.append(key)
        return await real_get(self, key, prototype, byte_range)

    zmap = ours["default"]._plan.zmap
    real_range = type(zmap).getrange

    def getrange(self, key, start, length=None):
        threads.add(threading.get_ident())
        return real_range(self, key, start, length)

    monkeypatch.setattr(ZarrStore, "get", get)
    monkeypatch.setattr(type(zmap), "getrange", getrange)
    before = threading.active_count()
    np.testing.assert_array_equal(ours["default"][1:3, 4:5, 2], store[1]["default"][1:3, 4:5, 2])
    assert calls == []
    assert threads == {threading.get_ident()}
    assert threading.active_count() == before
    # the counters' check: a selection that is not basic is zarr-python's, through the store
    got = ours["default"].oindex[[1, 2], 4:5, 2]
    np.testing.assert_array_equal(got, store[1]["default"].oindex[[1, 2], 4:5, 2])
    assert calls


@pytest.mark.parametrize("chunks", [None, {}])
def test_engine_values_with_and_without_dask(store, chunks) -> None:
    path, theirs = store
    with xr.open_dataset(path, engine="nczarr", mask_and_scale=False, chunks=chunks) as ds:
        for name in ARRAYS:
            np.testing.assert_array_equal(ds[name].values, theirs[name][...])


def test_a_damaged_shard_index_is_an_error_naming_the_chunk(tmp_path: Path) -> None:
    """The index checksum (crc32c) is checked: a flipped byte is a CorruptChunkError
    naming the shard, as zarr-python's own read raises."""
    path = tmp_path / "d.zarr"
    _write(path)
    shard = path / "default" / "c" / "0" / "0" / "0"
    data = bytearray(shard.read_bytes())
    data[-10] ^= 0xFF  # inside the index, before its checksum
    shard.write_bytes(bytes(data))
    with pytest.raises(ValueError):  # the oracle
        zarr.open_group(path, mode="r")["default"][0, 0, 0]
    with (
        xr.open_dataset(path, engine="nczarr") as ds,
        pytest.raises(CorruptChunkError, match="default/c/0/0/0"),
    ):
        ds["default"][0, 0, 0].load()


def test_a_truncated_shard_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.zarr"
    _write(path)
    (path / "default" / "c" / "0" / "0" / "0").write_bytes(b"\0" * 5)
    with xr.open_dataset(path, engine="nczarr") as ds:
        with pytest.raises(CorruptChunkError, match="default/c/0/0/0"):
            ds["default"].load()
        with pytest.raises(CorruptChunkError, match="default/c/0/0/0"):
            ds["default"][0, 0, 0].load()


def test_the_view_is_unchanged(store) -> None:
    """nczarr.view still shows the sharded arrays as Zarr v2 (re-encoded there)."""
    with nczarr.view(store[0]) as view:
        assert "default/.zarray" in view.metadata


def test_a_pickled_array_reads_the_same(store, ours) -> None:
    """dask's distributed workers get the array pickled: the plan travels with it."""
    import pickle

    copy = pickle.loads(pickle.dumps(ours["default"]))
    assert isinstance(copy, ShardedArray)
    np.testing.assert_array_equal(copy[1:9, 2:13, 3], store[1]["default"][1:9, 2:13, 3])


@pytest.mark.parametrize("batch", [1, 2, 5])
def test_whole_shards_are_read_in_batches(store, ours, monkeypatch, batch: int) -> None:
    """Whole shards come from one ``getitems`` per batch; a shard never written
    (``default/c/1/0/0``) is left out of its answer and reads as the fill value."""
    import nczarr.integrations.shardread as shardread

    zmap = ours["default"]._plan.zmap
    asked: list[list[str]] = []
    real = type(zmap).getitems

    def getitems(self, keys):
        asked.append(list(keys))
        return real(self, keys)

    monkeypatch.setattr(shardread, "BATCH", batch)
    monkeypatch.setattr(type(zmap), "getitems", getitems)
    np.testing.assert_array_equal(ours["default"][:8, :12, :], store[1]["default"][:8, :12, :])
    assert not (store[0] / "default" / "c" / "1" / "0" / "0").exists()
    whole = [key for keys in asked for key in keys]
    assert sorted(whole) == sorted(
        f"default/c/{i}/{j}/{k}" for i in (0, 1) for j in (0, 1) for k in (0, 1)
    )
    assert all(len(keys) <= batch for keys in asked)


def test_without_the_fast_path_zarr_reads_every_array(store, monkeypatch) -> None:
    """Where ``supported()`` is False (zarr-python 3.0) the engine's arrays are plain
    ``zarr.Array``: zarr-python reads them, with its own values."""
    monkeypatch.setattr(shardread, "supported", lambda: False)
    view, native = engine_view(store[0])
    try:
        source = ZarrStore(view.source, read_only=True)
        arrays = {name: open_native(source, array) for name, array in native.items()}
        assert set(arrays) == set(ARRAYS)
        for name, array in arrays.items():
            assert type(array) is zarr.Array
            np.testing.assert_array_equal(array[1:9, 2:13, 3], store[1][name][1:9, 2:13, 3])
    finally:
        view.close()
    with xr.open_dataset(store[0], engine="nczarr", mask_and_scale=False) as ds:
        np.testing.assert_array_equal(ds["default"].values, store[1]["default"][...])


@pytest.mark.parametrize(
    "selection",
    [10, -11, (0, 14), (slice(None, None, -1),), (0, 0, 0, 0), (Ellipsis, 0, Ellipsis), 1.5],
    ids=repr,
)
def test_a_selection_zarr_refuses_raises_zarrs_error(store, ours, selection: Any) -> None:
    """Out of bounds, a negative step, too many indices: zarr-python's own error."""
    with pytest.raises(Exception) as theirs:
        store[1]["default"][selection]
    with pytest.raises(type(theirs.value)):
        ours["default"][selection]


def _selections(shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    """Basic selections of ``shape``: integers and slices (bounds past the ends,
    negative, None; steps 1-5), fewer than every dimension, or an ellipsis."""

    def dim(length: int) -> st.SearchStrategy[Any]:
        bound = st.none() | st.integers(-length - 3, length + 3)
        step = st.none() | st.integers(1, 5)
        sliced = st.builds(slice, bound, bound, step)
        return st.integers(-length, length - 1) | sliced if length else sliced

    def shaped(items: tuple[Any, ...]) -> st.SearchStrategy[Any]:
        at = st.integers(0, len(items))
        cut = st.integers(0, len(items))
        return st.one_of(
            st.just(items),
            cut.map(lambda n: items[:n]),
            at.map(lambda n: (*items[:n], Ellipsis, *items[n + 1 :])),
        )

    return st.tuples(*(dim(n) for n in shape)).flatmap(shaped)


@st.composite
def _grids(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], Any]:
    """An array shape, a shard shape, an inner chunk shape dividing it, a selection."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 13)) for _ in range(ndim))
    inner = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    shard = tuple(c * draw(st.integers(1, 3)) for c in inner)
    return shape, shard, inner, draw(_selections(shape))


@settings(max_examples=150, deadline=None)
@given(_grids())
def test_a_selection_split_twice_is_numpys(grid) -> None:
    """Split over shards, then each shard's part over inner chunks, and put together:
    numpy's own basic indexing (the oracle of zarr-python's)."""
    shape, shard, inner, selection = grid
    values = np.arange(math.prod(shape)).reshape(shape)
    expected = values[selection]
    dims = normalize(selection, shape)
    out = np.full(out_shape(dims), -1)
    for shard_coords, in_shard, shard_out in project(dims, shard):
        view = out[shard_out] if shard_out else out[...]
        for coords, in_chunk, chunk_out in project(in_shard, inner):
            starts = zip(shard_coords, shard, coords, inner, strict=True)
            start = [s * sh + c * i for s, sh, c, i in starts]
            chunk = values[tuple(slice(a, a + i) for a, i in zip(start, inner, strict=True))]
            view[chunk_out] = chunk[in_chunk]
    np.testing.assert_array_equal(out, expected)
    assert out.shape == np.asarray(expected).shape


@settings(max_examples=40, deadline=None)
@given(_selections((10, 14, 7)))
def test_any_basic_selection_is_zarr_pythons(store, ours, selection: Any) -> None:
    for name in ("default", "index_at_start"):
        expected = store[1][name][selection]
        got = ours[name][selection]
        assert type(got) is type(expected)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "selection",
    [(1, 2, 3), (1, 2, 3, Ellipsis), (Ellipsis, 1, 2, 3), (1, Ellipsis, 2, 3), (np.int64(1), 2, 3)],
    ids=["ints", "ints-ellipsis", "ellipsis-ints", "int-ellipsis-ints", "numpy-int"],
)
def test_one_element_is_returned_as_zarr_returns_it(store, ours, selection: Any) -> None:
    """zarr-python returns one element as a 0-d array for Python ints and slices only,
    as a numpy scalar for any other basic selection (an ellipsis, a numpy integer): the
    type too is zarr's (found by the hypothesis test above on zarr 3.1.6)."""
    for name in ("default", "index_at_start"):
        expected = store[1][name][selection]
        got = ours[name][selection]
        assert type(got) is type(expected)
        assert got == expected


def test_a_shard_never_written_follows_zarrs_missing_chunk_config(store) -> None:
    """zarr-python 3.4's ``array.read_missing_chunks = False`` makes a shard never
    written an error: the engine's array then raises as zarr-python does (earlier
    zarr-pythons ignore the setting and fill)."""
    with zarr.config.set({"array.read_missing_chunks": False}):
        theirs = zarr.open_group(store[0], mode="r")["default"]
        view, native = engine_view(store[0])
        try:
            ours = open_native(ZarrStore(view.source, read_only=True), native["default"])
            try:
                expected = theirs[4:8, 0:6, 0:4]
            except Exception as error:  # the oracle refuses: so must the engine
                with pytest.raises(type(error)):
                    ours[4:8, 0:6, 0:4]
            else:
                np.testing.assert_array_equal(ours[4:8, 0:6, 0:4], expected)
        finally:
            view.close()


def test_a_shard_grid_that_is_not_regular_is_read_by_zarr(tmp_path: Path) -> None:
    """zarr-python 3.4's rectilinear grids (shards of different sizes): no plan, and
    zarr-python reads the array. zarr-python 3.1-3.3 cannot make one (TypeError)."""
    zmap = nczarr.open_map(str(tmp_path / "r.zarr"), mode="w")
    with zarr.config.set({"array.rectilinear_chunks": True}):
        try:
            array = zarr.create_array(
                ZarrStore(zmap), name="r", shape=(12, 12), dtype="<i4", chunks=(2, 3),
                shards=[[4, 8], [6, 6]],
            )  # fmt: skip
        except TypeError:
            pytest.skip("this zarr-python has no rectilinear chunk grid")
        array[...] = np.arange(144).reshape(12, 12)
        assert shard_plan(array, zmap, "r") is None
        np.testing.assert_array_equal(array[3:9, 5], np.arange(144).reshape(12, 12)[3:9, 5])


def test_supported_is_false_without_zarrs_data_types(monkeypatch) -> None:
    """supported() is honest: a zarr-python without ``zarr.core.dtype`` (3.0) has no
    fast path, and no plan is made."""
    import sys

    monkeypatch.setitem(sys.modules, "zarr.core.dtype", None)
    assert not shardread.supported()
    assert shard_plan(object(), None, "") is None  # type: ignore[arg-type]
