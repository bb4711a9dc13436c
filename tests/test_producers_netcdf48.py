"""Every nczarr path on stores netcdf-c 4.8.0 wrote, against what 4.8.0's ``ncdump`` read.

netcdf-c 4.8.0 wrote every numeric ``fill_value`` as a one-element list,
``"fill_value": [-32767]`` (netcdf-c issue 2008, fixed in 4.8.1), and its
``_FillValue`` attributes the same way, printed with ``%g`` (a double fill of
``9.96920996838687e+36`` comes back as ``9.96921e+36``, so 4.8.0 itself shows the
values written as fill as data). The stores ``nc480_*`` in ``tests/data/producers/``
were written by 4.8.0's ``ncgen`` (``tests/producers/make_netcdf48.py``); their
records hold 4.8.0's ``ncdump -p 9,17`` output parsed: dimensions, typed attributes,
values and the ``_`` mask. That reading is the oracle:

* ``read``: every variable, its type, shape, dimensions and typed attributes, with the
  one-element list announced;
* ``open_zarr`` (the view) gives the values 4.8.0 stored, and its fill value;
* the xarray engine and the DataTree: the stored values, masked where 4.8.0 masks a
  ``_FillValue``, scaled;
* ``convert`` to NCZarr and ``migrate`` in place, read by netcdf-c 4.10 (netCDF4):
  4.8.0's dimensions, typed attributes, values and mask;
* ``convert`` to Zarr v2 read by netcdf-c 4.10, to Zarr v2 and v3 read by
  zarr-python and xarray: the same values and mask (a char without ``_FillValue``
  gets ``fill_value`` null in v2, so xarray shows its empty strings; a byte without
  ``_FillValue`` keeps -127, which xarray masks as netCDF4 does, and a warning says so);
* ``check``: in ``tests/test_producers_check.py`` (every store's findings), and here:
  it does not claim 4.8 fails on what 4.8.0 read.
"""

from __future__ import annotations

import importlib.util
import json
import math
import warnings
import zipfile
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.translate.compat import NC48

DATA = Path(__file__).parent / "data" / "producers"
_spec = importlib.util.spec_from_file_location(
    "producer_record_nc48", Path(__file__).parent / "producers" / "record.py"
)
_record = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_record)

RECORDS = {
    p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(DATA.glob("nc480_*.json"))
}
#: netCDF type of each recorded numpy dtype
NC_TYPES = {
    "|i1": "byte",
    "|u1": "ubyte",
    "<i2": "short",
    "<u2": "ushort",
    "<i4": "int",
    "<u4": "uint",
    "<i8": "int64",
    "<u8": "uint64",
    "<f4": "float",
    "<f8": "double",
    "|S1": "char",
}


def _cases() -> list[tuple[str, str]]:
    return [(n, v) for n, r in RECORDS.items() for v in r["ncdump48"]["variables"]]


def _nczarr_cases() -> list[tuple[str, str]]:
    """The variables of the stores 4.8.0 wrote as NCZarr (named dimensions, typed attributes)."""
    return [(n, v) for n, v in _cases() if "mode=nczarr" in RECORDS[n]["producer"]]


def _source(name: str) -> str:
    return str(DATA / f"{name}.zip")


def _var(name: str, path: str) -> dict[str, Any]:
    return RECORDS[name]["ncdump48"]["variables"][path]


