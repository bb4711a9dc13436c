"""netCDF files on S3 (moto) as sources: what reaches the wire.

Counted at a TCP proxy in front of moto: the file is read by byte ranges (a few for
its metadata, one GetObject per chunk), never downloaded whole, and a subset
(``include=``) reads only its own chunks.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.errors import NCZarrWarning

from .clusters import local_client
from .faultproxy import FaultProxy
from .ncfiles import assert_same_values, nc_values

ROWS = 60  # chunks per variable


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_endpoint) as p:
        yield p


def _netcdf4(path: Path) -> Path:
    """Two variables of ROWS incompressible ~32 KB deflate+shuffle chunks each."""
    rng = np.random.default_rng(0)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 8192)
        for name in ("a", "b"):
            v = ds.createVariable(name, "f4", ("time", "x"), compression="zlib", shuffle=True)
            v.chunking()
            v[:] = rng.normal(size=(ROWS, 8192)).astype("f4")
    return path


def _netcdf3(path: Path) -> Path:
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 8192)
        for name in ("a", "b"):
            ds.createVariable(name, "f4", ("time", "x"))[:] = rng.normal(size=(ROWS, 8192))
    return path


def _upload(s3_client, bucket: str, path: Path) -> str:
    s3_client.upload_file(str(path), bucket, path.name)
    return f"s3://{bucket}/{path.name}"


@pytest.mark.parametrize("build", [_netcdf4, _netcdf3], ids=["netcdf4", "netcdf3"])
def test_s3_source_is_read_by_ranges(
    tmp_path: Path, proxy: FaultProxy, s3_bucket: str, s3_client, build
) -> None:
    path = build(tmp_path / "src.nc")
    url = _upload(s3_client, s3_bucket, path)
    options = {"endpoint_url": proxy.endpoint}
    proxy.reset_counts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        report = nczarr.convert(url, str(tmp_path / "out"), "nczarr", source_options=options)
    chunks = report.chunks_copied
    assert chunks == 2 * ROWS
    size = path.stat().st_size
    gets = proxy.counts["GetObject"]
    assert chunks <= gets <= chunks + 8  # one per chunk, a few for the metadata
    assert proxy.body_bytes["GetObject"] <= 1.1 * size
    assert_same_values(
        nc_values(str(path)), nc_values(f"file://{tmp_path / 'out'}#mode=nczarr,file")
    )


def test_s3_subset_reads_only_its_chunks(
    tmp_path: Path, proxy: FaultProxy, s3_bucket: str, s3_client
) -> None:
    path = _netcdf4(tmp_path / "src.nc")
    url = _upload(s3_client, s3_bucket, path)
    proxy.reset_counts()
    with pytest.warns(NCZarrWarning, match="left out by include/exclude: /b"):
        report = nczarr.convert(
            url,
            str(tmp_path / "out"),
            "zarr",
            include=["a"],
            source_options={"endpoint_url": proxy.endpoint},
        )
    assert report.chunks_copied == ROWS
    assert proxy.counts["GetObject"] <= ROWS + 8
    assert proxy.body_bytes["GetObject"] <= 0.6 * path.stat().st_size


def test_s3_source_pickles_and_reopens(tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client):
    import pickle

    from nczarr.ncfile.source import NetCDFFileMap

    url = _upload(s3_client, s3_bucket, _netcdf3(tmp_path / "src.nc"))
    with NetCDFFileMap(url, endpoint_url=s3_endpoint) as source:
        again = pickle.loads(pickle.dumps(source))  # a worker opens its own handle
        try:
            assert again["a/3.0"] == source["a/3.0"]
        finally:
            again.close()


def test_convert_on_a_dask_cluster_reopens_the_file_on_each_worker(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client
) -> None:
    path = _netcdf4(tmp_path / "src.nc")
    url = _upload(s3_client, s3_bucket, path)
    with local_client() as client:
        report = nczarr.convert(
            url,
            str(tmp_path / "out"),
            "nczarr",
            client=client,
            batch_size=16,
            source_options={"endpoint_url": s3_endpoint},
        )
    assert report.chunks_copied == 2 * ROWS
    assert_same_values(
        nc_values(str(path)), nc_values(f"file://{tmp_path / 'out'}#mode=nczarr,file")
    )
