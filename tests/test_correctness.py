"""Regression tests for the silent-wrong-data and refused-store defects of issue 7.

One test per defect (``test_defect_<n>_...``), each checked against the producer's
own library: netCDF4 (libnetcdf 4.10) for stores netcdf-c wrote or reads, zarr-python
3 and xarray for stores they wrote, and Debian's ``ncgen`` (netcdf-c 4.9.0) for the
legacy layout that holds a raw non-UTF-8 byte. Then the warnings plumbing: every
public entry point announces what was not a verbatim copy as an ``NCZarrWarning``.
"""

from __future__ import annotations

import ctypes
import glob
import json
import math
import subprocess
import warnings
from pathlib import Path

import netCDF4
import numcodecs
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr import NCZarrWarning
from nczarr.cli import main

from .ncoracle import nc_url

NCGEN = "/usr/bin/ncgen"


def _libnetcdf() -> ctypes.CDLL:
    """The libnetcdf netCDF4 itself uses (for raw char attribute bytes)."""
    found = sorted(
        glob.glob(str(Path(netCDF4.__file__).parent.parent / "netcdf4.libs" / "libnetcdf*"))
    )
    return ctypes.CDLL(found[0])


def _text(values) -> str:
    """netCDF4 char / 1-character string values as one str."""
    return "".join(v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in values)


def _nc_values(url: str, name: str) -> np.ndarray:
    with netCDF4.Dataset(url) as ds:
        var = ds[name]
        var.set_auto_mask(False)
        return np.asarray(var[...])


def _zarr_python_v3(path: Path) -> Path:
    """zarr-python 3: ``fill_value=-1``, ``dimension_names``, only the first chunk written."""
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    a = group.create_array(
        "x", shape=(8,), chunks=(4,), dtype="i4", fill_value=-1, dimension_names=["n"]
    )
    a[:4] = np.arange(4, dtype="i4")
    return path


# --------------------------------------------------------------------------- defect 1
def test_defect_1_zarr3_fill_value_survives_without_fillvalue_attribute(tmp_path: Path) -> None:
    src = _zarr_python_v3(tmp_path / "v3.zarr")
    expected = zarr.open_group(str(src), mode="r")["x"][:]
    assert expected.tolist() == [0, 1, 2, 3, -1, -1, -1, -1]  # the producer's values

    with pytest.warns(NCZarrWarning, match=r"'/x'.*fill_value -1"):
        ds = nczarr.read(src)
    assert ds.find_variable("/x").fill_value == -1

    with pytest.warns(NCZarrWarning):
        view = nczarr.view(src, mode="zarr")
    assert zarr.open_group(store=nczarr.ZarrStore(view), mode="r")["x"][:].tolist() == (
        expected.tolist()
    )
    for mode in ("zarr", "nczarr"):
        out = tmp_path / f"out-{mode}.file"
        with pytest.warns(NCZarrWarning):
            nczarr.convert(src, out, mode=mode)
        assert zarr.open_group(str(out), mode="r")["x"][:].tolist() == expected.tolist()
        assert _nc_values(nc_url(out, mode), "x").tolist() == expected.tolist()


def test_defect_1_xarray_zero_default_fill_is_not_a_mask(tmp_path: Path) -> None:
    """xarray's v3 arrays carry zarr's default fill 0 and no _FillValue: that 0 must not
    become a netCDF fill value (a time axis starting at 0 would read as NaT)."""
    src = tmp_path / "x3.zarr"
    times = np.array(["2000-01-01", "2000-01-02"], dtype="datetime64[ns]")
    xr.Dataset(coords={"t": times}).to_zarr(src, zarr_format=3, consolidated=False)
    assert nczarr.read(src).find_variable("/t").fill_value is None
    out = tmp_path / "out.zarr"
    nczarr.convert(src, out, mode="zarr")
    with xr.open_zarr(out, consolidated=False) as ds:
        assert ds["t"].values.tolist() == times.tolist()


