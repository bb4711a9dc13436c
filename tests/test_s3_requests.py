"""Requests per chunk, counted at a real TCP proxy in front of moto's S3 server.

Issue 11's floor: a convert into S3 is one PutObject per chunk, S3 -> S3 one
CopyObject per chunk with no HEAD per chunk, plus a number of metadata and listing
requests that does not grow with the number of chunks. Counting at the proxy sees
every request on the wire, retries included, whatever issued it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nczarr
from nczarr.errors import ObjectExistsError
from nczarr.integrations.zarr_store import ZarrStore
from nczarr.maps.s3 import S3Map
from nczarr.maps.s3session import forget_filesystems

from .faultproxy import FaultProxy
from .sources import tree, zarr_source

CHUNK_OPS = {"PutObject", "CopyObject", "GetObject"}


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_endpoint) as p:
        yield p


def _url(endpoint: str, bucket: str, prefix: str, fmt: str = "zarr") -> str:
    return f"{endpoint}/{bucket}/{prefix}#mode={fmt},s3"


def _overhead(counts: Any, chunk_op: str, chunks: int) -> dict[str, int]:
    """Requests other than one ``chunk_op`` per chunk."""
    rest = dict(counts)
    rest[chunk_op] -= chunks
    return {op: n for op, n in rest.items() if n}


@pytest.mark.parametrize("fmt", ["zarr", "nczarr"])
def test_file_to_s3_is_one_put_per_chunk(
    tmp_path: Path, proxy: FaultProxy, s3_bucket: str, fmt: str
) -> None:
    overheads = []
    for rows in (10, 40):  # 40 and 160 chunks (+ a nested array of 6)
        src, chunks = zarr_source(tmp_path / f"src{rows}", rows, nested=6)
        proxy.reset_counts()
        report = nczarr.convert(str(src), _url(proxy.endpoint, s3_bucket, f"out{rows}", fmt))
        assert report.chunks_copied == chunks
        metadata = len(report.metadata_written)
        # + 1: the resume journal (written first, deleted after the root)
        assert proxy.counts["PutObject"] == chunks + metadata + 1
        assert proxy.counts["CopyObject"] == proxy.counts["GetObject"] == 0
        overheads.append(_overhead(proxy.counts, "PutObject", chunks))
    # open the bucket, check the target is empty: the same few requests at any size
    assert overheads[0] == overheads[1]
    # HeadBucket, the emptiness LIST, metadata + journal PUTs, journal HEAD + DELETE: 13
    assert sum(overheads[0].values()) <= 15, overheads[0]


def test_s3_to_s3_is_one_copy_per_chunk_and_no_head(
    tmp_path: Path, proxy: FaultProxy, s3_endpoint: str, s3_bucket: str, s3_client: Any
) -> None:
    overheads = []
    for rows in (10, 40):
        src, chunks = zarr_source(tmp_path / f"src{rows}", rows, nested=6)
        s3_src = _url(s3_endpoint, s3_bucket, f"in{rows}")
        nczarr.convert(str(src), s3_src)  # straight to moto: not counted
        forget_filesystems()  # as a fresh process: no bucket known yet
        proxy.reset_counts()
        report = nczarr.convert(
            _url(proxy.endpoint, s3_bucket, f"in{rows}"),
            _url(proxy.endpoint, s3_bucket, f"out{rows}", "nczarr"),
        )
        assert report.chunks_copied == chunks
        assert report.bytes_copied == sum(
            len(v) for k, v in tree(src).items() if not k.rpartition("/")[2].startswith(".")
        )
        counts = dict(proxy.counts)
        assert counts["CopyObject"] == chunks
        assert counts["PutObject"] == len(report.metadata_written) + 1  # + the journal
        # no chunk byte through the client, no HEAD per chunk: sizes came from listings
        overhead = _overhead(counts, "CopyObject", chunks)
        overhead.pop("PutObject")
        assert overhead.get("HeadObject", 0) < 20
        overheads.append(overhead)
    assert overheads[0] == overheads[1]
    assert sum(overheads[0].values()) <= 55, overheads[0]  # measured: 43 (+3 for the journal)
    # and the copies are the source objects, byte for byte
    for key, value in tree(src).items():
        if not key.rpartition("/")[2].startswith("."):
            got = s3_client.get_object(Bucket=s3_bucket, Key=f"out40/{key}")["Body"].read()
            assert got == value, key


def test_zarr_writes_into_a_fresh_array_are_one_put_per_chunk(
    proxy: FaultProxy, s3_bucket: str
) -> None:
    import numpy as np
    import zarr

    m = S3Map(f"s3://{s3_bucket}/z{uuid.uuid4().hex[:6]}", mode="w", endpoint_url=proxy.endpoint)
    root = zarr.open_group(store=ZarrStore(m), mode="w", zarr_format=2)
    a = root.create_array("a", shape=(40, 40), chunks=(4, 4), dtype="i2", fill_value=0)
    proxy.reset_counts()
    a[:] = np.arange(1600, dtype="i2").reshape(40, 40) + 1
    assert proxy.counts == {"PutObject": 100}
    assert (a[:] == np.arange(1600).reshape(40, 40) + 1).all()


def test_zarr_recreating_an_array_in_an_existing_store_is_one_put_per_chunk(
    proxy: FaultProxy, s3_bucket: str, s3_endpoint: str
) -> None:
    import numpy as np
    import zarr

    url = f"s3://{s3_bucket}/z{uuid.uuid4().hex[:6]}"
    with S3Map(url, mode="w", endpoint_url=s3_endpoint) as first:
        zarr.open_group(store=ZarrStore(first), mode="w", zarr_format=2).create_array(
            "old", shape=(4,), chunks=(2,), dtype="i1", fill_value=0
        )[:] = 1
    # a map on existing content: it learns that "a" is empty when zarr clears it
    m = S3Map(url, mode="a", endpoint_url=proxy.endpoint)
    root = zarr.open_group(store=ZarrStore(m), mode="a", zarr_format=2)
    a = root.create_array(
        "a", shape=(40, 40), chunks=(4, 4), dtype="i2", fill_value=0, overwrite=True
    )
    proxy.reset_counts()
    a[:] = np.arange(1600, dtype="i2").reshape(40, 40) + 1
    assert proxy.counts == {"PutObject": 100}
    # the leaf rule still holds below what it found empty
    with pytest.raises(ObjectExistsError, match=r"'a/0\.0' holds content"):
        m["a/0.0/x"] = b"1"
    assert (root["old"][:] == 1).all()


class _Interrupted(Exception):
    pass


@pytest.mark.parametrize("source", ["file", "s3"])
def test_resume_takes_sizes_from_listings_not_a_head_per_chunk(
    tmp_path: Path,
    proxy: FaultProxy,
    s3_endpoint: str,
    s3_bucket: str,
    s3_client: Any,
    source: str,
) -> None:
    """A resumed convert into S3 compares sizes from one listing per directory of each
    side and writes into its own tree without leaf probes: one PUT (CopyObject) per
    chunk copied, the HEADs and LISTs do not grow with the chunks (measured: 7 HEADs
    and 8 LISTs at 54 and at 204 chunks copied from files; 125 and 425 HEADs and a LIST
    per chunk before), and a chunk left short is recopied."""
    overheads = []
    for rows in (10, 40):
        src, chunks = zarr_source(tmp_path / f"src{rows}", rows, nested=6)
        src_url = str(src)
        if source == "s3":
            nczarr.convert(str(src), _url(s3_endpoint, s3_bucket, f"rin{rows}"))
            src_url = _url(proxy.endpoint, s3_bucket, f"rin{rows}")  # same service: copies
        dst_prefix = f"rout{source}{rows}"
        dst = _url(proxy.endpoint, s3_bucket, dst_prefix, "nczarr")

        def stop_halfway(done: int, total: int, half: int = chunks // 2) -> None:
            if done >= half:
                raise _Interrupted

        with pytest.raises(_Interrupted):
            nczarr.convert(src_url, dst, workers=1, progress=stop_halfway)
        # one copied chunk cut short (a killed upload of another tool, say)
        s3_client.put_object(Bucket=s3_bucket, Key=f"{dst_prefix}/a/0.0", Body=b"x")
        proxy.reset_counts()
        report = nczarr.convert(src_url, dst, resume=True)
        assert report.chunks_copied + report.chunks_skipped == chunks
        assert chunks // 2 - 2 <= report.chunks_skipped < chunks // 2
        copied = report.chunks_copied
        overheads.append(
            _overhead(proxy.counts, "CopyObject" if source == "s3" else "PutObject", copied)
        )
        for key, value in tree(src).items():
            if not key.rpartition("/")[2].startswith("."):
                got = s3_client.get_object(Bucket=s3_bucket, Key=f"{dst_prefix}/{key}")
                assert got["Body"].read() == value, key
    # one PUT (CopyObject) per chunk copied; the rest does not grow with the chunks
    # (a few HEADs more or less: concurrent copies may HEAD the same prefix)
    for kind in ("HeadObject", "ListObjectsV2", "GetObject"):
        counts = [o.get(kind, 0) for o in overheads]
        assert counts[1] <= counts[0] + 4 and counts[1] < 40, (kind, overheads)
