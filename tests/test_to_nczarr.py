"""``nczarr.to_nczarr``: what xarray writes, netcdf-c reads back, identical.

The oracle is libnetcdf: ``xr.open_dataset(url, engine="netcdf4")`` on the written
directory store must return the input (``assert_identical``), and netCDF4 must see
netCDF types (``string``, ``char``, typed attributes), dimensions (shared down the
groups, unlimited) and the CF encoding xarray's netcdf4 engine would have written.
"""

from __future__ import annotations

import shutil
import uuid
import zipfile
from pathlib import Path
from typing import Any

import dask.array as da
import netCDF4
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nczarr

from .budget import long_or
from .ncoracle import NC_TYPE_IDS, describe, nc_url
from .test_xarray_backend import (
    ENGINE,
    build_nc,
    fill_everything,
)


def sample() -> xr.Dataset:
    """Every kind of value xarray's netcdf4 engine writes."""
    return xr.Dataset(
        {
            "temp": (
                ("time", "x"),
                np.array([[1.5, np.nan, np.inf, -np.inf], [0.0, -0.0, 3.25, 1e30]], "f4"),
                {"units": "K", "valid_range": np.array([0, 400], "f4"), "flag": np.int8(1)},
            ),
            "label": ("x", np.array(["a", "bé", "", "ß" * 200])),
            "olabel": ("x", np.array(["a", "b", "c", "d"], dtype=object)),
            "code": ("x", np.array([b"a", b"bc", b"", b"dddd"])),
            "ok": ("x", np.array([True, False, True, True])),
            "count": ((), np.int16(5), {"long_name": "a 0-d scalar"}),
            "big": ("x", np.array([np.iinfo("i8").min, -1, 0, np.iinfo("i8").max])),
            "ubig": ("x", np.array([0, 1, 2, np.iinfo("u8").max], "u8")),
            "seen": ("x", pd.to_datetime(["2001-01-01", None, "2001-02-03", "1999-12-31"])),
            "packed": ("x", np.array([1.5, np.nan, 2.25, -3.0])),
        },
        coords={"time": pd.date_range("2000-01-01", periods=2, freq="D"), "x": np.arange(4.0)},
        attrs={
            "title": "t",
            "n": np.int32(3),
            "fs": [1.0, 2.0],
            "ss": ["a", "b"],
            "u": np.uint16(7),
            "i": 12,
        },
    )


ENCODING = {"packed": {"dtype": "i2", "scale_factor": np.float32(0.25), "_FillValue": -999}}


def _roundtrip(tmp_path: Path, obj, **kwargs) -> Path:
    path = tmp_path / "out.file"
    nczarr.to_nczarr(obj, str(path), **kwargs)
    return path


def test_dataset_round_trips_through_netcdf_c(tmp_path):
    ds = sample()
    path = _roundtrip(tmp_path, ds, encoding=ENCODING, unlimited_dims=["time"])
    with xr.open_dataset(nc_url(path), engine="netcdf4") as back:
        xr.testing.assert_identical(back.load(), ds)
        assert back["packed"].encoding["scale_factor"] == np.float32(0.25)
        assert back.encoding["unlimited_dims"] == {"time"}
    with xr.open_dataset(path, engine=ENGINE) as mine:
        xr.testing.assert_identical(mine.load(), ds)


