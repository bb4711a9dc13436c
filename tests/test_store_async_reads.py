"""ZarrStore reads from async filesystems without a worker thread (issue 17).

A map over an fsspec async filesystem (S3) says so (``async_reads``); the store then
awaits the map's ``aread`` (the filesystem's ``_cat_file`` on its own event loop)
instead of calling the map in a worker thread (``asyncio.to_thread``). On a real S3
server (moto), every byte request reads what the map's synchronous path reads, and a
whole zarr-python read of uncompressed arrays (whose codecs need no thread either)
starts no worker thread at all.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from nczarr.integrations.zarr_store import ZarrStore
from nczarr.maps.file import FileMap
from nczarr.maps.fsspec import FsspecMap
from nczarr.maps.memory import MemoryMap
from nczarr.maps.s3 import S3Map

DATA = bytes(range(256)) * 3

REQUESTS: list[Any] = [
    None,
    RangeByteRequest(0, 10),
    RangeByteRequest(5, 700),
    RangeByteRequest(700, 2000),  # past the end: cut, as slicing
    RangeByteRequest(3, 3),  # empty
    RangeByteRequest(900, 1000),  # wholly past the end: empty
    OffsetByteRequest(17),
    OffsetByteRequest(5000),
    SuffixByteRequest(9),
    SuffixByteRequest(0),
    SuffixByteRequest(5000),  # more than the object: all of it
]


def _expected(request: Any) -> bytes:
    if request is None:
        return DATA
    if isinstance(request, RangeByteRequest):
        return DATA[request.start : request.end]
    if isinstance(request, OffsetByteRequest):
        return DATA[request.offset :]
    return DATA[len(DATA) - request.suffix :] if request.suffix else b""


@pytest.fixture
def s3map(s3_endpoint: str, s3_bucket: str):
    zmap = S3Map(f"s3://{s3_bucket}/root/ds", mode="a", endpoint_url=s3_endpoint)
    yield zmap
    zmap.close()


@pytest.fixture
def to_thread_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every ``asyncio.to_thread`` call made while the test runs (zarr's and ours)."""
    calls: list[Any] = []
    real = asyncio.to_thread

    async def counting(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        calls.append(func)
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counting)
    return calls


def test_maps_say_whether_they_read_asynchronously(s3map, s3_endpoint, tmp_path) -> None:
    assert s3map.async_reads and ZarrStore(s3map).async_reads
    url = f"s3://{s3map.bucket}/other"
    on_s3 = FsspecMap(url, mode="a", endpoint_url=s3_endpoint, skip_instance_cache=True)
    assert on_s3.async_reads
    assert not MemoryMap().async_reads
    assert not FileMap(str(tmp_path / "d.file"), mode="w").async_reads
    assert not FsspecMap(f"file://{tmp_path / 'f'}", mode="w").async_reads
    assert not ZarrStore(MemoryMap()).async_reads


@pytest.mark.parametrize("request_", REQUESTS, ids=repr)
def test_byte_requests_read_what_the_map_reads(s3map, to_thread_calls, request_) -> None:
    s3map["a/k"] = DATA
    store = ZarrStore(s3map, read_only=True)
    value = sync(store.get("a/k", default_buffer_prototype(), request_))
    assert value is not None and value.to_bytes() == _expected(request_)


def test_plain_requests_start_no_worker_thread(s3map, to_thread_calls) -> None:
    """Whole objects, ranges, offsets and suffixes are awaited on the filesystem's loop:
    no ``asyncio.to_thread``, and ``_cat_file`` runs on fsspec's IO thread only."""
    s3map["a/k"] = DATA
    ran_on: set[str] = set()
    real_cat = s3map.fs._cat_file

    async def cat(*args: Any, **kwargs: Any) -> bytes:
        ran_on.add(threading.current_thread().name)
        return await real_cat(*args, **kwargs)

    s3map.fs._cat_file = cat
    try:
        store = ZarrStore(s3map, read_only=True)
        plain = [None, RangeByteRequest(5, 700), OffsetByteRequest(17), SuffixByteRequest(9)]
        values = sync(
            store.get_partial_values(default_buffer_prototype(), [("a/k", r) for r in plain])
        )
        assert [v.to_bytes() for v in values] == [_expected(r) for r in plain]
        assert sync(store.get("a/missing")) is None
    finally:
        del s3map.fs._cat_file
    assert to_thread_calls == []
    assert ran_on == {"fsspecIO"}


def test_a_blocking_map_still_reads_in_a_worker_thread(tmp_path, to_thread_calls) -> None:
    """The counter's check: a directory map's reads go through ``asyncio.to_thread``."""
    zmap = FileMap(str(tmp_path / "d.file"), mode="w")
    zmap["k"] = DATA
    assert sync(ZarrStore(zmap).get("k")).to_bytes() == DATA
    assert len(to_thread_calls) == 1


@pytest.mark.parametrize("shards", [None, (4, 6)])
def test_zarr_reads_an_s3_array_without_worker_threads(s3map, to_thread_calls, shards) -> None:
    """zarr-python reads a (sharded) uncompressed Zarr v3 array from S3 through the
    store: the values written, and not one ``asyncio.to_thread``."""
    values = np.arange(10 * 14, dtype="<f8").reshape(10, 14) / 8
    store = ZarrStore(s3map)
    array = zarr.create_array(
        store,
        name="v",
        shape=values.shape,
        chunks=(2, 3),
        shards=shards,
        dtype="<f8",
        compressors=None,
        fill_value=-1.0,
    )
    array[:8, :] = values[:8, :]
    to_thread_calls.clear()
    read = zarr.open_array(ZarrStore(s3map, read_only=True), path="v", mode="r")
    expected = np.where(np.arange(10)[:, None] < 8, values, -1.0)
    np.testing.assert_array_equal(read[...], expected)
    np.testing.assert_array_equal(read[3:9, 5], expected[3:9, 5])
    assert to_thread_calls == []


def test_a_missing_bucket_object_is_none_and_errors_keep_their_names(s3map) -> None:
    store = ZarrStore(s3map, read_only=True)
    assert (
        sync(store.get("nothing/here", default_buffer_prototype(), RangeByteRequest(0, 4))) is None
    )
    with pytest.raises(ValueError, match="invalid byte range for 'k'"):
        sync(store.get("k", default_buffer_prototype(), RangeByteRequest(5, 2)))
