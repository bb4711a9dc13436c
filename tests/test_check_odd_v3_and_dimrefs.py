"""``nczarr check`` on a Zarr v3 store with one malformed ``zarr.json`` below the root,
and on NCZarr stores whose dimension references fail: check said nothing of either
(every reader fine, or only the layout notes). Each finding now says what that
reader does, and each is checked here against the real reader: zarr-python 3,
xarray, GDAL 3.12 (``tests/gdalreader.py``), libnetcdf 4.10 through netCDF4 (in a
subprocess: it crashes on some of these stores) and Debian's ncdump 4.9.0."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.translate.compat import GDAL, NC49, NC410, NETCDF_C, XARRAY, ZARR_PYTHON

from .gdalreader import read_zarr
from .ncoracle import debian_490, extract_fixture

DATA = [0.0, 1.0, 2.0, 3.0]

#: zarr-python's note on each object a listing leaves out (what some tests assert).
pytestmark = pytest.mark.filterwarnings("ignore:Object at .* is not recognized:UserWarning")


# ------------------------------------------------------------------ Zarr v3 nodes
def _v3_store(path: Path, dtype: str = "f4", gzip: bool = False) -> Path:
    """Arrays ``a``, ``b`` (``dtype``, gzip or raw chunks) and ``g/c``, zarr-python 3's."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    compressors = [zarr.codecs.GzipCodec()] if gzip else None
    for name in ("a", "b"):
        array = root.create_array(
            name,
            shape=(4,),
            chunks=(2,),
            dtype=dtype,
            compressors=compressors,
            dimension_names=["x"],
        )
        array[:] = np.arange(4, dtype=dtype)
    c = root.create_group("g").create_array(
        "c", shape=(4,), chunks=(2,), dtype="f4", compressors=None, dimension_names=["x"]
    )
    c[:] = np.arange(4, dtype="f4")
    return path


def _edit(key: str, change: Callable[[dict], Any]) -> Callable[[Path], None]:
    def corrupt(store: Path) -> None:
        doc = json.loads((store / key).read_text())
        change(doc)
        (store / key).write_text(json.dumps(doc))

    return corrupt


def _text(key: str, text: str) -> Callable[[Path], None]:
    return lambda store: (store / key).write_text(text)


@dataclass(frozen=True)
class V3Case:
    """One corruption and what each reader does with it (None: reads it right).

    ``zarr_python``: ``listing`` (the node cannot be opened and listing its group
    fails), ``left-out`` (cannot be opened, left out of the listing), ``empty`` (a
    group listed without its nodes), ``reading`` (opened, reading fails);
    ``xarray``: ``refuses`` (the group holding the node) or ``ignores`` (opens it
    without the node); ``gdal``: ``ignores`` (the node and what lies below it are
    absent), ``fails`` (listed, cannot be opened), ``misreads`` (other values).
    """

    id: str
    corrupt: Callable[[Path], None]
    zarr_python: str | None
    xarray: str | None
    gdal: str | None
    where: str = "/b"
    dtype: str = "f4"
    gzip: bool = False
    skipped: bool = True  # nczarr's reader skips the array: the fix excludes it


