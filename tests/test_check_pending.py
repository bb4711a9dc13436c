"""``nczarr check`` on a store holding a pending append journal (an append killed while
writing its metadata): it reports the interrupted append, what netcdf-c (netCDF4),
zarr-python, xarray and GDAL read of the store until it is finished (each claim is
checked against the real reader here), and the command that finishes it."""

from __future__ import annotations

import signal
import warnings
from pathlib import Path

import netCDF4
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.cli import main
from nczarr.maps.file import FileMap
from nczarr.maps.pending import JOURNAL_KEY
from nczarr.translate.compat import GDAL, NC410, NETCDF_C, XARRAY, ZARR_PYTHON

from .gdalreader import read_zarr
from .growing import daily
from .ncoracle import nc_url
from .test_append import run_killer

ZARR_READERS = (ZARR_PYTHON, XARRAY, GDAL)


def _killed(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """An NCZarr store of 3 days whose append of 4 more was SIGKILLed at write ``n``
    (9 chunk writes, the journal, then the metadata objects), and the source."""
    src = daily(tmp_path / "src", 3, 4)
    dst = daily(tmp_path / "dst", 0, 3)
    proc = run_killer(src, dst, n, tmp_path / "killer.py")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (dst / JOURNAL_KEY).exists()
    return src, dst


def _pending_only(report: nczarr.CheckReport) -> list:
    return [f for f in report.findings if "interrupted append" in f.problem]


def _netcdf_time(path: Path) -> int | str:
    try:
        with netCDF4.Dataset(nc_url(path)) as ds:
            return ds.dimensions["time"].size
    except OSError as exc:
        return str(exc)


def test_journal_written_no_shape_yet_readers_see_the_old_store(tmp_path, capsys):
    src, dst = _killed(tmp_path, 11)  # the journal and the first metadata object
    report = nczarr.check(dst)
    assert report.pending is not None
    assert report.pending.sources == (str(src),)
    assert report.pending.old == ("/temp", "/time") and report.pending.grown == ()
    pending = _pending_only(report)
    assert {(f.reader, f.severity) for f in pending} == {
        *((r, "ignores") for r in NETCDF_C),
        *((r, "ignores") for r in ZARR_READERS),
    }
    assert all(f.fix and "--append-dim time" in f.fix and str(src) in f.fix for f in pending)
    assert not report.ok
    # the real readers: the old store (3 days), while nczarr reads the grown one
    assert _netcdf_time(dst) == 3
    assert zarr.open_group(str(dst), mode="r")["temp"].shape == (3, 3, 4)
    assert read_zarr(dst).arrays["/temp"].dims[0] == ("time", 3)
    assert nczarr.read(dst).root.dimensions["time"].size == 7
    # the CLI says it, with the command that finishes it
    assert main(["check", str(dst)]) == 1
    out = capsys.readouterr().out
    assert "pending append:" in out and "interrupted" in out
    assert f"nczarr convert {src} {dst} --append-dim time" in out


def test_half_written_shapes_netcdf_refuses_zarr_python_mixes(tmp_path):
    _, dst = _killed(tmp_path, 16)  # temp/.zarray grown, time/.zarray and the root not
    report = nczarr.check(dst)
    assert report.pending.grown == ("/temp",) and report.pending.old == ("/time",)
    assert report.pending.sizes_old
    found = {(f.reader, f.severity) for f in _pending_only(report)}
    assert (NC410, "refuses") in found
    assert {(ZARR_PYTHON, "misreads"), (GDAL, "misreads"), (XARRAY, "refuses")} <= found
    # the stored shapes' dimension conflict is this append's, not a rename's job
    assert not any("renames" in (f.fix or "") for f in report.findings)
    assert "Invalid dimension size" in str(_netcdf_time(dst))
    group = zarr.open_group(str(dst), mode="r")
    assert (group["temp"].shape[0], group["time"].shape[0]) == (7, 3)
    with pytest.raises(ValueError, match="conflicting sizes"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.open_zarr(str(dst), consolidated=False)


def test_every_object_written_only_the_journal_left(tmp_path):
    _, dst = _killed(tmp_path, 18)  # the root written, the journal not yet deleted
    report = nczarr.check(dst)
    assert report.pending is not None and report.pending.unwritten == ()
    assert _pending_only(report) == []
    assert "only the journal is left" in report.summary()
    assert _netcdf_time(dst) == 7


def test_rerunning_the_append_as_check_says_finishes_it(tmp_path, capsys):
    src, dst = _killed(tmp_path, 16)
    assert main(["check", str(dst)]) == 1
    assert main(["convert", str(src), str(dst), "--append-dim", "time"]) != 0
    assert "now complete" in capsys.readouterr().err
    report = nczarr.check(dst)
    assert report.pending is None and _pending_only(report) == []
    assert _netcdf_time(dst) == 7


def _states(tmp_path: Path, consolidated: bool) -> tuple[list[tuple[str, bytes]], dict]:
    """The writes of an append into a pure Zarr store (from its journal on), and the
    store's objects before."""
    dst = tmp_path / "dst.zarr"
    nczarr.convert(daily(tmp_path / "a", 0, 3), dst, mode="zarr", consolidated=consolidated)
    old = {p.relative_to(dst).as_posix(): p.read_bytes() for p in dst.rglob("*") if p.is_file()}
    writes: list[tuple[str, bytes]] = []

    class Recording(FileMap):
        def _store(self, key, value):
            writes.append((key, value))
            super()._store(key, value)

    nczarr.convert(daily(tmp_path / "b", 3, 4), Recording(dst, mode="a"), append_dim="time")
    at = [k for k, _ in writes].index(JOURNAL_KEY)
    return writes[at:], old


def _state(base: Path, old: dict, writes: list[tuple[str, bytes]]) -> Path:
    for key, value in [*old.items(), *writes]:
        (base / key).parent.mkdir(parents=True, exist_ok=True)
        (base / key).write_bytes(value)
    return base


def test_pure_zarr_consolidated_zarr_readers_read_the_old_consolidated_metadata(tmp_path):
    writes, old = _states(tmp_path, consolidated=True)
    assert [k for k, _ in writes] == [JOURNAL_KEY, "temp/.zarray", "time/.zarray", ".zmetadata"]
    state = _state(tmp_path / "s", old, writes[:2])  # temp grown, time and .zmetadata not
    report = nczarr.check(state)
    assert report.pending.consolidated_old
    found = {(f.reader, f.severity) for f in _pending_only(report)}
    assert found == {*((r, "refuses") for r in NETCDF_C), *((r, "ignores") for r in ZARR_READERS)}
    assert "Invalid dimension size" in str(_netcdf_time(state))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert dict(xr.open_zarr(str(state)).sizes)["time"] == 3
    assert zarr.open_group(str(state), mode="r")["temp"].shape == (3, 3, 4)
    assert read_zarr(state).arrays["/temp"].dims[0] == ("time", 3)


def test_pure_zarr_unconsolidated_half_written(tmp_path):
    writes, old = _states(tmp_path, consolidated=False)
    state = _state(tmp_path / "s", old, writes[:2])
    report = nczarr.check(state)
    assert not report.pending.sizes_old and not report.pending.consolidated_old
    found = {(f.reader, f.severity) for f in _pending_only(report)}
    assert {(NC410, "refuses"), (ZARR_PYTHON, "misreads"), (GDAL, "misreads")} <= found
    assert (XARRAY, "refuses") in found
    gdal = read_zarr(state).arrays
    assert gdal["/temp"].dims[0][1] == 7 and gdal["/time"].dims[0][1] == 3
    with pytest.raises(ValueError, match="conflicting sizes"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.open_zarr(str(state), consolidated=False)


def test_a_convert_journal_is_no_pending_append(tmp_path):
    dst = daily(tmp_path / "dst", 0, 3)
    (dst / JOURNAL_KEY).write_text('{"kind": "nczarr-convert-journal"}')
    report = nczarr.check(dst)
    assert report.pending is None and _pending_only(report) == []


def test_pending_append_compares_documents_not_spellings():
    """A NaN fill_value written already is written (NaN != NaN in Python, not in JSON);
    odd journal contents are read as far as they go, never raised on."""
    from nczarr.translate.compat_pending import pending_append

    zarray = b'{"zarr_format": 2, "shape": [7], "dtype": "<f8", "fill_value": NaN}'
    attrs = b'{"_ARRAY_DIMENSIONS": ["time"], "_nczarr_array": [1, 2]}'
    doc = {"sources": ["s.nc"], "dimension": "/time"}
    metadata = [("t/.zattrs", attrs), ("t/.zarray", zarray)]
    done = pending_append(JOURNAL_KEY, metadata, doc, dict(metadata))
    assert done.unwritten == () and done.grown == ("/t",) and done.old == ()
    old = {"t/.zattrs": attrs, "t/.zarray": zarray.replace(b"[7]", b"[3]")}
    half = pending_append(JOURNAL_KEY, metadata, doc, old)
    assert half.unwritten == ("t/.zarray",) and half.old == ("/t",)
