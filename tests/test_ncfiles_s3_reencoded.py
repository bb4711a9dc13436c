"""Re-encoded chunks of a ``.nc`` on S3 (moto): counted exactly, read by byte ranges.

A variable whose chunks cannot be copied verbatim (shuffle after fletcher32 on an
8-byte type) is decoded through HDF5 reading the remote file by ranged requests; the
convert still never downloads the file whole.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr

from .faultproxy import FaultProxy
from .ncfiles import assert_same_values, nc_values

ROWS = 20


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_endpoint) as p:
        yield p


def _build(path: Path) -> Path:
    rng = np.random.default_rng(2)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 4096)
        ok = ds.createVariable("ok", "f4", ("time", "x"), compression="zlib", chunksizes=(1, 4096))
        ok[:] = rng.normal(size=(ROWS, 4096)).astype("f4")
        fl8 = ds.createVariable(
            "fl8",
            "f8",
            ("time", "x"),
            compression="zlib",
            shuffle=True,
            fletcher32=True,
            chunksizes=(1, 4096),
        )
        fl8[:] = rng.normal(size=(ROWS, 4096))
    return path


def test_reencoded_chunks_from_s3(
    tmp_path: Path, proxy: FaultProxy, s3_bucket: str, s3_client
) -> None:
    path = _build(tmp_path / "src.nc")
    s3_client.upload_file(str(path), s3_bucket, path.name)
    url = f"s3://{s3_bucket}/{path.name}"
    proxy.reset_counts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the re-encoding is announced: test_ncfiles
        report = nczarr.convert(
            url,
            str(tmp_path / "out"),
            "nczarr",
            source_options={"endpoint_url": proxy.endpoint},
        )
    assert (report.chunks_copied, report.chunks_reencoded) == (ROWS, ROWS)
    assert [p for p, _ in report.reencoded] == ["/fl8"]
    # about one ranged GET per chunk (HDF5 reads the re-encoded ones through a block
    # cache), the file's bytes about once
    assert proxy.counts["GetObject"] <= 2 * ROWS + 8
    assert proxy.body_bytes["GetObject"] <= 1.1 * path.stat().st_size
    assert_same_values(
        nc_values(str(path)), nc_values(f"file://{tmp_path / 'out'}#mode=nczarr,file")
    )
