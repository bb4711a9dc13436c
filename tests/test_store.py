"""ZarrStore: zarr-python's own StoreTests over every map, plus nczarr-specific behaviour."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import cpu, default_buffer_prototype
from zarr.core.sync import sync
from zarr.testing.store import StoreTests

from nczarr.errors import InvalidKeyError, ObjectExistsError, ReadOnlyError
from nczarr.integrations.zarr_store import ZarrStore, blocking_io
from nczarr.maps.file import FileMap
from nczarr.maps.fsspec import FsspecMap
from nczarr.maps.memory import MemoryMap
from nczarr.maps.open import open_map
from nczarr.maps.s3 import S3Map
from nczarr.maps.zip import ZipMap


def _buf(data: bytes) -> cpu.Buffer:
    return cpu.Buffer.from_bytes(data)


# --------------------------------------------------------------------------- conformance
class _MapStoreTests(StoreTests[ZarrStore, cpu.Buffer]):
    """zarr's StoreTests, unchanged; ``set``/``get`` bypass the store through the map."""

    store_cls = ZarrStore
    buffer_cls = cpu.Buffer

    async def set(self, store: ZarrStore, key: str, value: cpu.Buffer) -> None:
        store.zmap[key] = value.to_bytes()

    async def get(self, store: ZarrStore, key: str) -> cpu.Buffer:
        return self.buffer_cls.from_bytes(store.zmap[key])

    def test_store_repr(self, store: ZarrStore) -> None:
        assert repr(store) == f"ZarrStore({store.zmap!r})"

    def test_store_supports_writes(self, store: ZarrStore) -> None:
        assert store.supports_writes

    def test_store_supports_listing(self, store: ZarrStore) -> None:
        assert store.supports_listing


class TestMemoryStore(_MapStoreTests):
    @pytest.fixture
    def store_kwargs(self) -> dict[str, Any]:
        return {"zmap": MemoryMap()}


class TestFileStore(_MapStoreTests):
    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"zmap": FileMap(str(tmp_path / "ds.file"), mode="a")}


class TestZipStore(_MapStoreTests):
    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"zmap": ZipMap(str(tmp_path / "ds.zip"), mode="a")}


class TestS3Store(_MapStoreTests):
    @pytest.fixture
    def store_kwargs(self, request: pytest.FixtureRequest) -> dict[str, Any]:
        endpoint = request.getfixturevalue("s3_endpoint")
        bucket = request.getfixturevalue("s3_bucket")
        return {"zmap": S3Map(f"s3://{bucket}/root/ds", mode="a", endpoint_url=endpoint)}


class TestFsspecStore(_MapStoreTests):
    @pytest.fixture
    def store_kwargs(self, tmp_path: Path) -> dict[str, Any]:
        return {"zmap": FsspecMap(f"file://{tmp_path / 'ds.fsspec'}", mode="a")}


# --------------------------------------------------------------------------- map kinds
@pytest.fixture
def make_map(map_kind):
    """``make(mode)``: open (creating on first use) one store of the parametrised kind."""
    return map_kind.make


# --------------------------------------------------------------------------- zarr round trips
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_hierarchy_round_trip(make_map, zarr_format: int) -> None:
    """zarr writes a group tree through the store; a fresh store reads the same numbers."""
    rng = np.random.default_rng(42)
    temp = rng.normal(size=(7, 11)).astype("f4")
    counts = np.arange(23, dtype="i8")
    store = ZarrStore(make_map("w"))
    root = zarr.open_group(store=store, mode="w", zarr_format=zarr_format)
    root.attrs["title"] = "round trip"
    sub = root.create_group("sub")
    a = sub.create_array("temp", shape=temp.shape, chunks=(3, 4), dtype="f4", fill_value=-1.0)
    a[...] = temp
    b = root.create_array("counts", shape=counts.shape, chunks=(5,), dtype="i8", fill_value=0)
    b[...] = counts
    b[3:6] = -7
    store.close()

    reread = ZarrStore(make_map("r"))
    assert reread.read_only
    group = zarr.open_group(store=reread, mode="r", zarr_format=zarr_format)
    assert group.attrs["title"] == "round trip"
    np.testing.assert_array_equal(group["sub/temp"][...], temp)
    expected = counts.copy()
    expected[3:6] = -7
    np.testing.assert_array_equal(group["counts"][...], expected)
    assert sorted(group.group_keys()) == ["sub"]
    assert sorted(group.array_keys()) == ["counts"]
    meta = ".zarray" if zarr_format == 2 else "zarr.json"
    assert sync(reread.exists(f"sub/temp/{meta}"))
    # 7x11 in 3x4 chunks: 3*3 chunks, all written.
    chunk_prefix = "sub/temp/" if zarr_format == 2 else "sub/temp/c/"
    chunks = [
        k
        for k in reread.zmap.keys_below("sub/temp")
        if k.rsplit("/", 1)[1] not in (".zarray", ".zattrs", "zarr.json")
    ]
    assert len(chunks) == 9
    assert all(k.startswith(chunk_prefix) for k in chunks)