_B, _G = "b/zarr.json", "g/zarr.json"
V3_CASES = [
    V3Case("not-json", _text(_B, "{not json"), "listing", "refuses", "ignores"),
    V3Case(
        "no-node-type", _edit(_B, lambda d: d.pop("node_type")), "listing", "refuses", "ignores"
    ),
    V3Case(
        "no-zarr-format",
        _edit(_B, lambda d: d.pop("zarr_format")),
        "left-out",
        "ignores",
        "ignores",
    ),
    V3Case(
        "zarr-format-2",
        _edit(_B, lambda d: d.update(zarr_format=2)),
        "listing",
        "refuses",
        "ignores",
    ),
    V3Case(
        "shape-text", _edit(_B, lambda d: d.update(shape="four")), "listing", "refuses", "fails"
    ),
    V3Case("no-shape", _edit(_B, lambda d: d.pop("shape")), "left-out", "ignores", "fails"),
    V3Case(
        "data-type",
        _edit(_B, lambda d: d.update(data_type="float99")),
        "listing",
        "refuses",
        "fails",
    ),
    V3Case(
        "chunk-rank",
        _edit(_B, lambda d: d["chunk_grid"]["configuration"].update(chunk_shape=[2, 2])),
        "listing",
        "refuses",
        "fails",
    ),
    V3Case(
        "chunk-zero",
        _edit(_B, lambda d: d["chunk_grid"]["configuration"].update(chunk_shape=[0])),
        "reading",
        "refuses",
        "fails",
    ),
    V3Case(
        "no-chunk-key-encoding",
        _edit(_B, lambda d: d.pop("chunk_key_encoding")),
        "left-out",
        "ignores",
        "fails",
        skipped=False,
    ),
    V3Case(
        "fill-text", _edit(_B, lambda d: d.update(fill_value="abc")), "listing", "refuses", "fails"
    ),
    V3Case(
        "int-fill-fraction",
        _edit(_B, lambda d: d.update(fill_value=1.5)),
        "listing",
        "refuses",
        None,
        dtype="i4",
        skipped=False,
    ),
    V3Case(
        "no-fill",
        _edit(_B, lambda d: d.pop("fill_value")),
        "left-out",
        "ignores",
        None,
        skipped=False,
    ),
    V3Case(
        "no-codecs",
        _edit(_B, lambda d: d.pop("codecs")),
        "left-out",
        "ignores",
        "misreads",
        gzip=True,
    ),
    V3Case(
        "codecs-text",
        _edit(_B, lambda d: d.update(codecs="bytes")),
        "listing",
        "refuses",
        "misreads",
        gzip=True,
    ),
    V3Case(
        "dimension-names-length",
        _edit(_B, lambda d: d.update(dimension_names=["x", "y"])),
        "listing",
        "refuses",
        "fails",
        skipped=False,
    ),
    V3Case("attributes-list", _edit(_B, lambda d: d.update(attributes=[1])), None, "refuses", None),
    V3Case("group-not-json", _text(_G, "{not json"), "listing", "refuses", "ignores", where="/g"),
    V3Case(
        "group-zarr-format-2",
        _edit(_G, lambda d: d.update(zarr_format=2)),
        "empty",
        "ignores",
        "ignores",
        where="/g",
    ),
    V3Case(
        "group-zarr-format-text",
        _edit(_G, lambda d: d.update(zarr_format="3")),
        "listing",
        "refuses",
        None,
        where="/g",
    ),
    V3Case(
        "group-no-zarr-format",
        _edit(_G, lambda d: d.pop("zarr_format")),
        None,
        None,
        "ignores",
        where="/g",
    ),
    V3Case(
        "group-attributes-list",
        _edit(_G, lambda d: d.update(attributes=[1])),
        "listing",
        "refuses",
        None,
        where="/g",
    ),
]

_SEVERITY = {
    "listing": "fails",
    "left-out": "fails",
    "reading": "fails",
    "empty": "ignores",
    "refuses": "refuses",
    "ignores": "ignores",
    "fails": "fails",
    "misreads": "misreads",
}
_COPY = "nczarr convert URL OUT --mode zarr --zarr-format 3"


