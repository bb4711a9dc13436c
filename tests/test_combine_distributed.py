"""``convert([...], dst, concat_dim=, client=...)`` and appends on a real dask
LocalCluster (2 worker processes): the verbatim copies run on the workers, under their
shifted keys; the result is byte for byte the local run's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import nczarr

from .clusters import local_client
from .growing import daily, expected_temp, read_nc
from .sources import tree

# real LocalClusters: the newest-Python CI run leaves these to the floor run
pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with local_client() as c:
        yield c


def test_combine_on_a_cluster_matches_a_local_run(tmp_path, client):
    # 4, 4, 3, 3 days in chunks of 2: the third source is aligned, the fourth is not
    lengths = (4, 4, 3, 3)
    starts = np.cumsum((0, *lengths[:-1]))
    srcs = [
        daily(tmp_path / f"d{i}", int(t), n)
        for i, (t, n) in enumerate(zip(starts, lengths, strict=True))
    ]
    local = nczarr.convert(srcs, tmp_path / "local", concat_dim="time")
    seen = []
    remote = nczarr.convert(
        srcs,
        tmp_path / "remote",
        concat_dim="time",
        client=client,
        batch_size=3,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert (remote.chunks_copied, remote.chunks_reencoded) == (
        local.chunks_copied,
        local.chunks_reencoded,
    )
    assert remote.chunks_reencoded > 0 and remote.chunks_copied > 0
    assert tree(tmp_path / "remote") == tree(tmp_path / "local")
    assert seen[-1] == (remote.chunks_copied + remote.chunks_reencoded,) * 2
    # copies were reported batch by batch (3 keys a task), as the cluster finished them
    steps = [b[0] - a[0] for a, b in zip([(0, 0), *seen], seen, strict=False)]
    assert max(steps) == 3
    np.testing.assert_array_equal(read_nc(tmp_path / "remote")["temp"], expected_temp(0, 14))


def test_append_on_a_cluster(tmp_path, client):
    dst = daily(tmp_path / "dst", 0, 4)
    report = nczarr.convert(daily(tmp_path / "src", 4, 4), dst, append_dim="time", client=client)
    assert (report.chunks_copied, report.chunks_reencoded) == (6, 0)
    np.testing.assert_array_equal(read_nc(dst)["temp"], expected_temp(0, 8))


def test_sources_are_copied_in_runs_of_whole_sources(tmp_path, client, monkeypatch):
    """Each task carries its own sources only (not every source of the combine), copies
    them on a worker, and the tasks are about four per worker thread."""
    import pickle

    from nczarr.conversion import growcluster

    seen = {}
    real = growcluster.copy_sources_on_cluster

    def spy(client, dst, sources, total, **kwargs):
        items = list(sources)
        seen["sources"] = [(pickle.loads(p).root, pairs) for p, pairs in items]
        stats, tasks = real(client, dst, items, total, **kwargs)
        seen["tasks"], seen["total"] = tasks, total
        return stats, tasks

    monkeypatch.setattr(growcluster, "copy_sources_on_cluster", spy)
    srcs = [daily(tmp_path / f"d{i}", 2 * i, 2) for i in range(6)]
    local = nczarr.convert(srcs, tmp_path / "local", concat_dim="time")
    report = nczarr.convert(srcs, tmp_path / "remote", concat_dim="time", client=client)
    assert (report.chunks_copied, report.chunks_reencoded) == (local.chunks_copied, 0)
    # one entry per source, in order, with its own pairs: 19 chunks in all
    assert [root for root, _ in seen["sources"]] == [str(s) for s in srcs]
    assert sum(len(pairs) for _, pairs in seen["sources"]) == seen["total"] == 19
    # 19 chunks / (2 threads * 4 tasks each): 3 chunks a task, a source (3 chunks) each
    assert 6 <= seen["tasks"] <= 8
    assert tree(tmp_path / "remote") == tree(tmp_path / "local")


def test_batches_hold_whole_sources_or_pieces_of_one():
    from nczarr.conversion.growcluster import _batches

    sources = [(b"a", [("x", "1"), ("y", "2")]), (b"b", [("x", "3")]), (b"c", [("z", "4")] * 5)]
    batches = list(_batches(sources, 2))
    assert [[(p, len(pairs)) for p, pairs in b] for b in batches] == [
        [(b"a", 2)],
        [(b"b", 1), (b"c", 2)],
        [(b"c", 2)],
        [(b"c", 1)],
    ]
