"""netcdf-c rewriting our NCZarr metadata in place, and what the writer does about it.

libnetcdf 4.10.1 (file map) rewrites every ``.zgroup``, ``.zattrs`` and ``.zarray``
when it closes a store opened for writing, even when nothing changed, and it does
not truncate the file first. A rewrite shorter than what we wrote leaves a stale
tail, and the store no longer opens (NC_ENCZARR). The NCZarr writer therefore
writes floats as netcdf-c does whenever that is exact and writes compact JSON, so
netcdf-c's rewrite of an unchanged object is longer than ours by exactly its
spacing (``2 * n - 1`` bytes per dict of ``n`` entries); values netcdf-c shortens
(it prints floats with 6 digits) have to fit in that slack. These tests pin
netcdf-c's behaviour and both sides of that limit.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nczarr
from nczarr.translate.model import Attribute, Dataset, Dimension, Group, Variable
from nczarr.translate.write_nczarr import float_text
from nczarr.translate.writer import write

from .budget import examples
from .ncoracle import load_attributes, open_append

NC_FILL_FLOAT = struct.unpack("<f", struct.pack("<f", 9.9692099683868690e36))[0]
NC_FILL_DOUBLE = 9.9692099683868690e36


pytestmark = pytest.mark.usefixtures("scratch_cwd")


def _url(path: Path) -> str:
    return f"file://{path}#mode=nczarr,file"


def _metadata(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob(".z*"))
        if p.is_file()
    }


def _to_dir(metadata: dict[str, bytes], path: Path) -> Path:
    for key, value in metadata.items():
        target = path / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(value)
    return path


def _netcdf_text(stored: bytes) -> bytes:
    """The document netcdf-c wrote at the start of ``stored`` (any stale tail cut off)."""
    _, end = json.JSONDecoder().raw_decode(stored.decode("utf-8"))
    return stored[: len(stored.decode("utf-8")[:end].encode("utf-8"))]


def _slack(doc: Any) -> int:
    """How much longer netcdf-c's spacing (``", "``, ``": "``) makes ``doc`` than
    compact JSON: ``2 * n - 1`` bytes per dict of ``n`` entries, nested ones included."""
    if isinstance(doc, dict):
        return max(2 * len(doc) - 1, 0) + sum(_slack(v) for v in doc.values())
    if isinstance(doc, list):
        return sum(_slack(v) for v in doc)
    return 0


def _dot_zero(stored: bytes) -> int:
    """Bytes netcdf-c's rewrite drops from our ``1.0`` floats (it writes ``1``): 2 each."""
    texts: list[str] = []
    json.loads(stored, parse_float=lambda text: texts.append(text) or float(text))
    return 2 * sum(1 for t in texts if t.lstrip("-").removesuffix(".0").isdigit())


def _rewrite(path: Path, action=None) -> dict[str, bytes]:
    """Open ``path`` read-write with netCDF4, run ``action(ds)``, close; the objects after."""
    with open_append(path) as ds:
        load_attributes(ds)
        if action is not None:
            action(ds)
    return _metadata(path)


def A(name: str, type_: str, value: object) -> Attribute:
    return Attribute(name, type_, value)


# ------------------------------------------------------------------ netcdf-c itself
def test_netcdf_c_rewrites_every_object_in_place_without_truncating(tmp_path: Path) -> None:
    path = tmp_path / "t.file"
    with netCDF4.Dataset(_url(path), "w") as ds:
        ds.createDimension("x", 3)
        v = ds.createVariable("v", "f8", ("x",))
        v[:] = [1, 2, 3]
        v.units = "m"
    zattrs = path / "v" / ".zattrs"
    original = zattrs.read_bytes()
    assert original.startswith(b'{"units": "m", ')
    zattrs.write_bytes(original + b" " * 20)  # valid JSON: trailing whitespace
    stamps = {p: p.stat().st_mtime_ns for p in path.rglob(".z*")}

    with open_append(path):
        pass  # nothing read, nothing changed

    rewritten = sorted(
        p.relative_to(path).as_posix() for p in stamps if p.stat().st_mtime_ns != stamps[p]
    )
    assert rewritten == [".zattrs", ".zgroup", "v/.zarray", "v/.zattrs"]
    # Same text written over the padded file: the padding is still there.
    assert zattrs.read_bytes() == original + b" " * 20

    # A longer but equivalent document: netcdf-c's shorter text leaves our tail behind.
    longer = original.replace(b'"units": "m"', b'"units"   :    "m"')
    zattrs.write_bytes(longer)
    with open_append(path):
        pass
    stale = zattrs.read_bytes()
    assert len(stale) == len(longer)
    assert stale == original + longer[len(original) :]
    assert stale.endswith(b'}}}J0"}}}')
    with pytest.raises(OSError, match="NCZarr error"):
        netCDF4.Dataset(_url(path), "r")


