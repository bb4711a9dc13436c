"""A combine of sources on S3 reads them ahead: their requests overlap.

A combine reads every source before it writes anything. On S3 each source's listing
and metadata objects are round trips; read one source after another, 365 sources
wait for 365 x (a listing + a batch of GETs). Here the sources sit behind a counting
proxy that delays every request (a far region's round trip), and the test looks at
which sources had requests in flight at the same moment, not at how long it took.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nczarr
from nczarr.conversion.growsiblings import AHEAD

from .clusters import local_client
from .faultproxy import FaultProxy
from .growing import (
    daily,
    expected_temp,
    most_at_once,
    most_sources_listed_at_once,
    read_nc,
    s3_days,
)

DAYS = 12


def test_sources_on_s3_are_read_ahead_with_overlapping_requests(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    with FaultProxy(s3_endpoint, latency=0.03) as proxy:
        opts = {"endpoint_url": proxy.endpoint}
        proxy.reset_counts()
        nczarr.convert(urls, tmp_path / "out", concat_dim="time", source_options=opts)
        spans = list(proxy.spans)
    np.testing.assert_array_equal(read_nc(tmp_path / "out")["temp"], expected_temp(0, 2 * DAYS))
    # one source at a time on 5d4ff84; several at once, at most AHEAD + the one compared
    assert 2 <= most_sources_listed_at_once(spans) <= AHEAD + 1


def test_a_source_that_disagrees_is_refused_before_anything_is_written(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 6)
    opts = {"endpoint_url": s3_endpoint}
    odd = f"s3://{s3_bucket}/src/d99"
    nczarr.convert(daily(tmp_path / "d99", 12, 2, lat=(9.0, 8.0, 7.0)), odd, target_options=opts)
    out = tmp_path / "out"
    with pytest.raises(nczarr.NCZarrError, match="lat"):
        nczarr.convert([*urls, odd], out, concat_dim="time", source_options=opts)
    assert not out.exists() or not any(out.rglob("*"))


@pytest.mark.long  # a real LocalCluster
def test_a_cluster_task_overlaps_its_s3_copies(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 4)
    with FaultProxy(s3_endpoint, latency=0.03) as proxy, local_client(n_workers=1) as client:
        opts = {"endpoint_url": proxy.endpoint}
        dst = f"s3://{s3_bucket}/out"
        proxy.reset_counts()
        report = nczarr.convert(
            urls, dst, concat_dim="time", source_options=opts, target_options=opts, client=client
        )
        spans = list(proxy.spans)
    assert report.chunks_copied == proxy.counts["CopyObject"] > 0  # server-side copies
    # one worker with one thread: one copy at a time on 5d4ff84
    assert most_at_once(spans, "CopyObject") >= 2
    back = tmp_path / "back"
    nczarr.convert(dst, back, source_options={"endpoint_url": s3_endpoint})
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 8))
