"""A combine whose sources and target are on one S3 service copies each chunk with
one server-side ``CopyObject`` and asks no size: every source's chunk sizes come from
its listing (``maps.mapcore.ListedKeys``, ``Part.sizes``; the first source's too, listed
whole once), up to ``growsiblings.SIZES_KEPT`` of them. Past that bound a copy asks its
size once (``HeadObject``, ``nczarr/conversion/copyone.py``; not before and after the
copy), or, when the source's variables hold several chunks each, from one listing of
each variable (``growparts.Part.known_sizes``). Counted at ``tests/faultproxy.py`` in front
of moto's server on 127.0.0.1.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import nczarr
from nczarr.conversion import growparts, growsiblings

from .faultproxy import FaultProxy
from .growing import expected_temp, leaf_probes, read_nc, s3_days

DAYS = 4


def _is_metadata(target: str) -> bool:
    return target.rstrip("/").rsplit("/", 1)[-1].startswith(".")


def _root_object(target: str) -> bool:
    """Whether a request's path is the target's journal or root metadata object."""
    names = {".in-progress.nczarr", "zarr.json", ".zgroup", ".zmetadata", ".zattrs"}
    return "/out/" in target and target.split("/out/", 1)[1] in names


def _combine_counted(tmp_path: Path, bucket: str, endpoint: str, urls: list[str]):
    """Combine ``urls`` into ``s3://bucket/out`` through the proxy (the shared client
    and bucket found before the count): the report, the ``CopyObject`` requests, the
    ``HeadObject`` requests by source chunk, and the result copied back locally."""
    dst = f"s3://{bucket}/out"
    with FaultProxy(endpoint) as proxy:
        via = {"endpoint_url": proxy.endpoint}
        nczarr.convert(urls[0], f"s3://{bucket}/warm", source_options=via, target_options=via)
        proxy.reset_counts()
        report = nczarr.convert(
            urls, dst, concat_dim="time", source_options=via, target_options=via
        )
        copies = proxy.counts["CopyObject"]
        heads = Counter(
            target
            for _, _, op, target in proxy.spans
            if op == "HeadObject" and "/src/" in target and not _is_metadata(target)
        )
    back = tmp_path / "back"
    nczarr.convert(dst, back, source_options={"endpoint_url": endpoint})
    return report, copies, heads, back


def test_server_side_combine_asks_no_chunk_size(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    report, copies, heads, back = _combine_counted(tmp_path, s3_bucket, s3_endpoint, urls)
    assert report.chunks_copied == copies > 0
    # 784559f: a HEAD a copied chunk (04480dd: two, before and after the copy)
    assert not heads
    # each source's own sizes (its chunks differ in size from the others')
    here = [tmp_path / f"d{i:02d}" for i in range(DAYS)]  # what s3_days uploaded
    local = nczarr.convert(here, tmp_path / "local", concat_dim="time")
    assert report.bytes_copied == local.bytes_copied
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 2 * DAYS))


def test_sources_with_many_chunks_a_variable_list_their_sizes(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, monkeypatch
) -> None:
    """Past ``SIZES_KEPT`` (none kept here), 8 days a source in chunks of one day: 8
    chunks of ``time`` and 16 of ``temp`` a source, above ``LIST_SIZES_FROM`` a
    variable: no ``HeadObject`` of a source chunk either."""
    monkeypatch.setattr(growsiblings, "SIZES_KEPT", 0)
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 2, days=8, chunk=1)
    report, copies, heads, back = _combine_counted(tmp_path, s3_bucket, s3_endpoint, urls)
    assert report.chunks_copied == copies == 2 * (8 + 16) + 1  # and lat, once
    assert sum(heads.values()) == 0  # ff73deb and before: one a copied chunk
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 16))


def test_below_the_line_each_copy_asks_its_size(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, monkeypatch
) -> None:
    """The same sources, no sizes kept and the line raised above their chunks a
    variable: a ``HeadObject`` a copied chunk, the same store."""
    monkeypatch.setattr(growsiblings, "SIZES_KEPT", 0)
    monkeypatch.setattr(growparts, "LIST_SIZES_FROM", 100)
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, 2, days=8, chunk=1)
    report, copies, heads, back = _combine_counted(tmp_path, s3_bucket, s3_endpoint, urls)
    assert report.chunks_copied == copies == 2 * (8 + 16) + 1
    assert sum(heads.values()) == copies and set(heads.values()) == {1}
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 16))


@pytest.mark.parametrize("target", ["empty", "overwrite", "resume"])
def test_a_combine_into_a_checked_s3_target_writes_without_leaf_probes(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, target: str
) -> None:
    # the target is checked empty, or cleared (overwrite), or found holding this
    # combine's interrupted run (resume) before any write: each key written needs no
    # listing or HEAD to keep the leaf rule (4b6c6f4: a listing a key and a HEAD an
    # array, ~1/6 of the requests). Only the empty case was asserted on 6a844e3.
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    dst = f"s3://{s3_bucket}/out"
    with FaultProxy(s3_endpoint) as proxy:
        via = {"endpoint_url": proxy.endpoint}
        combine = partial(
            nczarr.convert, urls, dst, concat_dim="time", source_options=via, target_options=via
        )
        mode = {}
        if target == "overwrite":  # another store there: one of the sources
            nczarr.convert(urls[0], dst, source_options=via, target_options=via)
            mode = {"overwrite": True}
        elif target == "resume":

            def stop(done: int, total: int) -> None:
                if done == 3:
                    raise KeyboardInterrupt

            with pytest.raises(KeyboardInterrupt):
                combine(workers=1, progress=stop)
            mode = {"resume": True}
        proxy.reset_counts()
        report = combine(**mode)
        spans = list(proxy.spans)
    assert report.chunks_copied > 0 and report.metadata_written
    assert report.chunks_skipped == (3 if target == "resume" else 0)
    # nor asks whether an object it deletes exists (6a844e3: a HeadObject before the
    # journal's DeleteObject at the end, and before each root object's on overwrite)
    assert not [t for _, _, op, t in spans if op == "HeadObject" and _root_object(t)]
    assert leaf_probes(spans, s3_bucket, "out") == []
    # a resume lists what the target holds, a listing a directory, and asks no chunk's
    # size (a HeadObject a target chunk before)
    assert [t for _, _, op, t in spans if op == "HeadObject" and "/out/" in t] == []
    back = tmp_path / "back"
    nczarr.convert(dst, back, source_options={"endpoint_url": s3_endpoint})
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 2 * DAYS))


def test_the_sizes_kept_from_listings_are_bounded(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str, monkeypatch
) -> None:
    """Sizes are kept for the copies up to ``SIZES_KEPT`` (memory bounded in the number
    of sources); past it a copy asks its size, and the store is the same."""
    monkeypatch.setattr(growsiblings, "SIZES_KEPT", 8)  # two sources' 4 chunks each
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    report, copies, heads, back = _combine_counted(tmp_path, s3_bucket, s3_endpoint, urls)
    assert report.chunks_copied == copies
    asked = {target.split("/src/")[1].split("/")[0] for target in heads}
    assert asked == {"d02", "d03"}  # d00's and d01's sizes were kept
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 2 * DAYS))


def test_leaf_probes_sees_an_untrusted_writes_probes(s3_bucket: str, s3_endpoint: str) -> None:
    """The control of the ``leaf_probes(...) == []`` assertions: a write into a map
    that does not own its tree is probed, and the helper sees it (s3fs's request forms
    changing would otherwise leave those assertions with nothing to catch)."""
    from nczarr.maps.open import open_map

    with FaultProxy(s3_endpoint) as proxy:
        zmap = open_map(f"s3://{s3_bucket}/out", "a", endpoint_url=proxy.endpoint)
        proxy.reset_counts()
        zmap["temp/0.0"] = b"chunk"
        spans = list(proxy.spans)
        zmap.close()
    assert leaf_probes(spans, s3_bucket, "out")
