"""Scalars written as 0-d pure Zarr v2 arrays: netcdf-c 4.10 leaves them out, so
``convert``, ``migrate`` and a combine into pure Zarr v2 warn naming each one.

netcdf-c 4.10 (netCDF4 with a ``#mode=zarr`` URL) opens such a store without an
error and lists every variable but the scalars; it reads no Zarr v3 at all, and reads
``netcdf_scalars=True`` scalars (shape ``[1]``). Found by a differential hunt: nczarr
said nothing, and ``nczarr check`` then failed the store it had just written.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import pytest

import nczarr
from nczarr.translate.compat import NC410

#: The start of the warning, per scalar (the array's path is in the quotes).
WARNING = "array '{}': a netCDF scalar, written as a 0-d Zarr array"


def _source(path: Path) -> Path:
    """A netCDF-4 file (netCDF4's writer) with a double and a char scalar."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 3)
        ds.createVariable("v", "i4", ("x",))[:] = [1, 2, 3]
        ds.createVariable("s", "f8")[...] = 4.5
        ds.createVariable("c", "S1")[...] = b"q"
    return path


def _netcdf_c_variables(path: Path) -> dict[str, tuple[int, ...]]:
    """What netcdf-c 4.10 lists in a pure Zarr store: name -> shape."""
    with netCDF4.Dataset(f"file://{path}#mode=zarr,file") as ds:
        return {name: var.shape for name, var in ds.variables.items()}


def _scalar_warnings(record: list[warnings.WarningMessage] | tuple[str, ...]) -> list[str]:
    """The scalar warnings among warnings caught (or a report's strings)."""
    texts = [w if isinstance(w, str) else str(w.message) for w in record]
    return [t for t in texts if "a netCDF scalar, written as a 0-d" in t]


def test_convert_to_zarr_v2_warns_for_each_scalar_netcdf_c_leaves_out(tmp_path: Path) -> None:
    src = _source(tmp_path / "src.nc")
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning) as record:
        report = nczarr.convert(str(src), str(out), mode="zarr")
    said = _scalar_warnings(record.list)
    assert sorted(said) == sorted(w for w in report.warnings if w in said)
    assert len(said) == 2
    assert any(w.startswith(WARNING.format("/s")) for w in said)
    assert any(w.startswith(WARNING.format("/c")) for w in said)
    assert all("netcdf-c 4.10" in w and "--netcdf-scalars" in w for w in said)
    # what the warning says: netcdf-c 4.10 opens the store and lists only 'v'
    assert _netcdf_c_variables(out) == {"v": (3,)}
    # and check tells the same: netcdf-c 4.10+ ignores both scalars, the verdict fails
    report_check = nczarr.check(str(out))
    ignored = {f.where for f in report_check.for_reader(NC410) if f.severity == "ignores"}
    assert ignored == {"/s", "/c"}
    assert not report_check.ok


def test_netcdf_scalars_and_zarr_v3_say_nothing_of_it(tmp_path: Path) -> None:
    src = _source(tmp_path / "src.nc")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        report = nczarr.convert(
            str(src), str(tmp_path / "n.zarr"), mode="zarr", netcdf_scalars=True
        )
        v3 = nczarr.convert(str(src), str(tmp_path / "v3.zarr"), mode="zarr", zarr_format=3)
        nczarr.view(str(src), mode="zarr")  # a view is for zarr-python, not netcdf-c
    assert _scalar_warnings(record) == []
    assert _scalar_warnings((*report.warnings, *v3.warnings)) == []
    # netcdf-c reads netcdf-c's scalars (1-element, dimension _scalar_) ...
    assert _netcdf_c_variables(tmp_path / "n.zarr") == {"v": (3,), "s": (1,), "c": (1,)}
    # ... and no Zarr v3 at all: nothing there for it to leave out
    with pytest.raises(OSError, match="Unknown file format"):
        _netcdf_c_variables(tmp_path / "v3.zarr")


def test_migrate_to_zarr_warns_for_the_scalar(tmp_path: Path) -> None:
    store = tmp_path / "store.file"
    with netCDF4.Dataset(f"file://{store}#mode=nczarr,file", "w") as ds:  # netcdf-c 4.10
        ds.createDimension("x", 2)
        ds.createVariable("v", "i4", ("x",))[:] = [1, 2]
        ds.createVariable("t", "i4")[...] = 7
    with pytest.warns(nczarr.NCZarrWarning, match=r"array '/t': a netCDF scalar") as record:
        report = nczarr.migrate(str(store), to="zarr")
    said = _scalar_warnings(record.list)
    assert said == [w for w in report.warnings if w in said] and len(said) == 1
    assert _netcdf_c_variables(store) == {"v": (2,)}


def test_combine_into_zarr_v2_warns_for_the_scalar(tmp_path: Path) -> None:
    parts = []
    for i in range(2):
        part = tmp_path / f"p{i}.nc"
        with netCDF4.Dataset(part, "w") as ds:
            ds.createDimension("time", None)
            ds.createVariable("v", "i4", ("time",))[:] = [i, i]
            ds.createVariable("s", "f8")[...] = 4.5
        parts.append(str(part))
    out = tmp_path / "all.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match=r"array '/s': a netCDF scalar") as record:
        report = nczarr.convert(parts, str(out), mode="zarr", concat_dim="time")
    said = _scalar_warnings(record.list)
    assert said == [w for w in report.warnings if w in said] and len(said) == 1
    assert _netcdf_c_variables(out) == {"v": (4,)}
