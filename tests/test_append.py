"""Appending along a dimension: ``nczarr.convert(src, dst, append_dim=...)`` and
``nczarr.to_nczarr(ds, url, mode="a", append_dim=...)``.

Targets are written by netcdf-c (netCDF4) and read back by netcdf-c: the grown store
must be the concatenation, full chunks already stored must stay the very same files,
a refusal must leave the store byte-identical, and a SIGKILL at any write must leave
the old store or the new one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import nczarr

from .growing import daily, expected_temp, files, read_nc
from .ncoracle import nc_url

ROOT = Path(__file__).resolve().parents[1]


def _open(path: Path) -> xr.Dataset:
    return xr.open_dataset(nc_url(path), engine="netcdf4").load()


def _chunks(tree: dict) -> dict:
    return {k: v for k, v in tree.items() if not Path(k).name.startswith(".")}


def test_append_on_an_unlimited_dimension_copies_aligned_chunks(tmp_path):
    dst = daily(tmp_path / "dst", 0, 4)
    src = daily(tmp_path / "src", 4, 4)
    old = _open(dst)
    before = _chunks(files(dst))
    report = nczarr.convert(src, dst, append_dim="time")
    assert (report.chunks_copied, report.chunks_reencoded) == (2 + 4, 0)
    got = read_nc(dst)
    assert (got["size"], got["unlimited"]) == (8, True)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 8))
    np.testing.assert_array_equal(got["time"], np.arange(8))
    after = files(dst)
    for key, (inode, mtime, data) in before.items():  # not rewritten: same file, same bytes
        assert after[key] == (inode, mtime, data), key
    assert (dst / "temp" / "3.0.1").read_bytes() == (src / "temp" / "1.0.1").read_bytes()
    expected = xr.concat([old, _open(src)], dim="time")
    xr.testing.assert_identical(_open(dst), expected)
    # and nczarr's own engine reads the same
    xr.testing.assert_identical(xr.open_dataset(dst, engine="nczarr").load(), expected)


def test_append_on_a_fixed_dimension_rewrites_only_the_partial_last_chunk(tmp_path):
    dst = daily(tmp_path / "dst", 0, 3, unlimited=False)
    src = daily(tmp_path / "src", 3, 2, unlimited=False)
    old = _open(dst)
    before = _chunks(files(dst))
    report = nczarr.convert(src, dst, append_dim="time")
    # [2,4) holds the old partial chunk and the source's first day; [4,5) starts
    # inside a source chunk: time 2 + temp 2 x 2 chunks, nothing else
    assert (report.chunks_copied, report.chunks_reencoded) == (0, 6)
    got = read_nc(dst)
    assert (got["size"], got["unlimited"]) == (5, False)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 5))
    after = files(dst)
    for key in ("time/0", "temp/0.0.0", "temp/0.0.1", "lat/0"):
        assert after[key] == before[key], key
    assert {k for k in before if after[k] != before[k]} == {"time/1", "temp/1.0.0", "temp/1.0.1"}
    expected = xr.concat([old, _open(src)], dim="time")
    xr.testing.assert_identical(_open(dst), expected)
    xr.testing.assert_identical(xr.open_dataset(dst, engine="nczarr").load(), expected)


def test_append_to_a_pure_zarr_store(tmp_path):
    dst = tmp_path / "dst.zarr"
    nczarr.convert(daily(tmp_path / "a", 0, 4), dst, mode="zarr")
    report = nczarr.convert(daily(tmp_path / "b", 4, 2), dst, append_dim="time")
    assert report.target_format == "zarr" and report.chunks_reencoded == 0
    back = xr.open_zarr(dst, zarr_format=2, consolidated=False).load()
    np.testing.assert_array_equal(back["temp"].values, expected_temp(0, 6))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lat": (1.0, 2.0, 5.0)}, r"'/lat'.*values differ"),
        ({"title": "other"}, r"attribute\(s\) differ: title"),
    ],
)
def test_a_refused_append_leaves_the_store_byte_identical(tmp_path, kwargs, message):
    dst = daily(tmp_path / "dst", 0, 3)
    src = daily(tmp_path / "src", 3, 2, **kwargs)
    before = files(dst)
    with pytest.raises(nczarr.InvalidModeError, match=message):
        nczarr.convert(src, dst, append_dim="time")
    assert files(dst) == before


def test_an_append_to_a_zarr_v3_store_is_refused_saying_what_to_do(tmp_path):
    """A Zarr v3 store with zarr's own chunk keys (``c/0/0``): the message says so and
    what to do (it used to name "(Zarr v3 chunk keys)" as re-encoded)."""
    dst = tmp_path / "dst.zarr"
    _open(daily(tmp_path / "a", 0, 3)).to_zarr(dst, zarr_format=3, consolidated=False)
    before = files(dst)
    with pytest.raises(nczarr.InvalidModeError, match=r"is a Zarr v3 store.*concat_dim"):
        nczarr.convert(daily(tmp_path / "b", 3, 2), dst, append_dim="time")
    assert files(dst) == before


def _new_days(t0: int, n: int, lat=(1.0, 2.0, 3.0)) -> xr.Dataset:
    """Days ``t0 .. t0+n-1`` as a user holds them: decoded times, float temperatures."""
    ds = xr.Dataset(
        {"temp": (("time", "lat", "lon"), expected_temp(t0, n), {"units": "K"})},
        coords={
            "time": ("time", np.arange(t0, t0 + n, dtype="f8"), {"units": "days since 2000-01-01"}),
            "lat": ("lat", np.array(lat, dtype="f4"), {"units": "degrees_north"}),
        },
        attrs={"title": "daily"},
    )
    return xr.decode_cf(ds)


def test_to_nczarr_appends_with_the_store_encodings(tmp_path):
    dst = daily(tmp_path / "dst", 0, 4)
    old = _open(dst)
    before = _chunks(files(dst))
    nczarr.to_nczarr(_new_days(4, 2), dst, mode="a", append_dim="time")
    got = read_nc(dst)
    assert (got["size"], got["unlimited"]) == (6, True)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 6))
    after = files(dst)
    assert all(after[k] == v for k, v in before.items())
    # the store's encodings: zlib + shuffle, chunks of (2, 3, 2), fill -999
    with __import__("netCDF4").Dataset(nc_url(dst)) as nc:
        assert nc["temp"].filters()["zlib"] and nc["temp"].filters()["shuffle"]
        assert nc["temp"].chunking() == [2, 3, 2]
        assert nc["temp"]._FillValue == -999.0
    xr.testing.assert_identical(
        _open(dst), xr.concat([old, _open(dst).isel(time=slice(4, 6))], dim="time")
    )
    np.testing.assert_array_equal(
        _open(dst)["time"].values, xr.concat([old, _new_days(4, 2)], dim="time")["time"].values
    )


def test_to_nczarr_refusals_leave_the_store_byte_identical(tmp_path):
    dst = daily(tmp_path / "dst", 0, 3)
    before = files(dst)
    with pytest.raises(
        nczarr.InvalidModeError, match=r"cannot combine the dataset and .*'/lat'.*values differ"
    ):
        nczarr.to_nczarr(_new_days(3, 2, lat=(0.0, 2.0, 3.0)), dst, mode="a", append_dim="time")
    with pytest.raises(nczarr.InvalidModeError, match=r"extra.*not in the store"):
        nczarr.to_nczarr(
            _new_days(3, 2).assign(extra=("time", [1, 2])), dst, mode="a", append_dim="time"
        )
    with pytest.raises(nczarr.InvalidModeError, match="no dimension 'day'"):
        nczarr.to_nczarr(_new_days(3, 2), dst, mode="a", append_dim="day")
    assert files(dst) == before


# ------------------------------------------------------------------ kills
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import nczarr
    from nczarr.maps.file import FileMap

    src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    count = [0]

    class Dying(FileMap):
        def _store(self, key, value):
            count[0] += 1
            if count[0] >= n:
                os.kill(os.getpid(), signal.SIGKILL)
            super()._store(key, value)

    nczarr.convert(src, Dying(dst, mode="a"), append_dim="time", workers=1)
    print("finished", count[0])
    """
)


