"""convert(client=...) on a real dask.distributed LocalCluster (2 worker processes).

The cluster is one per module (starting worker processes costs seconds). Every
result is compared byte for byte with a local convert of the same source.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed
import pytest

import nczarr
from nczarr.cli import main
from nczarr.conversion.plan import build_plan
from nczarr.errors import InvalidModeError
from nczarr.maps.file import FileMap
from nczarr.readthrough import view

from .clusters import local_cluster
from .sources import tree, zarr_source

# real LocalClusters: the newest-Python CI run leaves these to the floor run
pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with local_cluster() as c:
        yield c


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    from distributed import Client

    with Client(cluster) as c:
        yield c


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, int, dict[str, bytes]]:
    """A Zarr source of 48 + 6 chunks and its local NCZarr conversion (the oracle).

    Enough for several batches at every batch size below (10, 25, 30, 40) and for the
    chunks the failure tests name (a/7.1, g/b/3/0); every chunk costs S3 requests on
    moto and work on the cluster, so no more than that."""
    src, chunks = zarr_source(tmp_path / "src", 12, nested=6)
    local = tmp_path / "local"
    nczarr.convert(str(src), str(local), mode="nczarr")
    return src, chunks, tree(local)


def test_directory_convert_matches_a_local_run(
    client: Any, source: tuple[Path, int, dict[str, bytes]], tmp_path: Path
) -> None:
    src, chunks, expected = source
    seen: list[tuple[int, int]] = []
    report = nczarr.convert(
        str(src),
        str(tmp_path / "out"),
        mode="nczarr",
        client=client,
        batch_size=25,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert tree(tmp_path / "out") == expected
    assert report.chunks_copied == chunks
    # progress on the client, one call per batch of 25, ending at the total
    assert len(seen) == -(-chunks // 25)
    assert seen[-1] == (chunks, chunks)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    # the batches ran on the workers, not here
    prefixes = client.run_on_scheduler(
        lambda dask_scheduler: [str(k) for k in dask_scheduler.task_prefixes]
    )
    assert any(p.startswith("nczarr-copy") for p in prefixes), prefixes


def test_s3_convert_matches_a_local_run(
    client: Any,
    source: tuple[Path, int, dict[str, bytes]],
    s3_endpoint: str,
    s3_bucket: str,
    s3_client: Any,
    tmp_path: Path,
) -> None:
    src, chunks, expected = source
    on_s3 = f"{s3_endpoint}/{s3_bucket}/out#mode=nczarr,s3"
    report = nczarr.convert(str(src), on_s3, client=client, batch_size=40)
    assert report.chunks_copied == chunks
    got = {}
    for obj in s3_client.list_objects_v2(Bucket=s3_bucket, Prefix="out/")["Contents"]:
        got[obj["Key"][4:]] = s3_client.get_object(Bucket=s3_bucket, Key=obj["Key"])["Body"].read()
    assert got == expected
    # and S3 -> S3 server-side copies on the cluster
    again = f"{s3_endpoint}/{s3_bucket}/again#mode=nczarr,s3"
    nczarr.convert(on_s3, again, client=client, batch_size=40)
    back = tmp_path / "back"
    nczarr.convert(again, str(back), client=client)
    assert tree(back) == expected


def test_s3_to_s3_batches_list_nothing_the_client_listed(
    client: Any,
    source: tuple[Path, int, dict[str, bytes]],
    s3_endpoint: str,
    s3_bucket: str,
) -> None:
    """The client lists the sizes once per directory as it cuts batches: more, smaller
    batches cost no more listings (a task listing its own directories would list a
    big directory once per batch)."""
    from .faultproxy import FaultProxy

    src, chunks, _ = source
    nczarr.convert(str(src), f"{s3_endpoint}/{s3_bucket}/in#mode=zarr,s3")
    lists = []
    with FaultProxy(s3_endpoint) as proxy:
        for batch_size in (chunks, 10):
            proxy.reset_counts()
            report = nczarr.convert(
                f"{proxy.endpoint}/{s3_bucket}/in#mode=zarr,s3",
                f"{proxy.endpoint}/{s3_bucket}/copy{batch_size}#mode=nczarr,s3",
                client=client,
                batch_size=batch_size,
            )
            assert report.chunks_copied == chunks
            assert proxy.counts["CopyObject"] == chunks
            assert proxy.counts.get("HeadObject", 0) < 20
            lists.append(proxy.counts["ListObjectsV2"])
    assert lists[0] == lists[1], lists


class FlakyMap(FileMap):
    """A FileMap whose first write of a key named in a marker file fails (once, across
    every process: the marker is removed by the writer that fails)."""

    def _store(self, key: str, value: bytes) -> None:
        marker = Path(self.root).parent / f"fail-{key.replace('/', '_')}"
        try:
            os.remove(marker)
        except FileNotFoundError:
            return super()._store(key, value)
        raise OSError(f"injected failure writing {key!r}")


class BrokenMap(FileMap):
    """A FileMap that cannot write one key while a marker file exists."""

    def _store(self, key: str, value: bytes) -> None:
        if (Path(self.root).parent / f"broken-{key.replace('/', '_')}").exists():
            raise OSError(f"injected permanent failure writing {key!r}")
        return super()._store(key, value)


@pytest.fixture
def by_value() -> Iterator[None]:
    """Ship this module's map classes to the workers by value (they cannot import it)."""
    import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