# --------------------------------------------------------------------------- defect 3
def _netcdf_c_store(path: Path, mode: str) -> Path:
    with netCDF4.Dataset(nc_url(path, mode), "w") as ds:
        ds.createDimension("n", 6)
        ds.createDimension("s", 16)
        v = ds.createVariable("v", "i4", ("n",), shuffle=True, zlib=True)
        v[:] = np.arange(6, dtype="i4") * 1000 - 2500
        c = ds.createVariable("c", "S1", ("s",))
        c[:] = np.array(list("hello world, abc"), "S1")
    return path


@pytest.mark.parametrize("mode", ["nczarr", "zarr"])
def test_defect_3_open_zarr_reads_netcdf_c_stores_through_the_view(
    tmp_path: Path, mode: str
) -> None:
    src = _netcdf_c_store(tmp_path / "nc.file", mode)
    url = nc_url(src, mode)
    group = nczarr.open_zarr(url)
    np.testing.assert_array_equal(group["v"][:], _nc_values(url, "v"))
    assert _text(group["c"][:]) == _text(_nc_values(url, "c")) == "hello world, abc"


def test_defect_3_open_zarr_opens_zarr_python_stores_as_they_are(tmp_path: Path) -> None:
    """A store zarr-python wrote needs no translation: v3 stays v3, nothing is skipped."""
    path = tmp_path / "v3.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    group.create_array("s", shape=(2,), dtype=str)[:] = np.array(["ab", "c"])
    opened = nczarr.open_zarr(str(path))
    assert opened.metadata.zarr_format == 3
    assert opened["s"][:].tolist() == ["ab", "c"]


def test_defect_3_open_zarr_write_modes_still_write(tmp_path: Path) -> None:
    path = tmp_path / "w.zarr"
    group = nczarr.open_zarr(str(path), mode="w", zarr_format=2)
    group.create_array("a", shape=(3,), dtype="i2")[:] = [1, 2, 3]
    assert zarr.open_group(str(path), mode="r")["a"][:].tolist() == [1, 2, 3]


# --------------------------------------------------------------------------- defect 4
def test_defect_4_nan_and_infinity_attributes_stay_numbers(tmp_path: Path) -> None:
    src = tmp_path / "nc.file"
    with netCDF4.Dataset(nc_url(src), "w") as ds:
        ds.setncattr("nan", np.float64(np.nan))
        ds.setncattr("range", np.array([-np.inf, 100.0]))
        ds.setncattr("f32", np.float32(np.inf))
    out = tmp_path / "out.zarr"
    nczarr.convert(src, out, mode="zarr")
    text = (out / ".zattrs").read_text()
    # Bare JSON tokens, as zarr-python and xarray write them (not the strings "NaN").
    assert '"NaN"' not in text and '"-Infinity"' not in text
    assert "NaN" in text and "-Infinity" in text
    attrs = dict(zarr.open_group(str(out), mode="r").attrs)
    assert math.isnan(attrs["nan"]) and attrs["range"] == [-math.inf, 100.0]
    assert attrs["f32"] == math.inf
    with netCDF4.Dataset(nc_url(out, "zarr")) as ds:  # netcdf-c reads the tokens as numbers
        assert math.isnan(ds.getncattr("nan"))
        assert ds.getncattr("range").tolist() == [-math.inf, 100.0]
    back = tmp_path / "back.file"
    nczarr.convert(out, back, mode="nczarr")
    with netCDF4.Dataset(nc_url(back)) as ds:
        assert ds.getncattr("range").dtype == np.float64
        assert ds.getncattr("range").tolist() == [-math.inf, 100.0]
        assert math.isnan(ds.getncattr("nan"))


