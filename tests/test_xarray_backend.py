"""The ``nczarr`` xarray engine against the yardstick: xarray's netcdf4 engine on libnetcdf.

Every dataset here is written by a real producer (netcdf-c through netCDF4, xarray's
netcdf4 engine, Debian's ncgen, the shipped fixtures); ``engine="netcdf4"`` on the
netCDF URL of the directory store is the oracle, and ``engine="nczarr"`` must be
identical (``xr.testing.assert_identical``, plus dtypes and attribute types, which
``assert_identical`` does not check) for the root, every group and the whole DataTree,
with and without CF decoding, from a directory, a zip, S3 (moto) and fsspec.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tomllib
import uuid
import zipfile
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nczarr
from nczarr.integrations.xarray_backend import (
    NCZarrBackendEntrypoint,
    NCZarrDataStore,
    attribute_value,
)
from nczarr.translate.model import Attribute

from .budget import examples, long_or
from .clusters import local_client
from .ncoracle import extract_fixture, fixture_path, nc_url

ROOT = Path(__file__).resolve().parent.parent
ENGINE = "nczarr"


# ------------------------------------------------------------------ datasets
def fill_everything(ds: netCDF4.Dataset) -> None:
    """Every numeric type, char, string, scalars, an unlimited dimension written in
    part, groups using inherited dimensions, CF times, packing, typed attributes."""
    ds.title = "every netCDF-4 feature nczarr models"
    ds.setncattr("a_byte", np.int8(-3))
    ds.setncattr("a_ubyte", np.uint8(250))
    ds.setncattr("a_short", np.array([1, -2], "i2"))
    ds.setncattr("a_ushort", np.uint16(65535))
    ds.setncattr("a_int", np.int32(-(2**31)))
    ds.setncattr("a_uint", np.uint32(2**32 - 1))
    ds.setncattr("a_int64", np.array([-(2**63), 2**63 - 1], "i8"))
    ds.setncattr("a_uint64", np.uint64(2**64 - 1))
    ds.setncattr("a_float", np.array([1.5, np.nan, np.inf], "f4"))
    ds.setncattr("a_double", np.float64(-0.1))
    ds.setncattr_string("a_strings", ["a", "é", ""])
    ds.setncattr_string("a_string", "one")
    ds.createDimension("time", None)
    ds.createDimension("x", 4)
    ds.createDimension("nchar", 5)
    time = ds.createVariable("time", "f8", ("time",))
    time.units = "hours since 2000-01-01 00:00:00"
    time.calendar = "standard"
    time.standard_name = "time"
    time[:] = [0.0, 1.5, 36.0]
    ds.createVariable("x", "i4", ("x",))[:] = [10, 20, 30, 40]
    for code in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"):
        info = np.iinfo(code) if code[0] in "iu" else np.finfo(code)
        var = ds.createVariable(f"v_{code}", code, ("time", "x"), zlib=code in ("i4", "f8"))
        values = np.arange(8).reshape(2, 4).astype(code)
        values[0, 0] = info.min
        values[1, 3] = info.max
        var[:2] = values  # the third time step is never written: fill values
    special = ds.createVariable("special", "f4", ("x",), fill_value=np.float32(-999))
    special[:] = [np.nan, np.inf, -np.inf, -0.0]
    big = ds.createVariable("big", ">i4", ("x",), endian="big")
    big[:] = [1, -2, 3, 2**31 - 1]
    packed = ds.createVariable("packed", "i2", ("time", "x"), fill_value=np.int16(-32767))
    packed.scale_factor = np.float32(0.01)
    packed.add_offset = np.float32(273.15)
    packed.units = "K"
    packed[:1] = [[100, -200, 300, -32767]]
    ds.createVariable("signed", "i1", ("x",))[:] = np.array([-1, 0, 1, 127], "i1")
    name = ds.createVariable("name", "S1", ("x", "nchar"))
    name.set_auto_chartostring(False)
    words = np.array([t.encode() for t in ("ab", "é", "", "abcde")], "S5")
    name[:] = words.view("S1").reshape(4, 5)
    name._Encoding = "utf-8"
    raw = ds.createVariable("rawchar", "S1", ("x", "nchar"), fill_value=b"-")
    raw[:2] = netCDF4.stringtochar(np.array([b"xy", b"z"], "S5"))
    label = ds.createVariable("label", str, ("x",))
    label[0] = "héllo"
    label[3] = "a longer string"
    scalar = ds.createVariable("scalar", "f8", ())
    scalar.long_name = "a true 0-d scalar"
    scalar[...] = 7.25
    ds.createVariable("string_scalar", str, ())[...] = "only"
    ds.createVariable("char_scalar", "S1", ())[...] = b"c"
    ds.createVariable("untouched", "f4", ("x",))  # never written
    group = ds.createGroup("forecast")
    group.createDimension("lead", 2)
    group.note = "a subgroup"
    temp = group.createVariable("temp", "f4", ("time", "x", "lead"), fill_value=np.float32(1e20))
    temp.units = "degC"
    temp[:2] = np.arange(16, dtype="f4").reshape(2, 4, 2)
    group.createVariable("lead", "i2", ("lead",))[:] = [6, 12]
    inner = group.createGroup("inner")
    inner.setncattr("level", np.int16(3))
    deep = inner.createVariable("deep", "u2", ("lead", "x"))
    deep[:] = np.arange(8).reshape(2, 4)
    deep.flag_values = np.array([0, 1], "u2")
    inner.createVariable("when", "i8", ())
    inner["when"].units = "days since 1970-01-01"
    inner["when"][...] = 19000
    ds.createGroup("empty")


def fill_simple(ds: netCDF4.Dataset) -> None:
    """A small dataset in netcdf-c's pure Zarr form (what ``#mode=zarr`` carries)."""
    ds.history = "pure"
    ds.createDimension("y", 3)
    ds.createDimension("z", 2)
    v = ds.createVariable("v", "f8", ("y", "z"))
    v.units = "m"
    v.factor = np.float32(2)
    v[:] = np.arange(6.0).reshape(3, 2)
    ds.createVariable("n", "i2", ("y",))[:] = [1, 2, 3]
    ds.createVariable("s", "i4", ())[...] = 42
    g = ds.createGroup("g")
    g.createVariable("w", "u1", ("y",))[:] = [7, 8, 9]


