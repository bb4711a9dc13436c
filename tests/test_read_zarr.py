"""Pure Zarr reading: fixtures, zarr-python and xarray output, netcdf-c pure mode, the rules."""

from __future__ import annotations

import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from budget import examples
from ncoracle import (
    build,
    corrupt_metadata,
    describe,
    diff,
    fixture_path,
    map_from_dir,
    map_from_zip,
    rename_dimensions,
)

from nczarr.errors import MetadataError, NCZarrWarning
from nczarr.load import load_metadata, read
from nczarr.maps.memory import MemoryMap
from nczarr.translate.model import Attribute, Dimension


def _mem(meta: dict[str, Any]) -> MemoryMap:
    return MemoryMap({k: json.dumps(v).encode() for k, v in meta.items()}, mode="r")


def _zarray(shape: list[int], dtype: str = "<i4", **extra: Any) -> dict[str, Any]:
    return {
        "zarr_format": 2,
        "shape": shape,
        "chunks": [max(1, n) for n in shape],
        "dtype": dtype,
        "fill_value": None,
        "order": "C",
        "compressor": None,
        "filters": None,
        **extra,
    }


# ------------------------------------------------------------------------- fixtures
def test_power_901_constants() -> None:
    ds = read(map_from_zip(fixture_path("ref_power_901_constants_orig.zip")))
    root = ds.root
    assert root.dimensions == {"lat": Dimension("lat", 361), "lon": Dimension("lon", 576)}
    assert list(root.variables) == ["FRLAKE", "FRLAND", "FRLANDICE", "FROCEAN"]
    v = root.variables["FRLAKE"]
    assert (v.type, v.dimensions, v.chunks) == ("float", ("/lat", "/lon"), (30, 30))
    assert math.isnan(v.fill_value)
    assert v.compressor == {
        "blocksize": 0,
        "clevel": 5,
        "cname": "lz4",
        "id": "blosc",
        "shuffle": 1,
    }
    assert v.attributes["valid_range"] == Attribute(
        "valid_range", "double", (-999999986991104.0, 999999986991104.0)
    )
    assert v.attributes["units"] == Attribute("units", "char", "1")
    assert ds.warnings == ()


def test_quotes() -> None:
    ds = read(map_from_zip(fixture_path("ref_quotes_orig.zip")))
    v = ds.root.variables["fractional_snow_cover"]
    assert v.dimensions == ("/time", "/lat", "/lon")
    assert v.attributes["ID"] == Attribute("ID", "int", (68,))
    nan = v.attributes["esa_cci_path"]
    assert nan.type == "double" and math.isnan(nan.value[0])
    assert v.attributes["orig_attrs"].value.startswith("{'comment': 'Grid cell")
    assert '"ESA DUE Globsnow' in v.attributes["orig_attrs"].value


def test_byte_gdal() -> None:
    ds = read(map_from_zip(fixture_path("ref_byte.zarr.zip")))
    assert ds.root.dimensions == {
        "_Anonymous_Dimension_20": Dimension("_Anonymous_Dimension_20", 20)
    }
    v = ds.root.variables["byte"]
    assert (v.type, v.fill_value) == ("ubyte", 0)
    assert v.dimensions == ("/_Anonymous_Dimension_20", "/_Anonymous_Dimension_20")


def test_byte_fill_value_null() -> None:
    ds = read(map_from_zip(fixture_path("ref_byte_fill_value_null.zarr.zip")))
    v = ds.root.variables["byt"]
    assert v.fill_value is None
    assert v.dimensions == ("/_Anonymous_Dim_20", "/_Anonymous_Dim_20")
    assert list(ds.root.dimensions) == ["_Anonymous_Dim_20"]


def test_pure_netcdf_shuffle_is_normalised_so_numcodecs_decodes_it() -> None:
    import numcodecs

    store = map_from_zip(fixture_path("pure_netcdf4101_shuffle.zip"))
    v = read(store).root.variables["ints"]
    assert v.filters == ({"id": "shuffle", "elementsize": 4},)
    data = store["ints/0"]
    for codec in (v.compressor, *reversed(v.filters)):
        data = numcodecs.get_codec(codec).decode(data)
    assert np.frombuffer(data, "<i4").tolist() == (np.arange(100) * 1000 - 7).tolist()


def test_deflate64_zip() -> None:
    v = read(map_from_zip(fixture_path("deflate64_zarr.zip"))).root.variables["a"]
    assert (v.type, v.shape, v.chunks) == ("int", (200, 200), (100, 100))