def test_zarr_partial_chunk_write_and_overwrite(make_map) -> None:
    """Rewriting part of a chunk and overwriting a whole array keep numpy semantics."""
    store = ZarrStore(make_map("w"))
    root = zarr.open_group(store=store, mode="w", zarr_format=3)
    a = root.create_array("x", shape=(10,), chunks=(4,), dtype="i4", fill_value=-1)
    a[2:7] = np.arange(5, dtype="i4")
    np.testing.assert_array_equal(a[...], [-1, -1, 0, 1, 2, 3, 4, -1, -1, -1])
    # the last chunk is all fill value, so zarr did not write it
    assert sorted(store.zmap.keys_below("x/c")) == ["x/c/0", "x/c/1"]
    root.create_array("x", shape=(3,), dtype="f8", fill_value=0.5, overwrite=True)
    assert sorted(store.zmap.keys_below("x")) == ["x/zarr.json"]
    np.testing.assert_array_equal(root["x"][...], [0.5, 0.5, 0.5])
    store.close()


def test_open_zarr_reads_a_written_directory(tmp_path: Path) -> None:
    """open_zarr(url) is zarr.open_group over open_map(url)."""
    url = str(tmp_path / "ds.file")
    with ZarrStore(open_map(url, "w")) as store:
        root = zarr.open_group(store=store, mode="w", zarr_format=2)
        root.create_array("v", shape=(4,), dtype="i2", fill_value=0)[...] = [1, 2, 3, 4]
    from nczarr import open_zarr

    group = open_zarr(url)
    assert group.store.read_only
    np.testing.assert_array_equal(group["v"][...], np.array([1, 2, 3, 4], dtype="i2"))
    with pytest.raises(ValueError, match="read-only"):
        group["v"][0] = 9


def test_open_zarr_reads_netcdf_c_metadata_once(tmp_path: Path) -> None:
    """Deciding that a store needs the translated view and building the view share one
    read of the metadata (on S3 each object read is a request)."""
    import netCDF4

    from nczarr import open_zarr

    path = tmp_path / "nc.file"
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("x", 4)
        ds.createVariable("v", "i2", ("x",))[:] = [1, 2, 3, 4]
        ds.createGroup("g").createVariable("w", "f4", ("x",))[:] = 0.5

    class Recording(FileMap):
        def getitems_capped(self, keys: Any, cap: int) -> dict[str, bytes]:
            keys = list(keys)
            reads.extend(keys)
            return super().getitems_capped(keys, cap)

    reads: list[str] = []
    group = open_zarr(Recording(str(path)))
    np.testing.assert_array_equal(group["v"][...], [1, 2, 3, 4])
    assert ".zgroup" in reads and "v/.zarray" in reads
    assert len(reads) == len(set(reads)), sorted(k for k in set(reads) if reads.count(k) > 1)


# --------------------------------------------------------------------------- byte ranges
def _expected_range(data: bytes, request: Any) -> bytes:
    if request is None:
        return data
    if isinstance(request, RangeByteRequest):
        return data[request.start : request.end]
    if isinstance(request, OffsetByteRequest):
        return data[request.offset :]
    return data[max(0, len(data) - request.suffix) :] if request.suffix else b""


_requests = st.one_of(
    st.none(),
    st.tuples(st.integers(0, 40), st.integers(0, 40)).map(
        lambda t: RangeByteRequest(min(t), max(t))
    ),
    st.integers(0, 40).map(OffsetByteRequest),
    st.integers(0, 40).map(SuffixByteRequest),
)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=32), request=_requests)
def test_byte_ranges_match_slicing(data: bytes, request: Any) -> None:
    """Every zarr byte request over a memory map returns what slicing the bytes gives."""
    store = ZarrStore(MemoryMap({"c/0": data}))
    got = sync(store.get("c/0", byte_range=request))
    assert got is not None
    assert got.to_bytes() == _expected_range(data, request)