def test_defect_4_both_spellings_read_as_netcdf_c_reads_them(tmp_path: Path) -> None:
    """NCZarr records the type: ``"NaN"`` strings and bare tokens are both doubles. Pure
    Zarr has no types: bare tokens are numbers, the strings text (as netcdf-c reads them)."""
    nc = tmp_path / "nc.file"
    with netCDF4.Dataset(nc_url(nc), "w") as ds:  # netcdf-c writes "NaN" strings, typed <f8
        ds.setncattr("nan", np.float64(np.nan))
        ds.setncattr("range", np.array([-np.inf, 100.0]))
    read = nczarr.read(nc).root.attributes
    assert read["nan"].type == "double" and math.isnan(read["nan"].value[0])
    assert read["range"].value == (-math.inf, 100.0)

    pure = tmp_path / "z.zarr"
    (pure).mkdir()
    (pure / ".zgroup").write_text('{"zarr_format": 2}')
    (pure / ".zattrs").write_text('{"bare": [-Infinity, NaN], "quoted": "NaN"}')
    with netCDF4.Dataset(nc_url(pure, "zarr")) as ds:
        assert ds.getncattr("bare")[0] == -math.inf and ds.getncattr("quoted") == "NaN"
    attrs = nczarr.read(pure).root.attributes
    assert attrs["bare"].type == "double" and attrs["bare"].value[0] == -math.inf
    assert attrs["quoted"].type == "char" and attrs["quoted"].value == "NaN"


# --------------------------------------------------------------------------- defect 5
def test_defect_5_char_with_shuffle_reads_right_in_netcdf_c(tmp_path: Path) -> None:
    text = "hello world, abc"
    src = tmp_path / "cs.file"
    with netCDF4.Dataset(nc_url(src), "w") as ds:
        ds.createDimension("s", len(text))
        cs = ds.createVariable("cs", "S1", ("s",), shuffle=True, zlib=True)
        cs[:] = np.array(list(text), "S1")
    for mode in ("zarr", "nczarr"):
        out = tmp_path / f"out-{mode}.file"
        nczarr.convert(src, out, mode=mode)
        assert _text(_nc_values(nc_url(out, mode), "cs")) == text
        assert _text(nczarr.open_zarr(nc_url(out, mode))["cs"][:]) == text
        # and back again: the |S1 string variable of pure Zarr to NCZarr
        again = tmp_path / f"again-{mode}.file"
        nczarr.convert(out, again, mode="nczarr")
        assert _text(_nc_values(nc_url(again), "cs")) == text


def test_defect_5_string_with_a_real_shuffle_is_announced(tmp_path: Path) -> None:
    """A ``|S4`` array with shuffle elementsize 4 (zarr-python): netcdf-c reads it
    scrambled whatever the metadata says, so a convert says so."""
    src = tmp_path / "s4.zarr"
    group = zarr.open_group(str(src), mode="w", zarr_format=2)
    words = np.array([b"abcd", b"efgh", b"ijkl"])
    a = group.create_array(
        "s", shape=(3,), dtype="S4", filters=[numcodecs.Shuffle(elementsize=4)], compressors=None
    )
    a[:] = words
    a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
    with netCDF4.Dataset(nc_url(src, "zarr")) as ds:
        assert ds["s"][:].tolist() != ["abcd", "efgh", "ijkl"]  # netcdf-c's own misreading
    with pytest.warns(NCZarrWarning, match=r"/s: a string array with a byte shuffle"):
        report = nczarr.convert(src, tmp_path / "out.file", mode="nczarr")
    assert any("scrambled" in w for w in report.warnings)


# --------------------------------------------------------------------------- defect 6
def test_defect_6_single_string_attribute_is_a_plain_json_string(tmp_path: Path) -> None:
    src = tmp_path / "nc.file"
    with netCDF4.Dataset(nc_url(src), "w") as ds:
        ds.createDimension("time", 2)
        t = ds.createVariable("time", "i4", ("time",))
        t[:] = [0, 1]
        t.setncattr_string("units", "days since 2000-01-01")
        t.setncattr_string("flags", ["a", "b"])
    out = tmp_path / "out.zarr"
    nczarr.convert(src, out, mode="zarr")
    attrs = json.loads((out / "time" / ".zattrs").read_text())
    assert attrs["units"] == "days since 2000-01-01"
    assert attrs["flags"] == ["a", "b"]
    with xr.open_zarr(out, consolidated=False) as ds:
        assert (
            ds["time"].values.tolist()
            == np.array(["2000-01-01", "2000-01-02"], dtype="datetime64[ns]").tolist()
        )
    with netCDF4.Dataset(nc_url(out, "zarr")) as ds:
        assert ds["time"].getncattr("units") == "days since 2000-01-01"


