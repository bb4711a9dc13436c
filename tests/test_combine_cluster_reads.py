"""A combine with ``client=`` reads its S3 sources on the cluster's workers.

A combine reads every source (its listing, metadata objects and the chunks it compares)
before it writes anything. On S3 those are round trips; on 04480dd they were all the
client's (its read-ahead threads), whatever the number of workers. Now each later
source's reads run as tasks on the workers (``growcluster.SourceReads``), and the client
opens, checks and compares them in order. These tests watch where the reads happen (the
client process's maps, the cluster's task stream, the requests at a counting proxy) and
that the results and refusals are the local run's; nothing here is timed.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nczarr
from nczarr.conversion import growsiblings
from nczarr.maps.mapcore import MapCore
from nczarr.maps.s3 import S3Map

from .clusters import local_client
from .faultproxy import FaultProxy
from .growing import (
    daily,
    expected_temp,
    leaf_probes,
    most_sources_read_at_once,
    read_nc,
    s3_days,
)
from .sources import tree

# real LocalClusters: the newest-Python CI run leaves these to the floor run
pytestmark = pytest.mark.long

DAYS = 10


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with local_client(n_workers=2) as c:
        yield c


def _reads_here(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The S3 maps whose listing and objects this process reads (``list_reading``, what
    the first pass asks of each later source); the workers are other processes."""
    seen: list[str] = []

    def spy(self: S3Map, wanted: Any) -> Any:
        seen.append(self.url)
        return MapCore.list_reading(self, wanted)

    monkeypatch.setattr(S3Map, "list_reading", spy)
    return seen


def _combine_through(proxy: FaultProxy, urls: list[str], out: Path, client: Any) -> Any:
    """The combine of ``urls`` into ``out`` on ``client``, its sources read through
    ``proxy``."""
    return nczarr.convert(
        urls, out, concat_dim="time", source_options={"endpoint_url": proxy.endpoint}, client=client
    )


def _combine_on_s3(sources: list[str], dst: str, opts: dict[str, Any], client: Any) -> Any:
    """The combine of ``sources`` into ``dst``, both sides with ``opts``."""
    return nczarr.convert(
        sources, dst, concat_dim="time", source_options=opts, target_options=opts, client=client
    )


def _assert_same_as_local(remote: Any, local: Any, tmp_path: Path) -> None:
    """The cluster's combine (``tmp_path/remote``) is the local one's, byte for byte."""
    assert (remote.chunks_copied, remote.chunks_reencoded) == (
        local.chunks_copied,
        local.chunks_reencoded,
    )
    assert tree(tmp_path / "remote") == tree(tmp_path / "local")


def test_s3_sources_are_read_on_the_workers_and_combine_as_locally(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import get_task_stream

    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    local = nczarr.convert(
        urls, tmp_path / "local", concat_dim="time", source_options={"endpoint_url": s3_endpoint}
    )
    read_here = _reads_here(monkeypatch)
    with FaultProxy(s3_endpoint, latency=0.01) as proxy, get_task_stream(client) as stream:
        proxy.reset_counts()
        remote = _combine_through(proxy, urls, tmp_path / "remote", client)
        spans = list(proxy.spans)
    # the first source is read fully here (listed whole once, 4e408c7: through
    # list_reading, so it shows among these), the second starts the reads ahead; every
    # later one was read on a worker (04480dd: all DAYS - 1 later sources read here)
    assert set(read_here) <= {urls[0], urls[1]} and len(read_here) == len(set(read_here))
    readers = {t["worker"] for t in stream.data if str(t["key"]).startswith("nczarr-read-")}
    assert readers
    # each source's listing of all its keys was asked for once: no read made twice
    whole = re.compile(r"prefix=src%2Fd\d\d%2F&delimiter=&")  # a source's every key
    listed = [t for _, _, op, t in spans if op == "ListObjectsV2" and whole.search(t)]
    assert sorted(listed) == sorted(set(listed)) and len(listed) == DAYS
    _assert_same_as_local(remote, local, tmp_path)
    np.testing.assert_array_equal(read_nc(tmp_path / "remote")["temp"], expected_temp(0, 2 * DAYS))


def test_workers_copy_into_an_empty_s3_target_without_probes_or_sizes_asked(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, client: Any
) -> None:
    # the client checked the target empty; each worker's copy of the target map is
    # told so (4b6c6f4: the workers' copies listed each key's prefix first); a
    # source's chunk sizes come with its copies from its listing in the first pass
    # (784559f: a HEAD a chunk on the worker)
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    dst = f"s3://{s3_bucket}/out"
    with FaultProxy(s3_endpoint) as proxy:
        proxy.reset_counts()
        report = _combine_on_s3(urls, dst, {"endpoint_url": proxy.endpoint}, client)
        spans = list(proxy.spans)
    copies = [t for _, _, op, t in spans if op == "CopyObject"]
    assert report.chunks_copied == len(copies) > 0
    assert leaf_probes(spans, s3_bucket, "out") == []
    assert not [t for _, _, op, t in spans if op == "HeadObject" and "/src/" in t]
    back = tmp_path / "back"
    nczarr.convert(dst, back, source_options={"endpoint_url": s3_endpoint})
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 2 * DAYS))


