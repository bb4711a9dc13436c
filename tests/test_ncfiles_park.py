"""A parked netCDF file map (``ZMap.park``): its file and the HDF5 library's handles
closed, what the open read kept; reads open the file again cheaply (no HDF5 metadata
walk) and refuse a file changed meanwhile, naming it. A combine of many ``.nc``
sources parks each between its check and its copies: each file opened (walked) once,
few files open at a time, the same bytes as without parking."""

from __future__ import annotations

import os
import shutil
import sys
from collections import Counter
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.conversion import growsources
from nczarr.errors import StorageError
from nczarr.maps.memory import MemoryMap
from nczarr.ncfile import hdf5
from nczarr.ncfile.source import NetCDFFileMap

from .faultproxy import FaultProxy
from .growing import daily, expected_temp, read_nc
from .ncfiles import build_netcdf3, build_netcdf4

LINUX = sys.platform.startswith("linux")


def _fds_on(path: Path) -> int | None:
    """Descriptors of this process open on ``path`` (None where /proc is not there)."""
    if not LINUX:
        return None
    real = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == real:
                count += 1
        except OSError:
            continue
    return count


def _hdf5_files_open() -> int:
    """Files the HDF5 library has open in this process (every platform)."""
    return h5py.h5f.get_obj_count(h5py.h5f.OBJ_ALL, h5py.h5f.OBJ_FILE)


def _everything(zmap: NetCDFFileMap) -> dict[str, bytes]:
    return {key: zmap[key] for key in sorted(zmap)}


@pytest.mark.parametrize(
    "fmt",
    ["NETCDF4", "NETCDF4_CLASSIC", "NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"],
)
def test_a_parked_map_reads_the_same_bytes(tmp_path, fmt):
    path = tmp_path / "src.nc"
    if fmt.startswith("NETCDF4"):
        build_netcdf4(path, fmt)
    else:
        build_netcdf3(path, fmt)
    with NetCDFFileMap(str(path)) as zmap:
        before = _everything(zmap)
        assert before  # every variable's chunks
        assert zmap.park() is True
        assert zmap.park() is True  # parking a parked map is a no-op
        assert _everything(zmap) == before  # verbatim and re-encoded chunks
        zmap.park()
        assert zmap.getitems(list(before)) == before  # the batched reads too
        zmap.park()
        out = nczarr.FileMap(str(tmp_path / "out"), mode="w")
        verbatim = [key for key in before if not zmap.reencodes(key)]
        assert verbatim
        for key in verbatim:  # the kernel copies' path, from the parked file
            assert zmap.copy_chunk_to(out, key) == len(before[key])
            assert out[key] == before[key]
        assert zmap.dataset.layout == zmap.file_format().layout


def test_a_re_encoded_chunk_after_a_park_opens_the_hdf5_file_again(tmp_path):
    path = build_netcdf4(tmp_path / "src.nc")
    with NetCDFFileMap(str(path)) as zmap:
        reencoded = [k for k in zmap if zmap.reencodes(k)]
        assert reencoded  # variable-length strings
        before = {k: zmap[k] for k in reencoded}
        files = _hdf5_files_open()
        zmap.park()
        assert _hdf5_files_open() == files - 1
        assert {k: zmap[k] for k in reencoded} == before
        assert _hdf5_files_open() == files  # opened again, no metadata walk


def test_park_releases_the_file(tmp_path, hdf5_reader):
    path = tmp_path / "day.nc"
    daily(path, 0, 4, kind="nc")
    files = _hdf5_files_open()
    zmap = NetCDFFileMap(str(path))
    try:
        assert zmap._hdf5.backend == hdf5_reader
        held = 1 if hdf5_reader == "h5py" else 0
        assert _hdf5_files_open() == files + held
        if LINUX:
            assert _fds_on(path) == 1 + held  # ours (and the HDF5 library's)
        chunk = zmap["temp/0.0.0"]
        zmap.park()
        assert _hdf5_files_open() == files  # the HDF5 library's handle is closed
        if LINUX:
            assert _fds_on(path) == 0
        else:  # no /proc: a parked file can be renamed away (Windows refuses an open one)
            os.replace(path, tmp_path / "moved.nc")
            os.replace(tmp_path / "moved.nc", path)
        assert zmap["temp/0.0.0"] == chunk
        assert _hdf5_files_open() == files  # a verbatim chunk needs no HDF5 handle
        if LINUX:
            assert _fds_on(path) == 1  # a plain open
    finally:
        zmap.close()
    if LINUX:
        assert _fds_on(path) == 0


def _other_day(path: Path, seed: int) -> None:
    """A netCDF-4 file as ``daily`` writes it, with other values (other chunk bytes)."""
    daily(path, seed, 4, kind="nc")