# --------------------------------------------------------------------------- defect 7
def test_defect_7_netcdf_scalars_option(tmp_path: Path, capsys) -> None:
    src = tmp_path / "nc.file"
    with netCDF4.Dataset(nc_url(src), "w") as ds:
        sc = ds.createVariable("sc", "f8", ())
        sc[...] = 3.5
        sc.units = "K"
    # default: a 0-d array, what zarr-python and xarray write and expect
    default = tmp_path / "default.zarr"
    nczarr.convert(src, default, mode="zarr")
    assert json.loads((default / "sc" / ".zarray").read_text())["shape"] == []
    assert zarr.open_group(str(default), mode="r")["sc"][()] == 3.5

    out = tmp_path / "scalars.zarr"
    nczarr.convert(src, out, mode="zarr", netcdf_scalars=True)
    zarray = json.loads((out / "sc" / ".zarray").read_text())
    assert zarray["shape"] == [1] and zarray["chunks"] == [1]
    assert json.loads((out / "sc" / ".zattrs").read_text())["_ARRAY_DIMENSIONS"] == ["_scalar_"]
    # netcdf-c reads it exactly as it reads the scalars it writes to pure Zarr itself:
    # a 1-element variable of dimension _scalar_ (a 0-d array it leaves out)
    own = tmp_path / "own.file"
    with netCDF4.Dataset(nc_url(own, "zarr"), "w") as ds:
        ds.createVariable("sc", "f8", ())[...] = 3.5
    for store in (own, out):
        with netCDF4.Dataset(nc_url(store, "zarr")) as ds:
            assert ds["sc"].dimensions == ("_scalar_",) and ds["sc"][:].tolist() == [3.5]
    with netCDF4.Dataset(nc_url(default, "zarr")) as ds:
        assert "sc" not in ds.variables  # why the option exists
    var = nczarr.read(out).find_variable("/sc")
    assert var.scalar and var.shape == () and var.dimensions == ()
    back = tmp_path / "back.file"
    nczarr.convert(out, back, mode="nczarr")
    with netCDF4.Dataset(nc_url(back)) as ds:
        assert ds["sc"].shape == () and float(ds["sc"][...]) == 3.5

    cli = tmp_path / "cli.zarr"
    assert main(["convert", str(src), str(cli), "--mode", "zarr", "--netcdf-scalars"]) == 0
    assert json.loads((cli / "sc" / ".zarray").read_text())["shape"] == [1]
    capsys.readouterr()


# --------------------------------------------------------------------------- defect 11
def _raw_attribute(url: str, var: str, name: str) -> bytes:
    lib = _libnetcdf()
    with netCDF4.Dataset(url) as ds:
        grpid, varid = ds._grpid, ds[var]._varid
        length = ctypes.c_size_t()
        assert lib.nc_inq_attlen(grpid, varid, name.encode(), ctypes.byref(length)) == 0
        buf = ctypes.create_string_buffer(length.value + 1)
        assert lib.nc_get_att_text(grpid, varid, name.encode(), buf) == 0
        return buf.raw[: length.value]


