"""A combine holds a few sources open at a time whatever the target (issue 20: memory
flat in the number of sources): into a zip archive or an S3 store, or from zip or S3
sources, the copies run a few sources at a time, not with every source's map open at
once. A source costly to open (a zip archive's central directory, an S3 client) is
opened once when there are few of them, not once for its check and again for its
copies. The sources are written by netcdf-c (netCDF4); the S3 server is moto's."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import nczarr
import nczarr.maps.zip as zipmaps
from nczarr.conversion import growsources
from nczarr.conversion.growsiblings import AHEAD
from nczarr.maps.file import FileMap
from nczarr.maps.s3 import S3Map
from nczarr.maps.zip import ZipMap
from nczarr.ncfile.source import NetCDFFileMap

from .growing import OpenMaps, daily, days, expected_temp, read_nc

#: Source maps open at once allowed: the copy window (6), the first source (held to the
#: end) and the next one opened before the oldest is closed, with one to spare.
MOST = 9

#: Sources read through a view (netCDF files) kept whole to the end
#: (``growsources.VIEWS_KEPT``): the others are opened again for their copies.
VIEWS_KEPT = 64


def _engine_temp(store) -> np.ndarray:
    with xr.open_dataset(store, engine="nczarr") as ds:
        return ds["temp"].values


def test_directories_into_a_zip_archive_a_few_open_at_a_time(tmp_path, monkeypatch):
    srcs = days(tmp_path, 40)
    maps = OpenMaps(monkeypatch, FileMap, str(tmp_path / "src"))
    out = tmp_path / "out.zip"
    report = nczarr.convert(srcs, out, concat_dim="time")
    assert report.chunks_reencoded == 0 and report.chunks_copied == 40 * 3 + 1
    assert maps.most <= MOST  # not one per source
    assert not maps.open
    np.testing.assert_array_equal(_engine_temp(out), expected_temp(0, 80))
    # this libnetcdf has no zip support: netcdf-c reads a directory copy
    nczarr.convert(out, tmp_path / "back")
    np.testing.assert_array_equal(read_nc(tmp_path / "back")["temp"], expected_temp(0, 80))


def _zipped(srcs: list[Path]) -> list[Path]:
    """Each source directory as a zip archive of its objects (zipfile, not nczarr)."""
    return [Path(shutil.make_archive(str(s), "zip", root_dir=s)) for s in srcs]


def _archive_opens(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Per archive path: how often a zip map opened it to read its central directory."""
    opened: Counter[str] = Counter()
    original = zipmaps.open_regular

    def counted(path):
        opened[str(path)] += 1
        return original(path)

    monkeypatch.setattr(zipmaps, "open_regular", counted)
    return opened


def test_zip_sources_a_few_open_at_a_time(tmp_path, monkeypatch):
    zips = _zipped(days(tmp_path, 40))
    maps = OpenMaps(monkeypatch, ZipMap, str(tmp_path / "src"))
    reads = _archive_opens(monkeypatch)
    out = tmp_path / "out"
    report = nczarr.convert(zips, out, concat_dim="time")
    assert report.chunks_reencoded == 0
    assert maps.most <= MOST
    assert not maps.open
    # the first few are kept open from their check to their copies, the others opened again
    assert sum(reads[str(z)] for z in zips) <= 2 * len(zips) - 5
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 80))


def test_a_few_zip_sources_read_their_central_directory_once(tmp_path, monkeypatch):
    zips = _zipped(days(tmp_path, 4))
    reads = _archive_opens(monkeypatch)
    for out in (tmp_path / "out", tmp_path / "out.zip"):
        reads.clear()
        report = nczarr.convert(zips, out, concat_dim="time")
        assert report.chunks_reencoded == 0
        assert [reads[str(z)] for z in zips] == [1] * len(zips)
    np.testing.assert_array_equal(read_nc(tmp_path / "out")["temp"], expected_temp(0, 8))
    np.testing.assert_array_equal(_engine_temp(tmp_path / "out.zip"), expected_temp(0, 8))


def _uploaded(client, bucket: str, srcs: list[Path]) -> list[str]:
    """Each source directory's objects put under ``src/<name>/`` in ``bucket``."""
    urls = []
    for src in srcs:
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            key = f"src/{src.name}/{path.relative_to(src).as_posix()}"
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        urls.append(f"s3://{bucket}/src/{src.name}")
    return urls


def test_directories_into_s3_a_few_open_at_a_time(tmp_path, monkeypatch, s3_bucket, s3_endpoint):
    srcs = days(tmp_path, 40)
    maps = OpenMaps(monkeypatch, FileMap, str(tmp_path / "src"))
    opts = {"endpoint_url": s3_endpoint}
    dst = f"s3://{s3_bucket}/out"
    report = nczarr.convert(srcs, dst, concat_dim="time", target_options=opts)
    assert report.chunks_reencoded == 0 and report.chunks_copied == 40 * 3 + 1
    assert maps.most <= MOST
    assert not maps.open
    back = tmp_path / "back"
    nczarr.convert(dst, back, source_options=opts)
    np.testing.assert_array_equal(read_nc(back)["temp"], expected_temp(0, 80))