@pytest.mark.parametrize("how", ["replaced", "rewritten", "removed"])
def test_a_file_changed_while_parked_is_refused_naming_it(tmp_path, how):
    path = tmp_path / "day.nc"
    daily(path, 0, 4, kind="nc")
    with NetCDFFileMap(str(path)) as zmap:
        chunk = zmap["temp/0.0.0"]
        zmap.park()
        if how == "replaced":
            _other_day(tmp_path / "new.nc", 100)
            os.replace(tmp_path / "new.nc", path)
        elif how == "rewritten":  # in place: same inode
            _other_day(tmp_path / "new.nc", 100)
            data = (tmp_path / "new.nc").read_bytes()
            stat = path.stat()
            with open(path, "r+b") as f:
                f.write(data)
                f.truncate()
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        else:
            path.unlink()
        message = "changed since it was read" if how != "removed" else "removed since"
        with pytest.raises(StorageError, match=rf"{path.name}.*{message}"):
            zmap["temp/0.0.0"]
        with pytest.raises(StorageError, match=path.name):
            zmap.getitems(["temp/0.0.0", "temp/1.0.0"])
        with pytest.raises(StorageError, match=path.name):
            zmap.copy_chunk_to(MemoryMap(), "temp/0.0.0")
    assert chunk  # read before the change


def test_a_file_changed_while_parked_is_refused_for_re_encoded_chunks(tmp_path):
    path = build_netcdf4(tmp_path / "src.nc")
    with NetCDFFileMap(str(path)) as zmap:
        key = next(k for k in zmap if zmap.reencodes(k))
        zmap.park()
        build_netcdf4(tmp_path / "new.nc")
        os.replace(tmp_path / "new.nc", path)
        with pytest.raises(StorageError, match=r"src.nc.*changed since it was read"):
            zmap[key]


def test_a_remote_parked_map_reads_the_same_and_refuses_a_replaced_object(
    tmp_path, s3_endpoint, s3_bucket, s3_client
):
    path = build_netcdf4(tmp_path / "src.nc")
    s3_client.upload_file(str(path), s3_bucket, "src.nc")
    url = f"s3://{s3_bucket}/src.nc"
    with NetCDFFileMap(url, endpoint_url=s3_endpoint) as zmap:
        before = _everything(zmap)
        assert zmap.park() is True
        assert _everything(zmap) == before  # verbatim and re-encoded (HDF5 reopened)
        zmap.park()
        netCDF4.Dataset(tmp_path / "other.nc", "w").close()
        s3_client.upload_file(str(tmp_path / "other.nc"), s3_bucket, "src.nc")
        with pytest.raises(StorageError, match=rf"{url}.*changed since it was read"):
            zmap["lat/0"] if "lat/0" in before else zmap[next(iter(before))]


def test_a_netcdf3_file_changed_while_parked_is_refused(tmp_path):
    path = build_netcdf3(tmp_path / "src.nc")
    with NetCDFFileMap(str(path)) as zmap:
        key = next(iter(zmap))
        zmap.park()
        build_netcdf3(tmp_path / "new.nc", "NETCDF3_64BIT_OFFSET")
        os.replace(tmp_path / "new.nc", path)
        with pytest.raises(StorageError, match=r"src.nc.*changed since it was read"):
            zmap[key]


class _Walks:
    """How often each file's HDF5 metadata was walked (an :class:`HDF5Reader` made),
    and the most descriptors open on the sources at a progress report."""

    def __init__(self, monkeypatch, folder: Path) -> None:
        self.walks: Counter[str] = Counter()
        self.most_fds = 0
        self._folder = os.path.realpath(folder)
        init = hdf5.HDF5Reader.__init__
        walks = self.walks

        def counted(reader, fileobj, what, *more):
            walks[str(what)] += 1
            init(reader, fileobj, what, *more)

        monkeypatch.setattr(hdf5.HDF5Reader, "__init__", counted)

    def progress(self, done: int, total: int) -> None:
        if LINUX:
            count = 0
            for fd in os.listdir("/proc/self/fd"):
                try:
                    count += os.readlink(f"/proc/self/fd/{fd}").startswith(self._folder)
                except OSError:
                    continue
            self.most_fds = max(self.most_fds, count)