@pytest.mark.parametrize("case", V3_CASES, ids=lambda c: c.id)
def test_check_says_what_each_reader_does_with_a_malformed_v3_node(
    tmp_path: Path, case: V3Case
) -> None:
    store = _v3_store(tmp_path / "s.zarr", case.dtype, case.gzip)
    case.corrupt(store)
    report = nczarr.check(str(store))
    expected = {
        (reader, _SEVERITY[way])
        for reader, way in (
            (ZARR_PYTHON, case.zarr_python),
            (XARRAY, case.xarray),
            (GDAL, case.gdal),
        )
        if way is not None
    }
    at_node = [f for f in report.findings if f.where == case.where]
    assert {(f.reader, f.severity) for f in at_node} == expected
    key = f"{case.where[1:]}/zarr.json"
    assert all(repr(key) in f.problem for f in at_node)
    # the rest is netcdf-c's refusal of Zarr v3 (no array rule looks at the node)
    assert {(f.reader, f.where) for f in report.findings if f.where != case.where} == {
        (reader, "/") for reader in NETCDF_C
    }
    if case.where == "/g" and case.id == "group-attributes-list":
        assert {f.fix for f in at_node} == {f"make 'attributes' in {key} a JSON object"}
    else:
        excluded = f" --exclude {case.where}" if case.skipped and case.where == "/b" else ""
        assert {f.fix for f in at_node} == {_COPY + excluded}
    _zarr_python_does(store, case)
    _xarray_does(store, case)
    _gdal_does(store, case)
    with pytest.raises(OSError, match="Unknown file format"):  # no netcdf-c reads Zarr v3
        netCDF4.Dataset(f"{store.as_uri()}#mode=nczarr,file")


def _zarr_python_does(store: Path, case: V3Case) -> None:
    node, way = case.where[1:], case.zarr_python
    root = zarr.open_group(str(store), mode="r")
    assert root["a"][:].tolist() == DATA
    if way == "listing":
        with pytest.raises(Exception):  # noqa: B017 (zarr-python's own errors differ by field)
            root.members(max_depth=None)
        with pytest.raises(Exception):  # noqa: B017
            root[node]
        if node == "g":  # the nodes below it open by their path
            assert root["g/c"][:].tolist() == DATA
        return
    names = [name for name, _ in root.members(max_depth=None)]
    assert (node in names) == (way not in ("left-out",))
    if way == "left-out":
        with pytest.raises(Exception):  # noqa: B017
            root[node]
    elif way == "empty":
        assert "g/c" not in names
    elif way == "reading":
        with pytest.raises(ZeroDivisionError):
            root[node][:]
    elif node == "b":
        assert root["b"][:].tolist() == DATA
    else:
        assert "g/c" in names


def _xarray_does(store: Path, case: V3Case) -> None:
    node, way = case.where[1:], case.xarray
    if way == "refuses":  # the group holding the node: the root
        with pytest.raises(Exception):  # noqa: B017
            xr.open_zarr(str(store), consolidated=False)
        return
    ds = xr.open_zarr(str(store), consolidated=False)
    assert ds["a"].values.tolist() == DATA
    if node == "b":
        assert ("b" in ds) == (way is None)
        return
    group = xr.open_zarr(str(store), consolidated=False, group="g")
    assert ("c" in group) == (way is None)


def _gdal_does(store: Path, case: V3Case) -> None:
    seen = read_zarr(store)
    assert seen.error is None and seen.arrays["/a"].values.tolist() == DATA
    node = case.where
    if case.gdal == "ignores":
        assert not [p for p in seen.arrays if p == node or p.startswith(node + "/")]
    elif case.gdal == "fails":
        assert seen.arrays[node].error
    elif case.gdal == "misreads":
        assert seen.arrays[node].values.tolist() != DATA
    elif node == "/b":
        assert seen.arrays["/b"].values.tolist() == DATA
    else:
        assert seen.arrays["/g/c"].values.tolist() == DATA


@pytest.mark.parametrize("case_id", ["not-json", "no-chunk-key-encoding", "group-not-json"])
def test_the_fix_of_a_malformed_v3_node_is_a_copy_every_reader_opens(
    tmp_path: Path, case_id: str
) -> None:
    case = next(c for c in V3_CASES if c.id == case_id)
    store = _v3_store(tmp_path / "s.zarr", case.dtype, case.gzip)
    case.corrupt(store)
    fix = next(f.fix for f in nczarr.check(str(store)).findings if f.where == case.where)
    words = (fix or "").split()
    assert words[:4] == ["nczarr", "convert", "URL", "OUT"]
    options = dict(zip(words[4::2], words[5::2], strict=True))
    copy = tmp_path / "copy.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nczarr says what it skipped or read without
        nczarr.convert(
            str(store),
            str(copy),
            options["--mode"],
            zarr_format=int(options["--zarr-format"]),
            exclude=[options["--exclude"]] if "--exclude" in options else None,
        )
    assert [f for f in nczarr.check(str(copy)).findings if f.reader not in NETCDF_C] == []
    names = [name for name, _ in zarr.open_group(str(copy), mode="r").members(max_depth=None)]
    assert {"a", "g", "g/c"} <= set(names)
    assert ("b" in names) == ("--exclude" not in options)


