"""One odd array never fails a whole store (README, "Read any layout").

An array whose own metadata is malformed (its ``.zarray`` or ``zarr.json`` fields, its
``.zattrs`` not an object, its ``_nczarr_attr`` types, a ``zarr.json`` that is no Zarr
v3 node) is skipped by ``read``, ``view``, ``nczarr info`` and the xarray engine with
a warning naming it and what is wrong; the other arrays read exactly as in the store
without it. ``convert`` refuses such an array, naming it, unless it is excluded, as it
does an invalid ``_FillValue``. Found by a hunt over every layout the readers accept
(Zarr v2 and v3 as xarray writes them, NCZarr as netcdf-c writes it, NCZarr V1):
each of these failed every entry point for the whole store before.
"""

from __future__ import annotations

import json
import shutil
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.cli import main
from nczarr.errors import NCZarrError

FIXTURES = Path(__file__).parent / "data"


def _dataset() -> xr.Dataset:
    return xr.Dataset(
        {
            "a": ("x", np.arange(3, dtype="i4")),
            "b": (("x", "y"), np.arange(12, dtype="f8").reshape(3, 4)),
            "c": ("y", np.arange(4, dtype="i2")),
        }
    )


def _zarr2(path: Path) -> Path:
    _dataset().to_zarr(path, zarr_format=2, consolidated=False)
    return path


def _zarr3(path: Path) -> Path:
    _dataset().to_zarr(path, zarr_format=3, consolidated=False)
    return path


def _nczarr(path: Path) -> Path:
    """netcdf-c's NCZarr (``_nczarr_*`` in ``.zattrs``): a(x), b(x, y), c(y)."""
    nc = netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w")
    nc.createDimension("x", 3)
    nc.createDimension("y", 4)
    nc.createVariable("a", "i4", ("x",))[:] = [0, 1, 2]
    nc.createVariable("b", "f8", ("x", "y"))[:] = np.arange(12).reshape(3, 4)
    nc.createVariable("c", "i2", ("y",))[:] = [0, 1, 2, 3]
    nc.close()
    return path


def _nczarr_v1(path: Path) -> Path:
    """netcdf-c 4.8.0's NCZarr V1 (``.nczarray``): /lat and /g1/pos."""
    with zipfile.ZipFile(FIXTURES / "ref_oldformat_v1.zip") as archive:
        archive.extractall(path.parent / "unzipped")
    shutil.move(path.parent / "unzipped" / "oldformat.file", path)
    return path


MAKERS: dict[str, Callable[[Path], Path]] = {
    "zarr2": _zarr2,
    "zarr3": _zarr3,
    "nczarr": _nczarr,
    "nczarr-v1": _nczarr_v1,
}


def _edit(store: Path, key: str, field: str | None, value: Any) -> None:
    """Set ``field`` (dotted) of the JSON object at ``key`` to ``value``; with no
    ``field``, the whole object becomes ``value``."""
    path = store / key
    if field is None:
        path.write_text(json.dumps(value))
        return
    doc = json.loads(path.read_text())
    *parents, last = field.split(".")
    target = doc
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    path.write_text(json.dumps(doc))


def _variables(store: Path) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        return {v.path: v for v in nczarr.read(str(store)).root.all_variables()}


def _dimensions(store: Path) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        root = nczarr.read(str(store)).root
    out = {}
    for group in [root, *root.groups.values()]:
        out.update({f"{group.path}:{n}": d for n, d in group.dimensions.items()})
    return out