def write_with_xarray_netcdf4(path: Path) -> None:
    """A dataset as xarray's netcdf4 engine encodes it (CF times with NaT, strings,
    bytes, bools, packed floats), written by libnetcdf as current NCZarr."""
    ds = xr.Dataset(
        {
            "t2m": (
                ("time", "site"),
                np.array([[280.5, np.nan, 281.25], [279.0, 278.5, np.nan]], "f4"),
                {"units": "K", "long_name": "2 m temperature"},
            ),
            "station": ("site", np.array(["Oslo", "Bergen", "Tromsø"])),
            "code": ("site", np.array([b"OSL", b"BGO", b"TOS"])),
            "ok": ("site", np.array([True, False, True])),
            "obs_time": (
                "site",
                pd.to_datetime(["2001-01-01T00:00", None, "2001-01-03T12:00"], format="ISO8601"),
            ),
            "elev": ("site", np.array([1.5, 2.25, np.nan])),
        },
        coords={"time": pd.date_range("2000-01-01", periods=2, freq="6h"), "site": [1, 2, 3]},
        attrs={"Conventions": "CF-1.8", "version": np.int16(2)},
    )
    encoding = {
        "elev": {"dtype": "i2", "scale_factor": 0.25, "_FillValue": -1},
        "t2m": {"zlib": True, "complevel": 1},
    }
    ds.to_netcdf(nc_url(path), engine="netcdf4", encoding=encoding)


def build_nc(path: Path, fill: Callable[[netCDF4.Dataset], None], mode: str = "nczarr") -> Path:
    with netCDF4.Dataset(nc_url(path, mode), "w") as ds:
        fill(ds)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """name -> (directory store, netCDF URL mode) of every real netcdf-c dataset."""
    root = tmp_path_factory.mktemp("corpus")
    out = {
        "everything": (build_nc(root / "everything.file", fill_everything), "nczarr"),
        "pure": (build_nc(root / "pure.file", fill_simple, "zarr"), "zarr"),
    }
    write_with_xarray_netcdf4(root / "xarray.file")
    out["xarray"] = (root / "xarray.file", "nczarr")
    return out


# ---------------------------------------------------------------- comparison
def assert_same(expected: Any, actual: Any) -> None:
    """``assert_identical`` plus what it does not look at: dtypes and attribute types."""
    xr.testing.assert_identical(expected, actual)
    if isinstance(expected, xr.DataTree):
        for path, node in expected.subtree_with_keys:
            _same_types(node.to_dataset(inherit=False), actual[path].to_dataset(inherit=False))
    else:
        _same_types(expected, actual)


def _same_types(expected: xr.Dataset, actual: xr.Dataset) -> None:
    _same_attr_types("dataset", expected.attrs, actual.attrs)
    for name, var in expected.variables.items():
        other = actual.variables[name]
        assert var.dtype == other.dtype, (name, var.dtype, other.dtype)
        _same_attr_types(name, var.attrs, other.attrs)
        _same_attr_types(f"{name} encoding", _cf_encoding(var), _cf_encoding(other))


