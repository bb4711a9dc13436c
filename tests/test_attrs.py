"""Attribute typing (NCZarr Appendix C), JSON helpers, dtypes and codec normalisation."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nczarr.errors import MetadataError, UnsupportedError
from nczarr.translate.attrs import (
    attribute_nc_type,
    attribute_type_code,
    decode_attribute,
    encode_attribute,
    infer_type,
    json_text,
    parse_json,
)
from nczarr.translate.codecs import normalize_codec, normalize_codecs
from nczarr.translate.dtypes import (
    ZarrDtype,
    decode_fill_value,
    encode_fill_value,
    nc_to_zarr_dtype,
    parse_dtype,
)
from nczarr.translate.model import Attribute


# ------------------------------------------------------------------ parse_json / json_text
def test_parse_json_accepts_netcdf_c_number_forms_and_keeps_their_text() -> None:
    value = parse_json(b'{"a": [0.,0.,1.], "b": NaN, "c": .5, "d": "x 1. y", "e": 1.50}')
    assert value["a"] == [0.0, 0.0, 1.0]
    assert math.isnan(value["b"])
    assert value["c"] == 0.5
    assert value["d"] == "x 1. y"  # strings untouched by the relaxation
    assert json_text(value["e"]) == "1.50"


def test_parse_json_errors_name_the_key() -> None:
    with pytest.raises(MetadataError, match=r"'g/.zattrs': invalid JSON"):
        parse_json(b'{"a": ', key="g/.zattrs")
    with pytest.raises(MetadataError, match=r"'x/.zarray': metadata is not UTF-8"):
        parse_json(b"\xff\xfe{}", key="x/.zarray")


def test_json_text_matches_netcdf_c_serialiser() -> None:
    assert json_text({"k": [1, {"z": None}]}) == '{"k": [1,{"z": null}]}'
    assert json_text([[1, 2], [3]]) == "[[1,2],[3]]"
    assert json_text(parse_json("[1.0,0.0]")) == "[1.0,0.0]"
    assert json_text(float("nan")) == "NaN"
    assert json_text('é"') == '"é\\""'


# ------------------------------------------------------------------------- inference
@pytest.mark.parametrize(
    ("value", "nc_type"),
    [
        (5, "int"),
        (-5, "int"),
        (2**31, "uint"),
        (3000000000, "uint"),
        (10**10, "int64"),
        (-(2**40), "int64"),
        (2**64 - 1, "uint64"),
        (2**64, "double"),
        (1.5, "double"),
        (True, "ubyte"),
        ("text", "char"),
        ("NaN", "char"),
        ([1, 2], "int"),
        ([1, 3000000000], "uint"),
        ([1, 2.5], "double"),
        ([True, False], "ubyte"),
        (["a", "bc"], "string"),
        (["a", 1], "char"),
        ([], "char"),
        ([[1, 2], [3]], "char"),
        ({"a": 1}, "char"),
        (None, "char"),
    ],
)
def test_infer_type(value: object, nc_type: str) -> None:
    assert infer_type(value) == nc_type


def test_untyped_decode_values() -> None:
    assert decode_attribute("a", [1, 2.5]) == Attribute("a", "double", (1.0, 2.5))
    assert decode_attribute("a", True) == Attribute("a", "ubyte", (1,))
    assert decode_attribute("a", ["x"]) == Attribute("a", "string", ("x",))
    assert decode_attribute("a", {"k": [1, None]}) == Attribute("a", "char", '{"k": [1,null]}')
    assert decode_attribute("a", None) == Attribute("a", "char", "null")
    nan = decode_attribute("a", float("nan"))
    assert nan.type == "double" and math.isnan(nan.value[0])


def test_fill_value_attribute_takes_the_variable_type() -> None:
    assert decode_attribute("_FillValue", -1, default_type="short") == Attribute(
        "_FillValue", "short", (-1,)
    )
    fill = decode_attribute("_FillValue", "NaN", default_type="float")
    assert fill.type == "float" and math.isnan(fill.value[0])


# ----------------------------------------------------------------------- typed decode
@pytest.mark.parametrize(
    ("value", "code", "expected"),
    [
        (17, ">S1", Attribute("a", "char", "17")),  # netcdf-c keeps only "1"
        (True, ">S1", Attribute("a", "char", "true")),
        ([0.0, 1.0], ">S1", Attribute("a", "char", "[0.0,1.0]")),
        ("hPa", "<U1", Attribute("a", "char", "hPa")),
        ("latitude", "2", Attribute("a", "char", "latitude")),
        (17, "4", Attribute("a", "int", (17,))),
        (17, 4, Attribute("a", "int", (17,))),
        ([1, 2, 3], "<i2", Attribute("a", "short", (1, 2, 3))),
        (255, "|u1", Attribute("a", "ubyte", (255,))),
        (3, ">i8", Attribute("a", "int64", (3,))),
        ("Infinity", "<f8", Attribute("a", "double", (math.inf,))),
        ("-Infinity", "<f4", Attribute("a", "float", (-math.inf,))),
        (0.1, "<f4", Attribute("a", "float", (0.10000000149011612,))),
        ("abc", "|S128", Attribute("a", "string", ("abc",))),
        (["abc", "def"], "|S6", Attribute("a", "string", ("abc", "def"))),
        ({"x": 1}, "|J0", Attribute("a", "char", '{"x": 1}')),
        ("5", "<i4", Attribute("a", "int", (5,))),
    ],
)
def test_typed_decode(value: object, code: object, expected: Attribute) -> None:
    assert decode_attribute("a", value, code) == expected


@pytest.mark.parametrize(
    ("value", "code", "message"),
    [
        (300, "<u1", r"'k': attribute 'a': cannot read 300 as ubyte: 300 is out of range"),
        ("abc", "<i4", r"cannot read \"abc\" as int: 'abc' is not a number"),
        ([[1]], "<f8", r"cannot read \[\[1\]\] as double"),
        (1, "<c8", r"'k': attribute 'a': attribute type '<c8' names no netCDF type"),
        (1, "99", r"attribute type '99' names no netCDF type"),
        (1, ["<i4"], r"attribute type \['<i4'\] is not a string"),
    ],
)
def test_typed_decode_errors_name_key_and_attribute(
    value: object, code: object, message: str
) -> None:
    with pytest.raises(MetadataError, match=message):
        decode_attribute("a", value, code, key="k")


def test_attribute_nc_type_table() -> None:
    assert attribute_nc_type(">S1") == "char"
    assert attribute_nc_type("|S1") == "string"
    assert attribute_nc_type("<S1") == "string"
    assert attribute_nc_type("|J0") == "json"
    assert attribute_nc_type("12") == "string"
    assert attribute_nc_type(">f8") == "double"


# ---------------------------------------------------------------------------- encode
def test_encode_follows_netcdf_c_write_rules() -> None:
    assert encode_attribute(Attribute("a", "int", (5,))) == (5, "<i4")
    assert encode_attribute(Attribute("a", "byte", (1, 2))) == ([1, 2], "|i1")
    assert encode_attribute(Attribute("a", "double", (math.nan, math.inf))) == (
        ["NaN", "Infinity"],
        "<f8",
    )
    assert encode_attribute(Attribute("a", "char", '{"a": [1]}')) == ({"a": [1]}, ">S1")
    assert encode_attribute(Attribute("a", "char", "17")) == ("17", ">S1")
    assert encode_attribute(Attribute("a", "char", "NaN")) == ("NaN", ">S1")
    assert encode_attribute(Attribute("a", "string", ("x",)), maxstrlen=6) == ("x", "|S6")
    # pure Zarr: one string is a plain JSON string (xarray decodes units, netcdf-c reads
    # the text); NaN and infinities are floats, written as bare tokens
    assert encode_attribute(Attribute("a", "string", ("x",)), typed=False) == ("x", "|S128")
    assert encode_attribute(Attribute("a", "string", ("x", "y")), typed=False) == (
        ["x", "y"],
        "|S128",
    )
    untyped, _ = encode_attribute(Attribute("a", "double", (math.nan, -math.inf)), typed=False)
    assert math.isnan(untyped[0]) and untyped[1] == -math.inf
    assert encode_attribute(Attribute("a", "char", "[1]"), typed=False) == ("[1]", ">S1")
    assert attribute_type_code("ushort") == "<u2"


_NUMERIC_VALUES = {
    "byte": st.integers(-128, 127),
    "ubyte": st.integers(0, 255),
    "short": st.integers(-(2**15), 2**15 - 1),
    "uint": st.integers(0, 2**32 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint64": st.integers(0, 2**64 - 1),
    "double": st.floats(allow_nan=True, allow_infinity=True),
    "float": st.floats(width=32, allow_nan=True, allow_infinity=True),
}


@st.composite
def attributes(draw: st.DrawFn) -> Attribute:
    kind = draw(st.sampled_from([*_NUMERIC_VALUES, "char", "string"]))
    if kind == "char":
        return Attribute("a", "char", draw(st.text()))
    if kind == "string":
        return Attribute("a", "string", tuple(draw(st.lists(st.text(), min_size=1, max_size=4))))
    values = draw(st.lists(_NUMERIC_VALUES[kind], min_size=1, max_size=4))
    return Attribute("a", kind, tuple(values))


@given(attributes())
def test_typed_round_trip_through_json_text(attr: Attribute) -> None:
    """encode -> JSON text -> parse -> decode gives the attribute back (NCZarr)."""
    value, code = encode_attribute(attr)
    text = json.dumps(value, allow_nan=False)
    back = decode_attribute("a", parse_json(text), code)
    if attr.type == "char" and isinstance(value, dict | list):
        # netcdf-c's convention: JSON text is re-serialised (whitespace may change)
        assert json.loads(back.value) == json.loads(attr.value)
    else:
        assert back == attr


@given(st.lists(st.text(), min_size=1, max_size=4) | st.text())
def test_untyped_round_trip_of_text(value: list[str] | str) -> None:
    """Pure Zarr: char and string attributes come back with their type, except a
    one-valued string, written as a plain JSON string (as xarray and netcdf-c do),
    which comes back as char text."""
    attr = (
        Attribute("a", "char", value)
        if isinstance(value, str)
        else Attribute("a", "string", tuple(value))
    )
    encoded, _ = encode_attribute(attr, typed=False)
    expected = (
        Attribute("a", "char", value[0]) if isinstance(value, list) and len(value) == 1 else attr
    )
    assert decode_attribute("a", parse_json(json.dumps(encoded))) == expected


# ----------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize(
    ("dtype", "nczarr", "expected"),
    [
        ("<i4", False, ZarrDtype("int", "little", 4)),
        (">f8", False, ZarrDtype("double", "big", 8)),
        ("|u1", False, ZarrDtype("ubyte", "little", 1)),
        (">u1", True, ZarrDtype("ubyte", "big", 1)),
        ("|b1", False, ZarrDtype("ubyte", "little", 1, logical="bool")),
        (">S1", True, ZarrDtype("char", "little", 1)),
        (">S1", False, ZarrDtype("string", "little", 1, 1)),
        ("|S1", True, ZarrDtype("string", "little", 1, 1)),
        ("|S128", True, ZarrDtype("string", "little", 128, 128)),
        ("<U1", True, ZarrDtype("char", "little", 4)),
    ],
)
def test_parse_dtype(dtype: str, nczarr: bool, expected: ZarrDtype) -> None:
    assert parse_dtype(dtype, nczarr=nczarr) == expected


@pytest.mark.parametrize("dtype", ["<c8", "<M8[ns]", "<m8", "|O", "<f2", [["a", "<i4"]], "|V8"])
def test_dtypes_without_netcdf_equivalent(dtype: object) -> None:
    with pytest.raises(UnsupportedError, match=r"no netCDF-4 equivalent|datetime|timedelta"):
        parse_dtype(dtype, nczarr=False)


@pytest.mark.parametrize(("dtype", "width", "endian"), [("<U5", 5, "little"), (">U1", 1, "big")])
def test_unicode_is_a_string_stored_as_unicode(dtype: str, width: int, endian: str) -> None:
    assert parse_dtype(dtype, nczarr=False) == ZarrDtype(
        "string", endian, 4 * width, maxstrlen=width, text_storage="unicode"
    )


@pytest.mark.parametrize("dtype", ["int32", "", 5, None, "<q4"])
def test_invalid_dtypes(dtype: object) -> None:
    with pytest.raises(MetadataError, match="dtype"):
        parse_dtype(dtype, nczarr=False)


def test_nc_to_zarr_dtype() -> None:
    assert nc_to_zarr_dtype("ubyte") == "|u1"
    assert nc_to_zarr_dtype("ubyte", "big") == ">u1"
    assert nc_to_zarr_dtype("int", "big") == ">i4"
    assert nc_to_zarr_dtype("char") == ">S1"
    assert nc_to_zarr_dtype("char", nczarr=False) == "|S1"
    assert nc_to_zarr_dtype("string", maxstrlen=6) == "|S6"
    for nc_type in ("byte", "short", "uint64", "double"):
        assert parse_dtype(nc_to_zarr_dtype(nc_type, "big"), nczarr=True).nc_type == nc_type


def test_fill_values() -> None:
    f8 = ZarrDtype("double", "little", 8)
    s5 = ZarrDtype("string", "little", 5, 5)
    assert decode_fill_value(None, f8, raw_text=False) is None
    assert math.isnan(decode_fill_value("NaN", f8, raw_text=False))
    assert decode_fill_value("-Infinity", f8, raw_text=False) == -math.inf
    assert decode_fill_value(9.96921e36, ZarrDtype("float", "little", 4), raw_text=True) == (
        9.969209968386869e36
    )
    assert decode_fill_value(True, ZarrDtype("ubyte", "little", 1), raw_text=False) == 1
    assert decode_fill_value(-1.0, ZarrDtype("int", "little", 4), raw_text=True) == -1
    # zarr-python writes base64, netcdf-c raw text
    assert decode_fill_value("YWI=", s5, raw_text=False) == "ab"
    assert decode_fill_value("YWI=", s5, raw_text=True) == "YWI="
    assert decode_fill_value("z", s5, raw_text=False) == "z"
    assert decode_fill_value("", s5, raw_text=False) == ""
    with pytest.raises(ValueError, match="out of range for ubyte"):
        decode_fill_value(256, ZarrDtype("ubyte", "little", 1), raw_text=True)
    with pytest.raises(ValueError, match="not a number"):
        decode_fill_value("abc", f8, raw_text=True)
    assert encode_fill_value(math.nan, "double", nczarr=True) == "NaN"
    assert encode_fill_value("ab", "string", nczarr=False) == "YWI="
    assert encode_fill_value("ab", "string", nczarr=True) == "ab"


# ----------------------------------------------------------------------------- codecs
def test_normalize_codec_fixes_netcdf_c_output() -> None:
    assert normalize_codec({"id": "zlib", "level": "5"}, 4) == {"id": "zlib", "level": 5}
    assert normalize_codec({"id": "shuffle", "elementsize": 0}, 8) == {
        "id": "shuffle",
        "elementsize": 8,
    }
    assert normalize_codec({"id": "shuffle", "elementsize": "0"}, 2) == {
        "id": "shuffle",
        "elementsize": 2,
    }
    assert normalize_codec({"id": "shuffle"}, 4) == {"id": "shuffle", "elementsize": 4}
    assert normalize_codec({"id": "shuffle", "elementsize": 2}, 4)["elementsize"] == 2
    blosc = {"id": "blosc", "cname": "lz4", "clevel": "5", "shuffle": 1, "blocksize": 0}
    assert normalize_codec(blosc, 4)["clevel"] == 5
    assert normalize_codec(blosc, 4)["cname"] == "lz4"


def test_normalized_shuffle_decodes_netcdf_c_data_correctly() -> None:
    import numcodecs
    import numpy as np

    data = (np.arange(100, dtype="<i4") * 1000 - 7).tobytes()
    written = numcodecs.Shuffle(elementsize=4).encode(data)
    wrong = numcodecs.get_codec({"id": "shuffle", "elementsize": 0}).decode(written)
    right = numcodecs.get_codec(normalize_codec({"id": "shuffle", "elementsize": 0}, 4))
    assert bytes(wrong) != data
    assert bytes(right.decode(written)) == data


def test_normalize_codecs_keeps_order_and_warns_on_unknown() -> None:
    compressor, filters, warnings = normalize_codecs(
        {"id": "fletcher32"},
        [{"id": "shuffle", "elementsize": 0}, {"id": "szip", "mask": "4", "pixels-per-block": 32}],
        4,
        where="'v/.zarray'",
    )
    assert compressor == {"id": "fletcher32"}
    assert [f["id"] for f in filters] == ["shuffle", "szip"]
    assert filters[1] == {"id": "szip", "mask": 4, "pixels-per-block": 32}
    assert warnings == [
        "'v/.zarray': codec 'szip' is not known to numcodecs; kept as stored, "
        "but the data cannot be decoded here"
    ]


@pytest.mark.parametrize(
    ("compressor", "filters", "message"),
    [
        ("zlib", None, r"codec config must be a JSON object, got 'zlib'"),
        ({"level": 1}, None, r"has no string 'id'"),
        (None, {"id": "zlib"}, r"'filters' must be a list or null"),
    ],
)
def test_normalize_codecs_errors(compressor: object, filters: object, message: str) -> None:
    with pytest.raises(MetadataError, match=message):
        normalize_codecs(compressor, filters, 4, where="'v/.zarray'")