def test_byte_ranges_through_every_map(make_map) -> None:
    data = bytes(range(100))
    zmap = make_map("w")
    zmap["a/c/0"] = data
    store = ZarrStore(zmap)
    cases = [
        RangeByteRequest(10, 20),
        RangeByteRequest(95, 200),
        RangeByteRequest(5, 5),
        OffsetByteRequest(97),
        OffsetByteRequest(0),
        SuffixByteRequest(3),
        SuffixByteRequest(500),
        SuffixByteRequest(0),
    ]
    got = sync(store.get_partial_values(default_buffer_prototype(), [("a/c/0", r) for r in cases]))
    assert [g.to_bytes() for g in got] == [_expected_range(data, r) for r in cases]
    assert sync(store.get("a/c/9", byte_range=RangeByteRequest(0, 2))) is None
    assert sync(store.getsize("a/c/0")) == 100
    store.close()


def test_invalid_byte_ranges_are_rejected_with_the_key() -> None:
    store = ZarrStore(MemoryMap({"k": b"abc"}))
    with pytest.raises(ValueError, match=r"invalid byte range for 'k'.*start=2, end=1"):
        sync(store.get("k", byte_range=RangeByteRequest(2, 1)))
    with pytest.raises(ValueError, match=r"invalid byte range for 'k'.*offset=-1"):
        sync(store.get("k", byte_range=OffsetByteRequest(-1)))
    with pytest.raises(TypeError, match=r"Unexpected byte_range, got \(0, 1\) for 'k'"):
        sync(store.get("k", byte_range=(0, 1)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- keys and errors
def test_get_without_prototype_and_missing_keys() -> None:
    store = ZarrStore(MemoryMap({"g/zarr.json": b"{}"}))
    got = sync(store.get("g/zarr.json"))
    assert got is not None and got.to_bytes() == b"{}"
    assert sync(store.get("g/missing")) is None
    assert sync(store.get("g/zarr.json/below")) is None
    assert store.get_sync("g/zarr.json").to_bytes() == b"{}"
    with pytest.raises(FileNotFoundError, match="g/missing"):
        sync(store.getsize("g/missing"))


@pytest.mark.parametrize("key", ["", "a//b", "a/../b", "a/./b", "back\\slash", "ctl\x01"])
def test_keys_zarr_never_produces_raise_invalid_key(key: str) -> None:
    store = ZarrStore(MemoryMap())
    with pytest.raises(InvalidKeyError, match="invalid key"):
        sync(store.get(key))
    with pytest.raises(InvalidKeyError, match="invalid key"):
        sync(store.set(key, _buf(b"x")))
    with pytest.raises(InvalidKeyError, match="invalid key"):
        sync(store.exists(key))


def test_leaf_rule_violations_propagate(make_map) -> None:
    store = ZarrStore(make_map("w"))
    sync(store.set("a/b", _buf(b"leaf")))
    with pytest.raises(ObjectExistsError, match=r"'a/b/c'.*'a/b' holds content"):
        sync(store.set("a/b/c", _buf(b"x")))
    with pytest.raises(ObjectExistsError, match=r"'a'.*prefix of existing keys"):
        sync(store.set("a", _buf(b"x")))
    assert sorted(store.zmap) == ["a/b"]
    store.close()


def test_set_rejects_non_buffers() -> None:
    store = ZarrStore(MemoryMap())
    with pytest.raises(TypeError, match=r"ZarrStore.set\('k'\): value must be a zarr Buffer"):
        sync(store.set("k", b"raw"))  # type: ignore[arg-type]


def test_listing_follows_zarr_string_prefix_semantics(make_map) -> None:
    zmap = make_map("w")
    for key in ["foo/zarr.json", "foo/c/0", "foobar/zarr.json", "fo", "bar/x"]:
        zmap[key] = b"1"
    store = ZarrStore(zmap)

    async def collect(it):
        return sorted([k async for k in it])

    assert sync(collect(store.list_prefix("foo/"))) == ["foo/c/0", "foo/zarr.json"]
    assert sync(collect(store.list_prefix("foo"))) == [
        "foo/c/0",
        "foo/zarr.json",
        "foobar/zarr.json",
    ]
    assert sync(collect(store.list_prefix("foo/c"))) == ["foo/c/0"]
    assert sync(collect(store.list_dir(""))) == ["bar", "fo", "foo", "foobar"]
    assert sync(collect(store.list_dir("foo/"))) == ["c", "zarr.json"]
    assert sync(collect(store.list_dir("fo"))) == []  # a leaf has no children
    assert sync(store.is_empty("fo"))
    assert not sync(store.is_empty("foo"))
    sync(store.delete_dir("foo"))
    assert sync(collect(store.list())) == ["bar/x", "fo", "foobar/zarr.json"]
    store.close()


# --------------------------------------------------------------------------- read-only, lifecycle
def test_read_only_follows_the_map() -> None:
    ro = MemoryMap({"k": b"v"}, mode="r")
    store = ZarrStore(ro)
    assert store.read_only
    with pytest.raises(ValueError, match="read-only mode"):
        sync(store.set("k2", _buf(b"x")))
    with pytest.raises(ReadOnlyError, match=r"cannot make a writable ZarrStore over MemoryMap"):
        ZarrStore(ro, read_only=False)
    with pytest.raises(ReadOnlyError, match="cannot be reopened for writing"):
        store.with_read_only(False)
    rw = ZarrStore(MemoryMap(), read_only=True)
    assert rw.read_only and not rw.zmap.read_only
    assert repr(rw).endswith(", read_only=True)")


def test_with_read_only_reopens_a_read_only_file_map(tmp_path: Path) -> None:
    url = str(tmp_path / "ds.file")
    with FileMap(url, mode="w") as m:
        m["k"] = b"v"
    reader = ZarrStore(FileMap(url, mode="r"))
    writer = reader.with_read_only(False)
    assert not writer.read_only and writer.zmap.mode == "r+"
    sync(writer.set("k2", _buf(b"w")))
    assert reader.get_sync("k2").to_bytes() == b"w"


def test_pickle_delegates_to_the_map(make_map) -> None:
    store = ZarrStore(make_map("w"))
    sync(store.set("a/b", _buf(b"123")))
    store.zmap.flush()
    clone = pickle.loads(pickle.dumps(store))
    assert clone == store
    assert clone.read_only == store.read_only
    assert clone.get_sync("a/b").to_bytes() == b"123"
    ro_clone = pickle.loads(pickle.dumps(store.with_read_only(True)))
    assert ro_clone.read_only and ro_clone != store
    store.close()


def test_equality_is_by_storage_and_read_only() -> None:
    a = MemoryMap({"k": b"v"})
    assert ZarrStore(a) == ZarrStore(a)
    assert ZarrStore(a) == ZarrStore(MemoryMap({"k": b"v"}))
    assert ZarrStore(a) != ZarrStore(MemoryMap({"k": b"w"}))
    assert ZarrStore(a) != ZarrStore(a, read_only=True)
    assert ZarrStore(a) != a


def test_close_closes_the_map_and_blocks_reopening() -> None:
    zmap = MemoryMap()
    store = sync(ZarrStore.open(zmap))
    store.close()
    assert zmap.closed and not store._is_open
    with pytest.raises(ValueError, match=r"cannot open ZarrStore\(MemoryMap.*its map is closed"):
        store.get_sync("k")
    with pytest.raises(ValueError, match="its map is closed"):
        sync(store.get("k"))


def test_constructor_rejects_non_maps() -> None:
    with pytest.raises(TypeError, match="ZarrStore needs a ZMap, got dict"):
        ZarrStore({})  # type: ignore[arg-type]


def test_blocking_io_is_per_map(map_kind) -> None:
    zmap = map_kind.make("w")
    assert blocking_io(zmap) is (map_kind.kind in ("file", "s3", "fsspec", "fsspec-s3"))
    assert ZarrStore(zmap).blocking is blocking_io(zmap)

    class Declared(MemoryMap):
        blocking_io = True

    class Inherited(MemoryMap):
        pass

    assert blocking_io(Declared())
    assert not blocking_io(Inherited())
    instance = MemoryMap()
    instance.blocking_io = True  # type: ignore[attr-defined]
    assert ZarrStore(instance).blocking
    zmap.close()


def test_set_if_not_exists_keeps_the_first_value_under_concurrency() -> None:
    store = ZarrStore(MemoryMap())

    async def race() -> None:
        import asyncio

        await asyncio.gather(
            *(store.set_if_not_exists("k", _buf(str(i).encode())) for i in range(20))
        )

    sync(race())
    assert store.zmap["k"] == b"0"


@pytest.mark.parametrize("blocking", [True, False])
def test_blocking_maps_are_called_off_the_event_loop(blocking: bool) -> None:
    """A blocking map's calls run in a worker thread; an inline map's on the loop's thread."""
    import threading

    class Recording(MemoryMap):
        def _load(self, key: str) -> bytes:
            threads.append(threading.get_ident())
            return super()._load(key)

    threads: list[int] = []
    zmap = Recording({"k": b"v"})
    zmap.blocking_io = blocking  # type: ignore[attr-defined]
    store = ZarrStore(zmap)

    async def read() -> tuple[int, bytes]:
        value = await store.get("k")
        return threading.get_ident(), value.to_bytes()

    loop_thread, value = sync(read())
    assert value == b"v"
    assert (threads == [loop_thread]) is not blocking
    assert len(threads) == 1