#: (layout, key of the odd array's object, field or None for the whole object, value,
#: what the warning says after "skipped array '<fqn>': ")
ODD = [
    ("zarr2", "b/.zarray", "shape", "zz", r"'b/.zarray': 'shape' must be a list"),
    ("zarr2", "b/.zarray", "chunks", [0, 4], r"'b/.zarray': 'chunks' must hold positive"),
    ("zarr2", "b/.zarray", "dtype", None, r"'b/.zarray': dtype must be a string"),
    ("zarr2", "b/.zarray", "compressor", "zz", r"'b/.zarray'"),
    ("zarr2", "b/.zarray", "filters", {"q": 1}, r"'b/.zarray'"),
    ("zarr2", "b/.zarray", "order", "X", r"'b/.zarray': 'order' must be 'C' or 'F'"),
    ("zarr2", "b/.zarray", "dimension_separator", "x", r"'b/.zarray'"),
    ("zarr2", "b/.zarray", "fill_value", "zz", r"'b/.zarray': invalid fill_value"),
    ("zarr2", "b/.zarray", "zarr_format", 3, r"'b/.zarray'"),
    ("zarr2", "b/.zarray", None, [1], r"'b/.zarray'"),
    ("zarr2", "b/.zattrs", None, [1], r"'b/.zattrs' must hold a JSON object"),
    ("zarr3", "b/zarr.json", "shape", "zz", r"'b/zarr.json': 'shape' must be a list"),
    ("zarr3", "b/zarr.json", "data_type", None, r"data_type must be a name"),
    ("zarr3", "b/zarr.json", "chunk_grid.configuration", 5, r"'b/zarr.json': chunk_grid"),
    ("zarr3", "b/zarr.json", "chunk_key_encoding.configuration.separator", "x", "separator"),
    ("zarr3", "b/zarr.json", "codecs", [{"name": "bytes", "configuration": 5}], "b/zarr.json"),
    ("zarr3", "b/zarr.json", "fill_value", "zz", r"'b/zarr.json': invalid fill_value"),
    ("zarr3", "b/zarr.json", "attributes", [1], r"'attributes' must be a JSON object"),
    ("zarr3", "b/zarr.json", "zarr_format", 2, r"'b/zarr.json': zarr_format must be 3"),
    ("zarr3", "b/zarr.json", "node_type", "zz", r"'b/zarr.json': node_type must be"),
    ("zarr3", "b/zarr.json", None, [1], r"'b/zarr.json' must hold a JSON object, got list"),
    ("nczarr", "b/.zarray", "shape", [3], r"'b/.zarray': 'chunks' \[3, 4\] and 'shape' \[3\]"),
    ("nczarr", "b/.zarray", "dtype", 5, r"'b/.zarray': dtype must be a string"),
    ("nczarr", "b/.zattrs", "_nczarr_attr.types", [1], r"_nczarr_attr.types must be a JSON"),
    ("nczarr", "b/.zattrs", "_nczarr_attr", "zz", r"_nczarr_attr must be a JSON object"),
    ("nczarr-v1", "g1/pos/.zarray", "order", "X", r"'order' must be 'C' or 'F'"),
    ("nczarr-v1", "g1/pos/.nczattrs", None, [1], r"'g1/pos/.nczattrs': must be"),
]


@pytest.mark.parametrize(("layout", "key", "field", "value", "message"), ODD)
def test_read_skips_the_odd_array_only(
    tmp_path: Path, layout: str, key: str, field: str | None, value: Any, message: str
) -> None:
    store = MAKERS[layout](tmp_path / "store")
    fqn = "/" + key.rpartition("/")[0]
    clean = _variables(store)
    dims = _dimensions(store)
    _edit(store, key, field, value)
    with pytest.warns(nczarr.NCZarrWarning, match=rf"skipped array '{fqn}': .*{message}"):
        ds = nczarr.read(str(store))
    assert ds.skipped == (fqn,)
    others = {p: v for p, v in clean.items() if p != fqn}
    assert {v.path: v for v in ds.root.all_variables()} == others
    if layout != "nczarr-v1":  # pos holds the only use of /g1/lon, declared anyway
        assert set(_dimensions(store)) <= set(dims)