def test_netcdf_c_sees_netcdf_types_and_cf_encoding(tmp_path):
    path = _roundtrip(tmp_path, sample(), encoding=ENCODING, unlimited_dims=["time"])
    with netCDF4.Dataset(nc_url(path)) as nc:
        assert nc.dimensions["time"].isunlimited()
        assert nc["label"].dtype is str  # netCDF string
        assert nc["code"].dtype == np.dtype("S1") and nc["code"].dimensions == ("x", "string4")
        assert nc["ok"].dtype == np.int8 and nc["ok"].getncattr("dtype") == "bool"
        assert nc["count"].dimensions == () and nc["count"][...] == 5
        assert nc["time"].units.startswith("days since 2000-01-01")
        assert nc["packed"].dtype == np.int16
        assert nc["seen"].dtype == np.int64 and "units" in nc["seen"].ncattrs()
    model = describe(path)
    root = model.root
    assert {n: a.type for n, a in root.attributes.items()} == {
        "title": "char",
        "n": "int",
        "fs": "double",
        "ss": "string",
        "u": "ushort",
        "i": "int64",
    }
    assert root.variables["temp"].attributes["valid_range"].type == "float"
    assert root.variables["temp"].attributes["flag"].type == "byte"
    assert root.variables["packed"].attributes["scale_factor"].type == "float"
    assert root.variables["label"].type == "string"
    assert set(NC_TYPE_IDS.values()) >= {v.type for v in root.variables.values()}


def test_a_netcdf_c_dataset_read_by_xarray_is_written_back_identical(tmp_path):
    src = build_nc(tmp_path / "src.file", fill_everything)
    original = xr.open_datatree(nc_url(src), engine="netcdf4").load()
    path = tmp_path / "copy.file"
    nczarr.to_nczarr(original, str(path))
    # xarray's encoding adds _FillValue=NaN to floats that had none (as to_netcdf
    # does), so encodings may differ; values, attributes and dtypes may not
    for back in (
        xr.open_datatree(nc_url(path), engine="netcdf4").load(),
        xr.open_datatree(path, engine=ENGINE).load(),
    ):
        xr.testing.assert_identical(original, back)
        for node_path, node in original.subtree_with_keys:
            for name, var in node.variables.items():
                assert back[node_path].variables[name].dtype == var.dtype, (node_path, name)
                for key, value in var.attrs.items():
                    other = back[node_path].variables[name].attrs[key]
                    assert type(other) is type(value), (node_path, name, key)


def test_datatree_groups_share_inherited_dimensions(tmp_path):
    tree = xr.DataTree.from_dict(
        {
            "/": xr.Dataset({"x": ("x", [1, 2, 3])}, attrs={"root": "yes"}),
            "/a": xr.Dataset({"v": ("x", [1.0, 2.0, 3.0]), "w": ("y", np.arange(2, dtype="i2"))}),
            "/a/b": xr.Dataset({"s": ("y", ["p", "q"])}, attrs={"level": np.int16(2)}),
        }
    )
    path = _roundtrip(tmp_path, tree)
    with netCDF4.Dataset(nc_url(path)) as nc:
        assert list(nc.dimensions) == ["x"]
        assert list(nc["a"].dimensions) == ["y"]  # x is the root's
        assert nc["a"]["v"].get_dims()[0].group().path == "/"
        assert nc["a/b"]["s"].get_dims()[0].group().path == "/a"
    back = xr.open_datatree(nc_url(path), engine="netcdf4").load()
    xr.testing.assert_identical(back, tree)
    xr.testing.assert_identical(xr.open_datatree(path, engine=ENGINE).load(), tree)


def test_dask_arrays_are_stored_chunk_by_chunk(tmp_path):
    data = da.arange(60, chunks=7, dtype="f8").reshape(6, 10).rechunk((4, 3))
    ds = xr.Dataset({"v": (("a", "b"), data)})
    path = _roundtrip(tmp_path, ds)
    with netCDF4.Dataset(nc_url(path)) as nc:
        assert nc["v"].chunking() == [4, 3]
        np.testing.assert_array_equal(nc["v"][:], np.arange(60.0).reshape(6, 10))
    explicit = _roundtrip(tmp_path / "e", ds, encoding={"v": {"chunksizes": (6, 5), "zlib": True}})
    with netCDF4.Dataset(nc_url(explicit)) as nc:
        assert nc["v"].chunking() == [6, 5]
        assert nc["v"].filters()["zlib"] and nc["v"].filters()["shuffle"]
        np.testing.assert_array_equal(nc["v"][:], np.arange(60.0).reshape(6, 10))


