"""NCZarr reading, every generation, against netcdf-c (netCDF4) as the oracle."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from ncoracle import (
    build,
    corrupt_metadata,
    describe,
    diff,
    fixture_path,
    map_from_dir,
    map_from_zip,
)

from nczarr.errors import DimensionConflictError, MetadataError, NCZarrWarning
from nczarr.load import load_metadata, read
from nczarr.maps.memory import MemoryMap
from nczarr.translate.model import Attribute, Dimension

NUMERIC = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]


def rich(ds: netCDF4.Dataset) -> None:
    """Nested groups, unlimited and shadowed dims, every type in both byte orders,
    char/string/scalar variables, fills, codecs and attributes of every type."""
    ds.createDimension("x", 4)
    ds.createDimension("t", None)
    ds.setncattr("title", "rich dataset")
    ds.setncattr("json_dict", '{"a": [1,2], "b": {"c": null}}')
    ds.setncattr("json_list", "[1.0,0.0,2.5]")
    ds.setncattr("json_odd", "[0.,0.,1.]")
    ds.setncattr("not_json", "[1, 2")
    ds.setncattr_string("strs", ["a", "bc", ""])
    ds.setncattr_string("str1", "single")
    ds.setncattr("nan", np.float64("nan"))
    ds.setncattr("inf", np.float32("inf"))
    for t in NUMERIC:
        top = np.iinfo(t).max if t[0] in "iu" else 1.5
        ds.setncattr(f"a_{t}", np.array([top, 1], dtype=t))
        for endian in ("little", "big"):
            v = ds.createVariable(f"v_{t}_{endian[0]}", np.dtype(t), ("t", "x"), endian=endian)
            v.setncattr("scalar_attr", np.array(3, dtype=t))
    ds["v_i4_l"][0:2, :] = 1
    ds.createVariable("z", "f8", ("x",), zlib=True, shuffle=True, complevel=6)
    ds.createVariable("zf", "i4", ("x",), zlib=True, fletcher32=True)
    ds.createVariable("zs", "i2", ("x",), compression="zstd", complevel=3)
    ds.createVariable("zb", "i4", ("x",), compression="blosc_lz4", complevel=2)
    ds.createVariable("c", "S1", ("x",), fill_value=b"z")
    ds.createVariable("s", str, ("x",))
    sc = ds.createVariable("sc", "f4", (), fill_value=np.float32("nan"))
    sc.units = "K"
    ds.createVariable("nofill", "u8", ("x",), fill_value=False)
    g = ds.createGroup("g")
    g.createDimension("y", 3)
    g.createDimension("x", 5)  # shadows the root's x
    g.setncattr("gattr", np.int16(-5))
    g.createVariable("gv", "u2", ("y", "x"))
    g.createVariable("gv_root", "i4", ("y", "t"))
    h = g.createGroup("h")
    h.createVariable("hv", "f8", ("y",), fill_value=-1.0)
    h.createVariable("hs", str, ("y",)).setncattr("_nczarr_maxstrlen", np.int32(16))


def jsonconvention(ds: netCDF4.Dataset) -> None:
    """ref_jsonconvention.cdl."""
    ds.createDimension("d1", 1)
    v = ds.createVariable("v", "i4", ("d1",))
    v.varjson1 = '{"key1": [1,2,3], "key2": {"key3": "abc"}}'
    v.varjson2 = "[[1.0,0.0,0.0],[0.0,1.0,0.0],[0.0,0.0,1.0]]"
    v.varjson3 = "[0.,0.,1.]"
    v.varchar1 = "1.0, 0.0, 0.0"
    ds.globalfloat = 1.0
    ds.globalfloatvec = np.array([1.0, 2.0])
    ds.globalchar = "abc"
    ds.globalillegal = "[ [ 1.0, 0.0, 0.0 ], [ 0.0, 1.0, 0.0 ], [ 0.0, 0.0, 1.0 "


def strings(ds: netCDF4.Dataset) -> None:
    """ref_string.cdl."""
    ds.createDimension("d2", 2)
    ds.createVariable("c", "S1", ("d2",))
    ds.createVariable("v", str, ("d2",))
    ds.createVariable("truncated", str, ()).setncattr("_nczarr_maxstrlen", np.int32(4))
    ds.setncattr_string("stringattr", ["abc", "def"])
    ds.charattr = "ghijkl"
    ds.setncattr("_nczarr_default_maxstrlen", np.int32(6))


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("oracle")
    with pytest.warns(UserWarning, match="endian"):
        out = {"rich": build(root / "rich.file", rich)}
    out["json"] = build(root / "json.file", jsonconvention)
    out["strings"] = build(root / "strings.file", strings)
    return out


def test_rich_dataset_matches_netcdf_c(stores: dict[str, Path]) -> None:
    ours = read(map_from_dir(stores["rich"]))
    theirs = describe(stores["rich"])
    # The one deliberate difference: netcdf-c keeps one character of a char attribute
    # stored as a JSON number; nczarr keeps the text.
    assert ours.root.attributes["json_odd"] == Attribute("json_odd", "char", "[0.,0.,1.]")
    assert diff(ours, theirs) == []
    assert ours == theirs
    assert ours.warnings == ()


def test_rich_dataset_details(stores: dict[str, Path]) -> None:
    ds = read(map_from_dir(stores["rich"]))
    root = ds.root
    assert root.dimensions == {"x": Dimension("x", 4), "t": Dimension("t", 2, True)}
    assert root.variables["v_i4_l"].shape == (2, 4)
    assert root.variables["v_i2_b"].endian == "big"
    assert root.variables["v_u1_b"].endian == "big"
    assert root.variables["z"].filters == ({"id": "shuffle", "elementsize": 8},)
    assert root.variables["z"].compressor == {"id": "zlib", "level": 6}
    assert root.variables["nofill"].fill_value is None
    assert root.variables["c"].type == "char" and root.variables["c"].fill_value == "z"
    assert root.variables["s"].maxstrlen == 128
    sc = root.variables["sc"]
    assert (sc.scalar, sc.shape, sc.dimensions, sc.chunks) == (True, (), (), ())
    g = root.groups["g"]
    assert g.variables["gv"].dimensions == ("/g/y", "/g/x")
    assert g.variables["gv_root"].dimensions == ("/g/y", "/t")
    assert g.groups["h"].variables["hs"].maxstrlen == 16
    assert root.attributes["strs"] == Attribute("strs", "string", ("a", "bc", ""))
    assert root.attributes["a_u8"] == Attribute("a_u8", "uint64", (2**64 - 1, 1))


def test_char_attribute_stored_as_json_number_keeps_its_text(tmp_path: Path) -> None:
    def fill(ds: netCDF4.Dataset) -> None:
        ds.setncattr("n", "17")
        ds.setncattr("b", "true")

    path = build(tmp_path / "n.file", fill)
    assert json.loads((path / ".zattrs").read_text())["n"] == 17
    ours, theirs = read(map_from_dir(path)), describe(path)
    assert ours.root.attributes["n"] == Attribute("n", "char", "17")
    assert ours.root.attributes["b"] == Attribute("b", "char", "true")
    assert theirs.root.attributes["n"].value == "1"  # netcdf-c's truncation


def test_json_convention_matches_netcdf_c(stores: dict[str, Path]) -> None:
    ours = read(map_from_dir(stores["json"]))
    assert diff(ours, describe(stores["json"])) == []
    attrs = ours.root.variables["v"].attributes
    assert attrs["varjson2"].value == "[[1.0,0.0,0.0],[0.0,1.0,0.0],[0.0,0.0,1.0]]"
    assert attrs["varchar1"].value == "1.0, 0.0, 0.0"


def test_strings_match_netcdf_c(stores: dict[str, Path]) -> None:
    ours = read(map_from_dir(stores["strings"]))
    assert diff(ours, describe(stores["strings"])) == []
    root = ours.root
    assert root.variables["v"].maxstrlen == 6
    assert root.variables["truncated"].maxstrlen == 4
    assert root.attributes["_nczarr_default_maxstrlen"] == Attribute(
        "_nczarr_default_maxstrlen", "int", (6,)
    )
    assert root.attributes["stringattr"] == Attribute("stringattr", "string", ("abc", "def"))


# ------------------------------------------------------------------------- fixtures
def test_current_netcdf4101() -> None:
    ds = read(map_from_zip(fixture_path("current_netcdf4101.zip")))
    root = ds.root
    assert ds.layout == "nczarr-v2"
    assert root.dimensions == {"t": Dimension("t", 3, True), "x": Dimension("x", 6)}
    assert [(v.name, v.type) for v in root.variables.values()] == [
        ("v", "double"),
        ("c", "char"),
        ("s", "string"),
        ("sc", "int"),
    ]
    assert root.variables["v"].filters == ({"id": "shuffle", "elementsize": 8},)
    assert root.variables["v"].attributes["units"] == Attribute("units", "char", "m")
    assert root.variables["sc"].scalar
    assert root.groups["g"].variables["gv"].dimensions == ("/g/y", "/x")
    assert root.attributes["pi"] == Attribute("pi", "double", (3.14159,))


def test_oldformat_v1() -> None:
    """ref_oldformat_v1.cdl: lat(lat) in root, g1/pos(lat, lon), decimal type codes."""
    ds = read(map_from_zip(fixture_path("ref_oldformat_v1.zip")))
    assert ds.layout == "nczarr-v1"
    assert ds.root.dimensions == {"lat": Dimension("lat", 8)}
    lat = ds.root.variables["lat"]
    assert lat.attributes == {
        "_FillValue": Attribute("_FillValue", "int", (-1,)),
        "lat_attr": Attribute("lat_attr", "char", "latitude"),
    }
    g1 = ds.root.groups["g1"]
    assert g1.dimensions == {"lon": Dimension("lon", 10)}
    assert g1.attributes == {"g1_attr": Attribute("g1_attr", "int", (17,))}
    assert g1.variables["pos"].dimensions == ("/lat", "/g1/lon")
    assert g1.variables["pos"].attributes["pos_attr"].value == "latXlon"
    assert ds.root.attributes == {}  # _NCProperties is hidden


def test_oldformat_v2attrs() -> None:
    ds = read(map_from_zip(fixture_path("ref_oldformat_v2attrs.zip")))
    assert list(ds.root.dimensions) == ["_Anonymous_Dim_8", "_Anonymous_Dim_10"]
    pos = ds.root.groups["g1"].variables["pos"]
    assert pos.dimensions == ("/_Anonymous_Dim_8", "/_Anonymous_Dim_10")
    assert ds.root.groups["g1"].attributes["g1_attr"] == Attribute("g1_attr", "int", (17,))


def test_oldkeys() -> None:
    ds = read(map_from_zip(fixture_path("ref_oldkeys.file.zip")))
    assert ds.layout == "nczarr-v2-keys"
    assert list(ds.root.dimensions) == ["d0", "d1", "d2"]
    v = ds.root.variables["v"]
    assert (v.type, v.dimensions, v.fill_value) == ("int", ("/d0", "/d1", "/d2"), None)
    assert v.attributes == {"_FillValue": Attribute("_FillValue", "int", (-1,))}


def test_v2uc_ncgen490() -> None:
    """Upper-case keys, <U1 char (attribute and variable), storage: scalar."""
    ds = read(map_from_zip(fixture_path("v2uc_ncgen490.zip")))
    root = ds.root
    assert root.dimensions == {"station": Dimension("station", 4), "level": Dimension("level", 2)}
    assert root.attributes == {
        "institution": Attribute("institution", "char", "example"),
        "version": Attribute("version", "int", (2,)),
        "weights": Attribute("weights", "double", (0.25, 0.75)),
    }
    assert root.variables["id"].type == "char"
    assert root.variables["code"].attributes["flag_values"] == Attribute(
        "flag_values", "short", (1, 2, 3)
    )
    count = root.variables["count"]
    assert (count.type, count.scalar, count.shape) == ("int64", True, ())
    t = root.groups["sub"].variables["t"]
    assert t.dimensions == ("/sub/n", "/level")
    assert t.attributes["long_name"] == Attribute("long_name", "char", "temperature")


def test_v2_keys_with_string_codec_params_and_scalar_storage() -> None:
    """netcdf-c 4.9.x wrote codec params as strings and scalars as storage: scalar."""
    meta = {
        ".zgroup": {
            "zarr_format": 2,
            "_nczarr_superblock": {"version": "2.0.0"},
            "_nczarr_group": {"dims": {"n": 3}, "vars": ["a", "s"], "groups": []},
        },
        "a/.zarray": {
            "zarr_format": 2,
            "shape": [3],
            "dtype": "<i4",
            "chunks": [3],
            "fill_value": -1,
            "order": "C",
            "compressor": {"id": "zlib", "level": "5"},
            "filters": [{"id": "shuffle", "elementsize": "0"}],
            "_nczarr_array": {"dimrefs": ["/n"], "storage": "chunked"},
        },
        "s/.zarray": {
            "zarr_format": 2,
            "shape": [1],
            "dtype": "<f8",
            "chunks": [1],
            "fill_value": "NaN",
            "order": "C",
            "compressor": None,
            "filters": None,
            "_nczarr_array": {"dimrefs": [], "storage": "scalar"},
        },
    }
    ds = read(_mem(meta))
    a = ds.root.variables["a"]
    assert a.compressor == {"id": "zlib", "level": 5}
    assert a.filters == ({"id": "shuffle", "elementsize": 4},)
    assert ds.root.variables["s"].scalar


# --------------------------------------------------------------------- fallbacks
def _mem(meta: dict[str, Any]) -> MemoryMap:
    return MemoryMap({k: json.dumps(v).encode() for k, v in meta.items()}, mode="r")


def _current() -> dict[str, Any]:
    return load_metadata(map_from_zip(fixture_path("current_netcdf4101.zip")))


def test_listed_array_without_nczarr_metadata_falls_back_with_warning() -> None:
    meta = _current()
    del meta["c/.zattrs"]["_nczarr_array"]
    with pytest.warns(NCZarrWarning, match="array '/c' has no NCZarr array metadata"):
        ds = read(_mem(meta))
    assert ds.root.variables["c"].dimensions == ("/x",)  # from _ARRAY_DIMENSIONS
    assert ds.warnings == (
        "array '/c' has no NCZarr array metadata: dimensions taken from _ARRAY_DIMENSIONS "
        "or made anonymous",
    )


def test_group_without_list_is_found_by_listing() -> None:
    meta = _current()
    del meta["g/.zattrs"]["_nczarr_group"]
    store = _mem(meta)
    with pytest.warns(NCZarrWarning, match="group '/g' has no NCZarr group metadata"):
        ds = read(store)
    gv = ds.root.groups["g"].variables["gv"]
    assert gv.dimensions == ("/g/y", "/x")  # _nczarr_array still names the root x
    assert ds.warnings[0].startswith("group '/g' has no NCZarr group metadata")


def test_unlisted_array_is_invisible() -> None:
    meta = _current()
    meta["extra/.zarray"] = meta["c/.zarray"]
    assert "extra" not in read(_mem(meta)).root.variables


def test_unsupported_dtype_is_skipped_with_warning() -> None:
    meta = _current()
    meta["c/.zarray"]["dtype"] = "<c16"
    with pytest.warns(NCZarrWarning, match="skipped array '/c'"):
        ds = read(_mem(meta))
    assert "c" not in ds.root.variables
    assert ds.warnings == (
        "skipped array '/c': 'c/.zarray': dtype '<c16' (complex) has no netCDF-4 equivalent",
    )


# ---------------------------------------------------------------------- malformed
Mutation = Callable[[dict[str, Any]], None]


def _set(key: str, path: tuple[Any, ...], value: Any) -> Mutation:
    def mutate(meta: dict[str, Any]) -> None:
        target = meta[key]
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            _set(".zattrs", ("_nczarr_group", "dimensions"), ["x"]),
            r"'.zattrs': invalid dimension entry 'x'",
        ),
        (
            _set(".zattrs", ("_nczarr_group", "dimensions", "x"), "6"),
            r"'.zattrs': dimension 'x' must have a non-negative integer size, got \"6\"",
        ),
        (
            _set(".zattrs", ("_nczarr_group", "arrays"), ["v", "missing"]),
            r"'.zattrs' lists array 'missing' but 'missing/.zarray' does not exist",
        ),
        (
            _set(".zattrs", ("_nczarr_group", "groups"), "g"),
            r"'.zattrs': groups must be a list of names, got \"g\"",
        ),
        (_set("g/.zattrs", ("_nczarr_group",), [1]), r"'g/.zattrs': the NCZarr group entry"),
        (_set("c/.zattrs", ("_ARRAY_DIMENSIONS",), 3), None),  # ignored in NCZarr mode
    ],
)
def test_malformed_metadata_is_a_metadata_error(mutate: Mutation, message: str | None) -> None:
    """A malformed group list fails the store (netcdf-c's walk cannot start); one
    malformed array does not (below, and tests/test_odd_array_isolation.py)."""
    meta = _current()
    mutate(meta)
    if message is None:
        read(_mem(meta))
        return
    with pytest.raises(MetadataError, match=message):
        read(_mem(meta))


def _variables(meta: dict[str, Any]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        return {v.path: v for v in read(_mem(meta)).root.all_variables()}


@pytest.mark.parametrize(
    ("mutate", "fqn", "message"),
    [
        (
            _set("v/.zattrs", ("_nczarr_array", "dimension_references"), ["/t", "/nope"]),
            "/v",
            r"'v/.zattrs': dimension reference '/nope' names no declared dimension",
        ),
        (
            _set("v/.zattrs", ("_nczarr_array", "dimension_references"), ["/t"]),
            "/v",
            r"'v/.zattrs': 1 dimension reference\(s\) \[\"/t\"\] for an array of rank 2",
        ),
        (
            _set("g/gv/.zattrs", ("_nczarr_array", "dimension_references"), ["/x", "/g/y"]),
            "/g/gv",
            r"'g/gv/.zattrs': dimension '/x' has length 6 but the array's shape is \[3, 6\]",
        ),
        (
            _set("sc/.zattrs", ("_nczarr_array", "dimension_references"), ["/x"]),
            "/sc",
            r"'sc/.zattrs': a scalar array cannot have dimension references",
        ),
        (
            _set("v/.zattrs", ("_nczarr_array",), 3),
            "/v",
            r"'v/.zattrs': the NCZarr array entry",
        ),
    ],
)
def test_malformed_dimension_references_read_by_the_pure_rules(
    mutate: Mutation, fqn: str, message: str
) -> None:
    """netcdf-c refuses the whole store; here the array's dimensions come from its
    ``_ARRAY_DIMENSIONS`` (netcdf-c writes them too), as without NCZarr array metadata."""
    meta = _current()
    clean = _variables(meta)
    mutate(meta)
    pattern = rf"array '{fqn}': {message}.*: dimensions taken from _ARRAY_DIMENSIONS"
    with pytest.warns(NCZarrWarning, match=pattern):
        ds = read(_mem(meta))
    assert {v.path: v for v in ds.root.all_variables()} == clean


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            _set("v/.zattrs", ("_nczarr_attr", "types"), ["<f8"]),
            r"'v/.zattrs': _nczarr_attr.types must be a JSON object",
        ),
        (
            _set("v/.zattrs", ("_nczarr_attr", "types", "units"), "<i4"),
            r"'v/.zattrs': attribute 'units': cannot read \"m\" as int",
        ),
        (_set("v/.zarray", ("fill_value",), "abc"), r"'v/.zarray': invalid fill_value \"abc\""),
        (_set("v/.zarray", ("shape",), [3]), r"'v/.zarray': 'chunks' \[2, 4\] and 'shape' \[3\]"),
        (_set("v/.zarray", ("chunks",), [0, 4]), r"'v/.zarray': 'chunks' must hold positive"),
        (_set("v/.zarray", ("dtype",), 5), r"'v/.zarray': dtype must be a string"),
        (_set("v/.zarray", ("order",), "X"), r"'v/.zarray': 'order' must be 'C' or 'F'"),
    ],
)
def test_one_malformed_array_is_skipped(mutate: Mutation, message: str) -> None:
    """The array is left out with a warning naming it; the others read as before."""
    meta = _current()
    clean = _variables(meta)
    mutate(meta)
    with pytest.warns(NCZarrWarning, match=rf"skipped array '/v': {message}"):
        ds = read(_mem(meta))
    assert ds.skipped == ("/v",)
    assert {v.path: v for v in ds.root.all_variables()} == {
        p: v for p, v in clean.items() if p != "/v"
    }


def test_duplicate_dimension_with_two_sizes() -> None:
    meta = _current()
    meta["g/.zgroup"] = {
        "zarr_format": 2,
        "_nczarr_group": {"dims": {"y": 4}, "vars": [], "groups": []},
    }
    # .zattrs wins over .zgroup per object, so this is consistent: no error
    read(_mem(meta))
    meta["g/.zattrs"]["_nczarr_group"]["dimensions"] = [
        {"name": "y", "size": 3},
        {"name": "y", "size": 4},
    ]
    with pytest.raises(DimensionConflictError, match="declared with lengths 3 and 4"):
        read(_mem(meta))


# --------------------------------------------------------------------------- fuzz
_BASES = {
    "current": _current(),
    "v1": load_metadata(map_from_zip(fixture_path("ref_oldformat_v1.zip"))),
    "v2uc": load_metadata(map_from_zip(fixture_path("v2uc_ncgen490.zip"))),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_metadata_only_raises_metadata_errors(data: st.DataObject) -> None:
    from nczarr.translate.detect import detect_format
    from nczarr.translate.read_nczarr import read_nczarr

    meta = corrupt_metadata(data, _BASES[data.draw(st.sampled_from(sorted(_BASES)))])
    try:
        info = detect_format(meta)
        if info.format == "nczarr":
            read_nczarr(meta, info)
    except MetadataError:  # DimensionConflictError is a MetadataError
        pass


def test_read_from_s3_equals_read_from_memory(s3_endpoint: str, s3_bucket: str, s3_client) -> None:
    from nczarr.maps.s3 import S3Map

    source = map_from_zip(fixture_path("v2uc_ncgen490.zip"))
    for key in source:
        s3_client.put_object(Bucket=s3_bucket, Key=f"ds/{key}", Body=source[key])
    with S3Map(f"s3://{s3_bucket}/ds", mode="r", endpoint_url=s3_endpoint) as remote:
        assert read(remote) == read(source)