def _drop_xarray_fill(expected: Any, actual: Any) -> dict[str, Any]:
    """Pop ``_FillValue`` from ``actual``'s encodings where netCDF4 (``expected``) has none.

    A pure Zarr v2 store netcdf-c did not write has xarray's and GDAL's convention: its
    ``fill_value`` is the missing value, which netcdf-c does not mask (issue 15,
    docs/conversion.md). Returns the popped values by variable name.
    """
    popped = {}
    pairs = (
        [
            (expected[p].to_dataset(inherit=False), actual[p].to_dataset(inherit=False))
            for p, _ in expected.subtree_with_keys
        ]
        if isinstance(expected, xr.DataTree)
        else [(expected, actual)]
    )
    for exp, act in pairs:
        for name, var in act.variables.items():
            if "_FillValue" in var.encoding and "_FillValue" not in exp[name].encoding:
                popped[name] = var.encoding["_FillValue"]
    if isinstance(actual, xr.DataTree):
        for _, node in actual.subtree_with_keys:
            for name in node.variables:
                if name in popped:
                    node[name].encoding.pop("_FillValue", None)
    else:
        for name in popped:
            actual[name].encoding.pop("_FillValue", None)
    return popped


def _cf_encoding(var: xr.Variable) -> dict[str, Any]:
    keys = ("_FillValue", "scale_factor", "add_offset", "units", "calendar", "dtype")
    return {k: var.encoding[k] for k in keys if k in var.encoding}


def _same_attr_types(where: str, expected: dict, actual: dict) -> None:
    assert list(expected) == list(actual), where
    for key, value in expected.items():
        other = actual[key]
        assert type(value) is type(other), (where, key, type(value), type(other))
        if isinstance(value, np.ndarray | np.generic):
            assert value.dtype == other.dtype, (where, key, value.dtype, other.dtype)


DECODINGS = [
    pytest.param({}, id="decoded"),
    pytest.param({"decode_cf": False}, id="raw"),
    pytest.param({"mask_and_scale": False, "decode_times": False}, id="no-mask-no-times"),
    pytest.param({"concat_characters": False, "decode_coords": False}, id="chars"),
]


def true_scalars(expected: Any) -> Any:
    """The netcdf4 engine's reading with netcdf-c's pure-Zarr scalars made 0-d again.

    netcdf-c writes a scalar in pure Zarr as shape ``[1]`` with ``_ARRAY_DIMENSIONS:
    ["_scalar_"]`` and 4.10 reads it back as a 1-d variable over ``_scalar_``; the
    engine shows the 0-d scalar that was written (a documented difference)."""

    def squeeze(ds: xr.Dataset) -> xr.Dataset:
        return ds.squeeze("_scalar_", drop=True) if "_scalar_" in ds.dims else ds

    if isinstance(expected, xr.DataTree):
        return expected.map_over_datasets(squeeze)
    return squeeze(expected)


def _groups(path: Path, mode: str) -> list[str]:
    with netCDF4.Dataset(nc_url(path, mode)) as ds:
        out = []

        def walk(g: Any) -> None:
            out.append(g.path)
            for child in g.groups.values():
                walk(child)

        walk(ds)
    return out


# ------------------------------------------------------------------ datasets vs netcdf4
@pytest.mark.parametrize("kwargs", DECODINGS)
@pytest.mark.parametrize("name", ["everything", "pure", "xarray"])
def test_every_group_is_identical_to_the_netcdf4_engine(corpus, name, kwargs):
    path, mode = corpus[name]
    for group in _groups(path, mode):
        expected = xr.open_dataset(nc_url(path, mode), engine="netcdf4", group=group, **kwargs)
        actual = xr.open_dataset(str(path), engine=ENGINE, group=group, **kwargs)
        with expected, actual:
            assert_same(true_scalars(expected.load()), actual.load())


@pytest.mark.parametrize("kwargs", DECODINGS[:2])
@pytest.mark.parametrize("name", ["everything", "pure", "xarray"])
def test_datatree_is_identical_to_the_netcdf4_engine(corpus, name, kwargs):
    path, mode = corpus[name]
    expected = xr.open_datatree(nc_url(path, mode), engine="netcdf4", **kwargs)
    actual = xr.open_datatree(nc_url(path, mode), engine=ENGINE, **kwargs)
    with expected, actual:
        assert_same(true_scalars(expected.load()), actual.load())


