"""CDL headers: byte-identical to the header part of ncdump's output for the same content."""

from __future__ import annotations

import math
import re
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.cli.cdl import escape_name, format_attribute_values, format_cdl
from nczarr.translate.model import Attribute, Dataset, Dimension, Group, Variable

from .ncoracle import build, fixture_path, map_from_zip, rename_dimensions

_END_OF_DATA = re.compile(r"^\s*(group: .* \{|\} // group .*|\})$")


def header(cdl: str) -> str:
    """The ``ncdump -h`` part of a full ncdump output: every ``data:`` section removed."""
    out: list[str] = []
    skipping = False
    for line in cdl.splitlines():
        if line.strip() == "data:":
            skipping = True
            while out and out[-1] == "":
                out.pop()
            continue
        if skipping and not _END_OF_DATA.match(line):
            continue
        if skipping and line.lstrip().startswith("group:"):
            out.append("")
        skipping = False
        out.append(line)
    return "\n".join(out) + "\n"


def netcdf_c_names(ds: Dataset) -> Dataset:
    """Anonymous dimensions named as netcdf-c 4.10 names them."""
    return rename_dimensions(ds, lambda n: n.replace("_Anonymous_Dimension_", "_Anonymous_Dim_"))


@pytest.mark.parametrize(
    ("store", "cdl", "special"),
    [
        ("ref_oldformat_v1.zip", "ref_oldformat_v1.cdl", False),
        ("ref_oldformat_v2attrs.zip", "ref_oldformat_v2attrs.cdl", False),
        ("ref_oldkeys.file.zip", "ref_oldkeys.cdl", False),
        ("ref_power_901_constants_orig.zip", "ref_power_901_constants.cdl", False),
        ("ref_quotes_orig.zip", "ref_quotes.cdl", False),
        ("ref_byte.zarr.zip", "ref_byte.cdl", True),
        ("ref_byte_fill_value_null.zarr.zip", "ref_byte_fill_value_null.cdl", True),
    ],
)
def test_matches_netcdf_c_expected_dumps(store: str, cdl: str, special: bool) -> None:
    dataset = netcdf_c_names(nczarr.read(map_from_zip(fixture_path(store))))
    expected = header(fixture_path(cdl).read_text())
    name = expected.split(" ", 2)[1]  # "netcdf <name> {"
    actual = format_cdl(dataset, name, special=special)
    if "_FillValue" not in expected and not store.startswith("ref_old"):
        # xarray and GDAL wrote these: a v2 fill_value is their missing value, which
        # nczarr shows (and writes) as _FillValue; netcdf-c ignores it (issue 15)
        fills = [line for line in actual.splitlines() if ":_FillValue = " in line]
        with_fill = [v for v in dataset.root.all_variables() if v.fill_value is not None]
        assert len(fills) == len(with_fill)
        actual = "".join(line + "\n" for line in actual.splitlines() if line not in fills)
    assert actual == expected


def test_header_helper_strips_data_sections() -> None:
    text = fixture_path("ref_oldformat_v1.cdl").read_text()
    assert header(text).splitlines()[-4:] == [
        "  // group attributes:",
        "  \t\t:g1_attr = 17 ;",
        "  } // group g1",
        "}",
    ]
    assert "data:" not in header(text)


def test_scalar_expected_dump() -> None:
    v = Variable(
        "v",
        "/v",
        "int",
        (),
        (),
        (),
        fill_value=-1,
        scalar=True,
        attributes={"_FillValue": Attribute("_FillValue", "int", (-1,))},
    )
    dataset = Dataset(Group("/", "/", variables={"v": v}))
    assert format_cdl(dataset, "ref_scalar") == header(fixture_path("ref_scalar.cdl").read_text())


