"""Zarr v2 copies of netcdf-c 4.10 output read by xarray as netcdf-c's readers read it.

netcdf-c writes a ``fill_value`` for every variable, ``_FillValue`` attribute or not:
``""`` for char and string, netCDF's default fill for numbers (``-127`` for byte).
xarray takes a v2 ``fill_value`` for ``_FillValue``. The v2 copy writes text without
``_FillValue`` with ``fill_value`` null (xarray then shows the empty strings, as
netCDF4 does), keeps the numeric default fills (netCDF4 masks them too), and warns
about a byte's -127 and a ubyte's 255 (ncdump shows them as data). The stores are
written here by the real netcdf-c 4.10 (the netCDF4 wheel); ``nc_pure_zarr`` is the
recorded fixture.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.translate import write_with_warnings
from nczarr.translate.model import Attribute, Dataset, Dimension, Group, Variable

DATA = Path(__file__).parent / "data" / "producers"

#: numeric variables without _FillValue: each holds netCDF's default fill at index 1
NUMBERS = {
    "b": ("i1", -127),
    "ub": ("u1", 255),
    "sh": ("i2", -32767),
    "i": ("i4", -2147483647),
    "f": ("f4", 9.969209968386869e36),
}


def _netcdf_c_store(root: Path, mode: str) -> Path:
    """A store netcdf-c 4.10 writes (``mode`` nczarr or zarr), no ``_FillValue``
    anywhere: default fills among the numbers, empty text, an unwritten text chunk."""
    path = root / f"nc410-{mode}"
    with netCDF4.Dataset(f"file://{path}#mode={mode},file", "w") as nc:
        nc.createDimension("x", 4)
        nc.createDimension("n", 3)
        for name, (dtype, fill) in NUMBERS.items():
            var = nc.createVariable(name, dtype, ("x",))
            var.set_auto_mask(False)
            var[:] = np.array([1, fill, 2, 3], dtype)
        c = nc.createVariable("c", "S1", ("x", "n"))
        c[:] = np.array([b"ab ", b"\0\0\0", b"xyz", b"q\0\0"]).view("S1").reshape(4, 3)
        s = nc.createVariable("s", str, ("x",))
        s[:] = np.array(["alpha", "", "ccc", "d"], dtype=object)
        half = nc.createVariable("half", str, ("x",), chunksizes=(2,))
        half[0:2] = np.array(["a", ""], dtype=object)  # the chunk of x = 2, 3 never written
    return path


def _netcdf4(url: str) -> dict[str, tuple[list, list]]:
    """Every variable as netCDF4 reads it: values (char rows joined) and mask."""
    out = {}
    with netCDF4.Dataset(url) as nc:
        for name, var in nc.variables.items():
            read = var[...]
            data, mask = np.ma.getdata(read), np.ma.getmaskarray(read)
            if data.dtype.kind == "S":  # char: one text per row, as ncdump prints it
                data = np.array([row.tobytes().rstrip(b"\0").decode() for row in data])
                mask = np.zeros(data.shape, bool)  # netCDF4 masks "\0", ncdump prints text
            elif data.dtype.kind in "OU":
                data = np.array([str(v).rstrip("\0") for v in data.reshape(-1)]).reshape(data.shape)
                if data.ndim == 2:  # pure Zarr char is a string per character
                    data = np.array(["".join(row) for row in data])
                mask = np.zeros(data.shape, bool)
            out[name] = (data.tolist(), mask.tolist())
    return out


@pytest.fixture(scope="module", params=["nczarr", "zarr"])
def copied(request, tmp_path_factory) -> tuple[Path, str, Path, list[str]]:
    """(source, its netcdf-c mode, the Zarr v2 copy, the convert's warnings)."""
    root = tmp_path_factory.mktemp("fills")
    source = _netcdf_c_store(root, request.param)
    out = root / "v2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        report = nczarr.convert(str(source), str(out), "zarr")
    return source, request.param, out, list(report.warnings)


def test_only_the_byte_and_ubyte_default_fills_are_warned_about(copied, tmp_path) -> None:
    """The warning names the array and what xarray masks; the report carries it. ncdump
    masks no default fill of byte nor ubyte ("too risky", ncdump.c), netCDF4 both."""
    with pytest.warns(nczarr.NCZarrWarning, match=r"'/b': the Zarr v2 fill_value -127") as caught:
        nczarr.convert(str(copied[0]), str(tmp_path / "again"), "zarr")
    for told in ([str(w.message) for w in caught], copied[3]):
        kept = sorted(w for w in told if "is kept, so xarray masks" in w)
        assert [w[:5] for w in kept] == ["'/b':", "'/ub'"], told
        assert "xarray masks the values -127" in kept[0] and "ncdump" in kept[0]
        assert "xarray masks the values 255" in kept[1] and "ncdump" in kept[1]


@pytest.mark.parametrize("name", ["c", "s", "half"])
def test_text_without_fill_value_is_written_with_fill_value_null(copied, name: str) -> None:
    zarray = json.loads((copied[2] / name / ".zarray").read_text(encoding="utf-8"))
    assert zarray["fill_value"] is None


@pytest.mark.parametrize("name", ["c", "s", "half"])
def test_xarray_shows_the_text_netcdf4_reads(copied, name: str) -> None:
    source, mode, out, _ = copied
    want, _ = _netcdf4(f"file://{source}#mode={mode},file")[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(str(out), consolidated=False)
    got = np.atleast_1d(ds[name].values).reshape(-1)
    shown = [v.decode() if isinstance(v, bytes) else v for v in got]
    assert shown == [w.rstrip("\0") for w in want]  # no NaN for an empty string


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_xarray_masks_the_numbers_netcdf4_masks(copied, name: str) -> None:
    """netCDF4 masks netCDF's default fill of every type, -127 included (the warning
    says ncdump does not); xarray masks the kept fill_value the same way."""
    source, mode, out, _ = copied
    values, mask = _netcdf4(f"file://{source}#mode={mode},file")[name]
    assert mask == [False, True, False, False]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = xr.open_zarr(str(out), consolidated=False)[name].values
    assert np.isnan(got).tolist() == mask
    assert got[~np.isnan(got)].tolist() == [v for v, m in zip(values, mask, strict=True) if not m]


def test_netcdf4_reads_the_copy_as_the_source(copied) -> None:
    source, mode, out, _ = copied
    want = _netcdf4(f"file://{source}#mode={mode},file")
    got = _netcdf4(f"file://{out}#mode=zarr,file")
    assert got == want


def test_zarr_python_reads_the_copy_as_netcdf4_reads_the_source(copied) -> None:
    import zarr

    source, mode, out, _ = copied
    want = _netcdf4(f"file://{source}#mode={mode},file")
    assert not (source / "half" / "1").exists() and not (out / "half" / "1").exists()
    group = zarr.open_group(str(out), mode="r")
    for name in ("s", "half"):  # the unwritten chunk reads as empty text, as in netcdf-c
        got = [v.decode().rstrip("\0") for v in group[name][...]]
        assert got == want[name][0], name


# ------------------------------------------------------------------ the recorded fixture
def test_xarray_reads_the_text_of_netcdf_c_pure_zarr_copy_as_netcdf4_read_it(tmp_path) -> None:
    """``nc_pure_zarr`` (netcdf-c 4.10): ``c`` has an empty row, ``s`` an empty string."""
    record = json.loads((DATA / "nc_pure_zarr.json").read_text(encoding="utf-8"))
    variables = record["netcdf4"]["variables"]
    out = tmp_path / "v2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        nczarr.convert(str(DATA / "nc_pure_zarr.zip"), str(out), "zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(str(out), consolidated=False)
    chars = np.array(variables["c"]["values"]["items"]).reshape(variables["c"]["values"]["shape"])
    # netCDF4 reads both as strings (netcdf-c's pure Zarr "|S1"/"|S128"); the copy marks
    # "|S128" _Encoding "utf-8" and xarray reads str; "|S1" (netCDF's char storage) is
    # not marked: xarray joins its rows into bytes (tests/test_encoding_marker.py)
    assert [v.decode() for v in ds["c"].values] == ["".join(row) for row in chars]
    assert ds["s"].values.tolist() == variables["s"]["values"]["items"]


# ------------------------------------------------------------------ the writer alone
def _one(var: Variable) -> Dataset:
    return Dataset(Group("/", "/", dimensions={"x": Dimension("x", 4)}, variables={"v": var}))


@pytest.mark.parametrize(
    ("type_", "fill", "attrs", "written", "warned"),
    [
        ("char", "", {}, None, False),
        ("string", "\0", {}, None, False),
        ("char", "z", {}, "eg==", True),  # a non-empty text fill xarray masks
        ("char", "", {"_FillValue": ("char", "")}, "", False),  # the attribute says so
        ("byte", -127, {}, -127, True),
        ("byte", 5, {"_FillValue": ("byte", (5,))}, 5, False),
        ("ubyte", 255, {}, 255, True),  # netCDF4 masks 255, ncdump does not (as -127)
        ("int", -2147483647, {}, -2147483647, False),
    ],
)
def test_writer_fill_value_and_warning(type_, fill, attrs, written, warned) -> None:
    var = Variable(
        "v",
        "/v",
        type_,
        ("/x",),
        (4,),
        (4,),
        fill_value=fill,
        maxstrlen=4 if type_ == "string" else None,
        attributes={k: Attribute(k, t, v) for k, (t, v) in attrs.items()},
    )
    result = write_with_warnings(_one(var), "zarr")
    assert json.loads(result.metadata["v/.zarray"])["fill_value"] == written
    told = [w for w in result.warnings if w.startswith("'/v':")]
    assert bool(told) == warned, told


def test_cli_prints_the_warning(copied, tmp_path, capsys) -> None:
    from nczarr.cli import main

    code = main(["convert", str(copied[0]), str(tmp_path / "cli"), "--mode", "zarr"])
    assert code == 0
    err = capsys.readouterr().err
    assert "nczarr: warning: '/b': the Zarr v2 fill_value -127" in err


def test_the_engine_does_not_warn_about_xarrays_zarr_masking(copied) -> None:
    """The copy's "xarray masks -127" warning is about xarray's zarr engine on a Zarr v2
    copy; the nczarr engine masks by the netCDF attributes, as engine="netcdf4" does, so
    it shows -127 and 255 as data and says nothing of a kept fill_value."""
    source, mode, _, _ = copied
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(str(source), engine="nczarr").load()
    told = [str(w.message) for w in caught]
    assert not [w for w in told if "xarray masks" in w], told
    with xr.open_dataset(f"file://{source}#mode={mode},file", engine="netcdf4") as nc:
        for name in ("b", "ub"):
            assert (
                ds[name].values.tolist() == nc[name].values.tolist() == [1, NUMBERS[name][1], 2, 3]
            )