@pytest.mark.parametrize("attributes", [[], ""], ids=["list", "text"])
def test_empty_array_attributes_are_no_finding(tmp_path: Path, attributes: Any) -> None:
    """An array's ``attributes`` that are an empty list or text open in zarr-python and
    xarray alike (a review found check claiming xarray refuses them)."""
    store = _v3_store(tmp_path / "s.zarr")
    _edit("b/zarr.json", lambda d: d.update(attributes=attributes))(store)
    assert [f for f in nczarr.check(str(store)).findings if f.where == "/b"] == []
    assert zarr.open_group(str(store), mode="r")["b"][:].tolist() == DATA
    with xr.open_zarr(str(store), consolidated=False) as ds:
        assert ds["b"].values.tolist() == DATA
        assert dict(ds["b"].attrs) == {}


def test_gdal_fails_on_dimension_names_given_as_text(tmp_path: Path) -> None:
    """zarr-python and xarray take the text "x" for the one name of a 1-D array."""
    store = _v3_store(tmp_path / "s.zarr")
    _edit(_B, lambda d: d.update(dimension_names="x"))(store)
    report = nczarr.check(str(store))
    found = {(f.reader, f.severity) for f in report.findings if f.where == "/b"}
    assert found == {(GDAL, "fails")}
    assert read_zarr(store).arrays["/b"].error
    assert xr.open_zarr(str(store), consolidated=False)["b"].dims == ("x",)


def test_the_data_types_check_knows_are_zarr_pythons() -> None:
    """check says zarr-python refuses a data type it does not register: a newer
    zarr-python registering more must not make that claim false."""
    from zarr.core.dtype import data_type_registry

    from nczarr.translate.compat_v3_faults import ZARR_PYTHON_DATA_TYPES

    data_type_registry._lazy_load()
    assert set(data_type_registry.contents) <= ZARR_PYTHON_DATA_TYPES


# ------------------------------------------------------- NCZarr dimension references
_NETCDF_C = """
import json, sys
import netCDF4
try:
    ds = netCDF4.Dataset(sys.argv[1])
except Exception as exc:
    print(json.dumps({"error": str(exc)}))
else:
    w = ds["w"]
    shown = {"dims": list(w.dimensions), "values": np.asarray(w[...]).tolist()}
    shown["others"] = {
        v.group().path.rstrip("/") + "/" + v.name: list(v.dimensions)
        for g in (ds, *ds.groups.values())
        for v in g.variables.values()
        if v.name != "w"
    }
    print(json.dumps(shown))
"""


def _netcdf_c(store: Path, mode: str = "nczarr") -> tuple[int, dict[str, Any]]:
    """What libnetcdf 4.10 (netCDF4) shows of ``/w``: its exit status (negative when
    it crashed) and the variable's dimensions and values, or the error."""
    code = "import numpy as np\n" + _NETCDF_C
    url = f"file://{store}#mode={mode},file"
    done = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else {}


def _nczarr_store(path: Path) -> Path:
    """What libnetcdf 4.10 writes: ``w(x)``, ``u(x)``, ``r(t)`` (unlimited, 2
    records), ``y`` of length 3, a group ``g`` with ``z`` of length 4 and ``c(z)``;
    then ``u`` refers to ``x`` by a name without '/' and ``c`` to the root's ``x``,
    references that hold (netcdf-c: a name from the root, a dimension of an ancestor)."""
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("x", 4)
        ds.createDimension("y", 3)
        ds.createDimension("t", None)
        ds.createVariable("w", "f4", ("x",))[:] = np.arange(4, dtype="f4")
        ds.createVariable("u", "f4", ("x",))[:] = np.arange(4, dtype="f4")
        ds.createVariable("r", "f4", ("t",))[:] = np.arange(2, dtype="f4")
        g = ds.createGroup("g")
        g.createDimension("z", 4)
        g.createVariable("c", "i4", ("z",))[:] = [7, 8, 9, 10]
    _record(path, "u", _refs(["x"]))
    _record(path, "g/c", _refs(["/x"]))
    return path