@pytest.mark.parametrize(
    ("nc_type", "value", "text"),
    [
        ("byte", (-3, 4), "-3b, 4b"),
        ("short", (1, 2), "1s, 2s"),
        ("int", (7,), "7"),
        ("ubyte", (255,), "255UB"),
        ("ushort", (65535,), "65535US"),
        ("uint", (4294967295,), "4294967295U"),
        ("int64", (-(2**63),), "-9223372036854775808LL"),
        ("uint64", (2**64 - 1,), "18446744073709551615ULL"),
        ("float", (1.5, 1.0, 0.1), "1.5f, 1.f, 0.1f"),
        ("float", (math.nan, -math.inf, math.inf), "NaNf, -Infinityf, Infinityf"),
        ("float", (9.969209968386869e36,), "9.96921e+36f"),
        ("double", (1.0, math.pi, 1e-300), "1., 3.14159265358979, 1.e-300"),
        ("double", (9.969209968386869e36, 100.0), "9.96920996838687e+36, 100."),
        ("double", (math.nan, -math.inf), "NaN, -Infinity"),
        ("char", "latitude", '"latitude"'),
        ("char", "", '""'),
        ("char", "a\nb\tc\\d'e\"f\x01\x00\x00", '"a\\nb\\tc\\\\d\\\'e\\"f\\001"'),
        ("char", "héllo", '"héllo"'),
        ("string", ("abc", 'd"ef'), '"abc", "d\\"ef"'),
    ],
)
def test_attribute_values(nc_type: str, value: object, text: str) -> None:
    assert format_attribute_values(Attribute("a", nc_type, value)) == text


def test_names_are_escaped() -> None:
    assert escape_name("a b:c") == "a\\ b\\:c"
    assert escape_name("plain_name-1.2") == "plain_name-1.2"


def test_shadowed_dimension_is_shown_by_full_name() -> None:
    gv = Variable("gv", "/g/gv", "int", ("/g/x", "/x", "/y"), (5, 4, 2), (5, 4, 2))
    g = Group("g", "/g", dimensions={"x": Dimension("x", 5)}, variables={"gv": gv})
    root = Group(
        "/", "/", dimensions={"x": Dimension("x", 4), "y": Dimension("y", 2)}, groups={"g": g}
    )
    text = format_cdl(Dataset(root), "d")
    assert "  \tint gv(x, /x, y) ;" in text.splitlines()


def test_dataset_written_by_netcdf_c(tmp_path: Path) -> None:
    def fill(ds: netCDF4.Dataset) -> None:
        ds.createDimension("t", None)
        ds.createDimension("x", 3)
        v = ds.createVariable("v", "f4", ("t", "x"), fill_value=np.float32(-1))
        v[0:2, :] = 1.0
        v.setncattr("units", "K")
        v.setncattr("scale", np.float32(0.5))
        v.setncattr("flags", np.array([1, 2], "i2"))
        v.setncattr_string("names", ["a", "b"])
        ds.createVariable("u", "u8", ("x",))
        g = ds.createGroup("sub")
        g.createDimension("n", 2)
        g.createVariable("w", "i1", ("n", "x"))
        g.setncattr("gatt", np.array([1.5, 2.0], "f8"))
        ds.setncattr("title", "test")

    build(tmp_path / "d.file", fill)
    text = format_cdl(nczarr.read(str(tmp_path / "d.file")), "d")
    assert text == (
        "netcdf d {\n"
        "dimensions:\n"
        "\tt = UNLIMITED ; // (2 currently)\n"
        "\tx = 3 ;\n"
        "variables:\n"
        "\tfloat v(t, x) ;\n"
        "\t\tv:_FillValue = -1.f ;\n"
        '\t\tv:units = "K" ;\n'
        "\t\tv:scale = 0.5f ;\n"
        "\t\tv:flags = 1s, 2s ;\n"
        '\t\tstring v:names = "a", "b" ;\n'
        "\tuint64 u(x) ;\n"
        "\n"
        "// global attributes:\n"
        '\t\t:title = "test" ;\n'
        "\n"
        "group: sub {\n"
        "  dimensions:\n"
        "  \tn = 2 ;\n"
        "  variables:\n"
        "  \tbyte w(n, x) ;\n"
        "\n"
        "  // group attributes:\n"
        "  \t\t:gatt = 1.5, 2. ;\n"
        "  } // group sub\n"
        "}\n"
    )