def test_subtree_and_open_groups_match_the_netcdf4_engine(corpus):
    path, _ = corpus["everything"]
    url = nc_url(path)
    expected = xr.open_datatree(url, engine="netcdf4", group="forecast")
    actual = xr.open_datatree(url, engine=ENGINE, group="/forecast")
    assert_same(expected.load(), actual.load())
    expected_groups = xr.open_groups(url, engine="netcdf4")
    actual_groups = xr.open_groups(url, engine=ENGINE)
    assert list(actual_groups) == list(expected_groups)
    for key, ds in expected_groups.items():
        assert_same(ds.load(), actual_groups[key].load())


def test_netcdf_features_are_shown_as_netcdf4_shows_them(corpus):
    path, _ = corpus["everything"]
    with xr.open_dataset(path, engine=ENGINE) as ds:
        assert ds["scalar"].dims == () and ds["scalar"].item() == 7.25
        assert ds["string_scalar"].item() == "only"
        assert ds["name"].values.tolist() == ["ab", "é", "", "abcde"]
        assert ds["label"].values.tolist() == ["héllo", "", "", "a longer string"]
        assert ds["packed"].dtype == np.float32  # float32 scale_factor decides it
        assert ds.encoding["unlimited_dims"] == {"time"}
        assert ds["time"].dtype.kind == "M"
        # never written, no _FillValue attribute: netcdf-c's default fill, unmasked
        assert (ds["v_f4"].values[2] == np.float32(9.969209968386869e36)).all()
    with xr.open_dataset(path, engine=ENGINE, group="forecast/inner") as inner:
        assert inner["deep"].dims == ("lead", "x")  # both inherited from ancestors
        assert inner.attrs["level"].dtype == np.int16
        assert inner["when"].values == np.datetime64("2022-01-08")
    with xr.open_dataset(path, engine=ENGINE, decode_cf=False) as raw:
        assert raw["name"].dtype == "S1" and raw["name"].dims == ("x", "nchar")
        assert raw["label"].values.tolist() == ["héllo", "", "", "a longer string"]
        assert raw["big"].values.tolist() == [1, -2, 3, 2**31 - 1]
        assert raw.attrs["a_uint64"] == np.uint64(2**64 - 1)


# ------------------------------------------------------------------ shipped fixtures
NCZARR_FIXTURES = [
    ("current_netcdf4101.zip", "nczarr"),
    ("ref_oldformat_v2attrs.zip", "nczarr"),
    ("pure_netcdf4101_shuffle.zip", "zarr"),
    ("ref_power_901_constants_orig.zip", "zarr"),
    ("ref_quotes_orig.zip", "zarr"),
    ("ref_byte_fill_value_null.zarr.zip", "zarr"),
]


@pytest.mark.filterwarnings("ignore:Duplicate dimension names")
@pytest.mark.parametrize(("name", "mode"), NCZARR_FIXTURES)
def test_shipped_zip_opened_directly_equals_netcdf4_on_its_directory(tmp_path, name, mode):
    directory = extract_fixture(name, tmp_path)
    expected = xr.open_datatree(nc_url(directory, mode), engine="netcdf4").load()
    actual = xr.open_datatree(str(fixture_path(name)), engine=ENGINE).load()
    if name.endswith("_orig.zip"):  # written by xarray: its fill_value is a missing value
        fills = _drop_xarray_fill(expected, actual)
        zarr_reading = xr.open_zarr(directory, consolidated=False)
        assert fills and all(
            _same_fill(zarr_reading[n].encoding["_FillValue"], v) for n, v in fills.items()
        )
    assert_same(expected, actual)


def _same_fill(a: Any, b: Any) -> bool:
    return bool(a == b or (np.isnan(a) and np.isnan(b)))


@pytest.mark.parametrize(
    "name", ["v2uc_ncgen490.zip", "ref_oldkeys.file.zip", "ref_oldformat_v1.zip"]
)
def test_legacy_store_equals_netcdf4_reading_its_migrated_copy(tmp_path, name):
    directory = extract_fixture(name, tmp_path)
    nczarr.migrate(str(directory))
    expected = xr.open_datatree(nc_url(directory), engine="netcdf4")
    actual = xr.open_datatree(str(fixture_path(name)), engine=ENGINE)
    assert_same(expected.load(), actual.load())
    for group in _groups(directory, "nczarr"):
        ds = xr.open_dataset(str(fixture_path(name)), engine=ENGINE, group=group)
        assert_same(xr.open_dataset(nc_url(directory), engine="netcdf4", group=group), ds)


