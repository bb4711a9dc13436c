"""A combine's requests on S3 that waited one after another now overlap.

A dry run reports the bytes it would copy: one size a chunk, a ``HeadObject`` on S3.
04480dd asked them one after another (a round trip each: 365 sources of 3 chunks
waited 1095 round trips); now a few sources' sizes are asked at once. A combine into
S3 wrote its metadata objects one after another (a few requests each); now the arrays'
are written at once, the root's still last. The tests look at the requests in flight
at one moment at a counting proxy, not at a clock.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nczarr
from nczarr.conversion import growsiblings
from nczarr.maps.pending import JOURNAL_KEY

from .faultproxy import FaultProxy
from .growing import expected_temp, most_at_once, read_nc, s3_days


@pytest.mark.parametrize("kept", [None, 0])
def test_a_dry_run_asks_the_sizes_of_s3_chunks_concurrently_if_at_all(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, kept: int | None, monkeypatch
) -> None:
    # the sources' listings give the sizes (784559f: a HEAD a chunk); past
    # SIZES_KEPT (here none kept) the sizes are asked, several at once
    if kept is not None:
        monkeypatch.setattr(growsiblings, "SIZES_KEPT", kept)
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 6)
    with FaultProxy(s3_endpoint, latency=0.03) as proxy:
        opts = {"endpoint_url": proxy.endpoint}
        proxy.reset_counts()
        report = nczarr.convert(
            urls, tmp_path / "out", concat_dim="time", source_options=opts, dry_run=True
        )
        spans = list(proxy.spans)
    assert report.dry_run and not (tmp_path / "out").exists()
    heads = [t for _, _, op, t in spans if op == "HeadObject" and "/src/" in t]
    if kept is None:
        assert not heads
    else:  # one at a time on 04480dd
        assert len(heads) == report.chunks_copied and most_at_once(spans, "HeadObject") >= 2
    # the bytes are those of a dry run of the same sources on local disk
    local = [tmp_path / url.rsplit("/", 1)[1] for url in urls]
    here = nczarr.convert(local, tmp_path / "out", concat_dim="time", dry_run=True)
    assert report.planned_bytes == here.planned_bytes > 0
    assert report.planned_keys == here.planned_keys


def test_a_dry_run_past_the_sizes_kept_lists_variables_of_many_chunks(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, monkeypatch
) -> None:
    """No sizes kept (``SIZES_KEPT`` 0), 8 chunks of ``time`` and 16 of ``temp`` a
    source: a dry run's bytes come from one listing of each variable, as a copy's do,
    not from a ``HeadObject`` a chunk (as on 6a844e3)."""
    monkeypatch.setattr(growsiblings, "SIZES_KEPT", 0)
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 2, days=8, chunk=1)
    with FaultProxy(s3_endpoint) as proxy:
        opts = {"endpoint_url": proxy.endpoint}
        proxy.reset_counts()
        report = nczarr.convert(
            urls, tmp_path / "out", concat_dim="time", source_options=opts, dry_run=True
        )
        spans = list(proxy.spans)
    assert report.dry_run and report.chunks_copied == 2 * (8 + 16) + 1
    assert not [t for _, _, op, t in spans if op == "HeadObject" and "/src/" in t]
    local = [tmp_path / url.rsplit("/", 1)[1] for url in urls]
    here = nczarr.convert(local, tmp_path / "out", concat_dim="time", dry_run=True)
    assert report.planned_bytes == here.planned_bytes > 0


def test_a_combine_into_s3_writes_its_arrays_metadata_at_once_and_the_root_last(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 3)
    dst = f"s3://{s3_bucket}/out"
    with FaultProxy(s3_endpoint, latency=0.03) as proxy:
        opts = {"endpoint_url": proxy.endpoint}
        proxy.reset_counts()
        report = nczarr.convert(
            urls, dst, concat_dim="time", source_options=opts, target_options=opts
        )
        spans = list(proxy.spans)
    metadata = [s for s in spans if s[2] == "PutObject" and "/out/" in s[3]]
    root = [  # /bucket/out/.zgroup; the journal is written first
        s for s in metadata if s[3].count("/") == 3 and not s[3].endswith(JOURNAL_KEY)
    ]
    arrays = [s for s in metadata if s[3].count("/") > 3]
    assert root and arrays
    assert len(report.metadata_written) == len(metadata) - 1  # and the journal
    # one at a time on 04480dd; the root's objects after every array's
    assert most_at_once(arrays, "PutObject") >= 2
    assert min(start for start, *_ in root) >= max(end for _, end, *_ in arrays)
    # each array's .zattrs written before its .zarray starts (written in waves)
    ends = {s[3].rsplit("/", 1)[0]: s[1] for s in arrays if s[3].endswith("/.zattrs")}
    starts = {s[3].rsplit("/", 1)[0]: s[0] for s in arrays if s[3].endswith("/.zarray")}
    assert ends.keys() == starts.keys() and len(starts) >= 2
    assert all(ends[node] <= starts[node] for node in starts)
    back = tmp_path / "back"
    nczarr.convert(dst, back, source_options={"endpoint_url": s3_endpoint})
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 6))