def test_zip_target_has_netcdf_c_layout(tmp_path):
    ds = sample()
    archive = tmp_path / "out.zip"
    nczarr.to_nczarr(ds, str(archive), encoding=ENCODING)
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        assert all(n.startswith("out/") for n in names)
        zf.extractall(tmp_path / "unzipped")
    directory = tmp_path / "unzipped" / "out"
    xr.testing.assert_identical(xr.open_dataset(nc_url(directory), engine="netcdf4").load(), ds)
    xr.testing.assert_identical(xr.open_dataset(archive, engine=ENGINE).load(), ds)


def test_s3_target_with_storage_options(tmp_path, s3_endpoint, s3_bucket):
    ds = sample()
    url = f"s3://{s3_bucket}/out#mode=nczarr,s3"
    options = {"endpoint_url": s3_endpoint}
    nczarr.to_nczarr(ds, url, storage_options=options, encoding=ENCODING)
    back = xr.open_dataset(url, engine=ENGINE, storage_options=options)
    xr.testing.assert_identical(back.load(), ds)
    assert nczarr.detect(nczarr.open_map(url, **options)).layout == "nczarr-v2"


def test_mode_w_dash_refuses_an_existing_store_and_w_replaces_it(tmp_path):
    path = _roundtrip(tmp_path, sample())
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    with pytest.raises(nczarr.TargetExistsError, match="mode='w'"):
        nczarr.to_nczarr(xr.Dataset({"z": ("q", [1])}), str(path))
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before
    replacement = xr.Dataset({"z": ("q", np.array([1, 2], "i4"))})
    nczarr.to_nczarr(replacement, str(path), mode="w")
    back = xr.open_dataset(nc_url(path), engine="netcdf4").load()
    xr.testing.assert_identical(back, replacement)
    assert not (path / "temp").exists()


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "a"}, {"mode": "r+"}, {"region": {"x": slice(0, 2)}}, {"append_dim": "time"}],
)
def test_appending_and_regions_are_refused_clearly(tmp_path, kwargs):
    with pytest.raises(nczarr.UnsupportedError, match="does not support"):
        nczarr.to_nczarr(sample(), str(tmp_path / "x.file"), **kwargs)
    assert not (tmp_path / "x.file").exists()


def test_invalid_mode(tmp_path):
    with pytest.raises(nczarr.InvalidModeError, match="'x'"):
        nczarr.to_nczarr(sample(), str(tmp_path / "x.file"), mode="x")


@pytest.mark.parametrize(
    ("ds", "message"),
    [
        (xr.Dataset(attrs={"flag": True}), "'flag'.*boolean"),
        (xr.Dataset({"c": ("x", np.array([1 + 2j]))}), "'/c'.*complex"),
        (xr.Dataset({"o": ("x", np.array([1, "a"], dtype=object))}), "'o'.*mixed"),
    ],
)
def test_untypable_values_fail_before_anything_is_written(tmp_path, ds, message):
    with pytest.raises((ValueError, nczarr.UnsupportedTypeError), match=message):
        nczarr.to_nczarr(ds, str(tmp_path / "x.file"))
    assert not (tmp_path / "x.file").exists()


def test_not_an_xarray_object(tmp_path):
    with pytest.raises(TypeError, match="Dataset or DataTree"):
        nczarr.to_nczarr({"a": 1}, str(tmp_path / "x.file"))


