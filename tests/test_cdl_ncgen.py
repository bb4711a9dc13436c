"""``nczarr dump`` is CDL that netcdf-c's own tools agree with.

Debian's ``ncgen`` (netcdf-c 4.9) compiles nczarr's CDL back into a netCDF-4 file
that netCDF4 reads as the same dataset (names, types, attribute values, data), and
``ncdump`` prints the same text as nczarr for the same content written as a ``.nc``
file. The tools come from the ``netcdf-bin`` package (``.ci/run`` installs it); outside
CI a machine without them skips these tests, in CI their absence fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nczarr.cli import main

from .budget import examples, long_or

if shutil.which("ncgen") is None or shutil.which("ncdump") is None:
    if os.environ.get("CI"):
        raise RuntimeError("ncgen/ncdump (apt package netcdf-bin) are required in CI")
    pytest.skip("ncgen/ncdump not installed (apt install netcdf-bin)", allow_module_level=True)


# Debian's ncgen run on generated names: the newest-Python CI run leaves these to the floor run
pytestmark = pytest.mark.long


def _write(ds: netCDF4.Dataset) -> None:
    """Tricky names, 64-bit extremes, fills, chars, strings, NaN, a group."""
    ds.createDimension("t", None)
    ds.createDimension("1dim", 3)
    ds.createDimension("x y", 2)
    data = ds.createVariable("data", "i8", ("1dim",))
    data.units = "m"
    data.lo = np.int64(-(2**63) + 1)
    data.hi = np.uint64(2**64 - 2)
    data[:] = [1, -(2**62), 2**62]
    kw = ds.createVariable("variables", "f4", ("x y",), fill_value=np.float32(-1))
    kw[:] = np.ma.masked_array([np.nan, 2.5], [0, 1])
    odd = ds.createVariable("a:b=c", "u2", ("t", "x y"))
    odd[0:2] = [[1, 65535], [3, 4]]
    odd.setncattr("weird name!", 'quote " and \\ and\ttab')
    ds.createDimension("n", 4)
    c = ds.createVariable("c", "S1", ("1dim", "n"))
    c[:] = netCDF4.stringtochar(np.array(["ab", "", "wxyz"], dtype="S4"))
    s = ds.createVariable("s", str, ("x y",))
    s[:] = np.array(["h\u00e9llo", "two words"], dtype=object)
    d = ds.createVariable("d", "f8", ())
    d[...] = -1.0 / 3.0
    ds.setncattr("dimensions", "a global named like a keyword")
    ds.setncattr_string("list", ["x", "y"])
    g = ds.createGroup("g 2")
    g.createDimension("1dim", 2)  # shadows the root's
    gv = g.createVariable("group", "i1", ("1dim",))
    gv.valid = np.int8(-128)
    gv[:] = [-128, 127]
    # rows in nested groups: ncdump prints a row's first line unindented, counting the
    # group's indent where it wraps (nczarr indented them)
    h = g.createGroup("h")
    h.createDimension("wide", 30)
    rows = h.createVariable("rows", "i4", ("1dim", "wide"))
    rows[:] = np.arange(60).reshape(2, 30) * 1001
    h.createVariable("pair", "i2", ("1dim", "n"))[:] = np.arange(8).reshape(2, 4)


def _same(a: netCDF4.Group, b: netCDF4.Group) -> None:
    assert {k: len(v) for k, v in a.dimensions.items()} == {
        k: len(v) for k, v in b.dimensions.items()
    }
    assert a.ncattrs() == b.ncattrs()
    for name in a.ncattrs():
        np.testing.assert_array_equal(a.getncattr(name), b.getncattr(name))
    assert list(a.variables) == list(b.variables)
    for name, va in a.variables.items():
        vb = b.variables[name]
        assert va.dtype == vb.dtype and va.dimensions == vb.dimensions, name
        assert va.ncattrs() == vb.ncattrs(), name
        for att in va.ncattrs():
            x, y = va.getncattr(att), vb.getncattr(att)
            assert type(x) is type(y) or np.asarray(x).dtype == np.asarray(y).dtype, (name, att)
            np.testing.assert_array_equal(x, y)
        x, y = np.ma.filled(va[...]), np.ma.filled(vb[...])
        if x.dtype.kind == "f":  # CDL has ncdump's 7 (float) and 15 (double) digits
            rtol = 1e-6 if x.dtype.itemsize == 4 else 1e-14
            np.testing.assert_allclose(x, y, rtol=rtol, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)
    assert list(a.groups) == list(b.groups)
    for name in a.groups:
        _same(a.groups[name], b.groups[name])


def _dump(url: str, capsys, *args: str) -> str:
    assert main(["dump", *args, url]) == 0
    return capsys.readouterr().out


def test_ncgen_compiles_the_dump_into_the_same_dataset(tmp_path: Path, capsys) -> None:
    store = tmp_path / "src.file"
    url = f"file://{store}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        _write(ds)
    cdl = tmp_path / "src.cdl"
    cdl.write_text(_dump(url, capsys))
    subprocess.run(["ncgen", "-4", "-o", str(tmp_path / "back.nc"), str(cdl)], check=True)
    with netCDF4.Dataset(url) as a, netCDF4.Dataset(tmp_path / "back.nc") as b:
        _same(a, b)


def test_dump_is_what_ncdump_prints(tmp_path: Path, capsys) -> None:
    """The same content as a .nc file (ncdump reads it) and as NCZarr (nczarr reads it)."""
    store = tmp_path / "same.file"
    with netCDF4.Dataset(tmp_path / "same.nc", "w") as ds:
        _write(ds)
    with netCDF4.Dataset(f"file://{store}#mode=nczarr,file", "w") as ds:
        _write(ds)
    for args in ((), ("-h",), ("-v", "data,c,group")):
        ncdump = subprocess.run(
            ["ncdump", *args, str(tmp_path / "same.nc")], check=True, capture_output=True, text=True
        ).stdout
        assert _dump(str(store), capsys, *args) == ncdump, args


def test_dump_of_an_unknown_variable_is_an_error(tmp_path: Path, capsys) -> None:
    store = tmp_path / "u.file"
    with netCDF4.Dataset(f"file://{store}#mode=nczarr,file", "w") as ds:
        ds.createDimension("x", 1)
        ds.createVariable("v", "i4", ("x",))
    assert main(["dump", "-v", "w", str(store)]) == 1
    assert "no variable 'w'" in capsys.readouterr().err


# netCDF names start alphanumeric. Left out, because ncgen 4.9 rejects what ncdump
# itself writes for them (nczarr prints what ncdump prints): "?" and "%" anywhere, and
# a leading "0" (ncdump's "\0" is an octal NUL to ncgen).
_NAME = st.text(
    st.sampled_from("ab_Z09 .-+:=!#$&()*,;<>[]^`{|}~@\u00e9"), min_size=1, max_size=8
).filter(lambda n: n.strip() == n and n[0].isalnum() and n[0] != "0")


@pytest.mark.generated
@settings(
    max_examples=long_or(examples(15)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(names=st.lists(_NAME, min_size=1, max_size=4, unique=True))
def test_any_name_survives_dump_and_ncgen(tmp_path_factory, names: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("names")
    url = f"file://{tmp / 'n.file'}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        for i, name in enumerate(names):
            ds.createDimension(name, i + 1)
            var = ds.createVariable(name, "i4", (name,))
            var.setncattr(name, np.int32(i))
            var[:] = np.arange(i + 1)
    cdl = tmp / "n.cdl"
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dump", url]) == 0
    cdl.write_text(out.getvalue())
    subprocess.run(["ncgen", "-4", "-o", str(tmp / "n.nc"), str(cdl)], check=True)
    with netCDF4.Dataset(url) as a, netCDF4.Dataset(tmp / "n.nc") as b:
        _same(a, b)
