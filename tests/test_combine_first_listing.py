"""The first source of a combine on S3 is listed once, whole, while its metadata is
read (``conversion/growsiblings._Listing``): the client reads that source fully before
any other work can start, so each sequential round trip there is time no worker
divides (0393ca1: its metadata, then a HEAD of a root ``.zarray``, then a listing a
variable, then the whole source again, then its metadata again: 7 round trips before
its compared chunks, now 2). ``growparts.listed``,
still used where a source is read without a listing, lists its variables
``LISTINGS_AT_ONCE`` at a time. Seen at ``tests/faultproxy.py`` (a delay on every
request) in front of moto's server on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import numpy as np

import nczarr
from nczarr.conversion import growparts
from nczarr.maps.open import open_map

from .faultproxy import FaultProxy
from .growing import expected_temp, most_overlapping, read_nc, s3_days

VARIABLES = ("lat", "temp", "time")  # tests/growing.daily's variables


def _of_first(
    spans: list[tuple[float, float, str, str]], op: str
) -> list[tuple[float, float, str]]:
    """``(start, end, target)`` of the ``op`` requests about the first source (``d00``)."""
    return [(a, b, unquote(t)) for a, b, o, t in spans if o == op and "src/d00/" in unquote(t)]


def _combine(tmp_path: Path, bucket: str, endpoint: str) -> tuple[list, Path]:
    urls = s3_days(tmp_path, bucket, endpoint, 2)
    with FaultProxy(endpoint, latency=0.05) as proxy:
        via = {"endpoint_url": proxy.endpoint}
        nczarr.convert(urls[1], tmp_path / "warm", source_options=via)  # client, bucket
        proxy.reset_counts()
        dst = tmp_path / "year"
        nczarr.convert(urls, dst, concat_dim="time", source_options=via)
        spans = list(proxy.spans)
    return spans, dst


def test_the_first_source_is_listed_once_while_its_metadata_is_read(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    spans, dst = _combine(tmp_path, s3_bucket, s3_endpoint)
    listings = [t for *_, t in _of_first(spans, "ListObjectsV2")]
    whole = [t for t in listings if "prefix=src/d00/&delimiter=&" in t]
    assert len(whole) == 1  # 0393ca1: twice, and once a variable
    assert not [t for t in listings if any(f"src/d00/{v}/" in t for v in VARIABLES)]
    assert not _of_first(spans, "HeadObject")  # a root .zarray, the chunk sizes
    (listing,) = [(a, b) for a, b, t in _of_first(spans, "ListObjectsV2") if t in whole]
    metadata = [(a, b) for a, b, t in _of_first(spans, "GetObject") if "/." in t]
    assert most_overlapping([listing, *metadata]) >= 2  # listed while the metadata is read
    # each metadata object read once: the bytes compared with later sources' are those
    # load_metadata read (0393ca1: all read again)
    read = [t for *_, t in _of_first(spans, "GetObject") if "/." in t]
    assert read and len(read) == len(set(read))
    np.testing.assert_array_equal(read_nc(dst)["temp"], expected_temp(0, 4))


def _listed_with(bound: int, url: str, endpoint: str, monkeypatch) -> list[tuple[float, float]]:
    """The spans of the variables' listings of ``growparts.listed`` at ``bound``."""
    monkeypatch.setattr(growparts, "LISTINGS_AT_ONCE", bound)
    variables = list(
        nczarr.read(url, storage_options={"endpoint_url": endpoint}).root.all_variables()
    )
    with FaultProxy(endpoint, latency=0.05) as proxy:
        zmap = open_map(url, "r", endpoint_url=proxy.endpoint)
        proxy.reset_counts()
        keys = sorted(growparts.listed(zmap, variables))
        spans = [(a, b) for a, b, o, _ in proxy.spans if o == "ListObjectsV2"]
        zmap.close()
    assert keys and all(k.split("/")[0] in VARIABLES for k in keys)
    assert len(spans) == len(VARIABLES)
    return spans


def test_listed_asks_for_the_variables_listings_at_once_up_to_the_bound(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, monkeypatch
) -> None:
    (url,) = s3_days(tmp_path, s3_bucket, s3_endpoint, 1)
    assert most_overlapping(_listed_with(8, url, s3_endpoint, monkeypatch)) >= 2
    assert most_overlapping(_listed_with(1, url, s3_endpoint, monkeypatch)) == 1


def test_sources_read_through_views_are_not_listed_ahead(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    # Zarr v3 sources are read through a view, which lists its arrays itself: after the
    # first, none is listed whole while its metadata is read (a listing thrown away)
    v3 = {"mode": "zarr", "zarr_format": 3}
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 3, convert_options=v3)
    with FaultProxy(s3_endpoint) as proxy:
        via = {"endpoint_url": proxy.endpoint}
        proxy.reset_counts()
        dst = tmp_path / "year"
        nczarr.convert(urls, dst, concat_dim="time", source_options=via)
        listings = [unquote(t) for _, _, op, t in proxy.spans if op == "ListObjectsV2"]
    whole = [t for t in listings if "&delimiter=&" in t and t.split("prefix=")[1].count("/") == 2]
    assert [t.split("prefix=")[1].split("&")[0] for t in whole] == ["src/d00/"]
    np.testing.assert_array_equal(read_nc(dst)["temp"], expected_temp(0, 6))