def run_killer(src: Path, dst: Path, n: int, script: Path) -> subprocess.CompletedProcess[str]:
    """Append ``src`` to ``dst`` in a fresh interpreter SIGKILLed at its write ``n``
    (:data:`KILLER`, written to ``script``)."""
    script.write_text(KILLER)
    return subprocess.run(
        [sys.executable, str(script), str(src), str(dst), str(n)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=180,
    )


@pytest.mark.parametrize("n", [1, 4, 9, 10, 11, 13, 16, 18, 100])
def test_a_killed_append_leaves_the_old_or_the_new_store(tmp_path, n):
    dst = daily(tmp_path / "dst", 0, 3)
    src = daily(tmp_path / "src", 3, 4)
    old = read_nc(dst)
    proc = run_killer(src, dst, n, tmp_path / "killer.py")
    killed = proc.returncode == -signal.SIGKILL
    assert killed or (proc.returncode == 0 and "finished" in proc.stdout), proc.stderr
    new_temp = expected_temp(0, 7)
    # 18 writes: 9 chunks, the journal, 8 metadata objects (root last)
    assert killed == (n <= 18)
    if (dst / ".in-progress.nczarr").exists():
        # killed while writing the metadata: the next append completes that one
        assert n >= 11
        with pytest.raises(nczarr.TargetExistsError, match=r"interrupted.*now complete"):
            nczarr.convert(src, dst, append_dim="time")
        np.testing.assert_array_equal(read_nc(dst)["temp"], new_temp)
        return
    got = read_nc(dst)
    if got["size"] == 3:
        assert killed
        np.testing.assert_array_equal(got["temp"], old["temp"])
        np.testing.assert_array_equal(got["time"], old["time"])
        # what the killed run copied beyond the old extent (chunks of 2: from chunk 2)
        left = [
            p.name for a in ("temp", "time") for p in (dst / a).iterdir()
            if not p.name.startswith(".") and int(p.name.split(".")[0]) >= 2
        ]  # fmt: skip
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            nczarr.convert(src, dst, append_dim="time")  # a rerun appends it once
        removed = [w for w in caught if "beyond the store's extent" in str(w.message)]
        assert len(removed) == (1 if left else 0), [str(w.message) for w in caught]
        got = read_nc(dst)
    np.testing.assert_array_equal(got["temp"], new_temp)
    np.testing.assert_array_equal(got["time"], np.arange(7))


def _series(path: Path, t0: int, n: int, written: bool = True) -> Path:
    """A netcdf-c store of ``time`` and ``temp`` in chunks of 2 (``temp`` never written
    unless ``written``: all fill)."""
    import netCDF4

    with netCDF4.Dataset(nc_url(path), "w") as ds:
        ds.createDimension("time", None)
        ds.createVariable("time", "f8", ("time",), chunksizes=(2,))[:] = np.arange(t0, t0 + n)
        temp = ds.createVariable("temp", "f4", ("time",), chunksizes=(2,), fill_value=-1.0)
        if written:
            temp[:] = np.arange(t0, t0 + n) + 900
    return path


def test_an_append_removes_the_chunks_a_killed_append_left(tmp_path):
    """An append killed among its chunk copies leaves chunks beyond the store's extent
    (the store still reads as before). The next append, of a source that stores no
    ``temp`` chunk there (never written: the fill), removes them first, and says so (on
    fc4711d, found by a differential hunt, the grown store showed the killed append's
    values)."""
    import netCDF4

    dst = _series(tmp_path / "dst", 0, 4)
    proc = run_killer(_series(tmp_path / "big", 4, 4), dst, 5, tmp_path / "killer.py")
    assert proc.returncode == -signal.SIGKILL, proc.stderr  # its 4 chunks copied
    assert {"2", "3"} <= {p.name for p in (dst / "temp").iterdir()}
    other = _series(tmp_path / "other", 4, 2, written=False)
    with pytest.warns(nczarr.NCZarrWarning, match="beyond the store's extent"):
        report = nczarr.convert(other, dst, append_dim="time")
    assert any("left by an interrupted append" in w for w in report.warnings)
    with netCDF4.Dataset(nc_url(dst)) as ds:
        time, temp = ds["time"][:], ds["temp"][:]
    np.testing.assert_array_equal(time, np.arange(6))
    np.testing.assert_array_equal(temp[:4], np.arange(4) + 900)
    assert temp.mask[4:].all()
    assert not (dst / "temp" / "3").exists()  # beyond the grown extent too: gone


def test_repeated_to_nczarr_appends_to_a_store_to_nczarr_wrote(tmp_path):
    store = tmp_path / "store"
    encoding = {"temp": {"chunksizes": (2, 3, 2), "zlib": True}, "time": {"chunksizes": (2,)}}
    nczarr.to_nczarr(_new_days(0, 3), store, encoding=encoding, unlimited_dims=["time"])
    for t in range(3, 8):  # one day at a time: the partial last chunk is rewritten each time
        nczarr.to_nczarr(_new_days(t, 1), store, mode="a", append_dim="time")
    got = read_nc(store)
    assert (got["size"], got["unlimited"]) == (8, True)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 8))
    expected = xr.concat([_new_days(0, 3), *(_new_days(t, 1) for t in range(3, 8))], "time")
    xr.testing.assert_identical(xr.open_dataset(store, engine="nczarr").load(), expected)