def _values(expected: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """4.8.0's values (the fill where it printed ``_``) and its mask."""
    values = _record.decode_array(expected["values"])
    mask = np.array(expected["values"].get("mask", [False] * values.size), bool)
    return values, mask.reshape(values.shape)


def _attr(value: Any) -> Any:
    """A recorded attribute as plain Python: a string, or a list of numbers (NaN kept)."""
    if isinstance(value, dict) and "$type" in value:
        return [float(v["$float"]) if isinstance(v, dict) else v for v in value["value"]]
    return value


def _same_number_lists(got: Any, want: Any) -> bool:
    if isinstance(want, str):
        return got == want
    got = np.atleast_1d(np.asarray(got)).tolist()
    return len(got) == len(want) and all(
        (isinstance(g, float) and math.isnan(g) and isinstance(w, float) and math.isnan(w))
        or g == w
        for g, w in zip(got, want, strict=True)
    )


def _texts(values: np.ndarray) -> list[bytes]:
    """A char array as 4.8.0 prints it: one string per row of its last dimension."""
    return [row.tobytes().rstrip(b"\0") for row in values.reshape(-1, values.shape[-1])]


def _group_and_name(path: str) -> tuple[str, str]:
    group, _, name = path.rpartition("/")
    return group or "/", name


# ------------------------------------------------------------------ read
@pytest.mark.parametrize("name", sorted(RECORDS))
def test_read_announces_the_one_element_lists_480_wrote(name: str) -> None:
    with zipfile.ZipFile(_source(name)) as archive:
        lists = [
            m.rsplit("/", 2)[-2] if "/" in m else m
            for m in archive.namelist()
            if m.endswith(".zarray") and isinstance(json.loads(archive.read(m))["fill_value"], list)
        ]
    assert lists, "4.8.0 wrote one-element list fill values"
    with pytest.warns(nczarr.NCZarrWarning, match=r"one-element list.*issue 2008") as caught:
        nczarr.read(_source(name))
    announced = " ".join(str(w.message) for w in caught)
    assert all(f"{array}/.zarray" in announced for array in lists)


@pytest.mark.parametrize(("name", "path"), _cases())
def test_read_gives_the_variable_480_read(name: str, path: str) -> None:
    expected = _var(name, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        dataset = nczarr.read(_source(name))
    variables = {v.path: v for v in dataset.root.all_variables()}
    assert set(variables) == set(RECORDS[name]["ncdump48"]["variables"])
    var = variables[path]
    values, _ = _values(expected)
    assert var.type == NC_TYPES[expected["dtype"]]
    assert var.shape == values.shape
    if "mode=nczarr" in RECORDS[name]["producer"]:  # 4.8.0 names pure Zarr's ".zdimN"
        assert [d.rsplit("/", 1)[-1] for d in var.dimensions] == expected["dims"]
    assert set(var.attributes) == set(expected["attrs"])
    for key, want in expected["attrs"].items():
        got = var.attributes[key]
        if isinstance(want, dict):
            assert got.type == NC_TYPES[want["$type"]], key
        assert _same_number_lists(got.value, _attr(want)), (key, got.value, want)
    if "_FillValue" in expected["attrs"]:  # 4.8.0's fill: the _FillValue it printed
        assert _same_number_lists(var.fill_value, _attr(expected["attrs"]["_FillValue"]))


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_read_gives_the_groups_dimensions_and_attributes_480_read(name: str) -> None:
    reading = RECORDS[name]["ncdump48"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        dataset = nczarr.read(_source(name))
    groups = {g.path: g for g in dataset.root.walk()}
    assert set(groups) == set(reading["attrs"])
    for path, attrs in reading["attrs"].items():
        got = {k: a.value for k, a in groups[path].attributes.items() if k != "_NCProperties"}
        assert got == {k: _attr(v) for k, v in attrs.items()}
    if "mode=nczarr" in RECORDS[name]["producer"]:
        sizes = {
            f"{g.path.rstrip('/')}/{d.name}": d.size
            for g in dataset.root.walk()
            for d in g.dimensions.values()
        }
        assert sizes == reading["dims"]


# ------------------------------------------------------------------ the view
@pytest.mark.parametrize(("name", "path"), _cases())
def test_open_zarr_gives_the_values_480_stored(name: str, path: str) -> None:
    expected = _var(name, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        group = nczarr.open_zarr(_source(name))
    array = group[path.lstrip("/")]
    values, _ = _values(expected)
    got = array[...]
    if expected["dtype"] == "|S1":  # char stays one byte per character, as 4.8.0 stored it
        assert got.dtype == np.dtype("S1") and got.shape == values.shape
        assert got.tobytes() == values.tobytes()
        return
    assert got.dtype == values.dtype
    assert np.array_equal(got, values, equal_nan=values.dtype.kind == "f")
    if "_FillValue" in expected["attrs"]:
        assert _same_number_lists(array.fill_value, _attr(expected["attrs"]["_FillValue"]))


# ------------------------------------------------------------------ the xarray engine
def _check_xarray(var: xr.Variable, raw: xr.Variable, expected: dict[str, Any]) -> None:
    """xarray's view of 4.8.0's reading: the stored values undecoded; decoded, NaN where
    4.8.0 masked a ``_FillValue`` (xarray's netcdf4 engine does not mask netCDF's
    default fills) and ``scale_factor``/``add_offset`` applied."""
    values, mask = _values(expected)
    if expected["dtype"] == "|S1":  # xarray joins the characters of the last dimension
        shown = np.atleast_1d(var.values).reshape(-1)
        assert [v.rstrip(b"\0") if isinstance(v, bytes) else v for v in shown] == _texts(values)
        return
    assert np.array_equal(raw.values, values, equal_nan=values.dtype.kind == "f")
    got = var.values
    attrs = {k: _attr(v) for k, v in expected["attrs"].items()}
    if "_FillValue" in attrs:
        assert np.isnan(got).tolist() == mask.tolist()
    elif got.dtype.kind == "f":  # never masks what 4.8.0 did not
        assert not (np.isnan(got) & ~mask).any()
    scale, offset = attrs.get("scale_factor", [1])[0], attrs.get("add_offset", [0])[0]
    keep = ~np.isnan(got) if got.dtype.kind == "f" else np.ones(got.shape, bool)
    assert np.array_equal(got[keep], (values * scale + offset)[keep])
    shown = {
        k: v for k, v in attrs.items() if k not in ("_FillValue", "scale_factor", "add_offset")
    }
    assert {k: _attr_plain(var.attrs[k]) for k in shown} == shown


def _attr_plain(value: Any) -> Any:
    if isinstance(value, str):
        return value
    return np.atleast_1d(np.asarray(value)).tolist()


@pytest.mark.parametrize(("name", "path"), _cases())
@pytest.mark.parametrize("opener", ["dataset", "datatree"])
def test_engine_reads_what_480_read(name: str, path: str, opener: str) -> None:
    group, var = _group_and_name(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        if opener == "dataset":
            ds = xr.open_dataset(_source(name), engine="nczarr", group=group)
            raw = xr.open_dataset(_source(name), engine="nczarr", group=group, mask_and_scale=False)
        else:
            ds = xr.open_datatree(_source(name), engine="nczarr")[group].to_dataset()
            raw = xr.open_datatree(_source(name), engine="nczarr", mask_and_scale=False)
            raw = raw[group].to_dataset()
    _check_xarray(ds[var].variable, raw[var].variable, _var(name, path))


# ------------------------------------------------------------------ NCZarr through netcdf-c
@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Each store converted (or migrated) once per target."""
    return {}


def _output(outputs: dict, tmp_path_factory, name: str, target: str) -> Path:
    if (name, target) not in outputs:
        out = tmp_path_factory.mktemp("nc480") / f"{name}-{target}"
        with pytest.warns(nczarr.NCZarrWarning, match="one-element list") as caught:
            if target == "migrate":
                with zipfile.ZipFile(_source(name)) as archive:
                    archive.extractall(out)
                nczarr.migrate(str(out), "nczarr")
            elif target == "nczarr":
                nczarr.convert(_source(name), f"file://{out}#mode=nczarr,file")
            elif target == "zarr2":
                nczarr.convert(_source(name), str(out), "zarr")
            else:
                nczarr.convert(_source(name), str(out), "zarr", zarr_format=3)
        outputs[(name, target)] = out
        outputs[(name, target, "warnings")] = [str(w.message) for w in caught]
    return outputs[(name, target)]


def _check_netcdf4(
    nc: netCDF4.Dataset, path: str, expected: dict[str, Any], *, typed: bool
) -> None:
    """netCDF4 (libnetcdf 4.10) reads 4.8.0's values and mask (it masks netCDF's
    default fills as ncdump does); ``typed``: the attributes keep 4.8.0's types."""
    var = nc[path.lstrip("/")]
    values, mask = _values(expected)
    var.set_auto_scale(False)
    read = var[...]
    if expected["dtype"] == "|S1":
        got = np.asarray(read)
        if got.dtype.kind in "OU":  # pure Zarr "<U1": netcdf-c shows one-character strings
            got = np.char.encode(got.astype("U1"), "utf-8").astype("S1")
        assert _texts(got) == _texts(values)
        return
    assert var.dtype == values.dtype
    if values.dtype.kind in "iu" and values.itemsize == 1 and "_FillValue" not in expected["attrs"]:
        # netCDF4 masks netCDF's default byte fill, which ncdump shows as data: netCDF4's
        # convention, the same on a file netcdf-c writes (-127, 255)
        mask = mask | (values == (-127 if values.dtype.kind == "i" else 255))
    assert np.ma.getmaskarray(read).tolist() == mask.tolist()
    assert np.array_equal(np.ma.getdata(read)[~mask], values[~mask], equal_nan=True)
    assert set(var.ncattrs()) == set(expected["attrs"])
    for key, want in expected["attrs"].items():
        got = var.getncattr(key)
        if typed and isinstance(want, dict):
            assert np.asarray(got).dtype.str == want["$type"], key
        assert _same_number_lists(got, _attr(want)), (key, got, want)


@pytest.mark.parametrize(("name", "path"), _nczarr_cases())
@pytest.mark.parametrize("target", ["nczarr", "migrate"])
def test_nczarr_output_read_by_netcdf_c_as_480_read_it(
    name: str, path: str, target: str, outputs, tmp_path_factory
) -> None:
    out = _output(outputs, tmp_path_factory, name, target)
    expected = _var(name, path)
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        _check_netcdf4(nc, path, expected, typed=True)
        group = nc[_group_and_name(path)[0]] if path.count("/") > 1 else nc
        assert list(nc[path.lstrip("/")].dimensions) == expected["dims"]
        attrs = RECORDS[name]["ncdump48"]["attrs"][_group_and_name(path)[0]]
        assert {k: group.getncattr(k) for k in group.ncattrs()} == {
            k: _attr(v) for k, v in attrs.items()
        }


@pytest.mark.parametrize(("name", "path"), _cases())
def test_nczarr_output_of_every_store_read_by_netcdf_c(
    name: str, path: str, outputs, tmp_path_factory
) -> None:
    """The pure Zarr store too: its NCZarr copy reads as 4.8.0 read the source."""
    out = _output(outputs, tmp_path_factory, name, "nczarr")
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        _check_netcdf4(nc, path, _var(name, path), typed=True)


# ------------------------------------------------------------------ Zarr outputs
@pytest.mark.parametrize(("name", "path"), _cases())
def test_zarr2_output_read_by_netcdf_c_as_480_read_it(
    name: str, path: str, outputs, tmp_path_factory
) -> None:
    out = _output(outputs, tmp_path_factory, name, "zarr2")
    with netCDF4.Dataset(f"file://{out}#mode=zarr,file") as nc:
        _check_netcdf4(nc, path, _var(name, path), typed=False)


@pytest.mark.parametrize(("name", "path"), _cases())
@pytest.mark.parametrize("target", ["zarr2", "zarr3"])
def test_zarr_output_read_by_zarr_python_as_480_stored(
    name: str, path: str, target: str, outputs, tmp_path_factory
) -> None:
    out = _output(outputs, tmp_path_factory, name, target)
    expected = _var(name, path)
    values, _ = _values(expected)
    array = zarr.open_group(str(out), mode="r")[path.lstrip("/")]
    got = array[...]
    if expected["dtype"] == "|S1":
        assert _texts(np.asarray(got, "S1")) == _texts(values)
        return
    assert np.array_equal(got, values, equal_nan=values.dtype.kind == "f")
    if "_FillValue" in expected["attrs"]:
        assert _same_number_lists(array.fill_value, _attr(expected["attrs"]["_FillValue"]))


def _byte_default_fill(expected: dict[str, Any]) -> bool:
    """A byte variable without ``_FillValue``: its v2 ``fill_value`` is netCDF's default
    byte fill -127, which ncdump shows as data and xarray (like netCDF4) masks."""
    return expected["dtype"] == "|i1" and "_FillValue" not in expected["attrs"]


@pytest.mark.parametrize(("name", "path"), _cases())
@pytest.mark.parametrize("target", ["zarr2", "zarr3"])
def test_zarr_output_read_by_xarray_as_480_read_it(
    name: str, path: str, target: str, outputs, tmp_path_factory
) -> None:
    """A char variable without ``_FillValue`` gets ``fill_value`` null in Zarr v2, so
    xarray shows its empty strings; a byte one keeps -127, with a warning saying xarray
    masks it (ncdump shows it as data)."""
    out = _output(outputs, tmp_path_factory, name, target)
    group, var = _group_and_name(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(str(out), group=group, consolidated=False)
        raw = xr.open_zarr(str(out), group=group, consolidated=False, mask_and_scale=False)
    expected = _var(name, path)
    told = [w for w in outputs[(name, target, "warnings")] if repr(path) in w]
    if target == "zarr2" and _byte_default_fill(expected):
        assert any("xarray masks the values -127" in w for w in told), told
        values, _ = _values(expected)
        expected = {**expected, "attrs": {**expected["attrs"], "_FillValue": [-127]}}
        expected["values"] = {**expected["values"], "mask": (values == -127).tolist()}
    else:
        assert not any("fill_value" in w and "is kept" in w for w in told), told
    _check_xarray(ds[var].variable, raw[var].variable, expected)


@pytest.mark.parametrize(("name", "path"), _cases())
def test_zarr2_output_fill_value_of_char_without_fill_is_null(
    name: str, path: str, outputs, tmp_path_factory
) -> None:
    """netcdf-c wrote ``"fill_value": ""`` for char without ``_FillValue``; the v2 copy
    says null (xarray's text convention), every other fill is kept."""
    out = _output(outputs, tmp_path_factory, name, "zarr2")
    zarray = json.loads((out / path.lstrip("/") / ".zarray").read_text(encoding="utf-8"))
    expected = _var(name, path)
    if expected["dtype"] == "|S1" and "_FillValue" not in expected["attrs"]:
        assert zarray["fill_value"] is None
    else:
        assert zarray["fill_value"] is not None


# ------------------------------------------------------------------ check
@pytest.mark.parametrize("name", sorted(RECORDS))
def test_check_does_not_say_480_fails_on_what_it_read(name: str) -> None:
    """4.8.0's ncdump read every variable: no 4.8 finding may say it cannot."""
    report = nczarr.check(_source(name), readers=[NC48])
    read = set(RECORDS[name]["ncdump48"]["variables"]) | {"/"}
    wrong = [
        (f.where, f.problem)
        for f in report.for_reader(NC48)
        if f.severity in ("refuses", "fails") and f.where in read and "4.8.1" not in f.problem
    ]
    assert wrong == []
