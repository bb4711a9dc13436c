"""One array whose dimension names do not fit its rank is an odd array, not a broken store.

zarr-python writes any ``_ARRAY_DIMENSIONS`` attribute it is given and reads the array
whatever the attribute says; xarray refuses the whole group and netcdf-c 4.10 crashes
(fewer names than the rank), invents dimensions (more names) or drops the array (a 0-d
array). nczarr reads the store: the odd array's axes are anonymous, as without names,
with a warning naming it (README, "Read any layout"), and ``nczarr check`` says what
each reader does, measured here with the readers themselves.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.cli import main
from nczarr.translate.compat import NC410, XARRAY

from .ncoracle import extract_fixture

ODD = r"array '/v': _ARRAY_DIMENSIONS \[\"x\"\] has 1 name\(s\) but the array has rank 2"


def _store(path: Path, names: list[str], shape: tuple[int, ...] = (3, 4)) -> Path:
    """A zarr-python Zarr v2 store: ``/v`` of ``shape`` named ``names``, ``/ok`` over x."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    v = root.create_array(
        "v", shape=shape, chunks=shape, dtype="i4", fill_value=-1, compressors=None
    )
    v[...] = np.arange(int(np.prod(shape)), dtype="i4").reshape(shape)
    v.attrs["_ARRAY_DIMENSIONS"] = names
    ok = root.create_array("ok", shape=(3,), dtype="f8", compressors=None)
    ok[...] = [1.5, 2.5, 3.5]
    ok.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    return path


def _severities(report: nczarr.CheckReport, reader: str, where: str) -> set[str]:
    return {f.severity for f in report.for_reader(reader) if f.where == where}


def test_read_keeps_the_store_and_names_the_odd_array(tmp_path: Path) -> None:
    path = _store(tmp_path / "odd.zarr", ["x"])
    with pytest.warns(nczarr.NCZarrWarning, match=ODD + r" \(shape \[3, 4\]\): read with anon"):
        ds = nczarr.read(str(path))
    v, ok = ds.root.variables["v"], ds.root.variables["ok"]
    assert v.dimensions == ("/_Anonymous_Dimension_3", "/_Anonymous_Dimension_4")
    assert v.shape == (3, 4)
    assert ok.dimensions == ("/x",)
    assert any("'/v'" in w and "_ARRAY_DIMENSIONS" in w for w in ds.warnings)


@pytest.mark.parametrize("names", [["x"], ["x", "y", "z"]])
def test_the_xarray_engine_opens_the_store_with_zarr_pythons_values(
    tmp_path: Path, names: list[str]
) -> None:
    path = _store(tmp_path / "odd.zarr", names)
    with pytest.raises(ValueError):  # xarray's own zarr engine refuses the whole group
        xr.open_zarr(str(path), consolidated=False)
    with pytest.warns(nczarr.NCZarrWarning, match=r"array '/v': _ARRAY_DIMENSIONS"):
        ds = xr.open_dataset(str(path), engine="nczarr")
    expected = zarr.open_array(str(path / "v"), mode="r")[...]
    assert ds["v"].dims == ("_Anonymous_Dimension_3", "_Anonymous_Dimension_4")
    np.testing.assert_array_equal(ds["v"].values, expected)
    assert ds["ok"].dims == ("x",)
    np.testing.assert_array_equal(ds["ok"].values, [1.5, 2.5, 3.5])


@pytest.mark.parametrize("mode", ["zarr", "nczarr"])
def test_convert_writes_the_array_with_anonymous_dimensions(tmp_path: Path, mode: str) -> None:
    path = _store(tmp_path / "odd.zarr", ["x"])
    out = tmp_path / f"out.{mode}"
    with pytest.warns(nczarr.NCZarrWarning, match=ODD):
        report = nczarr.convert(str(path), str(out), mode=mode)
    assert any("'/v'" in w for w in report.warnings)
    expected = np.arange(12, dtype="i4").reshape(3, 4)
    with netCDF4.Dataset(f"file://{out}#mode={mode},file") as nc:  # netcdf-c reads the copy
        assert nc["v"].dimensions == ("_Anonymous_Dimension_3", "_Anonymous_Dimension_4")
        np.testing.assert_array_equal(nc["v"][:], expected)
        np.testing.assert_array_equal(nc["ok"][:], [1.5, 2.5, 3.5])
    if mode == "zarr":  # and xarray, which refused the source, opens the copy
        with xr.open_zarr(str(out), consolidated=False) as ds:
            np.testing.assert_array_equal(ds["v"].values, expected)
        assert not _severities(nczarr.check(str(out)), XARRAY, "/v")