@st.composite
def xarray_datasets(draw: st.DrawFn) -> xr.Dataset:
    """A random small Dataset of what xarray writes to netCDF: numbers (with NaN/inf
    and extremes), text, bytes, booleans, datetimes with NaT, scalars, typed attributes."""
    n = draw(st.integers(1, 4))
    variables: dict[str, Any] = {}
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["i1", "u2", "i4", "u8", "i8", "f4", "f8", "U", "S", "b", "M"]))
        shape = () if draw(st.booleans()) and kind not in "SM" else (n,)
        size = int(np.prod(shape))
        if kind == "U":
            # (lone surrogates are not text netCDF can store: see the test below)
            text = st.text(
                st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=5
            )
            values = np.array(draw(st.lists(text, min_size=size, max_size=size)))
        elif kind == "S":
            values = np.array(
                draw(
                    st.lists(
                        st.binary(min_size=1, max_size=4).filter(lambda b: b"\0" not in b),
                        min_size=size,
                        max_size=size,
                    )
                )
            )
        elif kind == "b":
            values = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
        elif kind == "M":
            days = draw(
                st.lists(st.none() | st.integers(-5000, 5000), min_size=size, max_size=size)
            )
            values = pd.to_datetime(
                [
                    None if d is None else pd.Timestamp("2000-01-01") + pd.Timedelta(days=d)
                    for d in days
                ]
            ).values
        else:
            values = draw(hnp.arrays(kind, size))
        attrs = {"a": draw(st.sampled_from([np.int16(3), np.float32(0.5), "t", ["p", "q"], 7]))}
        variables[f"v{i}"] = (("x",) if shape else (), values.reshape(shape), attrs)
    return xr.Dataset(variables, attrs={"g": draw(st.sampled_from([np.uint8(1), "z", 1.5]))})


@settings(
    max_examples=long_or(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ds=xarray_datasets())
def test_random_datasets_round_trip_through_netcdf_c(tmp_path, ds):
    path = tmp_path / f"r{uuid.uuid4().hex[:8]}.file"
    try:
        nczarr.to_nczarr(ds, str(path))
        back = xr.open_dataset(nc_url(path), engine="netcdf4").load()
        xr.testing.assert_identical(back, ds)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_nul_characters_in_text_are_announced(tmp_path):
    ds = xr.Dataset({"s": ("x", np.array(["a\0b", "c"]))})
    with pytest.warns(nczarr.NCZarrWarning, match=r"/s: 1 value\(s\) contain a NUL"):
        nczarr.to_nczarr(ds, str(tmp_path / "nul.file"))
    back = xr.open_dataset(nc_url(tmp_path / "nul.file"), engine="netcdf4")
    assert back["s"].values.tolist() == ["a", "c"]


@pytest.mark.parametrize("engine", ["netcdf4", ENGINE])
def test_replacing_the_store_being_read_is_refused(tmp_path, engine):
    path = _roundtrip(tmp_path, sample())
    src = nc_url(path) if engine == "netcdf4" else str(path)
    ds = xr.open_dataset(src, engine=engine)
    with pytest.raises(nczarr.InvalidModeError, match="is read from it"):
        nczarr.to_nczarr(ds, nc_url(path), mode="w")
    ds.close()
    xr.testing.assert_identical(xr.open_dataset(path, engine=ENGINE).load(), sample())


def test_fill_values_take_the_variable_type(tmp_path):
    ds = xr.Dataset(
        {
            "s": ("x", np.array(["a", "missing"], dtype=object)),
            "i": ("x", np.array([1, 2], "i2")),
        }
    )
    encoding = {"s": {"_FillValue": "missing"}, "i": {"_FillValue": 2}}
    path = _roundtrip(tmp_path, ds, encoding=encoding)
    model = describe(path)
    assert model.root.variables["i"].attributes["_FillValue"].type == "short"
    assert model.root.variables["s"].attributes["_FillValue"].type == "string"
    with xr.open_dataset(nc_url(path), engine="netcdf4") as back:
        assert back["i"].values[0] == 1 and np.isnan(back["i"].values[1])
        assert back["s"].encoding["_FillValue"] == "missing"


def test_lone_surrogates_are_refused_before_anything_is_written(tmp_path):
    target = tmp_path / "s.file"
    ds = xr.Dataset({"t": ("x", np.array(["ok", "bad \ud800"], dtype=object))})
    with pytest.raises(nczarr.UnsupportedError, match="lone surrogate"):
        nczarr.to_nczarr(ds, str(target))
    assert not target.exists() or not any(target.rglob("*"))
