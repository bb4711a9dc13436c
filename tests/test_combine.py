"""``nczarr.convert([src1, src2, ...], dst, concat_dim=...)``: many sources into one store.

The producers are the oracle: sources written by netcdf-c (netCDF4), zarr-python (via
xarray) and netCDF-4 files; results read back by netcdf-c and xarray and compared with
``xr.concat`` of the sources. Verbatim copies are asserted byte for byte.
"""

from __future__ import annotations

import numcodecs
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.cli import main

from .growing import daily, expected_temp, read_nc
from .ncoracle import nc_url


def _open(path, **kwargs):
    return xr.open_dataset(nc_url(path), engine="netcdf4", **kwargs).load()


def test_aligned_sources_are_copied_verbatim_under_shifted_keys(tmp_path):
    srcs = [daily(tmp_path / f"d{i}", 4 * i, 4) for i in range(3)]
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    # time: 2 chunks per source; temp: 2 x 2 per source; lat: 1 (from the first)
    assert (report.chunks_copied, report.chunks_reencoded) == (3 * 2 + 3 * 4 + 1, 0)
    for i, src in enumerate(srcs):
        for t in range(2):
            assert (out / "time" / str(2 * i + t)).read_bytes() == (
                src / "time" / str(t)
            ).read_bytes()
            for lon in range(2):
                assert (out / "temp" / f"{2 * i + t}.0.{lon}").read_bytes() == (
                    src / "temp" / f"{t}.0.{lon}"
                ).read_bytes()
    got = read_nc(out)
    assert got["size"] == 12 and got["unlimited"]
    np.testing.assert_array_equal(got["time"], np.arange(12))
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 12))
    xr.testing.assert_identical(_open(out), xr.concat([_open(s) for s in srcs], dim="time"))


def test_unaligned_sources_reencode_only_the_boundary_chunks(tmp_path):
    # lengths 3, 1, 4 with chunks of 2: [0,2) is d0's, [2,4) holds d0 and d1,
    # [4,6) and [6,8) are d2's (a source on a chunk boundary again: verbatim)
    srcs = [daily(tmp_path / "a", 0, 3), daily(tmp_path / "b", 3, 1), daily(tmp_path / "c", 4, 4)]
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    # re-encoded: time [2,4) (1) + temp [2,4) x 2 lon chunks (2)
    assert report.chunks_reencoded == 3
    # copied: time 1 + 2, temp 2 + 4, lat 1
    assert report.chunks_copied == 10
    assert (out / "temp" / "2.0.1").read_bytes() == (srcs[2] / "temp" / "0.0.1").read_bytes()
    got = read_nc(out)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 8))
    np.testing.assert_array_equal(got["time"], np.arange(8))
    xr.testing.assert_identical(_open(out), xr.concat([_open(s) for s in srcs], dim="time"))


def test_sources_with_other_chunks_are_all_assembled(tmp_path):
    srcs = [daily(tmp_path / "a", 0, 4, chunk=2), daily(tmp_path / "b", 4, 3, chunk=3)]
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    # target chunks of 2 (the first source's): [4,6) and [6,7) come from b's chunks of 3
    assert report.chunks_reencoded == 2 + 2 * 2
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 7))


def test_mixed_source_kinds_nczarr_pure_zarr_and_netcdf_file(tmp_path):
    nz = daily(tmp_path / "a", 0, 4)
    nc = daily(tmp_path / "c.nc", 8, 4, kind="nc")
    zarr_src = tmp_path / "b.zarr"
    daily(tmp_path / "b-nc", 4, 4)
    # pure Zarr v2 written by xarray/zarr-python, same encoding as the others
    # (lat and time have no fill value in netCDF: none in Zarr either)
    none = {"_FillValue": None}
    temp = {
        "chunks": (2, 3, 2),
        "compressors": [numcodecs.Zlib(level=4)],
        "filters": [numcodecs.Shuffle(elementsize=4)],
    }
    _open(tmp_path / "b-nc", decode_cf=False).to_zarr(
        zarr_src,
        zarr_format=2,
        consolidated=False,
        encoding={"lat": none, "time": {**none, "chunks": (2,), "compressors": None}, "temp": temp},
    )
    out = tmp_path / "out"
    report = nczarr.convert([nz, zarr_src, nc], out, concat_dim="time")
    # chunks of one encoding wherever they come from: all copied, none re-encoded
    assert (report.chunks_copied, report.chunks_reencoded) == (3 * 2 + 3 * 4 + 1, 0)
    got = read_nc(out)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 12))
    np.testing.assert_array_equal(got["time"], np.arange(12))
    parts = [
        _open(nz),
        xr.open_dataset(zarr_src, engine="zarr", consolidated=False).load(),
        xr.open_dataset(nc).load(),
    ]
    xr.testing.assert_equal(_open(out), xr.concat(parts, dim="time"))


