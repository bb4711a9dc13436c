"""A dry run of a combine of S3 sources asks its chunks' sizes concurrently.

A dry run reports the bytes it would copy: one size a chunk, a ``HeadObject`` on S3.
04480dd asked them one after another (a round trip each: 365 sources of 3 chunks
waited 1095 round trips); now a few sources' sizes are asked at once. The test looks
at the requests in flight at one moment at a counting proxy, not at a clock.
"""

from __future__ import annotations

from pathlib import Path

import nczarr

from .faultproxy import FaultProxy
from .test_combine_remote_sources import _most_at_once, _upload


def test_a_dry_run_asks_the_sizes_of_s3_chunks_concurrently(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    urls = _upload(tmp_path, s3_bucket, s3_endpoint, days=6)
    with FaultProxy(s3_endpoint, latency=0.03) as proxy:
        opts = {"endpoint_url": proxy.endpoint}
        proxy.reset_counts()
        report = nczarr.convert(
            urls, tmp_path / "out", concat_dim="time", source_options=opts, dry_run=True
        )
        spans = list(proxy.spans)
    assert report.dry_run and not (tmp_path / "out").exists()
    # one at a time on 04480dd
    assert _most_at_once(spans, "HeadObject") >= 2
    # the bytes are those of a dry run of the same sources on local disk
    local = [tmp_path / url.rsplit("/", 1)[1] for url in urls]
    here = nczarr.convert(local, tmp_path / "out", concat_dim="time", dry_run=True)
    assert report.planned_bytes == here.planned_bytes > 0
    assert report.planned_keys == here.planned_keys