def test_pure_zarr_scalar_of_netcdf_c_is_a_true_scalar(corpus):
    path, mode = corpus["pure"]
    with xr.open_dataset(nc_url(path, mode), engine="netcdf4") as expected:
        assert expected["s"].dims == ("_scalar_",)  # netcdf-c 4.10's reading
    with xr.open_dataset(path, engine=ENGINE) as actual:
        assert actual["s"].dims == () and actual["s"].item() == 42


def test_char_attributes_keep_their_text_where_netcdf_c_reads_json(tmp_path):
    """netcdf-c stores a char attribute that parses as a JSON scalar as that JSON
    value and reads it back mangled (``"true"`` -> ``"1"``, ``"17"`` -> ``"1"``), so
    the netcdf4 engine ignores ``_Unsigned = "true"``. The engine shows what was
    written, and so applies ``_Unsigned``: a documented difference."""

    def fill(ds: netCDF4.Dataset) -> None:
        ds.createDimension("x", 2)
        var = ds.createVariable("u", "i1", ("x",))
        var._Unsigned = "true"
        var.count = "17"
        var[:] = np.array([-1, 5], "i1")

    path = build_nc(tmp_path / "u.file", fill)
    with xr.open_dataset(nc_url(path), engine="netcdf4") as expected:
        assert expected["u"].attrs["count"] == "1"
        assert expected["u"].values.tolist() == [-1, 5]
    with xr.open_dataset(path, engine=ENGINE) as actual:
        assert actual["u"].attrs["count"] == "17"
        assert actual["u"].values.tolist() == [255, 5]
        assert actual["u"].encoding["_Unsigned"] == "true"


@pytest.mark.filterwarnings("ignore:Duplicate dimension names")
def test_anonymous_dimensions_are_named_by_the_spec(tmp_path):
    directory = extract_fixture("ref_byte.zarr.zip", tmp_path)
    expected = xr.open_dataset(nc_url(directory, "zarr"), engine="netcdf4")
    actual = xr.open_dataset(str(fixture_path("ref_byte.zarr.zip")), engine=ENGINE)
    # GDAL wrote it: its fill_value 0 is GDAL's nodata, masked as GDAL masks it (issue 15)
    assert np.isnan(actual["byte"].values).any()
    expected = xr.open_dataset(nc_url(directory, "zarr"), engine="netcdf4", mask_and_scale=False)
    actual = xr.open_dataset(
        str(fixture_path("ref_byte.zarr.zip")), engine=ENGINE, mask_and_scale=False
    )
    assert actual["byte"].attrs.pop("_FillValue") == 0
    assert set(expected.dims) == {"_Anonymous_Dim_20"}
    assert set(actual.dims) == {"_Anonymous_Dimension_20"}
    renamed = actual.rename({"_Anonymous_Dimension_20": "_Anonymous_Dim_20"})
    assert_same(expected.load(), renamed.load())