def test_what_an_odd_array_declared_before_it_failed_is_taken_back(tmp_path: Path) -> None:
    """``b`` names a new dimension ``z`` of length 3 and is found odd after its
    dimensions are resolved (its ``_nczarr_attr`` is not an object): ``z`` is not left
    behind, so ``c`` gets ``z`` at its length 4, not a renamed ``z_1``."""
    store = _zarr2(tmp_path / "store")
    clean = _variables(store)
    _edit(store, "b/.zattrs", "_ARRAY_DIMENSIONS", ["z", "y"])
    _edit(store, "b/.zattrs", "_nczarr_attr", [1])
    _edit(store, "c/.zattrs", "_ARRAY_DIMENSIONS", ["z"])
    with pytest.warns(nczarr.NCZarrWarning, match=r"skipped array '/b': .*_nczarr_attr"):
        ds = nczarr.read(str(store))
    assert set(ds.root.dimensions) == {"x", "z"}
    assert ds.root.variables["a"] == clean["/a"]
    assert ds.root.variables["c"].dimensions == ("/z",)
    assert not any("renamed" in w or ("'/b': " in w and "skipped" not in w) for w in ds.warnings)


def test_a_zarr3_group_whose_document_is_odd_keeps_its_arrays(tmp_path: Path) -> None:
    """Not an array: a group whose ``zarr.json`` is no node is read as a group
    without attributes, its arrays as before, with a warning naming it."""
    store = _zarr3(tmp_path / "store")
    ds = _dataset()
    ds.to_zarr(store, group="g", zarr_format=3, consolidated=False, mode="a")
    clean = _variables(store)
    _edit(store, "g/zarr.json", "node_type", "zz")
    with pytest.warns(nczarr.NCZarrWarning, match=r"group '/g': .* read as a group without"):
        read = nczarr.read(str(store))
    assert {v.path: v for v in read.root.all_variables()} == clean
    (store / "g" / "zarr.json").write_bytes(b"{not json")
    with pytest.warns(nczarr.NCZarrWarning, match=r"group '/g': .*invalid JSON.* read as a"):
        read = nczarr.read(str(store))
    assert {v.path: v for v in read.root.all_variables()} == clean


@pytest.mark.parametrize(
    ("layout", "key", "field", "value"),
    [
        ("zarr2", "b/.zarray", "order", "X"),
        ("zarr3", "b/zarr.json", "fill_value", "zz"),
        ("zarr3", "b/zarr.json", "zarr_format", 2),
        ("nczarr", "b/.zarray", "dtype", 5),
    ],
)
def test_every_entry_point_reads_the_other_arrays(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    layout: str,
    key: str,
    field: str,
    value: Any,
) -> None:
    store = MAKERS[layout](tmp_path / "store")
    _edit(store, key, field, value)
    skipped = r"skipped array '/b'"
    with pytest.warns(nczarr.NCZarrWarning, match=skipped):
        view = nczarr.view(str(store), "zarr")
    assert "a/.zarray" in view and "b/.zarray" not in view
    view.close()
    # convert refuses the odd array, naming it, as it refuses an invalid _FillValue ...
    for mode in ("nczarr", "zarr"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nczarr.NCZarrWarning)
            with pytest.raises(NCZarrError, match=r"'/b'") as refused:
                nczarr.convert(str(store), str(tmp_path / f"refused-{mode}"), mode)
        assert "exclude" in str(refused.value)
        # ... and copies the others when it is excluded
        with pytest.warns(nczarr.NCZarrWarning, match=skipped):
            nczarr.convert(str(store), str(tmp_path / mode), mode, exclude=["/b"])
        copy = xr.open_dataset(str(tmp_path / mode), engine="nczarr")
        np.testing.assert_array_equal(copy["a"].values, [0, 1, 2])
        assert "b" not in copy
        copy.close()
    with pytest.warns(nczarr.NCZarrWarning, match=skipped):
        opened = xr.open_dataset(str(store), engine="nczarr")
    np.testing.assert_array_equal(opened["c"].values, [0, 1, 2, 3])
    assert "b" not in opened
    opened.close()
    for command in ("info", "dump"):
        assert main([command, str(store)]) == 0
        printed = capsys.readouterr()
        assert "skipped array '/b'" in printed.err + printed.out
        assert " a" in printed.out


