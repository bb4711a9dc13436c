"""Zarr v3 input: stores written by zarr-python 3 and xarray read into the model and
converted to NCZarr and Zarr v2 with every chunk copied byte for byte.

Oracles: zarr-python 3 (the source's values, and the v2 result opened without
nczarr), xarray, netCDF4 (libnetcdf 4.10, NCZarr results) and numcodecs (each
mapped v2 codec re-encodes every source chunk to the same bytes).

Datetime coordinates: xarray CF-encodes them (int64 with ``units``/``calendar``),
so they convert and read back as datetimes; raw ``numpy.datetime64`` arrays have no
netCDF type and are skipped with a warning, like strings and other v3-only types.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st
from zarr.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    ZstdCodec,
)

import nczarr
from nczarr.cli import main
from nczarr.load import read_with_chunk_keys
from nczarr.maps.memory import MemoryMap
from nczarr.readthrough import view
from nczarr.translate.codecs_v3 import v2_pipeline
from nczarr.translate.detect import FormatInfo
from nczarr.translate.read_zarr3 import ChunkKeys, read_zarr3

SHARD_WARNING = (
    "array '/sh': chunks re-encoded (Zarr v3 shards [4] become chunks [2]: Zarr v2 has no shards)"
)
#: Arrays libnetcdf 4.10 decodes (it has no gzip or crc32c filter).
NETCDF_READABLE = ("t", "bl", "be", "s", "zc", "v2k", "sub/d")
ALL_ARRAYS = ("t", "gz", "bl", "be", "s", "tr", "zc", "v2k", "sub/d")


def _zarr_python_store(path: Path, *, consolidated: bool) -> Path:
    """One array per v3 feature, written by zarr-python 3."""
    group = zarr.open_group(
        path,
        mode="w",
        zarr_format=3,
        attributes={
            "title": "v3 store",
            "int": 7,
            "ints": [1, 2, 300],
            "float": 1.5,
            "floats": [1.5, 2],
            "flag": True,
            "object": {"a": [1, 2]},
            "nothing": None,
            "words": ["a", "bc"],
        },
    )
    t = group.create_array(
        "t", shape=(5, 7), chunks=(2, 3), dtype="f4", dimension_names=["y", "x"], fill_value=np.nan
    )
    t[:] = np.arange(35, dtype="f4").reshape(5, 7) / 4
    t.attrs["units"] = "K"
    gz = group.create_array(
        "gz", shape=(5,), chunks=(2,), dtype="i2", compressors=[GzipCodec(level=3)]
    )
    gz[:] = [1, -2, 3, -4, 5]
    bl = group.create_array(
        "bl",
        shape=(6,),
        chunks=(4,),
        dtype="i4",
        serializer=BytesCodec(endian="big"),
        compressors=[BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle", typesize=4)],
        dimension_names=["n"],
    )
    bl[:] = [10, 20, 30, 40, 50, 60]
    be = group.create_array(
        "be", shape=(3,), chunks=(3,), dtype="f8", serializer=BytesCodec(endian="big"),
        compressors=None,
    )  # fmt: skip
    be[:] = [0.5, -1e300, 3.25]
    s = group.create_array("s", shape=(), dtype="f8", fill_value=1.0)
    s[()] = 3.0
    tr = group.create_array(
        "tr",
        shape=(3, 4),
        chunks=(3, 2),
        dtype="u2",
        filters=[TransposeCodec(order=(1, 0))],
        compressors=[Crc32cCodec()],
    )
    tr[:] = np.arange(12, dtype="u2").reshape(3, 4)
    zc = group.create_array(
        "zc", shape=(50,), chunks=(20,), dtype="u4", compressors=[ZstdCodec(level=3, checksum=True)]
    )
    zc[:] = np.arange(50, dtype="u4") * 3
    v2k = group.create_array(
        "v2k",
        shape=(4, 4),
        chunks=(2, 2),
        dtype="i8",
        chunk_key_encoding={"name": "v2", "separator": "."},
        fill_value=-1,
    )
    v2k[:2, :] = 7
    sh = group.create_array("sh", shape=(8,), chunks=(2,), shards=(4,), dtype="u1")
    sh[:] = 1
    sub = group.create_group("sub", attributes={"about": "a subgroup"})
    d = sub.create_array("d", shape=(6,), chunks=(3,), dtype="bool", dimension_names=["x"])
    d[:] = [True, False, True, True, False, False]
    if consolidated:
        with warnings.catch_warnings():  # zarr-python warns that it writes what we ask for
            warnings.filterwarnings(
                "ignore", "Consolidated metadata is currently not part", UserWarning
            )
            zarr.consolidate_metadata(path)
    return path


@pytest.fixture(params=[False, True], ids=["walked", "consolidated"])
def v3_store(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return _zarr_python_store(tmp_path / "src.zarr", consolidated=request.param)


def _xarray_store(path: Path):
    import pandas as pd
    import xarray as xr

    ds = xr.Dataset(
        {
            "temp": (("time", "lat"), np.arange(12, dtype="f4").reshape(3, 4) - 5.5),
            "count": (("lat",), np.array([1, 2, -999, 4], dtype="i2")),
        },
        coords={
            "time": pd.date_range("2020-01-01", periods=3),
            "lat": [10.0, 20.0, 30.0, 40.0],
            "name": ("lat", ["a", "b", "c", "d"]),
        },
        attrs={"title": "from xarray"},
    )
    ds["temp"].encoding["_FillValue"] = -999.0
    ds["count"].encoding["_FillValue"] = -999
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", zarr_format=3)
    return ds


# ------------------------------------------------------------------ reading into the model


def test_zarr_python_v3_reads_into_the_model(v3_store: Path) -> None:
    info = nczarr.detect(v3_store)
    assert (info.format, info.zarr_format, info.xarray) == ("zarr", 3, True)
    assert info.consolidated == (json.loads((v3_store / "zarr.json").read_text())
                                 .get("consolidated_metadata") is not None)  # fmt: skip
    ds = nczarr.read(v3_store)
    # zarr-python's non-zero fill values without dimension_names are kept and named
    # (hunt 15, finding 3: they were kept silently); zero fills are no fill value
    assert [w.split(":")[0] for w in ds.warnings] == ["array '/s'", "array '/v2k'"]
    assert all("xarray masks the fill_value of a Zarr v2 copy" in w for w in ds.warnings)
    root = ds.root
    assert {n: (a.type, a.value) for n, a in root.attributes.items()} == {
        "title": ("char", "v3 store"),
        "int": ("int", (7,)),
        "ints": ("int", (1, 2, 300)),
        "float": ("double", (1.5,)),
        "floats": ("double", (1.5, 2.0)),
        "flag": ("ubyte", (1,)),
        "object": ("char", '{"a": [1,2]}'),
        "nothing": ("char", "null"),
        "words": ("string", ("a", "bc")),
    }
    assert sorted(root.variables) == ["be", "bl", "gz", "s", "sh", "t", "tr", "v2k", "zc"]
    assert {n: d.size for n, d in root.dimensions.items()} == {
        "_Anonymous_Dimension_3": 3,
        "n": 6,
        "_Anonymous_Dimension_5": 5,
        "y": 5,
        "x": 7,
        "_Anonymous_Dimension_4": 4,
        "_Anonymous_Dimension_50": 50,
        "_Anonymous_Dimension_8": 8,
    }
    t = root.variables["t"]
    assert (t.type, t.dimensions, t.shape, t.chunks, t.endian, t.order) == (
        "float", ("/y", "/x"), (5, 7), (2, 3), "little", "C",
    )  # fmt: skip
    assert np.isnan(t.fill_value)
    assert t.compressor == {"id": "zstd", "level": 0} and t.filters == ()
    assert {n: (a.type, a.value) for n, a in t.attributes.items()} == {"units": ("char", "K")}
    summary = {
        v.path: (v.type, v.dimensions, v.fill_value, v.compressor, v.order, v.endian, v.scalar)
        for v in root.all_variables()
        if v.name != "t"
    }
    assert summary == {
        "/be": ("double", ("/_Anonymous_Dimension_3",), None, None, "C", "big", False),
        "/bl": (
            "int", ("/n",), None,
            {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 2, "blocksize": 0},
            "C", "big", False,
        ),
        "/gz": ("short", ("/_Anonymous_Dimension_5",), None, {"id": "gzip", "level": 3}, "C",
                "little", False),
        "/s": ("double", (), 1.0, {"id": "zstd", "level": 0}, "C", "little", True),
        "/sh": ("ubyte", ("/_Anonymous_Dimension_8",), None, {"id": "zstd", "level": 0}, "C",
                "little", False),
        "/tr": ("ushort", ("/_Anonymous_Dimension_3", "/_Anonymous_Dimension_4"), None,
                {"id": "crc32c"}, "F", "little", False),
        "/v2k": ("int64", ("/_Anonymous_Dimension_4",) * 2, -1, {"id": "zstd", "level": 0},
                 "C", "little", False),
        "/zc": ("uint", ("/_Anonymous_Dimension_50",), None,
                {"id": "zstd", "level": 3, "checksum": True}, "C", "little", False),
        "/sub/d": ("ubyte", ("/sub/x",), None, {"id": "zstd", "level": 0}, "C", "little", False),
    }  # fmt: skip
    sh = root.variables["sh"]  # sharded: its inner chunks are the variable's chunks
    assert (sh.shape, sh.chunks, sh.shards) == ((8,), (2,), (4,))
    sub = root.groups["sub"]
    assert sub.attributes["about"].value == "a subgroup"
    assert {n: d.size for n, d in sub.dimensions.items()} == {"x": 6}


def _meta(**array: object) -> dict[str, object]:
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "float64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {},
    }
    doc.update(array)
    return {"zarr.json": {"zarr_format": 3, "node_type": "group"}, "v/zarr.json": doc}


def _read_one(**array: object):
    ds = read_zarr3(_meta(**array), FormatInfo("zarr", "zarr", 3, False, False, None, ()))
    return ds.root.variables.get("v"), ds.warnings


@pytest.mark.parametrize(
    ("data_type", "fill", "expected"),
    [
        ("float32", "0x7fc00000", "nan"),
        ("float64", "0xc08f400000000000", -1000.0),
        ("float32", "0x3fc00000", 1.5),
        ("float64", "NaN", "nan"),
        ("float64", "-Infinity", float("-inf")),
        ("float32", 0.1, 0.10000000149011612),
        ("bool", True, 1),
        ("int8", -128, -128),
        ("uint64", 2**64 - 1, 2**64 - 1),
    ],
)
def test_v3_fill_values(data_type: str, fill: object, expected: object) -> None:
    variable, warnings_ = _read_one(data_type=data_type, fill_value=fill)
    # a kept fill value other than NaN is named, with or without dimension_names (hunt 15)
    if expected == "nan":
        assert warnings_ == ()
    else:
        assert len(warnings_) == 1 and warnings_[0].startswith(
            f"array '/v': its Zarr v3 fill_value {expected!r} (no _FillValue attribute)"
        )
    if expected == "nan":
        assert np.isnan(variable.fill_value)
    else:
        assert variable.fill_value == expected and type(variable.fill_value) is type(expected)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"data_type": "complex64"}, "data_type 'complex64' has no netCDF-4 equivalent"),
        ({"data_type": "float16"}, "data_type 'float16' has no netCDF-4 equivalent"),
        ({"data_type": "string"}, "data_type 'string' needs the array->bytes codec 'vlen-utf8'"),
        (
            {"data_type": {"name": "numpy.datetime64", "configuration": {"unit": "s"}}},
            "data_type 'numpy.datetime64' has no netCDF-4 equivalent",
        ),
        (
            {"codecs": [{"name": "vlen-utf8"}]},
            "codec 'vlen-utf8' is for data_type 'string', not 'float64'",
        ),
        (
            {"codecs": ["bytes", {"name": "lz4hc", "configuration": {}}]},
            "codec 'lz4hc' has no byte-identical Zarr v2 (numcodecs) equivalent",
        ),
        (
            {
                "shape": [2, 2, 2],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1, 1]}},
                "codecs": [{"name": "transpose", "configuration": {"order": [1, 0, 2]}}, "bytes"],
            },
            "codec 'transpose' with order [1, 0, 2] has no Zarr v2 equivalent (only the "
            "identity (C) and reversed (F) axis orders do)",
        ),
        (
            {"chunk_grid": {"name": "rectilinear", "configuration": {}}},
            "chunk_grid 'rectilinear' is not supported (only 'regular')",
        ),
    ],
)
def test_unsupported_arrays_are_skipped_with_a_warning(change: dict, reason: str) -> None:
    variable, warnings_ = _read_one(**change)
    assert variable is None
    assert warnings_ == (f"skipped array '/v': {reason}",)


def test_dimension_names_null_entries_are_anonymous_and_fillvalue_attribute() -> None:
    variable, warnings_ = _read_one(
        shape=[4, 3],
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
        dimension_names=["x", None],
        fill_value="NaN",
        attributes={"_FillValue": "AAAAAAA4j8A=", "units": "m"},
    )
    assert variable.dimensions == ("/x", "/_Anonymous_Dimension_3")
    # the _FillValue attribute is xarray's missing value: kept, so every reader masks it
    assert variable.fill_value == -999.0 and set(variable.attributes) == {"units", "_FillValue"}
    assert variable.attributes["_FillValue"].value == (-999.0,)
    assert warnings_ == (
        "array '/v': its _FillValue attribute -999.0 is the netCDF fill value; the Zarr "
        "fill_value nan is replaced, so chunks not stored read as -999.0",
    )
    same, warnings_ = _read_one(fill_value="NaN", attributes={"_FillValue": "AAAAAAAA+H8="})
    assert np.isnan(same.fill_value) and set(same.attributes) == {"_FillValue"}
    assert warnings_ == ()


def test_transpose_c_and_f_and_codec_order() -> None:
    chain = [
        {"name": "transpose", "configuration": {"order": [2, 1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "gzip", "configuration": {"level": 1}},
        {"name": "crc32c"},
    ]
    got = v2_pipeline(chain, ndim=3, itemsize=4)
    assert (got.order, got.endian, got.filters, got.compressor) == (
        "F", "big", ({"id": "gzip", "level": 1},), {"id": "crc32c"},
    )  # fmt: skip
    twice = [chain[0], chain[0], chain[1]]
    assert v2_pipeline(twice, ndim=3, itemsize=4).order == "C"


@given(
    st.lists(st.integers(0, 10**6), max_size=5),
    st.sampled_from(["default", "v2"]),
    st.sampled_from(["/", "."]),
)
def test_chunk_keys_round_trip(coords: list[int], name: str, separator: str) -> None:
    keys = ChunkKeys(name, separator, len(coords))
    source, target = keys.source(tuple(coords)), keys.target(tuple(coords))
    assert keys.source_coords(source) == tuple(coords)
    assert keys.target_coords(target) == tuple(coords)
    assert keys.source_coords("zarr.json") is None and keys.target_coords("zarr.json") is None
    if name == "default":
        expected = "c" if not coords else "c" + separator + separator.join(map(str, coords))
        assert source == expected
    assert target == (".".join(map(str, coords)) if coords else "0") or name == "v2"


# ------------------------------------------------------------------ codecs are byte-identical


def _v2_decode(raw: bytes, variable) -> np.ndarray:
    data = raw
    if variable.compressor is not None:
        data = numcodecs.get_codec(dict(variable.compressor)).decode(data)
    for config in reversed(variable.filters):
        data = numcodecs.get_codec(dict(config)).decode(data)
    return np.frombuffer(bytes(data), dtype=_np_dtype(variable))


def _v2_encode(values: np.ndarray, variable) -> bytes:
    data: object = values.copy(order=variable.order)  # v2 codecs see the chunk array
    for config in variable.filters:
        data = numcodecs.get_codec(dict(config)).encode(data)
    if variable.compressor is not None:
        data = numcodecs.get_codec(dict(variable.compressor)).encode(data)
    return bytes(data)


def _without_gzip_mtime(data: bytes) -> bytes:
    """gzip output carries the time it was made (bytes 4-7): equal up to that."""
    return data[:4] + bytes(4) + data[8:] if data[:2] == b"\x1f\x8b" else data


def _np_dtype(variable) -> np.dtype:
    codes = {"byte": "i1", "ubyte": "u1", "short": "i2", "ushort": "u2", "int": "i4",
             "uint": "u4", "int64": "i8", "uint64": "u8", "float": "f4",
             "double": "f8"}  # fmt: skip
    return np.dtype(codes[variable.type]).newbyteorder(">" if variable.endian == "big" else "<")


def test_every_chunk_decodes_and_reencodes_identically_with_the_v2_codecs(v3_store: Path) -> None:
    dataset, encodings = read_with_chunk_keys(v3_store)
    source = zarr.open_group(v3_store, mode="r")
    checked = 0
    for variable in dataset.root.all_variables():
        array = variable.path.strip("/")
        if variable.shards is not None:
            continue  # shards are re-encoded, not described (tests/test_reencode.py)
        keys = encodings[array]
        values = source[array][...]
        chunks = variable.chunks or ()
        for path in sorted((v3_store / array).rglob("*")):
            rest = path.relative_to(v3_store / array).as_posix()
            coords = keys.source_coords(rest)
            if coords is None:
                continue
            raw = path.read_bytes()
            region = tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, chunks, strict=True))
            expected = values[region]
            full = np.full(chunks, source[array].fill_value, dtype=_np_dtype(variable))
            full[tuple(slice(0, n) for n in expected.shape)] = expected
            decoded = _v2_decode(raw, variable).reshape(chunks, order=variable.order)
            np.testing.assert_array_equal(decoded, full, err_msg=f"{array}/{rest}")
            assert _without_gzip_mtime(_v2_encode(full, variable)) == _without_gzip_mtime(raw), (
                f"{array}/{rest}"
            )
            checked += 1
    # t gz bl be s tr zc v2k (half of it is fill, not stored) sub/d
    assert checked == 9 + 3 + 2 + 1 + 1 + 2 + 3 + 2 + 2


# ------------------------------------------------------------------ the view


def test_view_shows_v2_keys_served_from_v3_keys(tmp_path: Path) -> None:
    src = _zarr_python_store(tmp_path / "src.zarr", consolidated=False)
    shown = view(src, "zarr")
    assert shown.keys_mapped
    chunks = sorted(shown.chunk_keys())
    assert "t/0.0" in chunks and "t/2.2" in chunks and "s/0" in chunks and "v2k/0.1" in chunks
    assert not any("/c" in k or k.endswith("zarr.json") for k in chunks)
    # the sharded array shows its inner chunks, re-encoded
    assert [k for k in chunks if k.startswith("sh/")] == ["sh/0", "sh/1", "sh/2", "sh/3"]
    assert list(shown.reencoded) == ["sh"]
    assert shown.source_key("t/2.1") == "t/c/2/1"
    assert shown.source_key("s/0") == "s/c"
    assert shown.source_key("v2k/0.1") == "v2k/0.1"
    with pytest.raises(KeyError):
        shown.source_key("t/c/0/0")
    assert shown["t/1.2"] == (src / "t/c/1/2").read_bytes()
    assert shown.getsize("sub/d/1") == (src / "sub/d/c/1").stat().st_size
    assert "t/zarr.json" not in shown and "t/c/0/0" not in shown and "v2k/zarr.json" not in shown
    assert sorted(shown.keys_below("sub/d")) == ["sub/d/.zarray", "sub/d/.zattrs", "sub/d/0",
                                                 "sub/d/1"]  # fmt: skip
    assert shown.getitems(["t/0.1", "nope"]) == {"t/0.1": (src / "t/c/0/1").read_bytes()}
    v2 = view(MemoryMap({".zgroup": b'{"zarr_format": 2}'}), "zarr")
    assert not v2.keys_mapped


# ------------------------------------------------------------------ convert


def _chunk_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def _expected_chunks(src: Path, reencoded: tuple[str, ...] = ("sh/",)) -> dict[str, bytes]:
    """Target key -> source bytes, by the v3 -> v2 key rules (no code under test), for
    the arrays copied verbatim (not those ``reencoded`` starts)."""
    out = {}
    for key, data in _chunk_files(src).items():
        if key.endswith("zarr.json") or key.startswith(reencoded):
            continue
        array, _, rest = key.partition("/c")
        if array == key:  # v2 chunk key encoding: unchanged
            out[key] = data
            continue
        if array.startswith("sub"):
            array, _, rest = key.partition("/d/c")
            array += "/d"
        out[f"{array}/" + (rest.lstrip("/").replace("/", ".") or "0")] = data
    return out


def test_convert_to_zarr_v2_opens_in_zarr_python_and_xarray(v3_store: Path, tmp_path: Path) -> None:
    import xarray as xr

    out = tmp_path / "out.zarr"
    report = nczarr.convert(v3_store, out, mode="zarr")
    # and zarr-python's int64 fill -1 without _FillValue: xarray masks it in a v2 copy
    # (not in the v3 source) and reads the array as float64 (said since 890544d)
    # (and the kept fill values of '/s' and '/v2k' named when read, hunt 15), and its
    # scalar '/s', a 0-d array that netcdf-c 4.10 leaves out of a Zarr v2 copy
    assert [w.split(":")[0] for w in report.warnings[:2]] == ["array '/s'", "array '/v2k'"]
    assert report.warnings[2] == SHARD_WARNING and len(report.warnings) == 5
    assert report.warnings[3].startswith("'/v2k': the Zarr v2 fill_value -1 (there is no")
    assert report.warnings[4].startswith("array '/s': a netCDF scalar, written as a 0-d")
    assert (report.arrays, report.chunks_copied, report.chunks_reencoded) == (10, 25, 4)
    files = _chunk_files(out)
    assert {k: v for k, v in files.items() if not k.startswith("sh/")} == _expected_chunks(v3_store)
    src = zarr.open_group(v3_store, mode="r")
    dst = zarr.open_group(out, mode="r", zarr_format=2)
    for name in (*ALL_ARRAYS, "sh"):
        np.testing.assert_array_equal(dst[name][...], src[name][...], err_msg=name)
    assert dst["sh"].chunks == (2,) and sorted(k for k in files if k.startswith("sh/")) == [
        "sh/0",
        "sh/1",
        "sh/2",
        "sh/3",
    ]
    assert (dst["bl"].dtype, dst["be"].dtype, dst["sub/d"].dtype) == (">i4", ">f8", "bool")
    assert dict(dst.attrs)["words"] == ["a", "bc"]
    assert json.loads((out / "tr/.zarray").read_text())["order"] == "F"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_zarr(out, zarr_format=2, consolidated=False)
    np.testing.assert_array_equal(ds["t"].values, src["t"][...])
    assert ds["t"].dims == ("y", "x") and ds["t"].attrs["units"] == "K"


def test_convert_to_nczarr_opens_in_netcdf4(v3_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.file"
    report = nczarr.convert(v3_store, f"file://{out}#mode=nczarr,file", mode="nczarr")
    # the kept fill values named when read, and netCDF4's masking of the default fill
    # of the arrays without a fill value (hunt 15)
    assert [w.split(":")[0] for w in report.warnings[:2]] == ["array '/s'", "array '/v2k'"]
    masked = report.warnings[2]  # one warning naming each array
    assert masked.startswith("arrays '/be' (9.969209968386869e+36, netCDF's default double")
    assert "netCDF4 reading this NCZarr copy masks those values" in masked
    assert [n for n in ("be", "bl", "gz", "t", "tr", "zc") if f"'/{n}' (" in masked] == [
        "be",
        "bl",
        "gz",
        "t",
        "tr",
        "zc",
    ]
    # the arrays netcdf-c cannot decode as stored are re-encoded, and named
    assert report.warnings[3:6] == (
        "array '/gz': chunks re-encoded (codec 'gzip' has no netcdf-c filter; written with 'zlib')",
        SHARD_WARNING,
        "array '/tr': chunks re-encoded (codec 'crc32c' has no netcdf-c filter; written with "
        "'zlib'; netcdf-c reads every chunk in C order and ignores order 'F')",
    )
    # then what NCZarr writes in netCDF's types: bool and untyped JSON attributes (issue 15)
    assert all("has no netCDF type" in w or 'dtype = "bool"' in w for w in report.warnings[6:]), (
        report.warnings[6:]
    )
    assert any("attribute 'flag' of '/'" in w for w in report.warnings[6:])
    assert {
        k: v for k, v in _chunk_files(out).items() if not k.startswith(("gz/", "tr/", "sh/"))
    } == (_expected_chunks(v3_store, ("gz/", "tr/", "sh/")))
    src = zarr.open_group(v3_store, mode="r")
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        assert nc.title == "v3 store" and list(nc["ints"] if False else nc.ints) == [1, 2, 300]
        for name in (*NETCDF_READABLE, "gz", "tr", "sh"):
            var = nc[name]
            var.set_auto_mask(False)
            np.testing.assert_array_equal(var[...], src[name][...], err_msg=name)
        assert nc["t"].dimensions == ("y", "x") and nc["sub"]["d"].dimensions == ("x",)
        assert nc["s"].dimensions == () and nc["bl"].dtype == np.dtype(">i4")


def test_xarray_v3_store(tmp_path: Path) -> None:
    import xarray as xr

    src = tmp_path / "x.zarr"
    original = _xarray_store(src)
    ds = nczarr.read(src)
    # count's chunks not stored hold zarr's fill_value 0, which copies write out
    assert ds.warnings == (
        "array '/temp': its _FillValue attribute -999.0 is the netCDF fill value; the Zarr "
        "fill_value nan is replaced, so chunks not stored read as -999.0",
    )
    count = ds.root.variables["count"]
    assert (count.fill_value, count.absent_fill) == (-999, 0)
    time = ds.root.variables["time"]
    assert (time.type, time.dimensions) == ("int64", ("/time",))
    assert time.attributes["units"].value == "days since 2020-01-01 00:00:00"
    assert ds.root.variables["temp"].fill_value == -999.0
    assert ds.root.variables["temp"].attributes["_FillValue"].value == (-999.0,)
    assert sorted(ds.root.dimensions) == ["lat", "time"]

    out = tmp_path / "out.zarr"
    nczarr.convert(src, out, mode="zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = xr.open_zarr(out, zarr_format=2, consolidated=False).load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = xr.open_zarr(src, zarr_format=3).load()
    xr.testing.assert_identical(back.drop_attrs(deep=True), expected.drop_attrs(deep=True))
    assert list(back["time"].values) == list(original["time"].values)
    assert np.isnan(back["count"].values[2]) and back["count"].values[3] == 4

    nc_out = tmp_path / "out.file"
    nczarr.convert(src, f"file://{nc_out}#mode=nczarr,file", mode="nczarr")
    with netCDF4.Dataset(f"file://{nc_out}#mode=nczarr,file") as nc:
        nc.set_auto_mask(False)
        assert (nc["temp"].get_fill_value(), nc["count"].get_fill_value()) == (-999.0, -999)
        np.testing.assert_array_equal(nc["temp"][...], original["temp"].values)
        np.testing.assert_array_equal(nc["count"][...], [1, 2, -999, 4])
        assert list(nc["time"][...]) == [0, 1, 2]
        assert nc["time"].units == "days since 2020-01-01 00:00:00"
        assert list(nc["name"][...]) == list(original["name"].values)


def test_info_shows_a_v3_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _zarr_python_store(tmp_path / "src.zarr", consolidated=True)
    assert main(["info", str(src)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format        Zarr (Zarr v3)\n")
    assert "consolidated  yes (zarr.json consolidated_metadata)\n" in out
    assert "xarray dims   yes (dimension_names)\n" in out
    assert "  /t      float   (y=5, x=7)" in out
    assert "zstd(level=0)" in out and "blosc(cname='lz4'" in out
    assert "  /sh     ubyte" in out


def test_convert_from_a_memory_map_and_dry_run(tmp_path: Path) -> None:
    src = _zarr_python_store(tmp_path / "src.zarr", consolidated=True)
    memory = MemoryMap({k: v for k, v in _chunk_files(src).items()})
    report = nczarr.convert(memory, tmp_path / "plan.zarr", mode="zarr", dry_run=True)
    shown = view(memory, "zarr")
    reencoded = sum(len(shown[f"sh/{i}"]) for i in range(4))
    assert report.planned_bytes == sum(
        len(v) for v in _expected_chunks(src).values()
    ) + reencoded + sum(len(v) for k, v in shown.metadata.items())
    target = MemoryMap(mode="w")
    nczarr.convert(memory, target, mode="zarr", workers=3)
    assert {
        k: target[k]
        for k in target
        if not k.rsplit("/", 1)[-1].startswith(".") and not k.startswith("sh/")
    } == _expected_chunks(src)