def test_a_failed_batch_is_retried(
    client: Any, source: tuple[Path, int, dict[str, bytes]], tmp_path: Path, by_value: None
) -> None:
    src, chunks, expected = source
    out = tmp_path / "out"
    (tmp_path / "fail-a_7.1").write_bytes(b"")
    (tmp_path / "fail-g_b_3_0").write_bytes(b"")
    report = nczarr.convert(
        str(src), FlakyMap(str(out), mode="a"), mode="nczarr", client=client, batch_size=30
    )
    assert not list(tmp_path.glob("fail-*"))  # both failures happened, on a worker
    assert report.chunks_copied == chunks
    assert tree(out) == expected


def test_a_batch_that_keeps_failing_fails_the_convert_before_any_metadata(
    client: Any, source: tuple[Path, int, dict[str, bytes]], tmp_path: Path, by_value: None
) -> None:
    src, _, expected = source
    out = tmp_path / "out"
    marker = tmp_path / "broken-a_7.1"
    marker.write_bytes(b"")
    with pytest.raises(OSError, match=r"injected permanent failure writing 'a/7\.1'"):
        nczarr.convert(
            str(src), BrokenMap(str(out), mode="a"), mode="nczarr", client=client, batch_size=30
        )
    written = tree(out)
    assert ".zgroup" not in written and ".zattrs" not in written  # root metadata is last
    assert "a/7.1" not in written
    # the cause goes away: resume finishes the job, byte-identical to a local run
    marker.unlink()
    report = nczarr.convert(str(src), str(out), mode="nczarr", client=client, resume=True)
    assert tree(out) == expected
    assert report.chunks_skipped > 0


def test_resume_after_the_cluster_died(
    source: tuple[Path, int, dict[str, bytes]], tmp_path: Path, cluster: Any
) -> None:
    from distributed import Client

    src, chunks, expected = source
    out = tmp_path / "out"
    doomed = local_cluster(n_workers=1)
    client = Client(doomed)
    calls = []

    def kill_after_first_batch(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 1:
            doomed.close()

    try:
        with pytest.raises(Exception):  # noqa: B017 - whatever dask raises for a dead cluster
            nczarr.convert(
                str(src),
                str(out),
                mode="nczarr",
                client=client,
                batch_size=10,
                progress=kill_after_first_batch,
            )
    finally:
        client.close()
        doomed.close()
    partial = tree(out)
    assert ".zgroup" not in partial and 0 < len(partial) < chunks
    with distributed.Client(cluster) as survivor:
        report = nczarr.convert(str(src), str(out), mode="nczarr", client=survivor, resume=True)
    assert tree(out) == expected
    assert report.chunks_skipped >= 10


def test_cli_scheduler(
    cluster: Any, source: tuple[Path, int, dict[str, bytes]], tmp_path: Path, capsys: Any
) -> None:
    src, chunks, expected = source
    out = tmp_path / "cli"
    status = main(
        [
            "convert",
            str(src),
            str(out),
            "--mode",
            "nczarr",
            "--scheduler",
            cluster.scheduler_address,
        ]
    )
    assert status == 0, capsys.readouterr().err
    assert tree(out) == expected
    assert f"{chunks} chunks copied" in capsys.readouterr().out
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        status = main(
            ["convert", str(src), str(tmp_path / "x"), "--scheduler", "tcp://127.0.0.1:1"]
        )
    assert status == 1
    assert "cannot connect to the dask scheduler 'tcp://127.0.0.1:1'" in capsys.readouterr().err


def test_zip_targets_are_refused(client: Any, tmp_path: Path) -> None:
    src, _ = zarr_source(tmp_path / "src", 2)
    with pytest.raises(InvalidModeError, match=r"zip archive cannot be written by several"):
        nczarr.convert(str(src), str(tmp_path / "out.zip"), client=client)


def test_maps_and_plans_pickle(tmp_path: Path) -> None:
    src, _ = zarr_source(tmp_path / "src", 2)
    translated = view(FileMap(str(src)), mode="nczarr")
    plan = build_plan(translated)
    assert pickle.loads(pickle.dumps(plan)) == plan
    back = pickle.loads(pickle.dumps(translated))
    assert list(back.chunk_keys()) == list(translated.chunk_keys())