# ------------------------------------------------------------------ every map
def _zip_netcdf_layout(directory: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w") as zf:
        for file in sorted(directory.rglob("*")):
            zf.write(file, f"{directory.name}/{file.relative_to(directory).as_posix()}")
    return target


def test_zip_file_url_and_open_map(corpus, tmp_path):
    path, _ = corpus["everything"]
    archive = _zip_netcdf_layout(path, tmp_path / "everything.zip")
    expected = xr.open_datatree(nc_url(path), engine="netcdf4").load()
    for src in (
        str(archive),
        f"file://{archive}#mode=nczarr,zip",
        nczarr.open_map(str(archive)),
    ):
        assert_same(expected, xr.open_datatree(src, engine=ENGINE).load())


def test_s3_with_storage_options(corpus, s3_endpoint, s3_bucket, s3_client):
    path, _ = corpus["everything"]
    for file in path.rglob("*"):
        if file.is_file():
            key = f"stores/everything/{file.relative_to(path).as_posix()}"
            s3_client.put_object(Bucket=s3_bucket, Key=key, Body=file.read_bytes())
    url = f"s3://{s3_bucket}/stores/everything#mode=nczarr,s3"
    options = {"endpoint_url": s3_endpoint}
    expected = xr.open_dataset(nc_url(path), engine="netcdf4", group="forecast").load()
    actual = xr.open_dataset(url, engine=ENGINE, group="forecast", storage_options=options)
    assert_same(expected, actual.load())
    tree = xr.open_datatree(url, engine=ENGINE, storage_options=options, chunks={})
    assert_same(xr.open_datatree(nc_url(path), engine="netcdf4").load(), tree.load())


def test_fsspec_filesystem(corpus):
    import fsspec

    path, _ = corpus["pure"]
    fs = fsspec.filesystem("memory")
    root = f"/xarray-backend-{os.getpid()}/pure.zarr"
    try:
        for file in path.rglob("*"):
            if file.is_file():
                fs.pipe(f"{root}/{file.relative_to(path).as_posix()}", file.read_bytes())
        expected = true_scalars(xr.open_datatree(nc_url(path, "zarr"), engine="netcdf4").load())
        assert_same(expected, xr.open_datatree(f"memory://{root}", engine=ENGINE).load())
    finally:
        fs.rm(root.rsplit("/", 1)[0], recursive=True)


# ------------------------------------------------------------------ dask
def test_chunks_give_lazy_dask_arrays_along_the_stored_chunks(corpus):
    import dask.array as da

    path, _ = corpus["everything"]
    ds = xr.open_dataset(path, engine=ENGINE, chunks={})
    assert isinstance(ds["v_i4"].data, da.Array)
    assert ds["v_i4"].chunks == ((1, 1, 1), (4,))  # netcdf-c's chunks: (1, 4)
    assert ds["v_i4"].encoding["preferred_chunks"] == {"time": 1, "x": 4}
    assert isinstance(ds["label"].data, da.Array)
    expected = xr.open_dataset(nc_url(path), engine="netcdf4")
    assert_same(expected.load(), ds.load())
    rechunked = xr.open_dataset(path, engine=ENGINE, chunks={"time": 2})
    assert rechunked["packed"].chunks == ((2, 1), (4,))
    assert_same(expected, rechunked.compute())


def test_dask_distributed_workers_read_the_store(corpus, tmp_path):
    path, _ = corpus["everything"]
    archive = _zip_netcdf_layout(path, tmp_path / "dist.zip")
    expected = xr.open_dataset(nc_url(path), engine="netcdf4", group="forecast").load()
    with local_client(n_workers=1, threads_per_worker=2):
        ds = xr.open_dataset(str(archive), engine=ENGINE, group="forecast", chunks={})
        assert_same(expected, ds.compute())


def test_backend_arrays_pickle(corpus):
    path, _ = corpus["everything"]
    ds = xr.open_dataset(path, engine=ENGINE, chunks={})
    restored = pickle.loads(pickle.dumps(ds))
    assert_same(ds.load(), restored.load())


# ------------------------------------------------------------------ the engine itself
def test_entry_point():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = config["project"]["entry-points"]["xarray.backends"]["nczarr"]
    module, _, name = target.partition(":")
    assert getattr(import_module(module), name) is NCZarrBackendEntrypoint
    # the installed package's entry point, not a registration made by the tests
    assert isinstance(xr.backends.list_engines()["nczarr"], NCZarrBackendEntrypoint)


@pytest.mark.parametrize(
    ("src", "claimed"),
    [
        ("file:///data/x.file#mode=nczarr,file", True),
        ("s3://bucket/key#mode=zarr,s3", True),
        ("https://host/bucket/key#mode=nczarr,s3", True),
        ("/data/x.zip", True),
        ("/data/x.file", True),
        ("/data/x.file/", True),
        ("/data/x.nc", False),
        ("/data/x.zarr", False),  # plain Zarr stays with xarray's zarr engine
        ("s3://bucket/x.zarr", False),
        ("zip::s3://bucket/x.zip", True),
        ("https://host/x.nc", False),
        (42, False),
    ],
)
def test_guess_can_open(src, claimed):
    assert NCZarrBackendEntrypoint().guess_can_open(src) is claimed


def test_guess_can_open_claims_a_local_nczarr_dot_zarr(corpus, tmp_path):
    path, _ = corpus["everything"]
    copy = shutil.copytree(path, tmp_path / "copy.zarr")
    assert NCZarrBackendEntrypoint().guess_can_open(str(copy))
    assert NCZarrBackendEntrypoint().guess_can_open(nczarr.MemoryMap(mode="w"))
    # and xarray picks the engine without being told
    from xarray.backends.plugins import guess_engine

    for src in (str(copy), nc_url(path), str(fixture_path("current_netcdf4101.zip"))):
        assert guess_engine(src) == ENGINE
    assert_same(xr.open_dataset(path, engine=ENGINE), xr.open_dataset(nc_url(path)))


def test_missing_group_names_the_store_and_the_groups(corpus):
    path, _ = corpus["everything"]
    with pytest.raises(FileNotFoundError, match=r"group not found: 'nope'.*/forecast/inner"):
        xr.open_dataset(path, engine=ENGINE, group="nope")
    with pytest.raises(nczarr.NCZarrError):
        xr.open_datatree(path, engine=ENGINE, group="forecast/nope")


def test_not_a_store_raises_metadata_error(tmp_path):
    (tmp_path / "empty.file").mkdir()
    with pytest.raises(nczarr.MetadataError, match="not a Zarr store"):
        xr.open_dataset(tmp_path / "empty.file", engine=ENGINE)


def test_storage_options_reach_open_map(corpus):
    path, _ = corpus["everything"]
    # a directory map takes no options: the error comes from open_map, naming them
    with pytest.raises(TypeError, match="storage options"):
        xr.open_dataset(path, engine=ENGINE, storage_options={"anon": True})


def test_skipped_arrays_are_announced(tmp_path):
    import zarr

    group = zarr.open_group(str(tmp_path / "v3.zarr"), mode="w", zarr_format=3)
    group.create_array("ok", shape=(2,), dtype="i4", dimension_names=["x"])[:] = [1, 2]
    group.create_array("c", shape=(2,), dtype="complex64", dimension_names=["x"])[:] = [1j, 2]
    strings = group.create_array("s", shape=(2,), dtype=str, dimension_names=["x"])
    strings[:] = ["a", "b"]  # variable-length strings are read (issue 7, defect 10)
    with pytest.warns(nczarr.NCZarrWarning, match="/c"):
        ds = xr.open_dataset(tmp_path / "v3.zarr", engine=ENGINE)
    assert list(ds.data_vars) == ["ok", "s"] and ds["ok"].values.tolist() == [1, 2]
    assert ds["s"].values.tolist() == ["a", "b"]


def test_closing_the_dataset_closes_the_map(corpus, tmp_path):
    path, _ = corpus["everything"]
    zmap = nczarr.open_map(str(_zip_netcdf_layout(path, tmp_path / "c.zip")))
    ds = xr.open_dataset(zmap, engine=ENGINE)
    ds.close()
    assert not zmap.closed  # an open map is the caller's to close
    zmap.close()
    store = NCZarrDataStore.open(tmp_path / "c.zip")
    owned = store.source.view.source
    ds = xr.open_dataset(store, engine="store")
    assert ds["v_i4"].values[0, 1] == 1
    ds.close()
    assert owned.closed
    store.close()  # idempotent


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        (Attribute("a", "char", "text"), "text"),
        (Attribute("a", "string", ("one",)), "one"),
        (Attribute("a", "string", ("a", "b")), ["a", "b"]),
        (Attribute("a", "short", (3,)), np.int16(3)),
        (Attribute("a", "uint64", (2**64 - 1,)), np.uint64(2**64 - 1)),
    ],
)
def test_attribute_value_follows_netcdf4(attr, expected):
    value = attribute_value(attr)
    assert type(value) is type(expected) and value == expected