def test_the_same_append_run_twice_is_refused_the_second_time(tmp_path):
    """A retried job appending the same day again (xarray's ``to_zarr(append_dim=)``
    appends it twice; so did nczarr on 254285e, found by a differential hunt): the
    coordinate ``time`` would go back, so the second run is refused, naming it, and the
    store is byte-identical."""
    dst = daily(tmp_path / "dst", 0, 4)
    src = daily(tmp_path / "src", 4, 2)
    nczarr.convert(src, dst, append_dim="time")
    before = files(dst)
    with pytest.raises(nczarr.InvalidModeError, match=r"'/time' starts at 4.* ends at 5"):
        nczarr.convert(src, dst, append_dim="time")
    with pytest.raises(nczarr.InvalidModeError, match="strictly monotonic"):
        nczarr.to_nczarr(_new_days(4, 2), dst, mode="a", append_dim="time")
    assert files(dst) == before
    np.testing.assert_array_equal(read_nc(dst)["time"], np.arange(6))


@pytest.mark.parametrize(
    ("store", "source", "refused"),
    [
        ([5.0, 4.0], [3.0, 2.0], False),  # decreasing, and going on so
        ([5.0, 4.0], [4.0, 3.0], True),  # the seam repeats a value
        ([5.0, 4.0], [6.0], True),  # decreasing, then up
        ([1.0], [1.0], True),  # one value each: equal is no order
        ([1.0], [0.5], False),  # one value each: either direction
        ([1.0, 1.0], [0.0], False),  # the store is not monotonic already: not judged
    ],
)
def test_the_coordinate_stays_strictly_monotonic_at_the_seam(tmp_path, store, source, refused):
    import netCDF4

    def made(path, values):
        with netCDF4.Dataset(nc_url(path), "w") as ds:
            ds.createDimension("time", None)
            ds.createVariable("time", "f8", ("time",))[:] = values
            ds.createVariable("v", "i4", ("time",))[:] = np.arange(len(values))
        return path

    dst, src = made(tmp_path / "dst", store), made(tmp_path / "src", source)
    if refused:
        with pytest.raises(nczarr.InvalidModeError, match="strictly monotonic"):
            nczarr.convert(src, dst, append_dim="time")
    else:
        nczarr.convert(src, dst, append_dim="time")
    with netCDF4.Dataset(nc_url(dst)) as ds:
        np.testing.assert_array_equal(ds["time"][:], store if refused else store + source)