def _record(store: Path, array: str, change: Callable[[dict], Any], obj: str = ".zattrs") -> None:
    path = store / array / obj
    doc = json.loads(path.read_text())
    change(next(v for k, v in doc.items() if k.lower() == "_nczarr_array"))
    path.write_text(json.dumps(doc))


def _refs(value: Any) -> Callable[[dict], Any]:
    return lambda record: record.update(dimension_references=value)


#: What libnetcdf 4.10 shows of the arrays whose references hold (``u``: ``"x"``,
#: ``g/c``: ``"/x"``).
_HOLD = {"/u": ["x"], "/r": ["t"], "/g/c": ["x"]}

#: (kind, change to w's record, severity, what libnetcdf 4.10 does: "crash", an error's
#: words, or "scalar").
CURRENT = [
    ("undeclared", _refs(["/nosuch"]), "refuses", "crash"),
    ("short", _refs([]), "refuses", "crash"),
    ("absent", lambda r: r.pop("dimension_references"), "refuses", "crash"),
    ("not-list", _refs("/x"), "refuses", "crash"),
    ("not-name", _refs([3]), "refuses", "crash"),
    ("long", _refs(["/x", "/y"]), "refuses", "Invalid dimension size"),
    ("length", _refs(["/y"]), "refuses", "Invalid dimension size"),
    ("unlimited", _refs(["/t"]), "refuses", "Invalid dimension size"),
    ("empty-name", _refs([""]), "refuses", "Invalid argument"),
    ("below", _refs(["/g/z"]), "refuses", "No group found"),
    ("scalar", lambda r: r.update(scalar=1), "misreads", "scalar"),
]


@pytest.mark.parametrize(
    ("kind", "change", "severity", "netcdf_c"), CURRENT, ids=[c[0] for c in CURRENT]
)
def test_netcdf_c_410_on_dimension_references_that_fail(
    tmp_path: Path, kind: str, change: Callable[[dict], Any], severity: str, netcdf_c: str
) -> None:
    store = _nczarr_store(tmp_path / "s.file")
    assert _netcdf_c(store)[1] == {"dims": ["x"], "values": DATA, "others": _HOLD}
    _record(store, "w", change)
    report = nczarr.check(str(store))
    at_w = [f for f in report.findings if f.where == "/w"]
    assert [(f.reader, f.severity) for f in at_w] == [(NC410, severity)]
    assert [f for f in report.for_reader(NC410) if f.where != "/w"] == []
    assert "'w/.zattrs'" in at_w[0].problem
    status, shown = _netcdf_c(store)
    if netcdf_c == "crash":
        assert status < 0 and "crashes" in at_w[0].problem
    elif netcdf_c == "scalar":
        assert status == 0 and shown == {"dims": [], "values": 0.0, "others": _HOLD}
        assert "first value only" in at_w[0].problem
    else:
        assert status == 0 and netcdf_c in shown["error"] and netcdf_c in at_w[0].problem
    # the other readers take _ARRAY_DIMENSIONS and read the array as written
    assert zarr.open_group(str(store), mode="r")["w"][:].tolist() == DATA
    ds = xr.open_zarr(str(store), consolidated=False)
    assert ds["w"].dims == ("x",) and ds["w"].values.tolist() == DATA
    assert read_zarr(store).arrays["/w"].values.tolist() == DATA
    # nczarr reads it so, with a warning naming it (but for a dimension of a group
    # below the array's, which its model keeps), and its copy is the fix
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dims = nczarr.read(str(store)).root.variables["w"].dimensions
    assert dims == (("/g/z",) if kind == "below" else ("/x",))
    assert kind == "below" or any(
        "'/w'" in str(w.message) or "w/.zattrs" in str(w.message) for w in caught
    )


