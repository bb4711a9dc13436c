"""Every nczarr path on stores made by the real producers, against what their own readers read.

The stores and the producers' readings live in ``tests/data/producers/`` (rebuilt by
``tests/producers/build.py`` in side environments CI does not need). For each store:

* ``read``: every array the producer wrote is in the model, or a warning names it;
* the xarray engine (``engine="nczarr"``) and the DataTree give what xarray's zarr
  engine gave the producer (values, mask, dtype, attributes);
* ``open_zarr`` gives zarr-python's values;
* ``convert`` to NCZarr, read by netcdf-c (netCDF4) through xarray's netcdf4 engine,
  gives xarray's reading again (mask, bool, bytes, times), and ``migrate`` in place too;
* ``convert`` to Zarr v2 and v3 read by xarray and zarr-python give their readings;
* ``check``: its findings on every store, in ``tests/test_producers_check.py``.

Where the target cannot hold what the producer wrote, the test asserts the refusal
or the warning. Known, not yet fixed differences are strict xfails naming why.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
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

DATA = Path(__file__).parent / "data" / "producers"
_spec = importlib.util.spec_from_file_location(
    "producer_record", Path(__file__).parent / "producers" / "record.py"
)
record_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(record_module)
decode_array = record_module.decode_array

RECORDS = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(DATA.glob("*.json"))}


def _xarray_cases() -> list[tuple[str, str]]:
    return [
        (name, var)
        for name, rec in RECORDS.items()
        if "xarray" in rec
        for var in rec["xarray"]["variables"]
    ]


def _zarr_cases() -> list[tuple[str, str]]:
    return [
        (name, arr)
        for name, rec in RECORDS.items()
        if "zarr" in rec
        for arr in rec["zarr"]["arrays"]
    ]


# ------------------------------------------------------------------ known differences
#: (store, path, variable) -> why; each is a strict xfail (it fails today).
_OBJECTS_V3 = (
    "zarr-python 3 cannot open a group holding JSON object arrays; open_zarr hands pure "
    "Zarr to zarr-python as stored (Categorize and VLenUTF8 arrays go through the view)"
)
_GDAL_V3_ZLIB = (
    "GDAL 3.12 has no Zarr v3 zlib codec: the v2 zlib compressor has no byte-identical v3 "
    "core codec, so the v3 copy says numcodecs.zlib (check reports GDAL fails on it)"
)
_GDAL_V3_NO_FILL = (
    "Zarr v3 requires a fill_value: nczarr writes 0 where the source has none, and GDAL "
    "takes a v3 fill_value as nodata (zarr-python refuses GDAL's own null)"
)
KNOWN: dict[tuple[str, str, str], str] = {
    ("z2_objects", "open_zarr", "json"): _OBJECTS_V3,
    ("gdal312_v2", "gdal-zarr3", "gdal312_v2"): _GDAL_V3_ZLIB,
    ("gdal312_v2", "gdal-zarr3", "X"): _GDAL_V3_NO_FILL,
    ("gdal312_v2", "gdal-zarr3", "Y"): _GDAL_V3_NO_FILL,
    ("gdal312_v3_nonodata", "gdal-zarr3", "gdal312_v3_nonodata"): _GDAL_V3_NO_FILL,
}


def _apply_known(request: pytest.FixtureRequest, store: str, path: str, var: str) -> None:
    reason = KNOWN.get((store, path, var)) or KNOWN.get((store, path, "*"))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


# ------------------------------------------------------------------ comparing
def _same(actual: Any, expected: np.ndarray) -> bool:
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return False
    if expected.dtype.kind in "Mm":
        return actual.dtype == expected.dtype and np.array_equal(
            actual.view("i8"), expected.view("i8")
        )
    if expected.dtype.kind == "f":
        return actual.dtype.kind == "f" and np.array_equal(actual, expected, equal_nan=True)
    if expected.dtype.kind in "OU":  # text: zarr-python 3 and xarray differ in the dtype only
        return [_plain(v) for v in actual.reshape(-1)] == [_plain(v) for v in expected.reshape(-1)]
    return actual.dtype.kind == expected.dtype.kind and np.array_equal(actual, expected)


def _plain(value: Any) -> Any:
    if isinstance(value, dict) and "$str" in value:
        return value["$str"]
    if isinstance(value, dict) and "$bytes" in value:
        import base64

        return base64.b64decode(value["$bytes"])
    if hasattr(value, "calendar"):  # cftime
        return str(value)
    return value


def _attr(value: Any) -> Any:
    """A recorded attribute value, without its numpy type."""
    if isinstance(value, dict) and "$type" in value:
        return value["value"]
    return value


def _attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def _is_text(dtype: str) -> bool:
    """A recorded text dtype: objects, numpy 2's StringDType, fixed-width unicode."""
    return dtype == "|O" or "String" in dtype or dtype[1:2] in ("U", "T")