def test_sources_of_other_lengths_on_the_cluster_path_combine_as_locally(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, client: Any
) -> None:
    # a 4-day source among 2-day ones is read fully by the client (another model): the
    # reads already started on the workers for the sources after it asked for the keys
    # of the old model and are read again here; the result is the local run's
    opts = {"endpoint_url": s3_endpoint}
    lengths = (2, 2, 4, 2, 2, 2, 2, 2)
    urls, t0 = [], 0
    for i, n in enumerate(lengths):
        url = f"s3://{s3_bucket}/src/d{i:02d}"
        nczarr.convert(daily(tmp_path / f"d{i:02d}", t0, n), url, target_options=opts)
        urls.append(url)
        t0 += n
    local = nczarr.convert(urls, tmp_path / "local", concat_dim="time", source_options=opts)
    remote = nczarr.convert(
        urls, tmp_path / "remote", concat_dim="time", source_options=opts, client=client
    )
    _assert_same_as_local(remote, local, tmp_path)
    np.testing.assert_array_equal(read_nc(tmp_path / "remote")["temp"], expected_temp(0, t0))


def test_two_workers_read_more_sources_at_once_than_the_client_would(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tasks of AHEAD sources, each read AHEAD at a time; two workers run two tasks
    monkeypatch.setattr(growsiblings, "AHEAD", 2)
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    with FaultProxy(s3_endpoint, latency=0.05) as proxy:
        proxy.reset_counts()
        _combine_through(proxy, urls, tmp_path / "out", client)
        spans = list(proxy.spans)
    # the client's read-ahead reads at most AHEAD + 1 sources at once (04480dd); the
    # reads, not the listings alone (one short round trip each: two workers' tasks
    # started tens of milliseconds apart did not always overlap in them)
    assert most_sources_read_at_once(spans) > growsiblings.AHEAD + 1
    np.testing.assert_array_equal(read_nc(tmp_path / "out")["temp"], expected_temp(0, 2 * DAYS))


def _odd_one(tmp_path: Path, bucket: str, endpoint: str, name: str, t0: int) -> str:
    url = f"s3://{bucket}/src/{name}"
    opts = {"endpoint_url": endpoint}
    nczarr.convert(daily(tmp_path / name, t0, 2, lat=(9.0, 8.0, 7.0)), url, target_options=opts)
    return url


def _keys(s3_client: Any, bucket: str, prefix: str) -> list[str]:
    listed = s3_client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def test_a_refusal_on_the_cluster_path_is_the_local_one_and_writes_nothing(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, s3_client: Any, client: Any
) -> None:
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 8)
    odd = _odd_one(tmp_path, s3_bucket, s3_endpoint, "d99", 99)
    sources = [*urls[:5], odd, *urls[5:]]  # read on a worker, compared on the client
    opts = {"endpoint_url": s3_endpoint}
    dst = f"s3://{s3_bucket}/out"
    with pytest.raises(nczarr.NCZarrError, match="lat") as here:
        _combine_on_s3(sources, dst, opts, None)
    with pytest.raises(type(here.value)) as there:
        _combine_on_s3(sources, dst, opts, client)
    assert str(there.value) == str(here.value)
    assert _keys(s3_client, s3_bucket, "out") == []


@pytest.mark.parametrize("on_cluster", [False, True])
def test_refusals_come_in_source_order(
    tmp_path: Path,
    s3_bucket: str,
    s3_endpoint: str,
    s3_client: Any,
    client: Any,
    on_cluster: bool,
) -> None:
    # source 3 is missing (found when it is read); source 6, opened and checked ahead
    # while an earlier one is read, holds the target: the earlier source's error is the
    # one raised, as reading one source at a time would (04480dd: the overlap, found
    # ahead of its turn)
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 8)
    missing = f"s3://{s3_bucket}/src/nothing"
    sources = [*urls[:3], missing, *urls[3:]]
    opts = {"endpoint_url": s3_endpoint}
    dst = f"{sources[6]}/inner"
    before = _keys(s3_client, s3_bucket, "src/")
    with pytest.raises(nczarr.NCZarrError) as raised:
        _combine_on_s3(sources, dst, opts, client if on_cluster else None)
    assert "nothing" in str(raised.value) and "overlap" not in str(raised.value)
    assert _keys(s3_client, s3_bucket, "src/") == before


def test_a_read_task_returns_a_source_s_error_for_its_turn(tmp_path: Path) -> None:
    from nczarr.conversion.growcluster import read_sources_batch

    good = daily(tmp_path / "good", 0, 2)
    gone = daily(tmp_path / "gone", 2, 2)
    maps = [nczarr.open_map(str(p), mode="r") for p in (good, gone)]
    pickled = [pickle.dumps(m) for m in maps]
    for m in maps:
        m.close()
    for p in sorted(gone.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    gone.rmdir()
    wanted = {".zgroup": None, "temp/.zarray": None}
    first, second = read_sources_batch(pickled, wanted, 2)
    assert isinstance(first, tuple) and set(first[1]) == set(wanted)
    assert ".zgroup" in first[0]
    assert isinstance(second, Exception) and "gone" in str(second)