def test_zarr_v3_target_reads_as_the_concatenation(tmp_path):
    srcs = [daily(tmp_path / f"d{i}", 3 * i, 3) for i in range(2)]
    out = tmp_path / "out.zarr"
    report = nczarr.convert(srcs, out, mode="zarr", zarr_format=3, concat_dim="time")
    assert report.zarr_format == 3
    back = xr.open_zarr(out, zarr_format=3, consolidated=False).load()
    np.testing.assert_array_equal(back["temp"].values, expected_temp(0, 6))


def test_variables_without_the_dimension_must_agree(tmp_path):
    a = daily(tmp_path / "a", 0, 2)
    b = daily(tmp_path / "b", 2, 2, lat=(1.0, 2.0, 4.0))
    with pytest.raises(nczarr.InvalidModeError, match=r"'/lat'.*values differ"):
        nczarr.convert([a, b], tmp_path / "out", concat_dim="time")
    assert not (tmp_path / "out").exists()


def test_attributes_must_agree_unless_override(tmp_path):
    a = daily(tmp_path / "a", 0, 2)
    b = daily(tmp_path / "b", 2, 2, title="other")
    with pytest.raises(nczarr.InvalidModeError, match=r"title.*combine_attrs='override'"):
        nczarr.convert([a, b], tmp_path / "out", concat_dim="time")
    assert not (tmp_path / "out").exists()
    with pytest.warns(nczarr.NCZarrWarning, match=r"title.*first source's kept"):
        nczarr.convert([a, b], tmp_path / "out", concat_dim="time", combine_attrs="override")
    assert _open(tmp_path / "out").attrs["title"] == "daily"


def test_a_missing_dimension_and_a_single_source_are_refused(tmp_path):
    a = daily(tmp_path / "a", 0, 2)
    b = daily(tmp_path / "b", 2, 2)
    with pytest.raises(nczarr.InvalidModeError, match="no dimension 'day'"):
        nczarr.convert([a, b], tmp_path / "out", concat_dim="day")
    with pytest.raises(nczarr.InvalidModeError, match="concat_dim"):
        nczarr.convert([a, b], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_resume_finishes_an_interrupted_combine(tmp_path):
    srcs = [daily(tmp_path / f"d{i}", 4 * i, 4) for i in range(3)]
    out = tmp_path / "out"

    def stop(done, total):
        if done == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nczarr.convert(srcs, out, concat_dim="time", workers=1, progress=stop)
    assert not (out / ".zgroup").exists()  # no root: not a dataset yet
    report = nczarr.convert(srcs, out, concat_dim="time", resume=True)
    assert report.chunks_skipped == 5
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 12))


def test_cli_concat_dim(tmp_path, capsys):
    srcs = [daily(tmp_path / f"d{i}", 2 * i, 2) for i in range(3)]
    out = tmp_path / "out"
    code = main(["convert", *map(str, srcs), str(out), "--concat-dim", "time"])
    assert code == 0, capsys.readouterr().err
    assert "(+2 more)" in capsys.readouterr().out
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 6))
    code = main(["convert", str(srcs[0]), str(srcs[1]), str(tmp_path / "x")])
    assert code == 1
    assert "--concat-dim" in capsys.readouterr().err