def test_s3_sources_into_s3_a_few_open_at_a_time(
    tmp_path, monkeypatch, s3_bucket, s3_endpoint, s3_client
):
    urls = _uploaded(s3_client, s3_bucket, days(tmp_path, 40))
    maps = OpenMaps(monkeypatch, S3Map, "src/")
    opts = {"endpoint_url": s3_endpoint}
    dst = f"s3://{s3_bucket}/out"
    report = nczarr.convert(urls, dst, concat_dim="time", source_options=opts, target_options=opts)
    assert report.chunks_reencoded == 0 and report.chunks_copied == 40 * 3 + 1
    assert maps.most <= MOST + AHEAD  # S3 sources are also read a few ahead
    assert not maps.open
    assert sum(maps.opened.values()) <= 2 * len(urls) - 5  # the first few opened once
    with xr.open_dataset(dst, engine="nczarr", storage_options=opts) as ds:
        np.testing.assert_array_equal(ds["temp"].values, expected_temp(0, 80))


def test_a_few_s3_sources_are_opened_once(tmp_path, monkeypatch, s3_bucket, s3_endpoint, s3_client):
    urls = _uploaded(s3_client, s3_bucket, days(tmp_path, 4))
    maps = OpenMaps(monkeypatch, S3Map, "src/")
    opts = {"endpoint_url": s3_endpoint}
    out = tmp_path / "out.zip"
    report = nczarr.convert(urls, out, concat_dim="time", source_options=opts)
    assert report.chunks_reencoded == 0
    assert sorted(maps.opened.values()) == [1] * len(urls)  # not again for the copies
    assert not maps.open
    np.testing.assert_array_equal(_engine_temp(out), expected_temp(0, 8))


def test_netcdf_file_sources_a_few_open_at_a_time(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    count = VIEWS_KEPT + 24
    srcs = [daily(tmp_path / "src" / f"d{i:02d}.nc", 2 * i, 2, kind="nc") for i in range(count)]
    maps = OpenMaps(monkeypatch, NetCDFFileMap, str(tmp_path / "src"))
    out = tmp_path / "out.zip"
    report = nczarr.convert(srcs, out, concat_dim="time")
    assert report.chunks_reencoded == 0 and report.chunks_copied == count * 3 + 1
    # each map kept but parked (its file closed) from its check to its copies, and
    # after them: opened once each (its files open a few at a time: test_ncfiles_park.py)
    assert maps.most == count
    assert not maps.open
    assert sorted(maps.opened.values()) == [1] * count
    np.testing.assert_array_equal(_engine_temp(out), expected_temp(0, 2 * count))
    with xr.open_dataset(srcs[-1]) as ds:  # netcdf-c's values of the last source
        np.testing.assert_array_equal(_engine_temp(out)[-2:], ds["temp"].values)
    assert growsources.VIEWS_KEPT == VIEWS_KEPT


def test_many_netcdf_files_unaligned_and_a_late_one_disagreeing(tmp_path):
    (tmp_path / "src").mkdir()
    count = VIEWS_KEPT + 6
    srcs = [daily(tmp_path / "src" / f"d{i:02d}.nc", 3 * i, 3, kind="nc") for i in range(count)]
    good = srcs[-2].read_bytes()
    srcs[-2].unlink()
    daily(srcs[-2], 3 * (count - 2), 3, kind="nc", lat=(9.0, 2.0, 3.0))
    out = tmp_path / "out.zip"
    with pytest.raises(nczarr.InvalidModeError, match=rf"d{count - 2:02d}.nc.*'/lat'.*differ"):
        nczarr.convert(srcs, out, concat_dim="time")
    assert not out.exists()  # refused before anything is written
    srcs[-2].write_bytes(good)
    report = nczarr.convert(srcs, out, concat_dim="time")
    assert report.chunks_reencoded > 0  # chunks across sources: assembled from reopened views
    np.testing.assert_array_equal(_engine_temp(out), expected_temp(0, 3 * count))


def test_a_disagreeing_last_zip_source_is_refused_before_writing(tmp_path, monkeypatch):
    srcs = days(tmp_path, 4)
    shutil.rmtree(srcs[-1])
    daily(srcs[-1], 6, 2, title="other")
    zips = _zipped(srcs)
    out = tmp_path / "out.zip"
    with pytest.raises(nczarr.InvalidModeError, match="title"):
        nczarr.convert(zips, out, concat_dim="time")
    assert not out.exists()


def test_a_failing_copy_stops_the_others_and_closes_every_source(tmp_path, monkeypatch):
    zips = _zipped(days(tmp_path, 30))
    maps = OpenMaps(monkeypatch, ZipMap, str(tmp_path / "src"))
    seen = []

    def stop(done, total):
        seen.append(done)
        if done == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nczarr.convert(zips, tmp_path / "out.zip", concat_dim="time", progress=stop)
    assert seen == list(range(1, 11))  # counted in order
    assert not maps.open
