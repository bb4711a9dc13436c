"""``nczarr check``: every claim it makes about a reader is checked against that reader.

For each store the test asks nczarr what a reader would get wrong, then opens the
same store with the real reader (libnetcdf 4.10 through netCDF4, zarr-python 3,
xarray) and sees that very problem happen, or that the reader really gets it right
when nczarr says so.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.cli import main
from nczarr.translate.compat import NC410, XARRAY, ZARR_PYTHON

from .ncoracle import extract_fixture


def _severities(report: nczarr.CheckReport, reader: str, where: str) -> set[str]:
    return {f.severity for f in report.for_reader(reader) if f.where == where}


def _nc_url(path: Path, mode: str = "nczarr") -> str:
    return f"file://{path}#mode={mode},file"


def _zarr_store(path: Path, build) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        build(root)
    return path


def _clean(root) -> None:
    a = root.create_array("a", shape=(4, 3), chunks=(2, 3), dtype="i4", compressors=None)
    a[...] = np.arange(12, dtype="i4").reshape(4, 3)
    a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    b = root.create_array("b", shape=(3,), dtype="u1", compressors=None, fill_value=0)
    b[...] = [1, 2, 3]
    b.attrs["_ARRAY_DIMENSIONS"] = ["x"]


def test_netcdf_c_output_breaks_zarr_python_and_xarray_not_netcdf_c(tmp_path: Path) -> None:
    path = extract_fixture("current_netcdf4101.zip", tmp_path)
    report = nczarr.check(str(path))
    assert not report.ok
    assert report.for_reader(NC410) == []
    with netCDF4.Dataset(_nc_url(path)) as ds:
        expected_v = ds["v"][...].data
        assert ds["sc"].shape == ()

    assert _severities(report, ZARR_PYTHON, "/c") == {"fails"}
    group = zarr.open_group(str(path), mode="r")
    with pytest.raises(ValueError, match=">S1"):
        list(group.keys())
    assert _severities(report, ZARR_PYTHON, "/v") == {"misreads"}
    assert not np.array_equal(group["v"][...], expected_v)
    assert _severities(report, ZARR_PYTHON, "/sc") == {"misreads"}
    assert group["sc"].shape == (1,)

    assert "refuses" in {f.severity for f in report.for_reader(XARRAY)}
    with pytest.raises(ValueError):
        xr.open_zarr(str(path), consolidated=False)


def test_legacy_layout_is_refused_by_netcdf_c_410(tmp_path: Path) -> None:
    path = extract_fixture("v2uc_ncgen490.zip", tmp_path)
    report = nczarr.check(str(path))
    assert _severities(report, NC410, "/") == {"refuses"}
    assert any("nczarr migrate" in (f.fix or "") for f in report.for_reader(NC410))
    with pytest.raises(OSError):
        netCDF4.Dataset(_nc_url(path))
    nczarr.migrate(str(path))
    assert nczarr.check(str(path)).for_reader(NC410) == []
    with netCDF4.Dataset(_nc_url(path)) as ds:
        assert ds.variables


def test_0d_arrays_are_dropped_by_netcdf_c(tmp_path: Path) -> None:
    def build(root):
        _clean(root)
        s = root.create_array("s", shape=(), dtype="f8", compressors=None, fill_value=0.0)
        s[...] = 2.5
        s.attrs["_ARRAY_DIMENSIONS"] = []

    path = _zarr_store(tmp_path / "s.file", build)
    report = nczarr.check(str(path))
    assert _severities(report, NC410, "/s") == {"ignores"}
    with netCDF4.Dataset(_nc_url(path, "zarr")) as ds:
        assert "s" not in ds.variables and "a" in ds.variables


def test_codec_without_netcdf_c_filter_fails_in_netcdf_c(tmp_path: Path) -> None:
    from numcodecs import GZip

    def build(root):
        _clean(root)
        g = root.create_array("g", shape=(4,), dtype="i4", compressors=GZip(), fill_value=0)
        g[...] = [1, 2, 3, 4]
        g.attrs["_ARRAY_DIMENSIONS"] = ["y"]

    path = _zarr_store(tmp_path / "g.file", build)
    report = nczarr.check(str(path))
    assert _severities(report, NC410, "/g") == {"fails"}
    with netCDF4.Dataset(_nc_url(path, "zarr")) as ds:
        np.testing.assert_array_equal(ds["a"][...], np.arange(12).reshape(4, 3))
        with pytest.raises(RuntimeError):
            ds["g"][...]


def test_dimension_conflict_is_refused_by_netcdf_c_and_xarray(tmp_path: Path) -> None:
    def build(root):
        _clean(root)
        c = root.create_array("c", shape=(5,), dtype="i4", compressors=None, fill_value=0)
        c.attrs["_ARRAY_DIMENSIONS"] = ["x"]  # x is 3 for a and b

    path = _zarr_store(tmp_path / "d.file", build)
    report = nczarr.check(str(path))
    assert _severities(report, NC410, "/") == {"refuses"}
    assert _severities(report, XARRAY, "/") == {"refuses"}
    with pytest.raises(OSError):
        netCDF4.Dataset(_nc_url(path, "zarr"))
    with pytest.raises(ValueError, match="conflicting sizes"):
        xr.open_zarr(str(path), consolidated=False)


def test_stale_consolidated_metadata_is_what_zarr_python_sees(tmp_path: Path) -> None:
    path = _zarr_store(tmp_path / "c.zarr", _clean)
    zarr.consolidate_metadata(str(path))
    attrs = json.loads((path / "a" / ".zattrs").read_text())
    (path / "a" / ".zattrs").write_text(json.dumps({**attrs, "units": "m"}))
    report = nczarr.check(str(path))
    assert _severities(report, ZARR_PYTHON, ".zmetadata") == {"misreads"}
    assert "units" not in zarr.open_group(str(path), mode="r")["a"].attrs


def test_trailing_bytes_are_reported_for_every_reader(tmp_path: Path) -> None:
    path = _zarr_store(tmp_path / "t.file", _clean)
    key = path / "a" / ".zattrs"
    key.write_bytes(key.read_bytes() + b'], "x"]}')
    report = nczarr.check(str(path))
    for reader in (NC410, ZARR_PYTHON, XARRAY):
        assert _severities(report, reader, "a/.zattrs") == {"fails"}
    with pytest.raises(json.JSONDecodeError):
        zarr.open_group(str(path), mode="r")["a"]


def test_zarr_v3_is_refused_by_netcdf_c(tmp_path: Path) -> None:
    root = zarr.open_group(str(tmp_path / "v3.file"), mode="w", zarr_format=3)
    root.create_array("a", shape=(2,), dtype="i4", dimension_names=["x"])[...] = [1, 2]
    report = nczarr.check(str(tmp_path / "v3.file"))
    assert _severities(report, NC410, "/") == {"refuses"}
    assert report.for_reader(ZARR_PYTHON) == [] and report.for_reader(XARRAY) == []
    with pytest.raises(OSError):
        netCDF4.Dataset(_nc_url(tmp_path / "v3.file", "zarr"))


def test_a_clean_store_is_ok_for_every_reader_and_exits_0(tmp_path: Path, capsys) -> None:
    path = _zarr_store(tmp_path / "ok.file", _clean)
    report = nczarr.check(str(path))
    assert report.ok, report.summary()
    expected = np.arange(12, dtype="i4").reshape(4, 3)
    with netCDF4.Dataset(_nc_url(path, "zarr")) as ds:
        np.testing.assert_array_equal(ds["a"][...], expected)
    np.testing.assert_array_equal(zarr.open_group(str(path), mode="r")["a"][...], expected)
    with xr.open_zarr(str(path), consolidated=False) as ds:
        assert ds["a"].dims == ("y", "x")
    assert main(["check", str(path)]) == 0
    assert "xarray: ok" in capsys.readouterr().out


def test_cli_exit_codes_and_fixes(tmp_path: Path, capsys) -> None:
    path = extract_fixture("current_netcdf4101.zip", tmp_path)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"fix: nczarr convert {path} OUT --mode zarr" in out
    assert "netcdf-c 4.10+: ok" in out
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    assert exc.value.code == 2
    assert main(["check", str(tmp_path / "missing.file")]) == 1


def test_blosc_scalar_makes_netcdf_c_refuse_the_dataset(tmp_path: Path) -> None:
    """zarr-python's default compressor on a 0-d array, carried into NCZarr verbatim."""
    from numcodecs import Blosc

    from nczarr.translate.write_nczarr import write_nczarr

    def build(root):
        _clean(root)
        s = root.create_array("s", shape=(), dtype="f8", compressors=Blosc(), fill_value=0.0)
        s[...] = 2.5
        s.attrs["_ARRAY_DIMENSIONS"] = []

    src = _zarr_store(tmp_path / "src.zarr", build)
    out = tmp_path / "out.file"
    out.mkdir()
    # the NCZarr metadata a verbatim copy would carry, written by nczarr's own writer
    for key, value in write_nczarr(nczarr.read(str(src))).metadata.items():
        (out / key).parent.mkdir(parents=True, exist_ok=True)
        (out / key).write_bytes(value)
    for chunk in ("a/0.0", "a/1.0", "b/0", "s/0"):
        (out / chunk).write_bytes((src / chunk).read_bytes())
    report = nczarr.check(str(out))
    assert _severities(report, NC410, "/s") == {"refuses"}
    with pytest.raises(OSError, match="Filter error"):
        netCDF4.Dataset(_nc_url(out))


def test_big_endian_fill_values_are_byte_swapped_by_netcdf_c(tmp_path: Path) -> None:
    path = tmp_path / "be.file"
    with netCDF4.Dataset(_nc_url(path), "w") as ds:
        ds.createDimension("x", 4)
        v = ds.createVariable(
            "v", ">i2", ("x",), endian="big", fill_value=np.int16(-32768), chunksizes=(2,)
        )
        v[0:2] = [1, 2]  # the second chunk is never written
    report = nczarr.check(str(path))
    assert _severities(report, NC410, "/v") == {"misreads"}
    with netCDF4.Dataset(_nc_url(path)) as ds:
        ds["v"].set_auto_mask(False)
        assert list(ds["v"][2:]) != [-32768, -32768]  # what the producer wrote
    assert list(zarr.open_group(str(path), mode="r")["v"][2:]) == [-32768, -32768]