@pytest.mark.parametrize(
    ("layout", "key", "field", "value", "dimensions"),
    [
        (
            "nczarr",
            "b/.zattrs",
            "_nczarr_array.dimension_references",
            ["/y", "/x"],
            ("/x", "/y"),  # from _ARRAY_DIMENSIONS, which netcdf-c writes too
        ),
        ("nczarr", "b/.zattrs", "_nczarr_array", [1], ("/x", "/y")),
        (
            "nczarr-v1",
            "g1/pos/.nczarray",
            "dimrefs",
            ["/lat"],
            ("/_Anonymous_Dimension_8", "/_Anonymous_Dimension_10"),  # V1: no names
        ),
    ],
)
def test_malformed_dimension_references_are_read_as_without_them(
    tmp_path: Path, layout: str, key: str, field: str, value: Any, dimensions: tuple[str, ...]
) -> None:
    """netcdf-c refuses the whole store; the array's dimensions come from
    ``_ARRAY_DIMENSIONS`` or are anonymous, as for an array without NCZarr array
    metadata, with a warning naming it."""
    store = MAKERS[layout](tmp_path / "store")
    fqn = "/" + key.rpartition("/")[0]
    group, _, name = fqn.rpartition("/")
    clean = _variables(store)
    with xr.open_dataset(str(store), engine="nczarr", group=group or None) as opened:
        values = opened[name].values
    _edit(store, key, field, value)
    pattern = rf"array '{fqn}': .*: dimensions taken from _ARRAY_DIMENSIONS or made anonymous"
    with pytest.warns(nczarr.NCZarrWarning, match=pattern):
        ds = nczarr.read(str(store))
    read = {v.path: v for v in ds.root.all_variables()}
    assert read[fqn].dimensions == dimensions
    assert read[fqn].shape == clean[fqn].shape
    assert {p: v for p, v in read.items() if p != fqn} == {
        p: v for p, v in clean.items() if p != fqn
    }
    with (
        pytest.warns(nczarr.NCZarrWarning, match=pattern),
        xr.open_dataset(str(store), engine="nczarr", group=group or None) as opened,
    ):
        np.testing.assert_array_equal(opened[name].values, values)


def test_a_scalar_whose_nczarr_array_is_emptied_reads_as_a_scalar(tmp_path: Path) -> None:
    """netcdf-c writes a scalar as shape [1] with ``"scalar": 1``; without that entry
    (and no references) the pure rules read its ``_ARRAY_DIMENSIONS: ["_scalar_"]``
    (found by the fuzz tests: the reading was checked against dimensions it has not)."""
    store = tmp_path / "scalar"
    nc = netCDF4.Dataset(f"file://{store}#mode=nczarr,file", "w")
    nc.createDimension("x", 3)
    nc.createVariable("a", "i4", ("x",))[:] = [0, 1, 2]
    nc.createVariable("s", "f8", ())[...] = 2.5
    nc.close()
    clean = _variables(store)
    _edit(store, "s/.zattrs", "_nczarr_array", {})
    with pytest.warns(nczarr.NCZarrWarning, match=r"array '/s': .*dimensions taken from"):
        ds = nczarr.read(str(store))
    assert {v.path: v for v in ds.root.all_variables()} == clean
    assert ds.root.variables["s"].scalar