def test_noshape_reads_as_a_scalar_with_a_warning() -> None:
    """netcdf-c's corrupt-input fixture: shape [] with one name. An odd array, not a
    broken store: read as a scalar (the names ignored), named in a warning."""
    with pytest.warns(
        NCZarrWarning,
        match=r"array '/v': _ARRAY_DIMENSIONS \[\"d0\"\] has 1 name\(s\) but the array has "
        r"rank 0 \(shape \[\]\): read as a scalar",
    ):
        v = read(map_from_zip(fixture_path("ref_noshape.file.zip"))).root.variables["v"]
    assert (v.scalar, v.dimensions, v.shape) == (True, (), ())


# ------------------------------------------------------------ netcdf-c pure mode
def pure(ds: netCDF4.Dataset) -> None:
    ds.createDimension("x", 3)
    ds.createDimension("y", 2)
    ds.title = "pure"
    ds.n = np.int32(5)
    ds.big = np.int64(10**10)
    ds.vec = np.array([0.5, 1.5])
    for t in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]:
        v = ds.createVariable(f"v_{t}", t, ("y", "x"), zlib=True, shuffle=True)
        v.setncattr("units", "m")
    ds.createVariable("lonely", "f8", ("x",), fill_value=-1.0)
    g = ds.createGroup("g")
    g.createDimension("z", 4)
    g.createVariable("gv", "i4", ("z",))


def test_netcdf_c_pure_output_matches_netcdf_c_pure_reading(tmp_path: Path) -> None:
    path = build(tmp_path / "pure.file", pure, mode="zarr")
    ours = read(map_from_dir(path))
    theirs = rename_dimensions(
        describe(path, mode="zarr", layout="zarr"),
        lambda n: n.replace("_Anonymous_Dim_", "_Anonymous_Dimension_"),
    )
    assert diff(ours, theirs) == []


def test_netcdf_c_pure_differences_are_deliberate(tmp_path: Path) -> None:
    """Where the rules of this reader improve on netcdf-c 4.10.1 pure reading."""

    def fill(ds: netCDF4.Dataset) -> None:
        ds.createDimension("x", 2)
        ds.createVariable("sc", "i4", ())
        ds.createVariable("rx", "i4", ("x",))
        ds.setncattr_string("strs", ["a", "b"])
        g = ds.createGroup("g")
        g.createVariable("gx", "i4", ("x",))

    path = build(tmp_path / "d.file", fill, mode="zarr")
    ours, theirs = read(map_from_dir(path)), describe(path, mode="zarr", layout="zarr")
    # ["_scalar_"] + shape [1] is a scalar here; a 1-D variable in netcdf-c
    assert ours.root.variables["sc"].scalar
    assert theirs.root.variables["sc"].dimensions == ("/_scalar_",)
    # a list of strings is a string vector here; JSON char text in netcdf-c
    assert ours.root.attributes["strs"] == Attribute("strs", "string", ("a", "b"))
    assert theirs.root.attributes["strs"] == Attribute("strs", "char", '["a","b"]')
    # a root dimension of the same name and length is shared, not duplicated in g
    assert ours.root.groups["g"].variables["gx"].dimensions == ("/x",)
    assert theirs.root.groups["g"].variables["gx"].dimensions == ("/g/x",)