def test_cli_info_and_dump_work_and_warn(tmp_path: Path, capsys) -> None:
    path = _store(tmp_path / "odd.zarr", ["x"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)  # the CLI prints them
        assert main(["info", str(path)]) == 0
        info = capsys.readouterr()
        assert main(["dump", str(path)]) == 0
        dump = capsys.readouterr()
    assert "warnings:\n  - array '/v': _ARRAY_DIMENSIONS" in info.out  # info lists them
    assert "(_Anonymous_Dimension_3=3, _Anonymous_Dimension_4=4)" in info.out
    assert "int v(_Anonymous_Dimension_3, _Anonymous_Dimension_4) ;" in dump.out
    assert "v =\n  0, 1, 2, 3,\n  4, 5, 6, 7,\n  8, 9, 10, 11 ;" in dump.out


def test_a_v3_array_dimensions_attribute_of_another_rank(tmp_path: Path) -> None:
    """Zarr v3 without ``dimension_names`` (zarr-python's default): the attribute is read."""
    path = tmp_path / "odd3.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    v = root.create_array("v", shape=(2, 3), dtype="i2", compressors=None)
    v[...] = [[1, 2, 3], [4, 5, 6]]
    v.attrs["_ARRAY_DIMENSIONS"] = ["x", "y", "z"]
    match = r"array '/v': _ARRAY_DIMENSIONS \[\"x\",\"y\",\"z\"\] has 3 name\(s\)"
    with pytest.warns(nczarr.NCZarrWarning, match=match):
        ds = nczarr.read(str(path))
    assert ds.root.variables["v"].dimensions == (
        "/_Anonymous_Dimension_2",
        "/_Anonymous_Dimension_3",
    )


def test_check_on_more_names_than_the_rank_matches_netcdf_c_and_xarray(tmp_path: Path) -> None:
    path = _store(tmp_path / "long.zarr", ["x", "y", "z"])
    report = nczarr.check(str(path))
    with netCDF4.Dataset(f"file://{path}#mode=zarr,file") as nc:
        assert nc["v"].dimensions == ("x", "y")
        assert "z" in nc.dimensions  # a dimension that the array does not have
    assert _severities(report, NC410, "/v") == {"misreads"}
    assert any("z" in f.problem for f in report.for_reader(NC410) if f.where == "/v")
    with pytest.raises(ValueError):
        xr.open_zarr(str(path), consolidated=False)
    assert _severities(report, XARRAY, "/v") == {"refuses"}


def test_check_on_ref_noshape_matches_netcdf_c_and_xarray(tmp_path: Path) -> None:
    """netcdf-c's corrupt-input fixture: shape ``[]`` with ``_ARRAY_DIMENSIONS ["d0"]``.
    netcdf-c leaves the 0-d array out; xarray refuses the group (check said "ok")."""
    path = extract_fixture("ref_noshape.file.zip", tmp_path)
    report = nczarr.check(str(path))
    with netCDF4.Dataset(f"file://{path}#mode=zarr,file") as nc:
        assert "v" not in nc.variables
    assert _severities(report, NC410, "/v") == {"ignores"}
    with pytest.raises(ValueError):
        xr.open_zarr(str(path), consolidated=False)
    assert _severities(report, XARRAY, "/v") == {"refuses"}
    out = tmp_path / "fixed.zarr"  # the fix check names: xarray opens the copy
    fixes = {f.fix for f in report.for_reader(XARRAY) if f.where == "/v"}
    assert fixes == {"nczarr convert URL OUT --mode zarr"}
    with pytest.warns(nczarr.NCZarrWarning, match=r"array '/v': .* read as a scalar"):
        nczarr.convert(str(path), str(out), mode="zarr")
    with xr.open_zarr(str(out), consolidated=False) as ds:
        assert ds["v"].dims == ()
    assert not _severities(nczarr.check(str(out)), XARRAY, "/v")
