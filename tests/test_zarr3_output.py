"""Zarr v3 output: ``convert(..., mode="zarr", zarr_format=3)``, the URL word ``v3``, the view.

The oracle is the Zarr v2 output of the same source: zarr-python 3 and xarray must read
the v3 output with the same values, dtypes and fill values, and every chunk must be
the same object under the same key (a verbatim copy). netcdf-c writes the sources.
"""

from __future__ import annotations

import copy
import json
import shutil
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nczarr
from nczarr import records
from nczarr.errors import InvalidModeError

from .budget import long_or
from .ncoracle import build, diff, file_tree, nc_url

NUMERIC = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]
METADATA = {"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"}
EXAMPLES = Path(__file__).parent.parent / "examples"

pytestmark = pytest.mark.filterwarnings(
    "ignore:Numcodecs codecs are not in the Zarr version 3:UserWarning",
    "ignore:Consolidated metadata is currently not part:UserWarning",
    "ignore:The data type .NullTerminatedBytes:FutureWarning",
    "ignore:Both zarr.json .Zarr format 3. and .zarray:UserWarning",
)


def _fill_for(t: str, endian: str):
    if t[0] == "f":
        return np.dtype(t).type(np.nan if endian == "little" else -9999.5)
    info = np.iinfo(t)
    return np.dtype(t).type(info.max - 1 if endian == "little" else info.min + 1)


def rich(ds: netCDF4.Dataset) -> None:
    """Every numeric type in both byte orders with fill values, partially written
    arrays, NaN/Inf and extremes, codecs netcdf-c writes, scalars, char and strings."""
    ds.createDimension("x", 6)
    ds.createDimension("t", None)
    ds.setncattr("title", "zarr v3 output")
    ds.setncattr("pi", np.float32(3.14159))
    ds.setncattr("ints", np.array([1, 2, 3], "i4"))
    ds.setncattr_string("strs", ["a", "bc"])
    for t in NUMERIC:
        for endian in ("little", "big"):
            fill = _fill_for(t, endian)
            v = ds.createVariable(
                f"v_{t}_{endian[0]}",
                np.dtype(t),
                ("t", "x"),
                endian=endian,
                fill_value=fill,
                chunksizes=(2, 4),
            )
            v.units = "1"
            data = np.arange(15).reshape(3, 5).astype(t)
            if t[0] == "f":
                data[0, 0], data[0, 1], data[0, 2] = np.nan, np.inf, -np.inf
                data[1, 0] = np.finfo(t).max
            else:
                data[0, 0], data[0, 1] = np.iinfo(t).min, np.iinfo(t).max
            v[0:3, 0:5] = data  # the last column and rows never written: fill
    ds.createVariable("z", "f8", ("x",), zlib=True, shuffle=True, complevel=6)[:] = np.linspace(
        0, 1, 6
    )
    ds.createVariable("zf", "i4", ("x",), zlib=True, fletcher32=True)[:] = np.arange(6)
    ds.createVariable("zs", "i2", ("x",), compression="zstd", complevel=3)[:] = np.arange(6)
    ds.createVariable("zb", "i4", ("x",), compression="blosc_lz4", complevel=2)  # unwritten
    ds.createVariable("zbz", "f4", ("x",), compression="bzip2")[0:3] = [1.5, 2.5, 3.5]
    c = ds.createVariable("c", "S1", ("x",), fill_value=b"z")
    c[0:3] = np.array([b"a", b"b", b"c"])
    s = ds.createVariable("s", str, ("x",))
    s[0] = "hello"
    s[1] = "wörld"
    sc = ds.createVariable("sc", "f4", (), fill_value=np.float32(np.nan))
    sc.assignValue(np.float32(273.15))
    ds.createVariable("sc_unwritten", "i8", (), fill_value=np.int64(-7))
    ds.createVariable("nofill", "u8", ("x",), fill_value=False)[0:2] = [1, 2]
    g = ds.createGroup("g")
    g.createDimension("y", 3)
    g.setncattr("gattr", np.int16(-5))
    gv = g.createVariable("gv", "u2", ("y", "x"))
    gv[0, :] = np.arange(6)
    h = g.createGroup("h")
    h.createVariable("hv", "f8", ("y",), fill_value=-1.0)[1] = 2.0