@pytest.mark.parametrize("dtype", ["f8", "f4", "i4"])
def test_missing_values_at_the_seam_are_not_judged(tmp_path, dtype):
    """The store's last ``time`` never written (netCDF's default fill; for a double,
    netcdf-c's ``fill_value`` says the rounded ``9.96921e+36`` while the chunk holds
    the exact default): an append after it is not refused (a review found the double
    case refused as "the same data appended again?")."""
    import netCDF4

    dst, src = tmp_path / "dst", tmp_path / "src"
    with netCDF4.Dataset(nc_url(dst), "w") as ds:
        ds.createDimension("time", None)
        ds.createVariable("time", dtype, ("time",))[:3] = [0, 1, 2]
        ds.createVariable("v", "i4", ("time",))[:4] = np.arange(4)  # time[3]: fill
    with netCDF4.Dataset(nc_url(src), "w") as ds:
        ds.createDimension("time", None)
        ds.createVariable("time", dtype, ("time",))[:] = [4, 5]
        ds.createVariable("v", "i4", ("time",))[:] = [4, 5]
    nczarr.convert(src, dst, append_dim="time")
    with netCDF4.Dataset(nc_url(dst)) as ds:
        assert ds["time"][:].tolist() == [0, 1, 2, None, 4, 5]