def test_defect_11_non_utf8_byte_does_not_refuse_the_store(tmp_path: Path, capsys) -> None:
    cdl = tmp_path / "g.cdl"
    cdl.write_text(
        "netcdf g {\ndimensions:\n  n = 2 ;\nvariables:\n  int v(n) ;\n"
        '    v:weird = "\\200ok" ;\n    v:fine = "caf\xe9" ;\ndata:\n  v = 1, 2 ;\n}\n',
        encoding="utf-8",
    )
    src = tmp_path / "g.file"
    subprocess.run([NCGEN, "-4", "-o", nc_url(src), str(cdl)], check=True)
    assert b"\x80ok" in (src / "v" / ".zattrs").read_bytes()  # the raw byte, not UTF-8
    assert _raw_attribute(nc_url(src), "v", "weird") == b"\x80ok"

    # zarr-python and xarray cannot read it; nczarr check says so instead of refusing
    with pytest.raises(UnicodeDecodeError):
        zarr.open_group(str(src), mode="r", zarr_format=2)["v"]
    with pytest.raises(UnicodeDecodeError):
        xr.open_zarr(src, consolidated=False, zarr_format=2)
    found = {(f.reader, f.severity) for f in nczarr.check(src).findings if f.where == "v/.zattrs"}
    assert found == {("zarr-python 3", "fails"), ("xarray", "refuses")}

    with pytest.warns(NCZarrWarning, match=r"v/\.zattrs.*not UTF-8"):
        ds = nczarr.read(src)
    var = ds.find_variable("/v")
    assert var.attributes["fine"].value == "caf\xe9"  # valid UTF-8 around it is unharmed
    assert var.attributes["weird"].value.encode("utf-8", "surrogateescape") == b"\x80ok"

    out = tmp_path / "out.file"
    with pytest.warns(NCZarrWarning):
        nczarr.convert(src, out, mode="nczarr")
    assert _raw_attribute(nc_url(out), "v", "weird") == b"\x80ok"  # the bytes, kept
    assert _nc_values(nc_url(out), "v").tolist() == [1, 2]

    pure = tmp_path / "out.zarr"
    with pytest.warns(NCZarrWarning) as record:
        nczarr.convert(src, pure, mode="zarr")
    assert any("Latin-1" in str(w.message) for w in record)
    group = zarr.open_group(str(pure), mode="r")  # valid UTF-8 JSON for zarr-python
    assert group["v"].attrs["weird"] == "\x80ok"
    assert group["v"][:].tolist() == [1, 2]
    assert not [f for f in nczarr.check(pure).findings if f.where == "v/.zattrs"]
    with pytest.warns(NCZarrWarning, match=r"v/\.zattrs.*not UTF-8"):
        group = nczarr.open_zarr(nc_url(src))  # through the view, announced
    assert group["v"][:].tolist() == [1, 2]
    capsys.readouterr()
    assert main(["dump", "-h", str(src)]) == 0
    assert 'v:weird = "\\200ok"' in capsys.readouterr().out  # as ncgen reads it back


# --------------------------------------------------------------------------- defect 12
def test_defect_12_one_dimension_name_at_two_sizes(tmp_path: Path) -> None:
    src = tmp_path / "z.zarr"
    group = zarr.open_group(str(src), mode="w", zarr_format=2)
    a = group.create_array("a", shape=(3,), dtype="i4")
    a[:] = [1, 2, 3]
    a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    b = group.create_array("b", shape=(5,), dtype="i4")
    b[:] = [4, 5, 6, 7, 8]
    b.attrs["_ARRAY_DIMENSIONS"] = ["x"]

    with pytest.warns(NCZarrWarning, match=r"'/b'.*'x'.*renamed"):
        ds = nczarr.read(src)
    assert ds.find_variable("/a").dimensions == ("/x",)
    renamed = ds.find_variable("/b").dimensions
    assert renamed != ("/x",) and ds.find_dimension(renamed[0]).size == 5
    assert ds.find_dimension("/x").size == 3

    out = tmp_path / "out.file"
    with pytest.warns(NCZarrWarning):
        nczarr.convert(src, out, mode="nczarr")
    assert _nc_values(nc_url(out), "a").tolist() == [1, 2, 3]
    assert _nc_values(nc_url(out), "b").tolist() == [4, 5, 6, 7, 8]