@pytest.mark.parametrize(
    ("layout", "key"),
    [
        ("zarr2", "b/.zarray"),
        ("zarr2", "b/.zattrs"),
        ("zarr3", "b/zarr.json"),
        ("nczarr", "b/.zarray"),
        ("nczarr", "b/.zattrs"),
        ("nczarr-v1", "g1/pos/.zarray"),
    ],
)
def test_an_array_object_that_is_not_json_skips_that_array(
    tmp_path: Path, layout: str, key: str
) -> None:
    store = MAKERS[layout](tmp_path / "store")
    fqn = "/" + key.rpartition("/")[0]
    clean = _variables(store)
    (store / key).write_bytes(b'{"shape": [3, 4')
    message = rf"skipped array '{fqn}': '{key}' must hold a JSON object, got invalid JSON"
    with pytest.warns(nczarr.NCZarrWarning, match=message):
        ds = nczarr.read(str(store))
    assert ds.skipped == (fqn,)
    assert {v.path: v for v in ds.root.all_variables()} == {
        p: v for p, v in clean.items() if p != fqn
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        with pytest.raises(NCZarrError, match=rf"{fqn}.*exclude"):
            nczarr.convert(str(store), str(tmp_path / "refused"), "zarr")
        nczarr.convert(str(store), str(tmp_path / "copy"), "zarr", exclude=[fqn])


def test_a_root_object_that_is_not_json_still_fails_the_store(tmp_path: Path) -> None:
    """The root is the store, not one odd array: nothing can be read without it."""
    store = _zarr2(tmp_path / "store")
    (store / ".zgroup").write_bytes(b"{not json")
    with pytest.raises(nczarr.MetadataError, match=r"'.zgroup': invalid JSON"):
        nczarr.read(str(store))


def test_dump_of_an_array_whose_codec_is_missing_is_one_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its values cannot be decoded here (as ncdump stops at an unknown filter); the
    header still prints. zarr-python's UnknownCodecError escaped as a traceback."""
    store = _zarr2(tmp_path / "store")
    _edit(store, "b/.zarray", "compressor", {"id": "no-such-codec"})
    assert main(["dump", str(store)]) == 1
    printed = capsys.readouterr()
    assert "nczarr: error: " in printed.err and "'/b'" in printed.err
    assert "numcodecs has no codec 'no-such-codec' here" in printed.err
    assert main(["dump", "-h", str(store)]) == 0
    assert "double b(x, y)" in capsys.readouterr().out


def _pure_store_with_a_bad_fill(path: Path, dims_of_odd: list[str]) -> Path:
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    odd = root.create_array("a", shape=(5,), chunks=(5,), dtype="f4", compressors=None)
    odd[:] = 1
    odd.attrs.update({"_ARRAY_DIMENSIONS": dims_of_odd, "_FillValue": "notanumber"})
    good = root.create_array("b", shape=(3,), chunks=(3,), dtype="f4", compressors=None)
    good[:] = 2
    good.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    return path


@pytest.mark.parametrize("dims_of_odd", [["x"], ["y"]], ids=["same-name", "new-name"])
def test_an_array_skipped_for_its_fill_value_declares_no_dimension(
    tmp_path: Path, dims_of_odd: list[str]
) -> None:
    """The invalid ``_FillValue`` is found before the array's dimensions are declared:
    the other array keeps its ``x`` (it became ``x_1``, with ``x`` at the odd array's
    length, or a dangling ``y``)."""
    store = _pure_store_with_a_bad_fill(tmp_path / "s.zarr", dims_of_odd)
    with pytest.warns(nczarr.NCZarrWarning, match=r"skipped array '/a'.*_FillValue"):
        dataset = nczarr.read(str(store))
    assert {k: d.size for k, d in dataset.root.dimensions.items()} == {"x": 3}
    assert dataset.root.variables["b"].dimensions == ("/x",)


def test_an_append_to_a_store_with_a_skipped_array_is_refused(tmp_path: Path) -> None:
    """The grown metadata would leave the skipped array out (it is in no model): the
    append is refused, naming it, and the store is left as it was."""
    store = _pure_store_with_a_bad_fill(tmp_path / "s.zarr", ["y"])
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    source = tmp_path / "more.zarr"
    more = xr.Dataset({"b": ("x", np.full(2, 3.0, "f4"))})
    more.to_zarr(source, zarr_format=2, encoding={"b": {"_FillValue": None}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        with pytest.raises(nczarr.InvalidModeError, match=r"leaves out /a .*would drop"):
            nczarr.convert(source, store, append_dim="x")
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_migrate_refuses_an_exclude_that_names_nothing(tmp_path: Path) -> None:
    """A typo in ``exclude=`` is not a silent no-op (as for convert)."""
    with zipfile.ZipFile(Path(__file__).parent / "data" / "ref_oldformat_v1.zip") as zf:
        zf.extractall(tmp_path)
    with pytest.raises(nczarr.InvalidModeError, match="'/nosuch' matches no variable"):
        nczarr.migrate(str(tmp_path / "oldformat.file"), exclude=["/nosuch"])