#: Big-endian 1-byte arrays: the Zarr v2 output says ``>i1``/``>u1`` (netcdf-c's
#: endianness flag), which zarr-python 3 cannot open; Zarr v3 has no byte order for them.
V2_UNREADABLE = ["v_i1_b", "v_u1_b"]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("zarr3out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # netCDF4's big-endian notice
        src = build(root / "rich.file", rich)
        nczarr.convert(src, root / "v2.zarr", mode="zarr")
        # what xarray can open of the v2 output (see V2_UNREADABLE)
        nczarr.convert(src, root / "v2x.zarr", mode="zarr", exclude=V2_UNREADABLE)
        report = nczarr.convert(src, root / "v3.zarr", mode="zarr", zarr_format=3)
    assert report.zarr_format == 3
    return {"src": src, "v2": root / "v2.zarr", "v2x": root / "v2x.zarr", "v3": root / "v3.zarr"}


def _arrays(group: zarr.Group, prefix: str = "") -> dict[str, zarr.Array]:
    out = {}
    for name, member in group.members():
        path = f"{prefix}{name}"
        if isinstance(member, zarr.Group):
            out.update(_arrays(member, path + "/"))
        else:
            out[path] = member
    return out


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a.shape == b.shape and np.array_equal(a, b)


# ------------------------------------------------------------------ readers agree
def test_every_node_is_zarr_v3(outputs: dict[str, Path]) -> None:
    tree = file_tree(outputs["v3"])
    names = {key.rsplit("/", 1)[-1] for key in tree}
    assert not names & {".zarray", ".zgroup", ".zattrs", ".zmetadata"}
    for key, value in tree.items():
        if key.endswith("zarr.json"):
            assert json.loads(value)["zarr_format"] == 3
    doc = json.loads(tree["v_i4_b/zarr.json"])
    assert doc["dimension_names"] == ["t", "x"]
    assert doc["codecs"][0] == {"name": "bytes", "configuration": {"endian": "big"}}
    assert doc["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "."}}
    assert doc["attributes"]["units"] == "1"
    assert nczarr.detect(outputs["v3"]).zarr_format == 3


def test_zarr_python_reads_the_same_arrays(outputs: dict[str, Path]) -> None:
    v3 = _arrays(zarr.open_group(outputs["v3"], mode="r"))
    assert len(v3) == 2 * len(NUMERIC) + 12
    for path, b in v3.items():
        if path in V2_UNREADABLE:
            continue
        a = zarr.open_array(outputs["v2"] / path, mode="r")
        assert b.metadata.zarr_format == 3
        # zarr-python shows a v3 array in native byte order (the bytes codec swaps)
        assert a.dtype.newbyteorder("=") == b.dtype.newbyteorder("="), path
        assert (a.shape, a.chunks) == (b.shape, b.chunks), path
        if a.fill_value is None:  # v3 requires one: 0 (b"" for text, whose v2 fill is null
            # when netCDF text has no _FillValue), what zarr-python reads for v2's None
            assert b.fill_value == np.zeros((), b.dtype)[()], path
        else:
            assert _same(a.fill_value, b.fill_value), (path, a.fill_value, b.fill_value)
        assert _same(a[...], b[...]), path


def test_zarr_python_reads_the_netcdf_values(outputs: dict[str, Path]) -> None:
    """Not only v2 == v3: both are what netcdf-c wrote (both byte orders, extremes)."""
    v3 = zarr.open_group(outputs["v3"], mode="r")
    with netCDF4.Dataset(nc_url(outputs["src"])) as ds:
        ds.set_auto_mask(False)
        for t in NUMERIC:
            for e in "lb":
                name = f"v_{t}_{e}"
                expected = ds[name][...]
                got = v3[name][...]
                assert got.dtype.newbyteorder("=") == np.dtype(t).newbyteorder("=")
                assert _same(expected.astype(t), got.astype(t)), name
        assert float(v3["sc"][()]) == pytest.approx(273.15, rel=1e-6)
        assert int(v3["sc_unwritten"][()]) == -7
        assert v3["c"][...].tolist() == [b"a", b"b", b"c", b"z", b"z", b"z"]
        assert v3["s"][0] == b"hello" and v3["s"][1] == "wörld".encode()


@pytest.mark.parametrize("group", [None, "g", "g/h"])
def test_xarray_reads_v3_identical_to_v2(outputs: dict[str, Path], group: str | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        drop = V2_UNREADABLE if group is None else []
        a = xr.open_zarr(outputs["v2x"], group=group, consolidated=False)
        b = xr.open_zarr(outputs["v3"], group=group, consolidated=False, drop_variables=drop)
        a, b = a.load(), b.load()
        raw = xr.open_zarr(outputs["v2x"], group=group, consolidated=False, mask_and_scale=False)
    text = [name for name in a.data_vars if a[name].dtype.kind in "OS"]
    # xarray masks a Zarr v3 array by its _FillValue attribute only, and cannot decode
    # one for fixed-width bytes, so text fill values read as data (nczarr warns): the
    # values are v2's undecoded ones.
    for name in text:
        assert b[name].values.tolist() == raw[name].values.tolist(), name
    # A netCDF fill value without a _FillValue attribute (netcdf-c's default fill) is not
    # a missing value for xarray's netcdf4 engine: the v3 copy has no _FillValue for it,
    # while xarray masks any Zarr v2 fill_value (issue 15, docs/conversion.md).
    default_fill = [
        name
        for name in a.data_vars
        if name not in text
        and "_FillValue" in a[name].encoding
        and "_FillValue" not in b[name].encoding
    ]
    for name in default_fill:
        assert b[name].values.tolist() == raw[name].values.tolist(), name
    skip = [*text, *default_fill]
    xr.testing.assert_identical(a.drop_vars(skip), b.drop_vars(skip))
    if group is None:
        assert np.isnan(b["v_f8_l"].values[-1, -1])  # the fill value is a missing value
        assert b["v_i2_b"].dtype == np.dtype("float32") or b["v_i2_b"].isnull().any()


def test_xarray_undecoded_values_are_identical(outputs: dict[str, Path]) -> None:
    a = xr.open_zarr(outputs["v2x"], consolidated=False, mask_and_scale=False).load()
    b = xr.open_zarr(outputs["v3"], consolidated=False, mask_and_scale=False).load()
    assert b["v_u1_b"].values.tolist()[0][:2] == [0, 255]
    for name in a.data_vars:
        assert _same(a[name].values, b[name].values), name


def test_chunks_are_copied_verbatim_under_the_same_keys(outputs: dict[str, Path]) -> None:
    def chunks(root: Path) -> dict[str, bytes]:
        return {k: v for k, v in file_tree(root).items() if k.rsplit("/", 1)[-1] not in METADATA}

    v2, v3 = chunks(outputs["v2"]), chunks(outputs["v3"])
    assert v2 == v3
    source = {
        k: v
        for k, v in file_tree(outputs["src"]).items()
        if not k.rsplit("/", 1)[-1].startswith(".")
    }
    assert v3 == source


def test_nczarr_reads_v3_output_as_the_v2_output(outputs: dict[str, Path]) -> None:
    a = nczarr.read(outputs["v2"])
    b = nczarr.read(outputs["v3"])

    def strip(ds):  # v2 keeps netcdf-c's _FillValue attribute; v3 holds it as the fill
        for group in ds.root.walk():
            for name, var in list(group.variables.items()):
                var.attributes.pop("_FillValue", None)
                if name in V2_UNREADABLE:  # v3 has no byte order for 1-byte types
                    group.variables[name] = records.replace(var, endian="little")
                if var.type in ("char", "string") and var.fill_value == "":
                    # text without _FillValue: v2 says null (xarray masks nothing), v3
                    # needs a fill and says "" (xarray masks no v3 fill_value alone)
                    group.variables[name] = records.replace(group.variables[name], fill_value=None)
        return ds

    assert diff(strip(a), strip(b), ignore=("warnings",)) == []


def test_v3_output_converts_back_to_nczarr_that_netcdf_reads(
    outputs: dict[str, Path], tmp_path: Path
) -> None:
    back = tmp_path / "back.file"
    nczarr.convert(outputs["v3"], back, mode="nczarr")
    with netCDF4.Dataset(nc_url(outputs["src"])) as want, netCDF4.Dataset(nc_url(back)) as got:
        for t in NUMERIC:
            for e in "lb":
                name = f"v_{t}_{e}"
                assert _same(want[name][...].filled(), got[name][...].filled()), name
        assert _same(want["z"][...], got["z"][...])
        assert _same(want["g/gv"][...].filled(), got["g/gv"][...].filled())


# ------------------------------------------------------------------ zarr's own choices
def _canonical(doc: dict) -> dict:
    """An array's zarr.json as zarr-python normalises it, without attributes/names."""
    from zarr.core.metadata.v3 import ArrayV3Metadata

    out = ArrayV3Metadata.from_dict(copy.deepcopy(doc)).to_dict()
    for name in ("attributes", "dimension_names"):
        out.pop(name, None)
    return json.loads(json.dumps(out, default=str))


def _zarr_v2_source(path: Path) -> None:
    from numcodecs import GZip, Zlib, Zstd

    g = zarr.open_group(path, mode="w", zarr_format=2)
    for name, dtype, compressor, order in [
        ("a", ">i4", Zlib(level=3), "C"),
        ("b", "<f8", Zstd(level=2), "F"),
        ("c", "<u2", GZip(level=1), "C"),
        ("d", ">f4", None, "F"),
        ("e", "|u1", Zlib(level=1), "C"),
    ]:
        arr = g.create_array(
            name,
            shape=(5, 7),
            chunks=(2, 3),
            dtype=dtype,
            compressors=compressor,
            fill_value=3,
            order=order,
        )
        arr[0:4, 0:6] = np.arange(24).reshape(4, 6)


def test_array_metadata_agrees_with_zarrs_own_migration(tmp_path: Path) -> None:
    """zarr-python's ``migrate_v2_to_v3`` (codecs, chunk key encoding, data type,
    fill value) and ours describe every array the same way."""
    from zarr.metadata.migrate_v3 import migrate_v2_to_v3
    from zarr.storage import LocalStore

    src = tmp_path / "src.zarr"
    _zarr_v2_source(src)
    ours = tmp_path / "ours.zarr"
    nczarr.convert(src, ours, mode="zarr", zarr_format=3)
    theirs = tmp_path / "theirs.zarr"
    shutil.copytree(src, theirs)
    migrate_v2_to_v3(input_store=LocalStore(theirs))
    for name in "abcde":
        mine = json.loads((ours / name / "zarr.json").read_text())
        zarrs = json.loads((theirs / name / "zarr.json").read_text())
        assert _canonical(mine) == _canonical(zarrs), name
        assert _same(zarr.open_array(ours / name)[...], zarr.open_array(theirs / name)[...])


def test_consolidated_metadata_as_zarr_writes_it(outputs: dict[str, Path], tmp_path: Path) -> None:
    cons = tmp_path / "cons.zarr"
    nczarr.convert(outputs["src"], cons, mode="zarr", zarr_format=3, consolidated=True)
    ours = json.loads((cons / "zarr.json").read_text())["consolidated_metadata"]
    plain = tmp_path / "plain.zarr"
    shutil.copytree(outputs["v3"], plain)
    zarr.consolidate_metadata(str(plain))
    theirs = json.loads((plain / "zarr.json").read_text())["consolidated_metadata"]
    assert (ours["kind"], ours["must_understand"]) == (theirs["kind"], theirs["must_understand"])
    assert sorted(ours["metadata"]) == sorted(theirs["metadata"])
    for path, doc in theirs["metadata"].items():
        if doc["node_type"] == "array":
            assert _canonical(ours["metadata"][path]) == _canonical(doc), path
            assert ours["metadata"][path]["attributes"] == doc["attributes"]
        else:
            assert ours["metadata"][path] == doc, path
    group = zarr.open_group(cons, mode="r", use_consolidated=True)
    assert group.metadata.consolidated_metadata is not None
    a = xr.open_zarr(cons, consolidated=True).load()
    b = xr.open_zarr(outputs["v3"], consolidated=False).load()
    xr.testing.assert_identical(a, b)


# ------------------------------------------------------------------ entry points
def test_url_mode_word_v3_selects_zarr_v3(outputs: dict[str, Path], tmp_path: Path) -> None:
    url = f"file://{tmp_path}/u.zarr#mode=zarr,v3,file"
    report = nczarr.convert(outputs["src"], url)
    assert report.target_format == "zarr" and report.zarr_format == 3
    assert "(zarr v3)" in report.summary()
    assert (tmp_path / "u.zarr" / "zarr.json").exists()
    assert not (tmp_path / "u.zarr" / ".zgroup").exists()
    # an explicit zarr_format wins over the URL word
    nczarr.convert(outputs["src"], f"file://{tmp_path}/w.zarr#mode=zarr,v3,file", zarr_format=2)
    assert (tmp_path / "w.zarr" / ".zgroup").exists()
    nczarr.convert(outputs["src"], f"file://{tmp_path}/x.zarr#mode=zarr,v2,file")
    assert (tmp_path / "x.zarr" / ".zgroup").exists()


@pytest.mark.parametrize(
    ("mode", "zarr_format", "dst", "match"),
    [
        ("nczarr", 3, "n.file", "format 'zarr' only"),
        ("zarr", 4, "n.zarr", "expected 2 or 3"),
        ("zarr", True, "n.zarr", "expected 2 or 3"),
        (None, None, "file://{tmp}/n.file#mode=nczarr,v3,file", "format 'zarr' only"),
    ],
)
def test_bad_zarr_format_is_refused_before_anything_is_written(
    outputs: dict[str, Path], tmp_path: Path, mode, zarr_format, dst, match
) -> None:
    target = dst.format(tmp=tmp_path) if "{tmp}" in dst else str(tmp_path / dst)
    with pytest.raises(InvalidModeError, match=match):
        nczarr.convert(outputs["src"], target, mode=mode, zarr_format=zarr_format)
    assert not any(tmp_path.iterdir())


def test_view_shows_zarr_v3(outputs: dict[str, Path]) -> None:
    with nczarr.view(outputs["src"], mode="zarr", zarr_format=3) as v:
        assert v.zarr_format == 3
        assert "zarr.json" in v and ".zgroup" not in v
        group = zarr.open_group(store=nczarr.ZarrStore(v), mode="r")
        direct = zarr.open_group(outputs["v3"], mode="r")
        for path, a in _arrays(direct).items():
            assert _same(group[path][...], a[...]), path


def test_selection_overwrite_and_resume(outputs: dict[str, Path], tmp_path: Path) -> None:
    dst = tmp_path / "sel.zarr"
    nczarr.convert(outputs["src"], dst, mode="zarr")  # a v2 store first
    report = nczarr.convert(
        outputs["src"], dst, mode="zarr", zarr_format=3, include=["g"], overwrite=True
    )
    tree = file_tree(dst)
    assert not any(k.rsplit("/", 1)[-1] in {".zgroup", ".zarray", ".zattrs"} for k in tree)
    assert sorted(k for k in tree if k.endswith("zarr.json")) == [
        "g/gv/zarr.json",
        "g/h/hv/zarr.json",
        "g/h/zarr.json",
        "g/zarr.json",
        "zarr.json",
    ]
    assert report.arrays == 2
    # a killed run (root metadata missing) is finished by resume
    (dst / "zarr.json").unlink()
    (dst / "g" / "gv" / "0.0").unlink()
    report = nczarr.convert(
        outputs["src"], dst, mode="zarr", zarr_format=3, include=["g"], resume=True
    )
    assert report.chunks_copied == 1
    assert _same(
        zarr.open_group(dst, mode="r")["g/gv"][...],
        zarr.open_group(outputs["v3"], mode="r")["g/gv"][...],
    )


def test_cli_writes_zarr_v3(outputs: dict[str, Path], tmp_path: Path, capsys) -> None:
    from nczarr.cli import main

    dst = tmp_path / "cli.zarr"
    assert (
        main(["convert", str(outputs["src"]), str(dst), "--mode", "zarr", "--zarr-format", "3"])
        == 0
    )
    assert "(zarr v3)" in capsys.readouterr().out
    assert json.loads((dst / "zarr.json").read_text())["node_type"] == "group"
    with pytest.raises(SystemExit) as exc:
        main(["convert", str(outputs["src"]), str(tmp_path / "x"), "--zarr-format", "4"])
    assert exc.value.code == 2


# ------------------------------------------------------------------ what v3 cannot say
def test_array_without_a_v3_codec_is_refused_or_left_out_when_excluded(tmp_path: Path) -> None:
    from numcodecs import Base64  # zarr-python 3 has no numcodecs.base64

    src = tmp_path / "src.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=2)
    g.create_array("ok", shape=(4,), chunks=(2,), dtype="<i4")[:] = [1, 2, 3, 4]
    fso = Base64()
    g.create_array("fso", shape=(4,), chunks=(2,), dtype="<i4", filters=[fso])[:] = [1, 2, 3, 4]
    dst = tmp_path / "dst.zarr"
    with pytest.raises(nczarr.UnsupportedTypeError, match="'base64'"):
        nczarr.convert(src, dst, mode="zarr", zarr_format=3)
    # the selection is applied before the writer runs (once): what is excluded is not
    # written, so the warning names the exclusion, not the codec
    with pytest.warns(nczarr.NCZarrWarning, match="left out by include/exclude: /fso"):
        report = nczarr.convert(src, dst, mode="zarr", zarr_format=3, exclude=["/fso"])
    assert report.warnings[-1] == "1 array(s) left out by include/exclude: /fso"
    assert not (dst / "fso").exists()
    assert zarr.open_group(dst, mode="r")["ok"][...].tolist() == [1, 2, 3, 4]
    assert list(zarr.open_group(dst, mode="r").array_keys()) == ["ok"]


# ------------------------------------------------------------------ differential
DTYPES = [np.dtype(t).newbyteorder(e) for t in NUMERIC for e in "<>"]
CODECS = ["none", "zlib", "shuffle+zlib", "blosc", "zstd", "gzip", "fletcher32+zlib", "lz4"]


def _codecs(name: str, itemsize: int):
    import numcodecs

    table = {
        "none": ([], None),
        "zlib": ([], numcodecs.Zlib(level=1)),
        "shuffle+zlib": ([numcodecs.Shuffle(elementsize=itemsize)], numcodecs.Zlib(level=2)),
        "blosc": ([], numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.SHUFFLE)),
        "zstd": ([], numcodecs.Zstd(level=1)),
        "gzip": ([], numcodecs.GZip(level=1)),
        "fletcher32+zlib": ([numcodecs.Fletcher32()], numcodecs.Zlib(level=1)),
        "lz4": ([], numcodecs.LZ4()),
    }
    return table[name]


@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    order = draw(st.sampled_from("CF"))
    codec = draw(st.sampled_from(CODECS))
    nan_fill = dtype.kind == "f" and draw(st.booleans())
    fill = np.nan if nan_fill else draw(st.integers(0, 100))
    written = draw(st.integers(0, int(np.prod(shape))))
    seed = draw(st.integers(0, 2**16))
    return dtype, shape, chunks, order, codec, fill, written, seed


@settings(
    max_examples=long_or(15),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(spec=arrays())
def test_differential_v2_source_to_v3(tmp_path_factory: pytest.TempPathFactory, spec) -> None:
    """Any Zarr v2 array (every dtype and byte order, C/F order, codec chains, partial
    writes, NaN fills) reads the same after conversion to Zarr v3."""
    dtype, shape, chunks, order, codec, fill, written, seed = spec
    root = tmp_path_factory.mktemp("diff")
    filters, compressor = _codecs(codec, dtype.itemsize)
    g = zarr.open_group(root / "src.zarr", mode="w", zarr_format=2)
    arr = g.create_array(
        "a",
        shape=shape,
        chunks=chunks if shape else (),
        dtype=dtype,
        filters=filters or None,
        compressors=compressor,
        fill_value=fill,
        order=order,
    )
    rng = np.random.default_rng(seed)
    values = np.zeros(shape, dtype=dtype)
    if dtype.kind == "f":
        flat = rng.normal(size=values.size) * 1e3
    else:
        info = np.iinfo(dtype)
        flat = rng.integers(
            info.min, info.max, size=values.size, endpoint=True, dtype=dtype.newbyteorder("=")
        )
    values.reshape(-1)[: min(written, values.size)] = flat[: min(written, values.size)]
    if written:
        if shape:
            arr[...] = values
        else:
            arr[()] = values
    nczarr.convert(root / "src.zarr", root / "v3.zarr", mode="zarr", zarr_format=3)
    src = zarr.open_array(root / "src.zarr" / "a", mode="r")
    out = zarr.open_array(root / "v3.zarr" / "a", mode="r")
    assert out.metadata.zarr_format == 3
    assert out.dtype.newbyteorder("=") == src.dtype.newbyteorder("=")
    assert _same(out[...], src[...])


def test_text_arrays_are_announced(outputs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.warns(nczarr.NCZarrWarning, match="null_terminated_bytes"):
        report = nczarr.convert(outputs["src"], tmp_path / "t.zarr", mode="zarr", zarr_format=3)
    by_array = {w.split("'")[1]: w for w in report.warnings if w.startswith("array ")}
    assert "null_terminated_bytes" in by_array["/c"] and "fill value 'z'" in by_array["/c"]
    assert "null_terminated_bytes" in by_array["/s"]
    assert not any("/v_f8_l" in w for w in report.warnings)


def test_writer_is_pure_and_the_view_pickles(outputs: dict[str, Path]) -> None:
    import pickle

    from nczarr.translate import write, write_with_warnings

    dataset = nczarr.read(outputs["src"])
    before = copy.deepcopy(dataset)
    first = write(dataset, "zarr", zarr_format=3, consolidated=True)
    assert dataset == before
    assert first == write(dataset, "zarr", zarr_format=3, consolidated=True)
    assert set(first) == {k for k in file_tree(outputs["v3"]) if k.endswith("zarr.json")}
    result = write_with_warnings(dataset, "zarr", zarr_format=3, noxarray=True)
    doc = json.loads(result.metadata["v_f4_l/zarr.json"])
    assert "dimension_names" not in doc and "_FillValue" not in doc["attributes"]
    assert result.skipped == ()
    with nczarr.view(outputs["src"], mode="zarr", zarr_format=3) as v:
        again = pickle.loads(pickle.dumps(v))
        assert again == v and again.zarr_format == 3
        assert again["zarr.json"] == v["zarr.json"]
        again.close()


def test_slash_separated_v2_chunks_keep_their_keys(tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=2)
    a = g.create_array(
        "a",
        shape=(4, 4),
        chunks=(2, 2),
        dtype="<f4",
        chunk_key_encoding={"name": "v2", "separator": "/"},
    )
    a[:3, :3] = 1.5
    dst = tmp_path / "dst.zarr"
    nczarr.convert(src, dst, mode="zarr", zarr_format=3)
    doc = json.loads((dst / "a" / "zarr.json").read_text())
    assert doc["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "/"}}
    assert (dst / "a" / "1" / "1").read_bytes() == (src / "a" / "1" / "1").read_bytes()
    assert _same(zarr.open_array(dst / "a", mode="r")[...], a[...])


def test_netcdf_scalars_is_refused_for_zarr_v3(outputs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(InvalidModeError, match="netcdf_scalars"):
        nczarr.convert(
            outputs["src"], tmp_path / "s.zarr", mode="zarr", zarr_format=3, netcdf_scalars=True
        )
    with pytest.raises(InvalidModeError, match="netcdf_scalars"):
        nczarr.view(outputs["src"], mode="zarr", zarr_format=3, netcdf_scalars=True)
    assert not any(tmp_path.iterdir())
