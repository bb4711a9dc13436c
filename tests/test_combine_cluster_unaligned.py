"""Aligned sources after an unaligned one keep their chunks, locally and on a cluster.

A combine plans its verbatim copies part by part and reuses the last part's copies,
shifted, for a later part read as the same model (``translate/growchunks.Copies``). An
unaligned part copies nothing (all its chunks are assembled); reused as a template it
gave nothing to check a shift by, and the plan's copies, iterated again for the
copies after the journal's digest, dropped the chunks of an aligned part read as the
same model: daily sources of lengths 2, 2, 3, 2, 2 (chunks of 2) read back the
second source's days as fill (04480dd).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nczarr

from .clusters import local_client
from .growing import daily, expected_temp, read_nc
from .sources import tree

LENGTHS = (2, 2, 3, 2, 2)


def _sources(tmp_path: Path) -> tuple[list[Path], int]:
    srcs, t0 = [], 0
    for i, n in enumerate(LENGTHS):
        srcs.append(daily(tmp_path / f"d{i}", t0, n))
        t0 += n
    return srcs, t0


def test_aligned_sources_after_an_unaligned_one_keep_their_chunks(tmp_path: Path) -> None:
    srcs, days = _sources(tmp_path)
    report = nczarr.convert(srcs, tmp_path / "out", concat_dim="time")
    np.testing.assert_array_equal(read_nc(tmp_path / "out")["temp"], expected_temp(0, days))
    # the second source's chunks are copied verbatim under the target's time chunk 1
    for lon in (0, 1):
        stored = (tmp_path / "out" / "temp" / f"1.0.{lon}").read_bytes()
        assert stored == (srcs[1] / "temp" / f"0.0.{lon}").read_bytes()
    assert report.chunks_reencoded > 0


@pytest.mark.long  # a real LocalCluster
def test_the_cluster_path_gives_the_same_store(tmp_path: Path) -> None:
    srcs, days = _sources(tmp_path)
    nczarr.convert(srcs, tmp_path / "local", concat_dim="time")
    with local_client(n_workers=2) as client:
        nczarr.convert(srcs, tmp_path / "remote", concat_dim="time", client=client)
    assert tree(tmp_path / "remote") == tree(tmp_path / "local")
    np.testing.assert_array_equal(read_nc(tmp_path / "remote")["temp"], expected_temp(0, days))