def test_netcdf_c_read_only_open_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.file"
    with netCDF4.Dataset(_url(path), "w") as ds:
        ds.createDimension("x", 2)
        ds.createVariable("v", "i4", ("x",))[:] = [1, 2]
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in path.rglob("*") if p.is_file()}
    with netCDF4.Dataset(_url(path), "r") as ds:
        assert list(ds["v"][:]) == [1, 2]
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in before} == before


# ------------------------------------------------------------------ float text
@pytest.mark.parametrize(
    ("value", "nc_type", "text"),
    [
        (-1.0, "double", "-1"),  # netcdf-c's %lg; the recorded type says double
        (2.0, "float", "2"),
        (0.25, "double", "0.25"),
        (1e-05, "double", "1e-05"),
        (1e15, "double", "1e+15"),
        (100000.0, "double", "100000"),
        (NC_FILL_FLOAT, "float", "9.96921e+36"),  # exact as a single
        (NC_FILL_DOUBLE, "double", "9.969209968386869e36"),  # netcdf-c: 9.96921e+36
        (math.pi, "double", "3.141592653589793"),
        (math.pi, "float", "3.1415927"),
        (1234567.0, "double", "1234567"),
        (999999986991104.0, "double", "999999986991104"),
        (999999986991104.0, "float", "1e+15"),
        (0.1, "float", "0.1"),
        (3.4028234663852886e38, "float", "3.4028235e38"),
        (5e-324, "double", "4.94066e-324"),
        (1.2345678e-05, "double", "1.2345678e-5"),
        (-0.0, "double", "-0.0"),
        (0.0, "double", "0"),
    ],
)
def test_float_text(value: float, nc_type: str, text: str) -> None:
    assert float_text(value, nc_type) == text


def _bits(value: float, single: bool) -> bytes:
    return struct.pack("<f" if single else "<d", value)