def test_keeps_leaf_rule_sees_every_clash_with_the_listing():
    from nczarr.conversion.growappend import keeps_leaf_rule

    stored = {"v/0.0", "v/1.0", "g/w/0/1"}
    assert keeps_leaf_rule(stored, ["v/2.0", "g/w/1/0"])
    assert not keeps_leaf_rule({*stored, "v/2.0/x"}, ["v/2.0"])  # an object below a key
    assert not keeps_leaf_rule(stored, ["g/w/0/1/0"])  # a stored object above a key
    assert not keeps_leaf_rule(stored, ["g/w/0"])  # a key is a stored object's directory


def test_beyond_extent_finds_only_chunks_past_the_shape():
    """A group array with ``/`` keys, a partial last chunk, a key of another rank and an
    array without the dimension."""
    from nczarr.conversion.growappend import beyond_extent
    from nczarr.conversion.growparts import Part
    from nczarr.translate.model import Dataset, Dimension, Group, Variable

    root = Group(name="/", path="/", dimensions={"time": Dimension("time", 5, True)})
    group = Group(name="g", path="/g")
    root.groups["g"] = group
    group.variables["v"] = Variable(
        name="v", path="/g/v", type="int", dimensions=("/time", "/x"), shape=(5, 4),
        chunks=(2, 2), dimension_separator="/",
    )  # fmt: skip
    group.dimensions["x"] = Dimension("x", 4)
    root.variables["c"] = Variable(
        name="c", path="/c", type="int", dimensions=("/x2",), shape=(9,), chunks=(2,)
    )
    root.dimensions["x2"] = Dimension("x2", 9)
    stored = {
        "g/v/0/0", "g/v/2/1",  # chunk 2 holds time 4: the partial last chunk, kept
        "g/v/3/0", "g/v/4/1",  # past time 5: left by a killed append
        "g/v/3",  # not a chunk key of a 2-d array: kept
        "c/7",  # no time dimension: kept
    }  # fmt: skip
    part = Part(Dataset(root=root), frozenset(stored), None, None, None, ())  # type: ignore[arg-type]
    assert beyond_extent(part, "/time") == ["g/v/3/0", "g/v/4/1"]


def test_to_nczarr_appends_char_variables_along_the_store_s_char_dimension(tmp_path):
    """A char variable's character axis is the store's (here ``nchar``, netcdf-c's),
    whatever the dataset's ``char_dim_name`` says (a dataset opened from netCDF carries
    its own): on 0beaaff the append built ``string2`` and was refused (found by a
    differential hunt)."""
    import netCDF4

    dst = tmp_path / "dst"
    with netCDF4.Dataset(nc_url(dst), "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("nchar", 2)
        ds.createVariable("time", "f8", ("time",))[:] = [0, 1]
        lab = ds.createVariable("lab", "S1", ("time", "nchar"))
        lab[:] = netCDF4.stringtochar(np.array([b"a0", b"b0"], dtype="S2"))
    day = xr.Dataset(
        {"lab": (("time",), np.array([b"a1", b"b1"], dtype="S2"))}, coords={"time": [2.0, 3.0]}
    )
    day["lab"].encoding["char_dim_name"] = "other"
    nczarr.to_nczarr(day, dst, mode="a", append_dim="time")
    with netCDF4.Dataset(nc_url(dst)) as ds:
        assert ds["lab"].dimensions == ("time", "nchar")
        assert netCDF4.chartostring(ds["lab"][:]).tolist() == ["a0", "b0", "a1", "b1"]
