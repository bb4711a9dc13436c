"""The first source of a combine on S3 has its variables listed at once, not one after
another (``conversion/growparts.listed``): the client reads that source fully before
any other work can start, so each sequential round trip there is time no worker
divides. Seen at ``tests/faultproxy.py`` (a delay on every request) in front of moto's
server on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import numpy as np

import nczarr
from nczarr.conversion import growparts

from .faultproxy import FaultProxy
from .growing import expected_temp, most_overlapping, read_nc, s3_days

VARIABLES = ("lat", "temp", "time")  # tests/growing.daily's variables


def _first_source_listings(spans: list[tuple[float, float, str, str]]) -> list[tuple[float, float]]:
    """``(start, end)`` of the listings of a variable of the first source (``d00``)."""
    out = []
    for start, end, op, target in spans:
        where = unquote(target)
        if op == "ListObjectsV2" and any(f"src/d00/{v}" in where for v in VARIABLES):
            out.append((start, end))
    return out


def _combine(tmp_path: Path, bucket: str, endpoint: str) -> tuple[list, Path]:
    urls = s3_days(tmp_path, bucket, endpoint, 2)
    with FaultProxy(endpoint, latency=0.05) as proxy:
        via = {"endpoint_url": proxy.endpoint}
        nczarr.convert(urls[1], tmp_path / "warm", source_options=via)  # client, bucket
        proxy.reset_counts()
        dst = tmp_path / "year"
        nczarr.convert(urls, dst, concat_dim="time", source_options=via)
        spans = _first_source_listings(proxy.spans)
    return spans, dst


def test_the_first_sources_variables_are_listed_at_once(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    spans, dst = _combine(tmp_path, s3_bucket, s3_endpoint)
    assert len(spans) >= len(VARIABLES)
    assert most_overlapping(spans) >= 2  # ff73deb and before: one after another
    np.testing.assert_array_equal(read_nc(dst)["temp"], expected_temp(0, 4))


def test_one_listing_at_a_time_when_asked(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, monkeypatch
) -> None:
    """The bound is the module's: at 1 the listings run one after another (what the
    test above tells apart), with the same result."""
    monkeypatch.setattr(growparts, "LISTINGS_AT_ONCE", 1)
    spans, dst = _combine(tmp_path, s3_bucket, s3_endpoint)
    assert len(spans) >= len(VARIABLES) and most_overlapping(spans) == 1
    np.testing.assert_array_equal(read_nc(dst)["temp"], expected_temp(0, 4))