def _check_variable(actual: xr.Variable, expected: dict[str, Any], *, dtype: bool = True) -> None:
    want = decode_array(expected["values"])
    got = actual.values
    assert list(actual.dims) == expected["dims"]
    text = _is_text(expected["dtype"])
    if dtype and not (text and got.dtype.kind in "OUT"):
        assert got.dtype.str == expected["dtype"], f"dtype {got.dtype.str} != {expected['dtype']}"
    assert _same(got, want), f"values {got!r} != {want!r}"
    expected_attrs = {k: _attr(v) for k, v in expected["attrs"].items()}
    assert _attrs(dict(actual.attrs)) == expected_attrs


# ------------------------------------------------------------------ opening
@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    """Conversions made once per (store, target), shared by the per-variable tests."""
    return {"_tmp": tmp_path_factory.mktemp("producers")}


def _source(name: str) -> str:
    return str(DATA / f"{name}.zip")


def _convert(outputs: dict, name: str, target: str) -> tuple[str, list[str]]:
    """Convert store ``name`` once; the target's URL and the warnings."""
    key = (name, target)
    if key not in outputs:
        tmp: Path = outputs["_tmp"]
        out = tmp / f"{name}-{target}"
        refused = _refused(name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            error = None
            if target == "migrate":
                with zipfile.ZipFile(_source(name)) as archive:
                    archive.extractall(out)
                try:
                    nczarr.migrate(str(out), "nczarr")
                except nczarr.UnsupportedError as exc:
                    error = exc
            else:
                try:
                    _run_convert(name, out, target, None)
                    assert not refused, f"convert did not refuse {sorted(refused)}"
                except nczarr.UnsupportedTypeError as exc:
                    # what no reader of the target could hold: refused, each array named
                    assert all(path in str(exc) for path in refused)
                    named = re.search(r"exclude=(\[[^\]]*\])", str(exc))
                    assert named is not None, str(exc)
                    refused = set(ast.literal_eval(named.group(1)))
                    shutil.rmtree(out, ignore_errors=True)
                    _run_convert(name, out, target, sorted(refused))
        outputs[key] = (out, [str(w.message) for w in caught], error)
        outputs[("refused", *key)] = refused
    out, messages, error = outputs[key]
    return out, messages, error


def _run_convert(name: str, out: Path, target: str, exclude: list[str] | None) -> None:
    if target == "nczarr":
        nczarr.convert(_source(name), f"file://{out}#mode=nczarr,file", exclude=exclude)
    elif target == "zarr2":
        nczarr.convert(_source(name), str(out), "zarr", exclude=exclude)
    else:
        nczarr.convert(_source(name), str(out), "zarr", zarr_format=3, exclude=exclude)


def _refused(name: str) -> set[str]:
    """The arrays of store ``name`` that nczarr reads as skipped (no netCDF-4 form)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return set(nczarr.read(_source(name)).skipped)


def _output_or_refusal(outputs: dict, name: str, target: str, var: str) -> Path | None:
    """The converted store, or None when ``var`` was rightly refused (asserted here)."""
    out, _, error = _convert(outputs, name, target)
    if error is not None:  # migrate refuses what it cannot rewrite in place
        assert "Nothing was changed" in str(error)
        return None
    if f"/{var}" in outputs[("refused", name, target)]:
        return None  # the refusal naming it was asserted by _convert
    return out


def _nczarr_url(out: Path) -> str:
    return f"file://{out}#mode=nczarr,file"


# ------------------------------------------------------------------ read
@pytest.mark.parametrize("name", sorted(RECORDS))
def test_read_has_every_array_or_names_it(name: str) -> None:
    rec = RECORDS[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = nczarr.read(_source(name))
    paths = {v.path for v in dataset.root.all_variables()}
    messages = " ".join(str(w.message) for w in caught) + " ".join(dataset.warnings)
    written = set(rec.get("zarr", {}).get("arrays", {})) or set(
        rec.get("netcdf4", {}).get("variables", {}) or rec.get("gdal", {}).get("arrays", {})
    )
    # netcdf-c 4.8.0's stores: every variable its ncdump read (tests/test_producers_netcdf48.py)
    written |= {p.lstrip("/") for p in rec.get("ncdump48", {}).get("variables", {})}
    for array in written:
        assert f"/{array}" in paths or repr(f"/{array}") in messages, array


# ------------------------------------------------------------------ engine
@pytest.mark.parametrize(("name", "var"), _xarray_cases())
def test_engine_reads_what_xarray_read(name: str, var: str, request) -> None:
    _apply_known(request, name, "engine", var)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(_source(name), engine="nczarr", decode_timedelta=True)
    expected = RECORDS[name]["xarray"]["variables"][var]
    _check_variable(ds[var].variable, expected)


@pytest.mark.parametrize(("name", "var"), _xarray_cases())
def test_datatree_reads_what_xarray_read(name: str, var: str, request) -> None:
    _apply_known(request, name, "engine", var)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = xr.open_datatree(_source(name), engine="nczarr", decode_timedelta=True)
    _check_variable(tree.to_dataset()[var].variable, RECORDS[name]["xarray"]["variables"][var])


@pytest.mark.parametrize(("name", "var"), _zarr_cases())
def test_open_zarr_reads_what_zarr_python_read(name: str, var: str, request) -> None:
    _apply_known(request, name, "open_zarr", var)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        group = nczarr.open_zarr(_source(name))
    if repr(f"/{var}") in " ".join(str(w.message) for w in caught if "is stale" in str(w.message)):
        return  # zarr-python follows the stale .zmetadata, and the warning names the array
    array = group[var]
    expected = RECORDS[name]["zarr"]["arrays"][var]
    assert _same(array[...], decode_array(expected["values"]))


# ------------------------------------------------------------------ NCZarr through netcdf-c
@pytest.mark.parametrize(("name", "var"), _xarray_cases())
@pytest.mark.parametrize("target", ["nczarr", "migrate"])
def test_nczarr_output_read_by_netcdf_c_through_xarray(
    name: str, var: str, target: str, outputs, request
) -> None:
    _apply_known(request, name, target, var)
    out = _output_or_refusal(outputs, name, target, var)
    if out is None:
        return
    with xr.open_dataset(_nczarr_url(out), engine="netcdf4", decode_timedelta=True) as ds:
        _check_variable(ds[var].variable, RECORDS[name]["xarray"]["variables"][var])


# ------------------------------------------------------------------ Zarr outputs
@pytest.mark.parametrize(("name", "var"), _xarray_cases())
@pytest.mark.parametrize("target", ["zarr2", "zarr3"])
def test_zarr_output_read_by_xarray(name: str, var: str, target: str, outputs, request) -> None:
    _apply_known(request, name, target, var)
    out = _output_or_refusal(outputs, name, target, var)
    if out is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(str(out), consolidated=False, decode_timedelta=True)
    _check_variable(ds[var].variable, RECORDS[name]["xarray"]["variables"][var])


@pytest.mark.parametrize(("name", "var"), _zarr_cases())
@pytest.mark.parametrize("target", ["zarr2", "zarr3"])
def test_zarr_output_read_by_zarr_python(
    name: str, var: str, target: str, outputs, request
) -> None:
    _apply_known(request, name, f"{target}-zarr", var)
    out = _output_or_refusal(outputs, name, target, var)
    if out is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_group(str(out), mode="r")
    expected = RECORDS[name]["zarr"]["arrays"][var]
    array = group[var]
    want = np.dtype(object) if _is_text(expected["dtype"]) else np.dtype(expected["dtype"])
    assert (array.dtype.kind in "OTU" and want.kind == "O") or array.dtype.newbyteorder(
        "="
    ) == want.newbyteorder(
        "="
    )  # the byte order is the writer's choice: the values are compared below
    assert _same(array[...], decode_array(expected["values"]))
    attrs = {k: v for k, v in dict(array.attrs).items() if k != "_FillValue"}
    written = {
        k: v for k, v in expected["attrs"].items() if k not in ("_ARRAY_DIMENSIONS", "_FillValue")
    }
    if target == "zarr3":  # dimension names are metadata in v3, not attributes
        assert json.loads(json.dumps(attrs)) == written


# check: tests/test_producers_check.py asserts every finding on every store


# ------------------------------------------------------------------ raw values, GDAL, netcdf-c
@pytest.mark.parametrize(("name", "var"), _zarr_cases())
def test_engine_raw_values_are_zarr_pythons(name: str, var: str, request) -> None:
    """Undecoded, the engine shows zarr-python's values (or names what it leaves out)."""
    _apply_known(request, name, "engine-raw", var)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(
            _source(name), engine="nczarr", mask_and_scale=False, decode_times=False
        )
    if f"/{var}" in _refused(name):
        assert any(repr(f"/{var}") in str(w.message) for w in caught)
        return
    expected = decode_array(RECORDS[name]["zarr"]["arrays"][var]["values"])
    got = ds[var].values
    if got.dtype == bool and expected.dtype.kind in "iu":  # xarray's dtype="bool" (always decoded)
        got = got.astype(expected.dtype)
    assert _same(got, expected)


def _gdal_cases() -> list[tuple[str, str]]:
    return [(n, a) for n, r in RECORDS.items() if "gdal" in r for a in r["gdal"]["arrays"]]


@pytest.mark.parametrize(("name", "var"), _gdal_cases())
@pytest.mark.parametrize("path", ["engine", "nczarr", "zarr2", "zarr3"])
def test_gdal_nodata_masked_on_every_path(name: str, var: str, path: str, outputs) -> None:
    expected = RECORDS[name]["gdal"]["arrays"][var]
    values = decode_array(expected["values"])
    mask = np.array(expected["mask"]).reshape(values.shape)
    if path == "engine":
        got = xr.open_dataset(_source(name), engine="nczarr")[var].values
        missing = np.isnan(got)
    elif path == "nczarr":
        out, _, _ = _convert(outputs, name, "nczarr")
        with netCDF4.Dataset(_nczarr_url(out)) as nc:
            read = nc[var][...]
        got, missing = np.ma.getdata(read), np.ma.getmaskarray(read)
    else:
        out, _, _ = _convert(outputs, name, path)
        got = xr.open_zarr(str(out), consolidated=False)[var].values
        missing = np.isnan(got)
    assert missing.tolist() == mask.tolist()
    assert np.array_equal(got[~mask], values[~mask])


@pytest.mark.parametrize(
    ("name", "var"), [(n, v) for n, v in _gdal_cases() if n.startswith("gdal312")]
)
@pytest.mark.parametrize("target", ["zarr2", "zarr3"])
def test_gdal_reads_the_zarr_copies_of_its_stores_as_it_read_them(
    name: str, var: str, target: str, outputs, request
) -> None:
    """GDAL 3.12 (pyogrio's libgdal) on nczarr's Zarr v2 and v3 copies of GDAL's stores:
    the same values, nodata and mask as on the store GDAL wrote."""
    from .gdalreader import read_zarr

    _apply_known(request, name, f"gdal-{target}", var)

    expected = RECORDS[name]["gdal"]["arrays"][var]
    out, _, _ = _convert(outputs, name, target)
    seen = read_zarr(out)
    assert seen.error is None, seen.error
    array = seen.arrays[f"/{var}"]
    assert array.error is None, array.error
    values = decode_array(expected["values"])
    assert array.values.dtype == values.dtype
    assert np.array_equal(array.values, values, equal_nan=values.dtype.kind == "f")
    assert _attr(expected["nodata"]) == (
        array.nodata if array.nodata == array.nodata else {"$float": "nan"}
    )
    assert [d for d, _ in array.dims] == expected["dims"]


def _netcdf_cases() -> list[tuple[str, str]]:
    return [(n, v) for n, r in RECORDS.items() if "netcdf4" in r for v in r["netcdf4"]["variables"]]


@pytest.mark.parametrize(("name", "var"), _netcdf_cases())
@pytest.mark.parametrize("path", ["source", "nczarr", "zarr2"])
def test_netcdf_c_pure_zarr_reads_as_netcdf4_read_it(
    name: str, var: str, path: str, outputs
) -> None:
    """netCDF4 on the source (the record), on an NCZarr copy and on a pure Zarr copy."""
    expected = RECORDS[name]["netcdf4"]["variables"][var]
    if path == "source":
        ds = xr.open_dataset(_source(name), engine="nczarr")
        got = ds[var].values
        want = decode_array(expected["values"])
        if "mask" in expected["values"]:
            mask = np.array(expected["values"]["mask"]).reshape(want.shape)
            assert np.isnan(got).tolist() == mask.tolist()
            assert np.array_equal(got[~mask], want[~mask])
        else:
            assert _same(got, want)
        return
    out, _, _ = _convert(outputs, name, path)
    url = _nczarr_url(out) if path == "nczarr" else f"file://{out}#mode=zarr,file"
    with netCDF4.Dataset(url) as nc:
        read = nc[var][...]
    want = decode_array(expected["values"])
    if "mask" in expected["values"]:
        assert np.ma.getmaskarray(read).reshape(-1).tolist() == expected["values"]["mask"]
        assert (
            np.ma.filled(read, 0).tolist()
            == np.where(np.array(expected["values"]["mask"]).reshape(want.shape), 0, want).tolist()
        )
    else:
        assert _same(np.asarray(read), want)