def test_combine_into_a_zip_archive_and_append_to_it(tmp_path):
    srcs = [daily(tmp_path / f"d{i}", 2 * i, 2) for i in range(2)]
    out = tmp_path / "out.zip"
    report = nczarr.convert(srcs, out, concat_dim="time")
    assert report.chunks_reencoded == 0
    nczarr.convert(daily(tmp_path / "d2", 4, 2), out, append_dim="time")
    # this libnetcdf has no zip support: netcdf-c reads a directory copy
    nczarr.convert(out, tmp_path / "back")
    np.testing.assert_array_equal(read_nc(tmp_path / "back")["temp"], expected_temp(0, 6))
    back = xr.open_dataset(out, engine="nczarr").load()
    np.testing.assert_array_equal(back["temp"].values, expected_temp(0, 6))


def test_combine_on_s3_copies_server_side_and_appends(tmp_path, s3_bucket, s3_endpoint):
    opts = {"endpoint_url": s3_endpoint}
    srcs = []
    for i in range(2):
        local = daily(tmp_path / f"d{i}", 4 * i, 4)
        url = f"s3://{s3_bucket}/d{i}"
        nczarr.convert(local, url, target_options=opts)
        srcs.append(url)
    dst = f"s3://{s3_bucket}/out"
    report = nczarr.convert(srcs, dst, concat_dim="time", source_options=opts, target_options=opts)
    assert (report.chunks_copied, report.chunks_reencoded) == (2 * 2 + 2 * 4 + 1, 0)
    nczarr.convert(daily(tmp_path / "d2", 8, 1), dst, append_dim="time", target_options=opts)
    local = tmp_path / "back"
    nczarr.convert(dst, local, source_options=opts)
    np.testing.assert_array_equal(read_nc(local)["temp"], expected_temp(0, 9))


def test_a_target_that_is_a_source_is_refused(tmp_path):
    a = daily(tmp_path / "a", 0, 2)
    b = daily(tmp_path / "b", 2, 2)
    before = {p: p.read_bytes() for p in a.rglob("*") if p.is_file()}
    with pytest.raises(nczarr.InvalidModeError, match="overlap"):
        nczarr.convert([a, b], a, concat_dim="time", overwrite=True)
    with pytest.raises(nczarr.InvalidModeError, match="overlap"):
        nczarr.convert(nc_url(a), a, append_dim="time")
    assert {p: p.read_bytes() for p in a.rglob("*") if p.is_file()} == before


def _second_axis(path, t0, n):
    import netCDF4

    with netCDF4.Dataset(nc_url(path), "w") as ds:
        ds.createDimension("x", 3)
        ds.createDimension("time", None)
        v = ds.createVariable("v", "i4", ("x", "time"), chunksizes=(2, 2))
        v[:] = np.arange(t0, t0 + n)[None, :] + 100 * np.arange(3)[:, None]
    return path


def test_the_dimension_need_not_be_the_first_axis(tmp_path):
    import netCDF4

    srcs = [_second_axis(tmp_path / "a", 0, 2), _second_axis(tmp_path / "b", 2, 3)]
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    # b starts on a chunk boundary: its 2 x 2 chunks are copied, a's 2 as well
    assert (report.chunks_copied, report.chunks_reencoded) == (2 + 4, 0)
    with netCDF4.Dataset(nc_url(out)) as ds:
        expected = np.arange(5)[None, :] + 100 * np.arange(3)[:, None]
        np.testing.assert_array_equal(ds["v"][:], expected)


def test_zarr_v3_sources_with_their_own_chunk_keys(tmp_path):
    """zarr-python's default v3 keys (``c/0/1``) are shown as v2 keys: still verbatim."""
    none = {"_FillValue": None}
    temp = {
        "chunks": (2, 3, 2),
        "compressors": None,
        "filters": None,
    }
    srcs = []
    for i in range(2):
        nc = daily(tmp_path / f"nc{i}", 4 * i, 4)
        path = tmp_path / f"v3-{i}.zarr"
        _open(nc, decode_cf=False).to_zarr(
            path,
            zarr_format=3,
            consolidated=False,
            encoding={"lat": none, "time": {**none, "chunks": (2,)}, "temp": temp},
        )
        assert (path / "temp" / "c" / "0" / "0" / "1").exists()
        srcs.append(path)
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    assert (report.chunks_copied, report.chunks_reencoded) == (2 * 2 + 2 * 4 + 1, 0)
    assert (out / "temp" / "3.0.1").read_bytes() == (
        srcs[1] / "temp" / "c" / "1" / "0" / "1"
    ).read_bytes()
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 8))