def _tree(path: Path) -> dict[str, bytes]:
    if path.is_file():
        import zipfile

        with zipfile.ZipFile(path) as z:  # members below a folder named as the archive
            return {n.partition("/")[2]: z.read(n) for n in sorted(z.namelist())}
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("target", ["out", "out.zip"])
def test_a_combine_of_many_files_opens_each_once_and_few_at_a_time(tmp_path, monkeypatch, target):
    monkeypatch.setattr(growsources, "VIEWS_KEPT", 3)
    (tmp_path / "src").mkdir()
    count = 24
    srcs = [daily(tmp_path / "src" / f"d{i:02d}.nc", 2 * i, 2, kind="nc") for i in range(count)]
    walks = _Walks(monkeypatch, tmp_path / "src")
    out = tmp_path / target
    report = nczarr.convert(srcs, out, concat_dim="time", progress=walks.progress, workers=4)
    assert report.chunks_reencoded == 0 and report.chunks_copied == count * 3 + 1
    # every file's HDF5 metadata walked once: for its check; its copies reuse it
    assert sorted(walks.walks.values()) == [1] * count
    if LINUX:  # a few files open at a time, not two per source
        assert walks.most_fds <= 12
    with xr.open_dataset(out, engine="nczarr") as ds:
        np.testing.assert_array_equal(ds["temp"].values, expected_temp(0, 2 * count))
    # the same bytes as a combine without parking (files closed and opened again)
    monkeypatch.setattr(NetCDFFileMap, "park", lambda self: False)
    unparked = tmp_path / f"unparked-{target}"
    nczarr.convert(srcs, unparked, concat_dim="time", workers=4)
    assert _tree(out) == _tree(unparked)


def test_an_unaligned_combine_of_parked_files_is_correct(tmp_path, monkeypatch):
    monkeypatch.setattr(growsources, "VIEWS_KEPT", 2)
    (tmp_path / "src").mkdir()
    count = 10
    srcs = [daily(tmp_path / "src" / f"d{i:02d}.nc", 3 * i, 3, kind="nc") for i in range(count)]
    walks = _Walks(monkeypatch, tmp_path / "src")
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time", progress=walks.progress)
    assert report.chunks_reencoded > 0  # assembled from several parked sources
    assert sorted(walks.walks.values()) == [1] * count
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
        np.testing.assert_array_equal(ds["temp"][:], expected_temp(0, 3 * count))


