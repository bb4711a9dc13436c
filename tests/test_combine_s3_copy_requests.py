"""A combine whose sources and target are on one S3 service copies each chunk
server-side with the size asked once: a ``HeadObject`` and a ``CopyObject`` a chunk
(``nczarr/conversion/copyone.py``), not a ``HeadObject`` before and another after it.
Counted at ``tests/faultproxy.py`` in front of moto's server on 127.0.0.1.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

import nczarr

from .faultproxy import FaultProxy
from .growing import expected_temp, read_nc, s3_days

DAYS = 4


def _is_metadata(target: str) -> bool:
    return target.rstrip("/").rsplit("/", 1)[-1].startswith(".")


def test_server_side_combine_asks_each_chunk_size_once(
    tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    opts = {"endpoint_url": s3_endpoint}
    urls = s3_days(tmp_path, s3_bucket, s3_endpoint, DAYS)
    dst = f"s3://{s3_bucket}/out"
    with FaultProxy(s3_endpoint) as proxy:
        via = {"endpoint_url": proxy.endpoint}
        nczarr.convert(
            urls[0], f"s3://{s3_bucket}/warm", source_options=via, target_options=via
        )  # the shared client and bucket found before the count
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
    assert report.chunks_copied == copies > 0
    # each copied source chunk's size asked once; 04480dd asked it before and after
    assert sum(heads.values()) == copies and set(heads.values()) == {1}
    back = tmp_path / "back"
    nczarr.convert(dst, back, source_options=opts)
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 2 * DAYS))