# ------------------------------------------------------------------- zarr-python
def test_zarr_python_store(tmp_path: Path) -> None:
    import zarr

    root = zarr.open_group(tmp_path / "zp.zarr", mode="w", zarr_format=2)
    root.attrs.update({"i": 1, "f": 2.5, "s": "t", "l": ["a", "b"], "d": {"k": None}})
    root.create_array("anon", shape=(4, 5), dtype="<f8", fill_value=np.nan)
    root.create_array("anon2", shape=(5,), dtype="|i1", fill_value=-1)
    text = root.create_array("text", shape=(3,), dtype="|S5", fill_value=b"ab")
    text.attrs["_ARRAY_DIMENSIONS"] = ["n"]
    root.create_array("flags", shape=(3,), dtype="|b1", fill_value=True).attrs.update(
        {"_ARRAY_DIMENSIONS": ["n"]}
    )
    root.create_array("cplx", shape=(3,), dtype="<c8").attrs["_ARRAY_DIMENSIONS"] = ["n"]
    root.create_array("uni", shape=(3,), dtype="<U5").attrs["_ARRAY_DIMENSIONS"] = ["n"]
    sub = root.create_group("sub")
    sub.create_array(
        "slashed",
        shape=(2, 3),
        dtype=">i2",
        chunk_key_encoding={"name": "v2", "separator": "/"},
        order="F",
    )
    with pytest.warns(NCZarrWarning, match="skipped array '/cplx'"):
        ds = read(tmp_path / "zp.zarr")
    assert ds.root.attributes == {
        "i": Attribute("i", "int", (1,)),
        "f": Attribute("f", "double", (2.5,)),
        "s": Attribute("s", "char", "t"),
        "l": Attribute("l", "string", ("a", "b")),
        "d": Attribute("d", "char", '{"k": null}'),
    }
    assert list(ds.root.dimensions) == [
        "_Anonymous_Dimension_4",
        "_Anonymous_Dimension_5",
        "n",
        "_Anonymous_Dimension_2",
        "_Anonymous_Dimension_3",
    ]
    assert ds.root.variables["anon"].dimensions == (
        "/_Anonymous_Dimension_4",
        "/_Anonymous_Dimension_5",
    )
    assert ds.root.variables["anon2"].dimensions == ("/_Anonymous_Dimension_5",)
    text_var = ds.root.variables["text"]
    assert (text_var.type, text_var.maxstrlen, text_var.fill_value) == ("string", 5, "ab")
    assert (ds.root.variables["flags"].type, ds.root.variables["flags"].fill_value) == ("ubyte", 1)
    slashed = ds.root.groups["sub"].variables["slashed"]
    assert (slashed.dimension_separator, slashed.order, slashed.endian) == ("/", "F", "big")
    assert "cplx" not in ds.root.variables
    uni = ds.root.variables["uni"]  # numpy unicode: a netCDF string kept as "<U5"
    assert (uni.type, uni.maxstrlen, uni.text_storage) == ("string", 5, "unicode")
    assert ds.warnings == (
        "skipped array '/cplx': 'cplx/.zarray': dtype '<c8' (complex) has no netCDF-4 equivalent",
    )


def test_bare_root_array_is_a_variable_named_after_the_store(tmp_path: Path) -> None:
    import zarr

    zarr.create_array(tmp_path / "bare.zarr", shape=(3,), dtype="<i4", zarr_format=2)
    with pytest.warns(NCZarrWarning, match="the store's root is a bare Zarr array"):
        ds = read(tmp_path / "bare.zarr")
    assert list(ds.root.variables) == ["bare"]
    assert ds.root.variables["bare"].path == "/bare"
    assert ds.root.dimensions == {"_Anonymous_Dimension_3": Dimension("_Anonymous_Dimension_3", 3)}
    assert ds.warnings == (
        "the store's root is a bare Zarr array, not a group: exposed as variable 'bare' "
        "of the root group",
    )


# ------------------------------------------------------------------------- xarray
@pytest.mark.parametrize("consolidated", [True, False])
def test_xarray_to_zarr(tmp_path: Path, consolidated: bool) -> None:
    import xarray as xr

    ds = xr.Dataset(
        {
            "temp": (("time", "lat"), np.zeros((2, 3), "f4"), {"units": "K", "scale": 0.5}),
            "count": ((), np.int64(7)),
            "flag": (("lat",), np.array([1, 0, 1], "i1")),
        },
        coords={"lat": [10.0, 20.0, 30.0], "time": [0, 1]},
        attrs={"title": "x", "version": 3},
    )
    ds.to_zarr(tmp_path / "x.zarr", mode="w", zarr_format=2, consolidated=consolidated)
    sub = xr.Dataset({"deep": (("lat",), np.ones(4, "f8"))})
    sub.to_zarr(tmp_path / "x.zarr", group="g", mode="a", zarr_format=2, consolidated=consolidated)
    sub2 = xr.Dataset({"same": (("lat",), np.ones(3, "f8"))})
    sub2.to_zarr(tmp_path / "x.zarr", group="h", mode="a", zarr_format=2, consolidated=consolidated)
    out = read(tmp_path / "x.zarr")
    root = out.root
    assert root.dimensions == {"time": Dimension("time", 2), "lat": Dimension("lat", 3)}
    assert root.attributes == {
        "title": Attribute("title", "char", "x"),
        "version": Attribute("version", "int", (3,)),
    }
    temp = root.variables["temp"]
    assert temp.dimensions == ("/time", "/lat")
    assert temp.attributes["scale"] == Attribute("scale", "double", (0.5,))
    assert math.isnan(temp.fill_value)
    count = root.variables["count"]
    assert (count.scalar, count.shape, count.type) == (True, (), "int64")
    # a name of another length in a subgroup is that group's own dimension ...
    assert root.groups["g"].dimensions == {"lat": Dimension("lat", 4)}
    assert root.groups["g"].variables["deep"].dimensions == ("/g/lat",)
    # ... the same name and length is the ancestor's
    assert root.groups["h"].dimensions == {}
    assert root.groups["h"].variables["same"].dimensions == ("/lat",)