def test_a_source_replaced_during_a_combine_is_refused_naming_it(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    count = 6
    srcs = [daily(tmp_path / "src" / f"d{i:02d}.nc", 2 * i, 2, kind="nc") for i in range(count)]
    victim = srcs[4]
    replaced = []
    park = NetCDFFileMap.park

    def park_then_replace(self):
        parked = park(self)
        if self.url == str(victim) and not replaced:  # after its check: replaced
            replaced.append(True)
            daily(tmp_path / "new.nc", 8, 2, kind="nc", title="daily")
            shutil.move(tmp_path / "new.nc", victim)
        return parked

    monkeypatch.setattr(NetCDFFileMap, "park", park_then_replace)
    with pytest.raises(StorageError, match=r"d04.nc.*changed since it was read"):
        nczarr.convert(srcs, tmp_path / "out", concat_dim="time")
    assert replaced


def test_a_combine_of_files_on_s3_walks_each_once(
    tmp_path, monkeypatch, s3_endpoint, s3_bucket, s3_client
):
    monkeypatch.setattr(growsources, "VIEWS_KEPT", 2)
    (tmp_path / "src").mkdir()
    count = 8
    urls = []
    for i in range(count):
        path = daily(tmp_path / "src" / f"d{i:02d}.nc", 2 * i, 2, kind="nc")
        s3_client.upload_file(str(path), s3_bucket, path.name)
        urls.append(f"s3://{s3_bucket}/{path.name}")
    walks = _Walks(monkeypatch, tmp_path / "src")
    out = tmp_path / "out"
    with FaultProxy(s3_endpoint) as proxy:
        proxy.reset_counts()
        report = nczarr.convert(
            urls, out, concat_dim="time", source_options={"endpoint_url": proxy.endpoint}
        )
    assert report.chunks_reencoded == 0 and report.chunks_copied == count * 3 + 1
    assert sorted(walks.walks.values()) == [1] * count  # parked, not opened again
    # per file: its info at the open and once after its park (is it the same object?),
    # a few ranged GETs of its metadata and one per chunk (3), none again
    assert proxy.counts["HeadObject"] <= 3 * count
    assert proxy.counts["GetObject"] <= 6 * count
    with xr.open_dataset(out, engine="nczarr") as ds:
        np.testing.assert_array_equal(ds["temp"].values, expected_temp(0, 2 * count))


def _classic_day(path: Path, t0: int, n: int) -> Path:
    """``daily``'s variables in a netCDF-3 (64-bit offset) file, records along time."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 3)
        ds.createDimension("lon", 4)
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(t0, t0 + n)
        ds.createVariable("lat", "f4", ("lat",))[:] = (1.0, 2.0, 3.0)
        ds.createVariable("temp", "f4", ("time", "lat", "lon"))[:] = expected_temp(t0, n)
    return path


def test_a_combine_of_many_netcdf3_files_reads_each_header_once(tmp_path, monkeypatch):
    from nczarr.ncfile import classic

    monkeypatch.setattr(growsources, "VIEWS_KEPT", 2)
    (tmp_path / "src").mkdir()
    count = 12
    srcs = [_classic_day(tmp_path / "src" / f"d{i:02d}.nc", 2 * i, 2) for i in range(count)]
    headers: Counter[str] = Counter()
    read_classic = classic.read_classic

    def counted(header, size, what):
        headers[str(what)] += 1
        return read_classic(header, size, what)

    monkeypatch.setattr(classic, "read_classic", counted)
    walks = _Walks(monkeypatch, tmp_path / "src")
    out = tmp_path / "out"
    nczarr.convert(srcs, out, concat_dim="time", progress=walks.progress)
    assert sorted(headers.values()) == [1] * count  # parked, not opened again
    if LINUX:
        assert walks.most_fds <= 6
    with xr.open_dataset(out, engine="nczarr") as ds:
        np.testing.assert_array_equal(ds["temp"].values, expected_temp(0, 2 * count))


@pytest.mark.parametrize("parked", [True, False], ids=["parked", "open"])
@pytest.mark.parametrize("build", [build_netcdf4, build_netcdf3], ids=["netcdf4", "netcdf3"])
def test_a_closed_map_is_not_opened_again_by_a_read(tmp_path, build, parked):
    path = build(tmp_path / "src.nc")
    zmap = NetCDFFileMap(str(path))
    keys = list(zmap)
    if parked:
        zmap.park()
    zmap.close()
    assert zmap.park() is False  # nothing to park
    for key in keys[:3] + [k for k in keys if zmap.reencodes(k)][:1]:
        with pytest.raises(StorageError, match=r"src.nc.*closed"):
            zmap[key]
    if LINUX:
        assert _fds_on(path) == 0


def test_a_streamed_map_does_not_park(tmp_path, hdf5_reader):
    from nczarr.ncfile.streamed import StreamedNetCDFFileMap

    path = build_netcdf4(tmp_path / "src.nc")
    with StreamedNetCDFFileMap(str(path)) as zmap:
        key = next(iter(zmap))  # its deferred chunk indexes read the open file
        assert zmap.park() is False
        if LINUX:  # still open: its own (and the HDF5 library's)
            assert _fds_on(path) == (2 if hdf5_reader == "h5py" else 1)
        with NetCDFFileMap(str(path)) as eager:
            assert zmap[key] == eager[key]


def test_the_first_files_compared_values_are_read_once(tmp_path, monkeypatch):
    """Each later file is compared with the first while it is open
    (``growsources.Compared``); the first file's values of the variables without the
    dimension are decoded for the first comparison and kept (``growcompare.FirstSeen``),
    not read again for each file (on S3 a GET each)."""
    from nczarr.conversion import growcompare

    (tmp_path / "src").mkdir()
    srcs = [daily(tmp_path / "src" / f"d{i}.nc", 2 * i, 2, kind="nc") for i in range(6)]
    decoded: list[tuple[str, str]] = []
    real = growcompare._values

    def values(reader, var, stored):
        decoded.append((reader.part.chunks.url, var.path))
        return real(reader, var, stored)

    monkeypatch.setattr(growcompare, "_values", values)
    nczarr.convert(srcs, tmp_path / "out", concat_dim="time")
    later = len(srcs) - 1
    assert len(decoded) >= later + 1  # each later file's, and the first's
    # no file's variable decoded twice (the first's: once, for all five comparisons)
    assert max(Counter(decoded).values()) == 1
    np.testing.assert_array_equal(read_nc(tmp_path / "out")["temp"], expected_temp(0, 12))


def test_a_file_replaced_before_h5py_first_opens_it_is_refused(tmp_path):
    """The numpy-free reader holds no HDF5 handle: h5py first opens the file when a
    chunk is re-encoded, maybe long after the open; a file replaced meanwhile is
    refused, naming it, not decoded beside chunks copied from the old one."""
    path = tmp_path / "s.nc"
    for name, text in ((path, "old"), (tmp_path / "new.nc", "NEW")):
        with netCDF4.Dataset(name, "w") as ds:
            ds.createDimension("x", 4)
            ds.createVariable("n", "i4", ("x",))[:] = [1, 2, 3, 4]
            ds.createVariable("s", str, ("x",))[0] = text  # re-encoded through h5py
    with NetCDFFileMap(str(path)) as zmap:
        assert zmap._hdf5.backend == "pure" and zmap._hdf5.file is None
        os.replace(tmp_path / "new.nc", path)
        with pytest.raises(StorageError, match="changed since it was read"):
            zmap["s/0"]