# --------------------------------------------------------------------------- defect 13
def test_defect_13_progress_accepts_bools_and_callables(tmp_path: Path, capsys) -> None:
    src = _netcdf_c_store(tmp_path / "nc.file", "nczarr")
    nczarr.convert(src, tmp_path / "a.zarr", mode="zarr", progress=False)
    nczarr.convert(src, tmp_path / "b.zarr", mode="zarr", progress=True)
    assert "chunk" in capsys.readouterr().err
    calls: list[tuple[int, int]] = []
    nczarr.convert(
        src, tmp_path / "c.zarr", mode="zarr", progress=lambda d, t: calls.append((d, t))
    )
    assert calls and calls[-1][0] == calls[-1][1]
    with pytest.raises(TypeError, match="progress"):
        nczarr.convert(src, tmp_path / "d.zarr", mode="zarr", progress="yes")  # type: ignore[arg-type]
    nczarr.migrate(nczarr.open_map(str(tmp_path / "a.zarr"), mode="r+"), progress=False)


# --------------------------------------------------------------------------- warnings
def _conflicting_store(path: Path) -> Path:
    group = zarr.open_group(str(path), mode="w", zarr_format=2)
    group.create_array("a", shape=(3,), dtype="i4").attrs["_ARRAY_DIMENSIONS"] = ["x"]
    group.create_array("b", shape=(5,), dtype="i4").attrs["_ARRAY_DIMENSIONS"] = ["x"]
    return path


def test_warnings_reach_python_the_report_and_the_cli(tmp_path: Path, capsys) -> None:
    src = _conflicting_store(tmp_path / "z.zarr")
    pattern = r"'/b'.*'x'"
    with pytest.warns(NCZarrWarning, match=pattern):
        assert any("'/b'" in w for w in nczarr.read(src).warnings)
    with pytest.warns(NCZarrWarning, match=pattern):
        assert any("'/b'" in w for w in nczarr.view(src).warnings)
    with pytest.warns(NCZarrWarning, match=pattern) as record:
        report = nczarr.convert(src, tmp_path / "out.file", mode="nczarr")
    assert any("'/b'" in w for w in report.warnings)
    assert len([w for w in record if w.category is NCZarrWarning]) == len(report.warnings)
    migrated = _conflicting_store(tmp_path / "m.zarr")
    with pytest.warns(NCZarrWarning, match=pattern):
        report = nczarr.migrate(str(migrated), to="nczarr")
    assert any("'/b'" in w for w in report.warnings)

    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the CLI prints warnings itself, once
        assert main(["convert", str(src), str(tmp_path / "cli.file"), "--mode", "nczarr"]) == 0
        err = capsys.readouterr().err
        assert "nczarr: warning:" in err and "'/b'" in err
        assert main(["info", str(src)]) == 0
        assert "'/b'" in capsys.readouterr().out
        assert main(["dump", "-h", str(src)]) == 0
        assert "nczarr: warning:" in capsys.readouterr().err


def test_big_endian_bytes_in_pure_zarr_open_in_zarr_python_and_xarray(tmp_path: Path) -> None:
    """netcdf-c keeps an endianness flag on byte variables; pure Zarr output must not
    carry it as ">i1" (zarr-python cannot open the array, nor list its group)."""
    import xarray as xr
    import zarr

    src = tmp_path / "be.file"
    with netCDF4.Dataset(f"file://{src}#mode=nczarr,file", "w") as ds:
        ds.createDimension("x", 3)
        v = ds.createVariable("b", "i1", ("x",), endian="big")
        v[:] = [-128, 0, 127]
        u = ds.createVariable("u", "u1", ("x",), endian="big")
        u[:] = [0, 1, 255]
    out = tmp_path / "be.zarr"
    nczarr.convert(str(src), str(out), mode="zarr")
    group = zarr.open_group(str(out), mode="r")
    assert sorted(group.keys()) == ["b", "u"]
    np.testing.assert_array_equal(group["b"][...], [-128, 0, 127])
    with xr.open_zarr(str(out), consolidated=False, mask_and_scale=False) as ds:
        np.testing.assert_array_equal(ds["u"].values, [0, 1, 255])
    back = tmp_path / "back.file"
    nczarr.convert(str(src), str(back), mode="nczarr")
    with netCDF4.Dataset(f"file://{back}#mode=nczarr,file") as ds:
        assert ds["b"].endian() == "big"
        np.testing.assert_array_equal(ds["b"][...], [-128, 0, 127])