# -------------------------------------------------------------------------- rules
def test_one_name_two_lengths_in_one_group_keeps_the_first_and_renames_the_other() -> None:
    """netcdf-c refuses such a store; nczarr reads it (issue 7, defect 12)."""
    meta = {
        ".zgroup": {"zarr_format": 2},
        "a/.zarray": _zarray([3]),
        "a/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        "b/.zarray": _zarray([4]),
        "b/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        "c/.zarray": _zarray([4, 3]),
        "c/.zattrs": {"_ARRAY_DIMENSIONS": ["x", "x"]},
        "d/.zarray": _zarray([7]),
        "d/.zattrs": {"_ARRAY_DIMENSIONS": ["x_1"]},
    }
    with pytest.warns(NCZarrWarning, match="dimension .x(_1)?. has length"):
        ds = read(_mem(meta))
    assert ds.find_variable("/a").dimensions == ("/x",)
    assert ds.find_variable("/b").dimensions == ("/x_1",)
    assert ds.find_variable("/c").dimensions == ("/x_1", "/x")  # shares the renamed one
    assert ds.find_variable("/d").dimensions == ("/x_1_1",)  # clashes with the new name
    assert ds.root.dimensions == {
        "x": Dimension("x", 3),
        "x_1": Dimension("x_1", 4),
        "x_1_1": Dimension("x_1_1", 7),
    }
    assert any(
        w.startswith("array '/b': dimension 'x' has length 4 here but 3 in 'a/.zarray'")
        for w in ds.warnings
    )


def test_one_name_two_lengths_in_one_array() -> None:
    meta = {
        ".zgroup": {"zarr_format": 2},
        "a/.zarray": _zarray([3, 4]),
        "a/.zattrs": {"_ARRAY_DIMENSIONS": ["x", "x"]},
    }
    with pytest.warns(NCZarrWarning, match="renamed 'x_1'"):
        ds = read(_mem(meta))
    assert ds.find_variable("/a").dimensions == ("/x", "/x_1")
    assert "renamed 'x_1'" in ds.warnings[-1]


def test_shadowing_and_sharing() -> None:
    meta = {
        ".zgroup": {"zarr_format": 2},
        "a/.zarray": _zarray([3]),
        "a/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        "g/.zgroup": {"zarr_format": 2},
        "g/b/.zarray": _zarray([5]),
        "g/b/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
        "g/h/.zgroup": {"zarr_format": 2},
        "g/h/c/.zarray": _zarray([5, 3]),
        "g/h/c/.zattrs": {"_ARRAY_DIMENSIONS": ["x", "y"]},
        "g/h/d/.zarray": _zarray([3]),
        "g/h/d/.zattrs": {"_ARRAY_DIMENSIONS": ["y"]},
    }
    ds = read(_mem(meta))
    g = ds.root.groups["g"]
    assert g.dimensions == {"x": Dimension("x", 5)}
    h = g.groups["h"]
    # nearest ancestor with an 'x' is g (length 5): shared
    assert h.variables["c"].dimensions == ("/g/x", "/g/h/y")
    assert h.dimensions == {"y": Dimension("y", 3)}
    assert h.variables["d"].dimensions == ("/g/h/y",)