@pytest.mark.generated
@settings(max_examples=examples(500), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_text_is_exact_and_netcdf_c_text_when_that_is_exact(value: float) -> None:
    text = float_text(value, "double")
    assert _bits(float(json.loads(text)), False) == _bits(value, False)
    if value == 0 or _bits(float(f"{value:.6g}"), False) != _bits(value, False):
        assert len(text) <= len(repr(value))
    else:
        assert text == f"{value:.6g}"  # what netcdf-c writes: its rewrite is as long


@pytest.mark.generated
@settings(max_examples=examples(500), deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_text_is_exact_as_a_single(value: float) -> None:
    text = float_text(value, "float")
    assert _bits(float(json.loads(text)), True) == _bits(value, True)
    if value != 0 and _bits(float(f"{value:.6g}"), True) == _bits(value, True):
        assert text == f"{value:.6g}"


# ------------------------------------------------------------------ our output under netcdf-c
def _model(var_attributes: dict[str, Attribute], fill: float = -1.0) -> Dataset:
    """Doubles, a float with netCDF's default fill, char/string attributes, a group."""
    v = Variable(
        "v",
        "/v",
        "double",
        ("/x",),
        (4,),
        (4,),
        fill_value=fill,
        compressor={"id": "zlib", "level": 4},
        filters=({"id": "shuffle", "elementsize": 8},),
        attributes=var_attributes,
    )
    f = Variable("f", "/f", "float", ("/x",), (4,), (2,), fill_value=NC_FILL_FLOAT)
    sc = Variable("sc", "/sc", "int", (), (), (), fill_value=-2147483647, scalar=True)
    gv = Variable("gv", "/g/gv", "ubyte", ("/g/y",), (3,), (3,), fill_value=255)
    g = Group(
        "g",
        "/g",
        dimensions={"y": Dimension("y", 3)},
        attributes={"g_attr": A("g_attr", "double", (0.5,))},
        variables={"gv": gv},
    )
    root = Group(
        "",
        "/",
        dimensions={"x": Dimension("x", 4)},
        attributes={
            "title": A("title", "char", "rewrite test"),
            "weights": A("weights", "double", (0.25, 0.75, 1e-05, 100000.0, 1e15)),
            "note": A("note", "char", 'héllo\twörld "q" \\'),
            "names": A("names", "string", ("a", "bé")),
            "js": A("js", "char", '{"a": [1,2], "b": {"c": null}}'),
            "i64": A("i64", "int64", (2**40,)),
        },
        variables={"v": v, "f": f, "sc": sc},
        groups={"g": g},
    )
    return Dataset(root)


EXACT_ATTRIBUTES = {
    "_FillValue": A("_FillValue", "double", (-1.0,)),
    "scale": A("scale", "float", (0.5,)),
    "units": A("units", "char", "m s-1"),
    "range": A("range", "double", (-2.5, 3000.0)),
    "flags": A("flags", "short", (1, 2, 4)),
}


def test_netcdf_c_rewrite_of_exact_values_is_longer_by_its_spacing(
    tmp_path: Path,
) -> None:
    """No value needs more than 6 digits: netcdf-c's text differs from ours only by
    its ``", "``/``": "`` spacing (and the shuffle elementsize it writes as 0), less
    the ``.0`` of the integral float attribute values we write and it does not."""
    ours = write(_model(EXACT_ATTRIBUTES), "nczarr")
    path = _to_dir(ours, tmp_path / "m.file")
    after = _rewrite(path)
    assert set(after) == set(ours)
    for key, mine in ours.items():
        theirs = _netcdf_text(after[key])
        assert after[key] == theirs, key  # no stale tail anywhere
        assert len(theirs) - len(mine) == _slack(json.loads(mine)) - _dot_zero(mine), key
    assert after["v/.zarray"] == (
        b'{"zarr_format": 2, "shape": [4], "dtype": "<f8", "chunks": [4], "fill_value": -1, '
        b'"order": "C", "compressor": {"id": "zlib", "level": 4}, '
        b'"filters": [{"id": "shuffle", "elementsize": 0}]}'
    )
    assert b'"fill_value": 9.96921e+36,' in after["f/.zarray"]


def test_netcdf_c_writes_to_our_store_and_both_read_it_back(tmp_path: Path) -> None:
    model = _model(EXACT_ATTRIBUTES)
    path = _to_dir(write(model, "nczarr"), tmp_path / "m.file")

    def change(ds) -> None:
        ds["v"][1] = 42.0
        ds["/g/gv"][0] = 7
        ds.setncattr("added", "yes")

    _rewrite(path, change)
    with netCDF4.Dataset(_url(path), "r") as ds:
        ds.set_auto_mask(False)
        assert list(ds["v"][:]) == [-1.0, 42.0, -1.0, -1.0]
        assert list(ds["/g/gv"][:]) == [7, 255, 255]
        assert ds.getncattr("added") == "yes"
        assert ds.getncattr("note") == 'héllo\twörld "q" \\'
        assert ds.getncattr("js") == '{"a": [1,2], "b": {"c": null}}'
        assert list(ds.getncattr("weights")) == [0.25, 0.75, 1e-05, 100000.0, 1e15]
        assert ds["v"].getncattr("scale") == np.float32(0.5)
    back = nczarr.read(str(path))
    assert back.root.attributes["added"] == A("added", "char", "yes")
    for name, attr in model.root.attributes.items():
        assert back.root.attributes[name] == attr, name
    assert back.root.variables["v"].attributes == model.root.variables["v"].attributes
    assert back.root.variables["f"].fill_value == NC_FILL_FLOAT
    assert back.root.groups["g"].attributes == model.root.groups["g"].attributes


def test_full_precision_within_the_slack_survives_but_netcdf_c_rounds_it(
    tmp_path: Path,
) -> None:
    """``NC_FILL_DOUBLE`` needs 16 digits: netcdf-c writes it 9 bytes shorter, which
    the compact JSON absorbs, and netcdf-c's text is its own 6-digit rounding."""
    attributes = {
        "_FillValue": A("_FillValue", "double", (NC_FILL_DOUBLE,)),
        "pi": A("pi", "double", (math.pi,)),
    }
    ours = write(_model(attributes, fill=NC_FILL_DOUBLE), "nczarr")
    assert b'"fill_value":9.969209968386869e36,' in ours["v/.zarray"]
    assert b'"pi":3.141592653589793,' in ours["v/.zattrs"]
    path = _to_dir(ours, tmp_path / "m.file")
    after = _rewrite(path, lambda ds: ds["v"].__setitem__(0, 1.5))
    for key in ("v/.zarray", "v/.zattrs"):
        assert after[key] == _netcdf_text(after[key]), key
    assert b'"fill_value": 9.96921e+36,' in after["v/.zarray"]
    assert b'"pi": 3.14159,' in after["v/.zattrs"]
    with netCDF4.Dataset(_url(path), "r") as ds:
        assert ds["v"][0] == 1.5
    back = nczarr.read(str(path)).root.variables["v"]
    assert back.fill_value == 9.96921e36 != NC_FILL_DOUBLE  # lost by netcdf-c's %lg
    assert back.attributes["pi"].value == (3.14159,)


def test_beyond_the_slack_netcdf_c_leaves_a_stale_tail(tmp_path: Path) -> None:
    """Known limit: values netcdf-c writes much shorter than their exact text.

    Twelve 16-digit doubles lose about 10 bytes each in netcdf-c's rewrite, more
    than the slack its spacing gives; nothing in the object can prevent it
    (padding only helps when netcdf-c's text is at least as long as ours).
    """
    thirds = tuple(k / 3 for k in range(1, 13))
    attributes = {"thirds": A("thirds", "double", thirds)}
    ours = write(_model(attributes), "nczarr")
    path = _to_dir(ours, tmp_path / "m.file")
    with open_append(path) as ds:
        load_attributes(ds)
    stored = (path / "v" / ".zattrs").read_bytes()
    theirs = _netcdf_text(stored)
    assert b'"thirds": [0.333333,0.666667,1,' in theirs
    assert len(theirs) < len(ours["v/.zattrs"]) == len(stored)
    assert stored[len(theirs) :] == ours["v/.zattrs"][len(theirs) :]  # our stale tail
    with pytest.raises(OSError, match="NCZarr error"):
        netCDF4.Dataset(_url(path), "r")
    with pytest.warns(nczarr.NCZarrWarning, match=r"skipped array '/v'.*'v/\.zattrs'"):
        left = nczarr.read(str(path))  # one odd array, not the store, is lost
    assert "v" not in left.root.variables
    # The objects whose values netcdf-c writes exactly came through intact.
    assert (path / ".zattrs").read_bytes() == _netcdf_text((path / ".zattrs").read_bytes())


def test_unread_group_attributes_are_dropped_by_netcdf_c(tmp_path: Path) -> None:
    """netcdf-c 4.10.1 drops the attributes of a group it has not read before closing;
    that rewrite is shorter, so the group's ``.zattrs`` is left with a stale tail.
    Read every attribute (as :func:`_rewrite` does) before closing a writable store."""
    ours = write(_model(EXACT_ATTRIBUTES), "nczarr")
    path = _to_dir(ours, tmp_path / "m.file")
    with open_append(path):
        pass
    stored = (path / "g" / ".zattrs").read_bytes()
    theirs = _netcdf_text(stored)
    assert b"g_attr" in ours["g/.zattrs"] and b"g_attr" not in theirs
    assert len(stored) == len(ours["g/.zattrs"]) > len(theirs)
