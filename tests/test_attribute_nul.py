"""A NUL byte inside a char attribute: nczarr keeps the whole text.

netcdf-c stores a char attribute ``"ab\\0cd"`` of a netCDF-4 file as all 5 bytes
(ncdump prints ``"ab\\000cd"``, netCDF4 shows ``"abcd"``: it removes NULs); h5py
reads the HDF5 string only up to the NUL, and nczarr read ``"ab"``, silently (found
by a differential hunt). netcdf-c's own NCZarr writer stores ``"ab"`` (the text up to
the NUL), so there what netCDF4 reads and what nczarr reads agree. Trailing NULs (a C
terminator) are left out by ncdump and netCDF4, and by nczarr, in netCDF-4 and
netCDF-3 files alike.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import netCDF4
import pytest

import nczarr

TEXT = "ab\x00cd"


def _write(ds: netCDF4.Dataset) -> None:
    ds.createDimension("x", 2)
    v = ds.createVariable("v", "i4", ("x",))
    v[:] = [1, 2]
    v.setncattr("c", TEXT)  # char (netCDF4 writes a str as char)
    v.setncattr_string("s", TEXT)  # netCDF string: netcdf-c stores the C string "ab"
    ds.setncattr("g", "x\x00y")


def _netcdf4_attrs(url: str) -> tuple[dict[str, object], object]:
    with netCDF4.Dataset(url) as ds:
        v = ds["v"]
        return {k: v.getncattr(k) for k in v.ncattrs()}, ds.getncattr("g")


def _nczarr_attrs(path: Path) -> tuple[dict[str, object], object]:
    ds = nczarr.read(str(path))
    attrs = ds.root.variables["v"].attributes
    return {k: a.value for k, a in attrs.items()}, ds.root.attributes["g"].value


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_CLASSIC"])
def test_nc_source_keeps_the_text_after_a_nul(tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "src.nc"
    with netCDF4.Dataset(src, "w", format=fmt) as ds:
        if fmt == "NETCDF4":
            _write(ds)
        else:  # netCDF-3 has no string type
            ds.createDimension("x", 2)
            ds.createVariable("v", "i4", ("x",)).setncattr("c", TEXT)
            ds.setncattr("g", "x\x00y")
    oracle, oracle_g = _netcdf4_attrs(str(src))
    assert oracle["c"] == "abcd" and oracle_g == "xy"  # netCDF4 drops NULs, keeps the rest
    attrs, g = _nczarr_attrs(src)
    assert attrs["c"] == TEXT and g == "x\x00y"  # every byte netcdf-c holds
    assert str(attrs["c"]).replace("\x00", "") == oracle["c"]
    if fmt == "NETCDF4":
        assert oracle["s"] == "ab" and attrs["s"] == ("ab",)  # the string held is "ab"


def test_nc_to_nczarr_warns_naming_the_attribute(tmp_path: Path) -> None:
    src = tmp_path / "src.nc"
    with netCDF4.Dataset(src, "w") as ds:
        _write(ds)
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning) as record:
        report = nczarr.convert(str(src), str(out), mode="nczarr")
    said = [str(w.message) for w in record if "holds control characters" in str(w.message)]
    assert sorted(said) == sorted(
        [
            "attribute 'c' of '/v' holds control characters, written as JSON \\u escapes, "
            "which netcdf-c 4.10 reads as text ('\\x01' as 'u0001'); zarr-python and "
            "nczarr read them back",
            "attribute 'g' of '/' holds control characters, written as JSON \\u escapes, "
            "which netcdf-c 4.10 reads as text ('\\x01' as 'u0001'); zarr-python and "
            "nczarr read them back",
        ]
    )
    assert set(said) <= set(report.warnings)
    stored = json.loads((out / "v" / ".zattrs").read_text())
    assert stored["c"] == TEXT  # the whole text, as the JSON escape \u0000
    assert _nczarr_attrs(out) == ({"c": TEXT, "s": ("ab",)}, "x\x00y")
    # what the warning says netcdf-c 4.10 reads from the copy
    attrs, g = _netcdf4_attrs(f"file://{out}#mode=nczarr,file")
    assert attrs["c"] == "abu0000cd" and g == "xu0000y"


def test_nczarr_store_of_netcdf_c_reads_as_netcdf4_reads_it(tmp_path: Path) -> None:
    store = tmp_path / "nc.file"
    url = f"file://{store}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:  # libnetcdf 4.10's NCZarr writer
        _write(ds)
    stored = json.loads((store / "v" / ".zattrs").read_text())
    assert stored["c"] == "ab"  # netcdf-c's writer keeps the text up to the NUL
    oracle, oracle_g = _netcdf4_attrs(url)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nczarr.NCZarrWarning)  # nothing to say
        attrs, g = _nczarr_attrs(store)
    assert attrs == {"c": oracle["c"], "s": (oracle["s"],)} == {"c": "ab", "s": ("ab",)}
    assert g == oracle_g == "x"


def _ncgen() -> str:
    found = shutil.which("ncgen")
    if found is None:
        if os.environ.get("CI"):
            raise AssertionError("CI installs Debian's netcdf-bin (.ci/run)")
        pytest.skip("Debian's netcdf-bin (ncgen) is not installed")
    return found


def test_trailing_nuls_are_left_out_as_netcdf4_leaves_them(tmp_path: Path) -> None:
    """ncgen writes ``"ab\\000"`` as 3 bytes (netCDF4's writer cannot): the terminator
    is no text, in a netCDF-4 and a netCDF-3 file alike, and a copy says nothing."""
    cdl = tmp_path / "t.cdl"
    cdl.write_text(
        'netcdf t {\nvariables:\n  int v ;\n    v:t = "ab\\000" ;\n    v:m = "a\\000c\\000" ;\n'
        "data:\n  v = 1 ;\n}\n"
    )
    for kind in ("nc4", "classic"):
        path = tmp_path / f"t_{kind}.nc"
        subprocess.run([_ncgen(), "-k", kind, "-o", str(path), str(cdl)], check=True)
        with netCDF4.Dataset(path) as ds:
            assert {k: ds["v"].getncattr(k) for k in ds["v"].ncattrs()} == {"t": "ab", "m": "ac"}
        attrs = nczarr.read(str(path)).root.variables["v"].attributes
        assert {k: a.value for k, a in attrs.items()} == {"t": "ab", "m": "a\x00c"}
        with pytest.warns(nczarr.NCZarrWarning) as record:  # for 'm' only
            nczarr.convert(str(path), str(tmp_path / f"{kind}.file"), mode="nczarr")
        said = [str(w.message) for w in record if "control characters" in str(w.message)]
        assert len(said) == 1 and said[0].startswith("attribute 'm' of '/v'")


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_CLASSIC"])
def test_the_engine_shows_what_the_netcdf4_engine_shows(tmp_path: Path, fmt: str) -> None:
    """The engine's yardstick is xarray's netcdf4 engine: NULs removed from char
    attributes, and no warning about the JSON a copy would write (the engine showed
    'ab\\x00cd' and warned that netcdf-c reads \\u escapes as text)."""
    import xarray as xr

    src = tmp_path / "src.nc"
    with netCDF4.Dataset(src, "w", format=fmt) as ds:
        ds.createDimension("x", 2)
        ds.createVariable("v", "i4", ("x",)).setncattr("c", TEXT)
        ds.setncattr("g", "x\x00y")
    theirs = xr.open_dataset(src, engine="netcdf4")
    with warnings.catch_warnings():
        warnings.simplefilter("error", nczarr.NCZarrWarning)
        ours = xr.open_dataset(src, engine="nczarr")
    assert (ours["v"].attrs["c"], ours.attrs["g"]) == ("abcd", "xy")
    assert (ours["v"].attrs["c"], ours.attrs["g"]) == (theirs["v"].attrs["c"], theirs.attrs["g"])


def test_the_engine_keeps_a_zarr_producers_text(tmp_path: Path) -> None:
    """A pure Zarr store's producer (zarr-python, xarray) reads the NUL: kept."""
    import xarray as xr

    src = tmp_path / "src.zarr"
    xr.Dataset({"v": ("x", [1, 2], {"c": TEXT})}).to_zarr(src, zarr_format=2, mode="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        ours = xr.open_dataset(src, engine="nczarr")
    assert ours["v"].attrs["c"] == TEXT == xr.open_zarr(src)["v"].attrs["c"]