_READ_C = """
import json, sys, netCDF4
with netCDF4.Dataset(sys.argv[1]) as ds:
    c = ds["g"]["c"]
    print(json.dumps({"dims": list(c.dimensions), "values": c[:].tolist()}))
"""


@pytest.mark.parametrize(
    ("refs", "finding"), [(["/h/k"], True), (["/g/z/"], False)], ids=["aside", "trailing-slash"]
)
def test_netcdf_c_410_on_a_sibling_groups_dimension_and_a_trailing_slash(
    tmp_path: Path, refs: list[str], finding: bool
) -> None:
    """A reference to a dimension of a group that is neither the array's nor above it
    (a sibling's) crashes libnetcdf 4.10.1; ``"/g/z/"`` is read as ``"/g/z"`` (found by
    a review: check said nothing of the first and claimed a crash for the second)."""
    store = tmp_path / "s.file"
    with netCDF4.Dataset(f"file://{store}#mode=nczarr,file", "w") as ds:
        g, h = ds.createGroup("g"), ds.createGroup("h")
        g.createDimension("z", 4)
        g.createVariable("c", "i4", ("z",))[:] = [7, 8, 9, 10]
        h.createDimension("k", 4)
        h.createVariable("d", "i4", ("k",))[:] = [1, 2, 3, 4]
    _record(store, "g/c", _refs(refs))
    at_c = [f for f in nczarr.check(str(store)).findings if f.where == "/g/c"]
    url = f"file://{store}#mode=nczarr,file"
    done = subprocess.run([sys.executable, "-c", _READ_C, url], capture_output=True, text=True)
    if finding:
        assert done.returncode < 0  # a segmentation fault
        assert [(f.reader, f.severity) for f in at_c] == [(NC410, "refuses")]
        assert "crashes" in at_c[0].problem and "'/h'" in at_c[0].problem
    else:
        assert json.loads(done.stdout) == {"dims": ["z"], "values": [7, 8, 9, 10]}
        assert at_c == []


@pytest.mark.parametrize("kind", ["undeclared", "length", "scalar"])
def test_the_fix_of_failing_references_is_a_copy_netcdf_c_opens(tmp_path: Path, kind: str) -> None:
    change, _, _ = next(c[1:] for c in CURRENT if c[0] == kind)
    store = _nczarr_store(tmp_path / "s.file")
    _record(store, "w", change)
    fix = nczarr.check(str(store)).for_reader(NC410)[0].fix
    assert fix == "nczarr convert URL OUT --mode nczarr"
    copy = tmp_path / "copy.file"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning the test above asserts
        nczarr.convert(str(store), str(copy), "nczarr")
    assert nczarr.check(str(copy)).for_reader(NC410) == []
    status, shown = _netcdf_c(copy)
    assert status == 0 and (shown["dims"], shown["values"]) == (["x"], DATA)


#: 4.9.1/4.9.2's layout (``ref_oldkeys``: ``v`` of shape [2, 4, 6] over d0, d1, d2).
V2_KEYS = [
    ("undeclared", ["/nosuch", "/d1", "/d2"], "crash"),
    ("short", ["/d0"], "crash"),
    ("not-list", "/d0", "crash"),
    ("not-name", [3, "/d1", "/d2"], "crash"),
    ("long", ["/d0", "/d1", "/d2", "/d0"], "crash"),  # an abort
    ("length", ["/d1", "/d1", "/d2"], "Invalid dimension size"),
    ("empty-name", ["", "/d1", "/d2"], "Invalid argument"),
]