def test_attribute_arrays_keep_their_type():
    value = attribute_value(Attribute("a", "float", (1.5, float("nan"))))
    assert value.dtype == np.float32 and value[0] == 1.5 and np.isnan(value[1])


# ------------------------------------------------------------------ stores xarray wrote
def _xarray_sample() -> xr.Dataset:
    return xr.Dataset(
        {
            "t": (
                ("time", "x"),
                np.arange(6.0).reshape(2, 3).astype("f4"),
                {"units": "K", "n": 3, "f": 1.5, "l": [1, 2], "s": "txt"},
            ),
            "i": ("x", np.array([1, 2, -3], "i2")),
        },
        coords={"time": pd.date_range("2000-01-01", periods=2), "x": [10, 20, 30]},
        attrs={"title": "made by xarray", "v": 2},
    )


def test_pure_zarr_v2_written_by_xarray(tmp_path):
    ds = _xarray_sample()
    plain = tmp_path / "plain.zarr"
    ds.to_zarr(plain, zarr_format=2, consolidated=False, encoding={"t": {"compressors": None}})
    # netcdf-c reads it too: both engines agree, attribute types included
    expected = xr.open_dataset(nc_url(plain, "zarr"), engine="netcdf4").load()
    actual = xr.open_dataset(plain, engine=ENGINE).load()
    # except that xarray's v2 fill_value is its _FillValue, which netcdf-c does not mask
    fills = _drop_xarray_fill(expected, actual)
    assert set(fills) == {"t"} and _same_fill(
        fills["t"], xr.open_zarr(plain, consolidated=False)["t"].encoding["_FillValue"]
    )
    assert_same(expected, actual)
    xr.testing.assert_identical(actual, ds)
    # zarr-python's default codecs (blosc) and consolidated metadata, engine only
    default = tmp_path / "default.zarr"
    ds.to_zarr(default, zarr_format=2)
    xr.testing.assert_identical(xr.open_dataset(default, engine=ENGINE).load(), ds)