def test_cli_append_dim(tmp_path, capsys):
    dst = daily(tmp_path / "dst", 0, 2)
    src = daily(tmp_path / "src", 2, 2)
    assert main(["convert", str(src), str(dst), "--append-dim", "time"]) == 0
    np.testing.assert_array_equal(read_nc(dst)["temp"], expected_temp(0, 4))


def test_resume_without_a_journal_compares_contents(tmp_path):
    srcs = [daily(tmp_path / f"d{i}", 4 * i, 4) for i in range(3)]
    out = tmp_path / "out"

    def stop(done, total):
        if done == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nczarr.convert(srcs, out, concat_dim="time", workers=1, progress=stop)
    (out / ".in-progress.nczarr").unlink()
    written = sorted(p for p in out.rglob("*") if p.is_file())
    damaged = written[0]
    damaged.write_bytes(bytes(len(damaged.read_bytes())))  # same size, other bytes
    report = nczarr.convert(srcs, out, concat_dim="time", resume=True)
    assert report.chunks_skipped == 4  # the damaged one is copied again
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 12))
    np.testing.assert_array_equal(read_nc(out)["lat"], [1, 2, 3])


def test_variables_chunked_differently_along_the_dimension_are_all_written(tmp_path):
    """Six netcdf-c sources of 3 steps, ``a`` in chunks of 3 and ``b`` of 2 (found by
    a differential hunt on fc4711d: ``b``'s target chunks 3 and 6 were never written,
    netCDF4 read them as missing and the report counted them as copied)."""
    import netCDF4

    srcs = []
    for i in range(6):
        path = tmp_path / f"s{i}"
        with netCDF4.Dataset(nc_url(path, "nczarr"), "w") as ds:
            ds.createDimension("time", None)
            ds.createVariable("a", "i4", ("time",), chunksizes=(3,))[:] = np.arange(3) + 3 * i
            b = ds.createVariable("b", "i4", ("time",), chunksizes=(2,))
            b[:] = np.arange(3) + 3 * i + 1000
        srcs.append(path)
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    with netCDF4.Dataset(nc_url(out, "nczarr")) as ds:
        a, b = ds["a"][:], ds["b"][:]
    assert not np.ma.is_masked(b) and not np.ma.is_masked(a)
    np.testing.assert_array_equal(a, np.arange(18))
    np.testing.assert_array_equal(b, np.arange(18) + 1000)
    assert report.chunks_copied + report.chunks_reencoded == 6 + 9


def _labels(path, t0, labels):
    """A netCDF-4 file of ``time`` and a variable-length ``station`` string."""
    import netCDF4

    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(t0, t0 + len(labels))
        station = ds.createVariable("station", str, ("time",))
        for i, label in enumerate(labels):
            station[i] = label
    return path


@pytest.mark.parametrize("mode", ["nczarr", "zarr"])
def test_netcdf4_files_whose_later_strings_are_longer_combine(tmp_path, mode):
    """Each file's strings are measured alone; the combined store is as wide as the
    widest file (on 254285e, found by a differential hunt: refused, "put the source with
    the longest strings first", after writing had begun)."""
    a = _labels(tmp_path / "a.nc", 0, ["abc", "de"])
    b = _labels(tmp_path / "b.nc", 2, ["abcdefgh", "x"])
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning):  # the strings are re-encoded
        nczarr.convert([a, b], out, mode, concat_dim="time")
    got = xr.open_dataset(out, engine="nczarr")["station"].values.tolist()
    assert got == ["abc", "de", "abcdefgh", "x"]
    if mode == "nczarr":
        import netCDF4

        with netCDF4.Dataset(nc_url(out)) as ds:
            assert ds["station"][:].tolist() == got


def test_an_append_of_longer_strings_is_refused_before_writing(tmp_path):
    a = _labels(tmp_path / "a.nc", 0, ["abc", "de"])
    store = tmp_path / "store"
    with pytest.warns(nczarr.NCZarrWarning):
        nczarr.convert(a, store)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    b = _labels(tmp_path / "b.nc", 2, ["abcdefgh", "x"])
    with pytest.raises(nczarr.InvalidModeError, match=r"'/station'.*at most 3 bytes.*8-byte"):
        nczarr.convert(b, store, append_dim="time")
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