@pytest.mark.parametrize(("kind", "refs", "netcdf_c"), V2_KEYS, ids=[c[0] for c in V2_KEYS])
def test_netcdf_c_410_on_failing_references_of_the_4_9_2_layout(
    tmp_path: Path, kind: str, refs: Any, netcdf_c: str
) -> None:
    store = extract_fixture("ref_oldkeys.file.zip", tmp_path)
    _record(store, "v", lambda r: r.update(dimrefs=refs), ".zarray")
    report = nczarr.check(str(store))
    at_v = [(f.reader, f.severity) for f in report.findings if f.where == "/v"]
    assert at_v == [(NC410, "refuses")]
    code = "import netCDF4, sys\nnetCDF4.Dataset(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", code, f"file://{store}#mode=nczarr,file"],
        capture_output=True,
        text=True,
    )
    if netcdf_c == "crash":
        assert done.returncode < 0
    else:
        assert done.returncode == 1 and netcdf_c in done.stderr
    # netcdf-c 4.9.0 reads this layout as pure Zarr (the references do not matter to it)
    assert report.for_reader(NC49) == []


# ------------------------------------------------ 4.8.1/4.9.0's layout, with 4.9.0
CDL = """netcdf s {
dimensions:
  x = 4 ;
  y = 3 ;
variables:
  float w(x) ;
data:
  w = 0, 1, 2, 3 ;
group: sub {
  dimensions:
    n = 2 ;
  variables:
    int t(n, x) ;
  data:
    t = 1, 2, 3, 4, 5, 6, 7, 8 ;
  }
}
"""


#: (array, references, what ncdump 4.9.0 does, whether xarray refuses the group):
#: ``sub/t`` has no _ARRAY_DIMENSIONS (ncgen 4.9.0 writes it for root arrays only).
V490 = [
    ("w", ["/nosuch"], "crash", False),
    ("w", [], "crash", False),
    ("sub/t", "/sub/n", "crash", True),
    ("sub/t", [3, "/x"], "crash", True),
    ("sub/t", ["/sub/n"], "crash", True),
    ("sub/t", ["/sub/n", "/x", "/y"], None, True),  # 4.9.0 reads past the extra one
    ("w", ["/y"], "w(y)", False),  # the array shown with y's length 3
    ("w", [""], "Invalid argument", False),
    ("w", ["/sub/n"], "No group found", False),
]


@pytest.mark.parametrize(("array", "refs", "ncdump", "xarray"), V490)
def test_netcdf_c_490_and_xarray_on_failing_references_of_the_4_9_0_layout(
    tmp_path: Path, array: str, refs: Any, ncdump: str | None, xarray: bool
) -> None:
    ncgen = debian_490("ncgen")
    (tmp_path / "s.cdl").write_text(CDL)
    store = tmp_path / "s.file"
    url = f"file://{store}#mode=nczarr,file"
    subprocess.run([ncgen, "-k", "nc4", "-o", url, str(tmp_path / "s.cdl")], check=True)
    _record(store, array, lambda r: r.update(dimrefs=refs), ".zarray")
    report = nczarr.check(str(store))
    where = "/" + array
    at = {(f.reader, f.severity) for f in report.findings if f.where == where}
    expected = set()
    if ncdump is not None:
        expected.add((NC49, "misreads" if ncdump == "w(y)" else "refuses"))
    if xarray:
        expected.add((XARRAY, "refuses"))
    assert at == expected
    shown = subprocess.run([debian_490("ncdump"), url], capture_output=True, text=True)
    if ncdump == "crash":
        assert shown.returncode < 0 or shown.returncode >= 128
    elif ncdump is None:
        assert shown.returncode == 0 and "int t(n, x)" in shown.stdout
    elif ncdump == "w(y)":
        assert "float w(y)" in shown.stdout and "w = 0, 1, 2 ;" in shown.stdout
    else:
        assert shown.returncode == 1 and ncdump in shown.stderr
    group = xr.open_zarr(str(store), consolidated=False, group="sub") if not xarray else None
    if xarray:
        with pytest.raises((ValueError, TypeError)):
            xr.open_zarr(str(store), consolidated=False, group="sub")
    else:
        assert group is not None and group["t"].shape == (2, 4)
    # netcdf-c 4.10 reads 4.9.0's layout as pure Zarr (check's note on "/"), references
    # unread: it opens the store
    assert _netcdf_c(store)[1]["dims"] == ["x"]
    assert not [f for f in report.for_reader(NC410) if f.where != "/"]