def test_pure_zarr_v3_written_by_xarray(tmp_path):
    ds = _xarray_sample()
    path = tmp_path / "v3.zarr"
    ds.to_zarr(path, zarr_format=3, consolidated=False)
    actual = xr.open_dataset(path, engine=ENGINE, chunks={})
    xr.testing.assert_identical(actual.load(), ds)
    assert actual["t"].attrs["n"].dtype == np.int32  # netcdf-c's inference for JSON ints


# ------------------------------------------------------------------ differential
_NUMERIC = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]


@st.composite
def netcdf_datasets(draw: st.DrawFn) -> Callable[[netCDF4.Dataset], None]:
    """A random small netCDF-4 dataset: dims, typed variables (numeric, char, string),
    chunking, fill values, partial writes, typed attributes, a subgroup."""
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=2))
    unlimited = draw(st.booleans())
    specs = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from([*_NUMERIC, "S1", "str"]))
        ndim = draw(st.integers(0, len(sizes)))
        dims = tuple(f"d{j}" for j in range(ndim))
        chunks = tuple(draw(st.integers(1, max(1, sizes[j]))) for j in range(ndim))
        fill = draw(st.booleans()) and kind in _NUMERIC
        written = draw(st.integers(0, sizes[0])) if ndim else 1
        attr = draw(st.sampled_from([None, *_NUMERIC, "char", "strings"]))
        specs.append((f"v{i}", kind, dims, chunks, fill, written, attr, draw(st.integers(0, 9))))
    in_group = draw(st.booleans())

    def fill_dataset(ds: netCDF4.Dataset) -> None:
        for j, size in enumerate(sizes):
            ds.createDimension(f"d{j}", None if unlimited and j == 0 else size)
        target = ds.createGroup("sub") if in_group else ds
        for name, kind, dims, chunks, fill, written, attr, seed in specs:
            rng = np.random.default_rng(seed)
            dtype = str if kind == "str" else kind
            kwargs: dict[str, Any] = {"chunksizes": chunks} if dims else {}
            if fill:
                kwargs["fill_value"] = np.array(rng.integers(0, 100)).astype(kind)
            var = target.createVariable(name, dtype, dims, **kwargs)
            shape = tuple([written, *[sizes[j] for j in range(1, len(dims))]]) if dims else ()
            if kind == "str":
                values = np.array(
                    [f"s{rng.integers(0, 1000)}é" for _ in range(int(np.prod(shape)))], object
                ).reshape(shape)
            elif kind == "S1":
                var.set_auto_chartostring(False)
                values = rng.choice(np.array(list(b"abc"), "u1"), shape).view("S1")
            else:
                info = np.iinfo(kind) if kind[0] in "iu" else np.finfo(kind)
                values = rng.uniform(-100, 100, shape).clip(info.min, info.max).astype(kind)
            if dims and written:
                var[:written] = values
            elif not dims:
                var[...] = values
            if attr == "char":
                var.setncattr("a", "text é")
            elif attr == "strings":
                var.setncattr_string("a", ["x", "yz"])
            elif attr is not None:
                var.setncattr("a", np.array([1, 2], attr))

    return fill_dataset


@pytest.mark.generated
@settings(
    max_examples=long_or(examples(12)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fill=netcdf_datasets(), decode=st.booleans())
def test_random_netcdf_datasets_are_identical_to_the_netcdf4_engine(tmp_path, fill, decode):
    path = tmp_path / f"h{uuid.uuid4().hex[:8]}.file"
    build_nc(path, fill)
    try:
        expected = xr.open_datatree(nc_url(path), engine="netcdf4", decode_cf=decode).load()
        actual = xr.open_datatree(path, engine=ENGINE, decode_cf=decode).load()
        assert_same(expected, actual)
    finally:
        shutil.rmtree(path)


def test_chained_url_of_a_zip_elsewhere(corpus, tmp_path):
    import fsspec

    path, _ = corpus["everything"]
    archive = _zip_netcdf_layout(path, tmp_path / "chained.zip")
    fs = fsspec.filesystem("memory")
    remote = f"/xarray-chained-{os.getpid()}/everything.zip"
    fs.pipe(remote, archive.read_bytes())
    try:
        expected = xr.open_datatree(nc_url(path), engine="netcdf4").load()
        assert_same(expected, xr.open_datatree(f"zip::memory://{remote}", engine=ENGINE).load())
    finally:
        fs.rm(remote.rsplit("/", 1)[0], recursive=True)