@pytest.mark.parametrize(
    ("shape", "names", "scalar", "dims"),
    [
        ([], None, True, ()),
        ([], [], True, ()),
        ([1], ["_scalar_"], True, ()),
        ([1], ["x"], False, ("/x",)),
        ([2], None, False, ("/_Anonymous_Dimension_2",)),
    ],
)
def test_scalars(shape: list[int], names: list[str] | None, scalar: bool, dims: tuple) -> None:
    meta: dict[str, Any] = {".zgroup": {"zarr_format": 2}, "v/.zarray": _zarray(shape)}
    if names is not None:
        meta["v/.zattrs"] = {"_ARRAY_DIMENSIONS": names}
    v = read(_mem(meta)).root.variables["v"]
    assert (v.scalar, v.dimensions) == (scalar, dims)
    assert v.shape == (() if scalar else tuple(shape))


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["x"], r"_ARRAY_DIMENSIONS \[\"x\"\] has 1 name\(s\) but the array has rank 2"),
        (
            ["x", "y", "z"],
            r"_ARRAY_DIMENSIONS \[\"x\",\"y\",\"z\"\] has 3 name\(s\) but the array has rank 2",
        ),
        (["x", 3], r"_ARRAY_DIMENSIONS \[\"x\",3\] is not a list of non-empty names without '/'"),
        (
            ["x", "a/b"],
            r"_ARRAY_DIMENSIONS \[\"x\",\"a/b\"\] is not a list of non-empty names without '/'",
        ),
        ("xy", r"_ARRAY_DIMENSIONS \"xy\" is not a list of non-empty names"),
    ],
)
def test_bad_array_dimensions(names: Any, message: str) -> None:
    """Names that cannot name the axes make the array's axes anonymous, with a warning
    naming the array; the rest of the store reads as usual."""
    meta = {
        ".zgroup": {"zarr_format": 2},
        "v/.zarray": _zarray([2, 3]),
        "v/.zattrs": {"_ARRAY_DIMENSIONS": names},
        "w/.zarray": _zarray([2]),
        "w/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
    }
    with pytest.warns(NCZarrWarning, match=r"array '/v': " + message):
        root = read(_mem(meta)).root
    assert root.variables["v"].dimensions == (
        "/_Anonymous_Dimension_2",
        "/_Anonymous_Dimension_3",
    )
    assert root.variables["w"].dimensions == ("/x",)


def test_group_and_array_at_one_node() -> None:
    meta = {".zgroup": {"zarr_format": 2}, "v/.zarray": _zarray([2]), "v/.zgroup": {}}
    with pytest.raises(MetadataError, match=r"'v' holds both .zgroup and .zarray"):
        read(_mem(meta))


def test_implicit_intermediate_groups() -> None:
    """The translator implies missing groups (e.g. consolidated metadata without them);
    the loader, like zarr-python and netcdf-c, only descends into real groups."""
    from nczarr.translate.read_zarr2 import read_zarr2

    meta = {".zgroup": {"zarr_format": 2}, "a/b/v/.zarray": _zarray([2])}
    ds = read_zarr2(meta)
    assert ds.find_variable("/a/b/v").path == "/a/b/v"
    assert ds.find_group("/a/b").name == "b"
    assert read(_mem(meta)).root.groups == {}


def test_fill_value_attribute_takes_the_array_type() -> None:
    meta = {
        ".zgroup": {"zarr_format": 2},
        "v/.zarray": _zarray([2], "<i2"),
        "v/.zattrs": {"_FillValue": -5, "other": -5},
    }
    attrs = read(_mem(meta)).root.variables["v"].attributes
    assert attrs["_FillValue"] == Attribute("_FillValue", "short", (-5,))
    assert attrs["other"] == Attribute("other", "int", (-5,))


# --------------------------------------------------------------------------- fuzz
_BASES = [
    load_metadata(map_from_zip(fixture_path("ref_power_901_constants_orig.zip"))),
    load_metadata(map_from_zip(fixture_path("ref_byte_fill_value_null.zarr.zip"))),
    load_metadata(map_from_zip(fixture_path("pure_netcdf4101_shuffle.zip"))),
]


@pytest.mark.generated
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_metadata_only_raises_metadata_errors(data: st.DataObject) -> None:
    from nczarr.translate.read_zarr2 import read_zarr2

    meta = corrupt_metadata(data, data.draw(st.sampled_from(_BASES)))
    with contextlib.suppress(MetadataError):
        read_zarr2(meta)


def test_a_structured_dtype_in_a_netcdf_c_48_store_is_no_char_question() -> None:
    import warnings

    import nczarr

    """The 4.8/4.9.0 char rule asks a .zarray's dtype; a structured dtype is a list
    (the metadata fuzz found a TypeError there): it is read or skipped as elsewhere."""
    import json

    meta = nczarr.MemoryMap(mode="w")
    meta[".zgroup"] = b'{"zarr_format": 2}'
    meta[".zattrs"] = json.dumps({"_NCProperties": "version=2,netcdf=4.8.0,nczarr=1.0.0"}).encode()
    meta["s/.zarray"] = json.dumps(
        {
            "zarr_format": 2,
            "shape": [2],
            "chunks": [2],
            "dtype": [["a", "<i4"]],
            "compressor": None,
            "filters": None,
            "fill_value": None,
            "order": "C",
        }
    ).encode()
    meta["s/.zattrs"] = b'{"_ARRAY_DIMENSIONS": ["x"]}'
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nczarr.read(meta)
