"""The re-encoding path (issue 7) and the defects that needed it: 2, 8, 9, 10.

``NCZARR_REENCODE_EXAMPLES=500`` runs the differential test longer (default 15).

The producer is the oracle: zarr-python 3 (v2 and v3 stores) and xarray write the
sources; what their own library reads from the source is what netCDF4 (libnetcdf
4.10), zarr-python and xarray must read from every result of ``convert`` and ``view``.
Arrays are partially written, so unwritten chunks (fill values) are checked too.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import netCDF4
import numcodecs
import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.codecs import BytesCodec, Crc32cCodec, GzipCodec, ZstdCodec

import nczarr
from nczarr.errors import NCZarrWarning, UnsupportedError, UnsupportedTypeError
from nczarr.integrations.zarr_store import ZarrStore
from nczarr.maps.memory import MemoryMap
from nczarr.readthrough import view

from .clusters import local_client
from .ncoracle import file_tree, nc_url

TEXT = ["a", "bé", "ccc", "日本語", "", "zzzzz"]


def _read_nc(path: Path) -> dict[str, np.ndarray]:
    """Every variable as netcdf-c reads it (fill values unmasked)."""
    with netCDF4.Dataset(nc_url(path)) as nc:
        nc.set_auto_mask(False)
        return {name: np.asarray(var[...]) for name, var in nc.variables.items()}


def _read_zarr(path: Path | zarr.abc.store.Store) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_group(path, mode="r")
        return {name: np.asarray(array[...]) for name, array in group.arrays()}


def _convert(src: Path, out: Path, mode: str, **kwargs: object) -> nczarr.ConvertReport:
    target = nc_url(out) if mode == "nczarr" else out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        return nczarr.convert(src, target, mode=mode, **kwargs)


def _text(values: np.ndarray) -> list[str]:
    return [str(v) for v in np.asarray(values, dtype=object).ravel()]


# ------------------------------------------------------------------ defect 2


def _v3_store(path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_group(path, mode="w", zarr_format=3)
        x = group.create_array("x", shape=(6,), chunks=(2,), dtype="i4", fill_value=-1)
        x[:4] = [1, 2, 3, 4]
    return path


def test_defect_2_migrate_of_a_zarr_v3_store_refuses_before_touching_anything(
    tmp_path: Path,
) -> None:
    src = _v3_store(tmp_path / "v3.zarr")
    before = file_tree(src)
    for dry_run in (True, False):
        with pytest.raises(UnsupportedError, match=r"Zarr v3 store.*x/c/0.*convert"):
            nczarr.migrate(src, to="nczarr", dry_run=dry_run)
    with pytest.raises(UnsupportedError, match="Zarr v3"):
        nczarr.migrate(src, to="zarr")
    assert file_tree(src) == before
    # what to do instead works: convert writes a copy netcdf-c reads
    out = tmp_path / "out.file"
    _convert(src, out, "nczarr")
    np.testing.assert_array_equal(_read_nc(out)["x"], [1, 2, 3, 4, -1, -1])


def test_defect_2_migrate_refuses_arrays_that_need_reencoding(tmp_path: Path) -> None:
    src = tmp_path / "v2.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=2)
    u = group.create_array("u", shape=(3,), chunks=(2,), dtype="<U3")
    u[:] = ["a", "bb", "ccc"]
    before = file_tree(src)
    with pytest.raises(UnsupportedError, match=r"/u \(unicode strings.*Nothing was changed"):
        nczarr.migrate(src, to="nczarr")
    assert file_tree(src) == before
    nczarr.migrate(src, to="zarr")  # pure Zarr keeps "<U3": nothing to re-encode
    assert _text(_read_zarr(src)["u"]) == ["a", "bb", "ccc"]


# ------------------------------------------------------------------ defect 8


def test_defect_8_blosc_scalar_to_nczarr_opens_in_netcdf4(tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=2)
    scalar = group.create_array("sc", shape=(), dtype="f8")  # zarr-python's default: blosc
    scalar[()] = 3.5
    group.create_array("unwritten", shape=(), dtype="i2", fill_value=7)
    vector = group.create_array("v", shape=(3,), chunks=(3,), dtype="f8")
    vector[:] = [1.0, 2.0, 3.0]
    assert json.loads((src / "sc/.zarray").read_text())["compressor"]["id"] == "blosc"
    out = tmp_path / "out.file"
    with pytest.warns(NCZarrWarning, match=r"array '/sc': chunks re-encoded \(netcdf-c 4.10"):
        report = nczarr.convert(src, nc_url(out), mode="nczarr")
    assert [path for path, _ in report.reencoded] == ["/sc", "/unwritten"]
    assert (report.chunks_reencoded, report.chunks_copied) == (1, 1)
    values = _read_nc(out)  # before: "NetCDF: Filter error" for the whole dataset
    assert values["sc"] == 3.5 and values["unwritten"] == 7
    np.testing.assert_array_equal(values["v"], [1.0, 2.0, 3.0])
    assert json.loads((out / "sc/.zarray").read_text())["compressor"] is None
    # blosc on arrays of rank >= 1 is what netcdf-c reads: copied verbatim
    assert (out / "v/0").read_bytes() == (src / "v/0").read_bytes()


# ------------------------------------------------------------------ defect 9


def _codec_store(path: Path) -> dict[str, np.ndarray]:
    """Arrays whose codecs netcdf-c has no filter for, partially written; returns what
    zarr-python reads from them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v2 = zarr.open_group(path / "v2.zarr", mode="w", zarr_format=2)
        cases = {
            "gzip": {"compressors": numcodecs.GZip(level=3)},
            "lz4": {"compressors": numcodecs.LZ4()},
            "crc": {"filters": [numcodecs.CRC32C()], "compressors": numcodecs.Zstd()},
            "delta": {"filters": [numcodecs.Delta(dtype="<i4")], "compressors": None},
        }
        for name, codecs in cases.items():
            a = v2.create_array(
                name, shape=(10,), chunks=(4,), dtype="<i4", fill_value=-9, **codecs
            )
            a[:6] = np.arange(6) * 11 - 20  # the last chunk is never written
        v3 = zarr.open_group(path / "v3.zarr", mode="w", zarr_format=3)
        g = v3.create_array(
            "gzip", shape=(3, 4), chunks=(2, 2), dtype="f4", fill_value=np.nan,
            compressors=[GzipCodec(level=6)],
        )  # fmt: skip
        g[:2, :] = np.arange(8, dtype="f4").reshape(2, 4) / 3
        c = v3.create_array(
            "crc", shape=(5,), chunks=(2,), dtype=">u8", fill_value=2**64 - 1,
            serializer=BytesCodec(endian="big"), compressors=[Crc32cCodec()],
        )  # fmt: skip
        c[:3] = [0, 2**63, 5]
    return {
        **{f"v2/{n}": a for n, a in _read_zarr(path / "v2.zarr").items()},
        **{f"v3/{n}": a for n, a in _read_zarr(path / "v3.zarr").items()},
    }


def test_defect_9_codecs_netcdf_c_lacks_are_reencoded_with_zlib(tmp_path: Path) -> None:
    expected = _codec_store(tmp_path)
    for version in ("v2", "v3"):
        out = tmp_path / f"{version}.file"
        report = _convert(tmp_path / f"{version}.zarr", out, "nczarr")
        names = sorted(n.split("/", 1)[1] for n in expected if n.startswith(version))
        assert sorted(p.strip("/") for p, _ in report.reencoded) == names
        assert not [w for w in report.warnings if "will not read" in w]
        values = _read_nc(out)  # before: RuntimeError (NC_ENOFILTER) for each of them
        for name in names:
            np.testing.assert_array_equal(values[name], expected[f"{version}/{name}"], name)
            zarray = json.loads((out / name / ".zarray").read_text())
            codecs = [*(zarray["filters"] or []), zarray["compressor"]]
            # checksums dropped, a compressor netcdf-c has is kept (crc32c + zstd)
            assert [c["id"] for c in codecs] == [
                "zstd" if (version, name) == ("v2", "crc") else "zlib"
            ], zarray
        # unwritten chunks stay unwritten: they read as the fill value
        assert not (out / names[0] / "2").exists() or version == "v3"
    gz = json.loads((tmp_path / "v2.file/gzip/.zarray").read_text())["compressor"]
    assert gz == {"id": "zlib", "level": 3}


def test_defect_9_view_serves_the_reencoded_chunks(tmp_path: Path) -> None:
    expected = _codec_store(tmp_path)
    with pytest.warns(NCZarrWarning, match="array '/gzip': chunks re-encoded"):
        shown = view(tmp_path / "v2.zarr", "nczarr")
    assert set(shown.reencoded) == {"gzip", "lz4", "crc", "delta"}
    raw = numcodecs.Zlib().decode(shown["gzip/0"])
    np.testing.assert_array_equal(np.frombuffer(raw, "<i4"), [-20, -9, 2, 13])
    assert shown.getsize("gzip/1") == len(shown["gzip/1"])
    assert "gzip/2" not in shown and shown.getitems(["gzip/2"]) == {}
    got = _read_zarr(ZarrStore(shown))
    for name in ("gzip", "lz4", "crc", "delta"):
        np.testing.assert_array_equal(got[name], expected[f"v2/{name}"], name)
    # pure Zarr readers decode every numcodecs codec: nothing re-encoded
    assert view(tmp_path / "v2.zarr", "zarr").reencoded == {}


# ------------------------------------------------------------------ defect 10


def _string_stores(path: Path) -> dict[str, list[str]]:
    """Unicode and variable-length strings by xarray and zarr-python 3, v2 and v3,
    partially written; returns what the producers read back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.Dataset(
            {"t": ("place", np.arange(6.0))}, coords={"place": np.array(TEXT, dtype="<U5")}
        )
        for fmt in (2, 3):
            ds.to_zarr(path / f"xr{fmt}.zarr", zarr_format=fmt, mode="w")
            group = zarr.open_group(path / f"zp{fmt}.zarr", mode="w", zarr_format=fmt)
            vlen = group.create_array("vlen", shape=(2, 4), chunks=(1, 2), dtype=str)
            vlen[0, :] = np.array(["x", "γειά", "", "long " * 30], dtype=object)
            uni = group.create_array("uni", shape=(5,), chunks=(2,), dtype="<U4")
            uni[:3] = ["ab", "ü", "wxyz"]
    out = {}
    for name in ("xr2", "xr3", "zp2", "zp3"):
        for var, values in _read_zarr(path / f"{name}.zarr").items():
            if values.dtype.kind in "OUT":
                out[f"{name}/{var}"] = _text(values)
    return out


def test_defect_10_strings_become_netcdf_strings_in_nczarr(tmp_path: Path) -> None:
    expected = _string_stores(tmp_path)
    assert expected["zp3/vlen"][4:] == ["", "", "", ""]  # row 1 never written
    for name in ("xr2", "xr3", "zp2", "zp3"):
        out = tmp_path / f"{name}.file"
        report = _convert(tmp_path / f"{name}.zarr", out, "nczarr")
        arrays = sorted(k.split("/", 1)[1] for k in expected if k.startswith(name + "/"))
        assert sorted(p.strip("/") for p, _ in report.reencoded) == arrays
        assert report.chunks_reencoded > 0
        with netCDF4.Dataset(nc_url(out)) as nc:
            for var in arrays:
                assert nc[var].dtype is str, (name, var)
                assert _text(nc[var][...]) == expected[f"{name}/{var}"], (name, var)
    # the vlen width is the longest value's UTF-8 length (netCDF strings are fixed-width)
    zarray = json.loads((tmp_path / "zp3.file/vlen/.zarray").read_text())
    assert zarray["dtype"] == f"|S{len('long ' * 30)}"
    with netCDF4.Dataset(nc_url(tmp_path / "xr3.file")) as nc:  # xarray's coordinate
        assert nc["t"].dimensions == ("place",)


def test_defect_10_strings_stay_strings_in_pure_zarr(tmp_path: Path) -> None:
    expected = _string_stores(tmp_path)
    for name in ("xr2", "xr3", "zp2", "zp3"):
        out = tmp_path / f"{name}.out.zarr"
        report = _convert(tmp_path / f"{name}.zarr", out, "zarr")
        assert report.reencoded == ()  # "<U" and vlen-utf8 have a Zarr v2 form: verbatim
        got = _read_zarr(out)
        for key, values in expected.items():
            if key.startswith(name + "/"):
                var = key.split("/", 1)[1]
                assert got[var].dtype.kind in "OUT" and _text(got[var]) == values, key
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fmt in (2, 3):
            source = xr.open_zarr(tmp_path / f"xr{fmt}.zarr", zarr_format=fmt).load()
            back = xr.open_zarr(tmp_path / f"xr{fmt}.out.zarr", zarr_format=2).load()
            xr.testing.assert_identical(back.drop_attrs(deep=True), source.drop_attrs(deep=True))
            assert back["place"].dtype == np.dtype("<U5")


def _sharded(path: Path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_group(path, mode="w", zarr_format=3)
        a = group.create_array(
            "sh", shape=(7, 6), chunks=(2, 3), shards=(4, 6), dtype="<i2", fill_value=-1,
            compressors=[ZstdCodec(level=1)],
        )  # fmt: skip
        a[:3, :4] = np.arange(12, dtype="<i2").reshape(3, 4)  # shard (1, 0) never written
        group.attrs["title"] = "sharded"
        return np.asarray(group["sh"][...])


def test_defect_10_sharded_arrays_become_plain_chunks(tmp_path: Path) -> None:
    src = tmp_path / "sh.zarr"
    expected = _sharded(src)
    assert (expected[3:] == -1).all()
    out = tmp_path / "sh.out.zarr"
    report = _convert(src, out, "zarr")
    assert [p for p, _ in report.reencoded] == ["/sh"]
    assert report.chunks_reencoded == 4  # the written shard's four inner chunks
    assert sorted(p.name for p in (out / "sh").iterdir() if not p.name.startswith(".")) == [
        "0.0", "0.1", "1.0", "1.1"
    ]  # fmt: skip
    zarray = json.loads((out / "sh/.zarray").read_text())
    assert (zarray["chunks"], zarray["compressor"]) == ([2, 3], {"id": "zstd", "level": 1})
    np.testing.assert_array_equal(_read_zarr(out)["sh"], expected)
    nc_out = tmp_path / "sh.file"
    _convert(src, nc_out, "nczarr")
    np.testing.assert_array_equal(_read_nc(nc_out)["sh"], expected)
    # the view serves the inner chunks on the fly, from the shard objects
    with pytest.warns(NCZarrWarning, match="shards"):
        shown = view(src, "zarr")
    np.testing.assert_array_equal(_read_zarr(ZarrStore(shown))["sh"], expected)


def test_defect_10_unrepresentable_arrays_raise_unless_excluded(tmp_path: Path) -> None:
    src = tmp_path / "c.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=2)
    group.create_array("cplx", shape=(2,), dtype="<c8")[:] = [1 + 2j, 3]
    group.create_array("ok", shape=(2,), dtype="<i4")[:] = [5, 6]
    out = tmp_path / "out.zarr"
    with pytest.raises(UnsupportedTypeError, match=r"/cplx.*complex.*exclude=\['/cplx'\]"):
        _convert(src, out, "zarr")
    assert not out.exists()
    report = _convert(src, out, "zarr", exclude=["cplx"])
    assert report.arrays == 1 and list(_read_zarr(out)) == ["ok"]


# ------------------------------------------------------------------ the path itself


def test_verbatim_is_the_default_and_resume_skips_reencoded_chunks(tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=2)
    plain = group.create_array("plain", shape=(8,), chunks=(4,), dtype="<i4")
    plain[:] = np.arange(8)
    gz = group.create_array(
        "gz", shape=(8,), chunks=(4,), dtype="<i4", compressors=numcodecs.GZip()
    )
    gz[:] = np.arange(8)
    out = tmp_path / "out.file"
    seen: list[tuple[int, int]] = []
    report = _convert(src, out, "nczarr", workers=2, progress=lambda d, t: seen.append((d, t)))
    assert (report.chunks_copied, report.chunks_reencoded) == (2, 2)
    assert seen[-1] == (4, 4) and [d for d, _ in seen] == [1, 2, 3, 4]
    assert "2 re-encoded" in report.summary()
    assert (out / "plain/0").read_bytes() == (src / "plain/0").read_bytes()
    assert (out / "gz/0").read_bytes() != (src / "gz/0").read_bytes()
    again = _convert(src, out, "nczarr", resume=True)
    assert (again.chunks_copied, again.chunks_reencoded, again.chunks_skipped) == (0, 0, 4)
    dry = _convert(src, tmp_path / "dry.file", "nczarr", dry_run=True)
    assert dry.reencoded == report.reencoded and dry.planned_bytes > 0


def test_reencoding_from_a_memory_map_in_many_workers(tmp_path: Path) -> None:
    src = MemoryMap(mode="w")
    group = zarr.open_group(ZarrStore(src), mode="w", zarr_format=2)
    a = group.create_array(
        "a", shape=(50, 40), chunks=(7, 9), dtype="<f8", compressors=numcodecs.LZ4(),
        fill_value=np.nan, order="F",
    )  # fmt: skip
    values = np.random.default_rng(0).normal(size=(50, 40))
    a[:30] = values[:30]
    out = tmp_path / "out.file"
    report = _convert(src, out, "nczarr", workers=4)
    assert report.chunks_reencoded == len([k for k in src if k.startswith("a/") and k[2] != "."])
    got = _read_nc(out)["a"]
    np.testing.assert_array_equal(got[:30], values[:30])
    assert np.isnan(got[30:]).all()


def test_defect_10_cli_refuses_unrepresentable_arrays_and_reports_reencoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nczarr.cli import main

    src = tmp_path / "c.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=2)
    group.create_array("cplx", shape=(2,), dtype="<c8")[:] = [1 + 2j, 3]
    text = group.create_array("text", shape=(2,), dtype="<U3")
    text[:] = ["ab", "ç"]
    out = tmp_path / "out.file"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        assert main(["convert", str(src), nc_url(out), "--mode", "nczarr"]) == 1
        err = capsys.readouterr().err
        assert "/cplx" in err and "exclude" in err and not out.exists()
        assert main(["convert", str(src), nc_url(out), "--exclude", "cplx"]) == 0
    captured = capsys.readouterr()
    assert "1 re-encoded" in captured.out
    assert "array '/text': chunks re-encoded (unicode strings (<U3)" in captured.err
    assert _text(_read_nc(out)["text"]) == ["ab", "ç"]


# ------------------------------------------------------------------ differential

_DTYPES = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]
_CODECS = {
    "gzip": lambda: {"compressors": numcodecs.GZip(level=1)},
    "lz4": lambda: {"compressors": numcodecs.LZ4()},
    "crc32c": lambda: {"filters": [numcodecs.CRC32C()], "compressors": None},
    "blosc": lambda: {"compressors": numcodecs.Blosc()},
}


@st.composite
def _arrays(draw: st.DrawFn) -> dict[str, object]:
    code = draw(st.sampled_from(_DTYPES))
    dtype = np.dtype(code if code[1] == "1" else draw(st.sampled_from("<>")) + code)
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    written = tuple(draw(st.integers(0, n)) for n in shape)
    if dtype.byteorder == ">":
        # netcdf-c 4.10 byte-swaps the fill value of chunks never written of a
        # big-endian variable (its own files too: -32768 reads as 128); not re-encoding's
        written = shape
    if dtype.kind == "f":
        fill = draw(st.sampled_from([np.nan, -1.5, 9.96921e36 if dtype.itemsize == 4 else 1e300]))
    else:
        info = np.iinfo(dtype)
        fill = draw(st.sampled_from([int(info.min), int(info.max), 7]))
    return {
        "dtype": dtype,
        "shape": shape,
        "chunks": chunks,
        "written": written,
        "fill": fill,
        "codec": draw(st.sampled_from(sorted(_CODECS))),
        "order": draw(st.sampled_from("CF")),
        "seed": draw(st.integers(0, 2**16)),
    }


@settings(
    max_examples=int(os.environ.get("NCZARR_REENCODE_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=_arrays())
def test_reencoded_arrays_read_as_zarr_python_reads_the_source(
    tmp_path_factory: pytest.TempPathFactory, case: dict
) -> None:
    """Any numeric dtype and byte order, 0-d to 3-d, ragged edges, partially written,
    Fortran order, codecs netcdf-c lacks: netCDF4 reads what zarr-python reads."""
    root = tmp_path_factory.mktemp("case")
    dtype, shape = case["dtype"], case["shape"]
    group = zarr.open_group(root / "src.zarr", mode="w", zarr_format=2)
    array = group.create_array(
        "v",
        shape=shape,
        chunks=case["chunks"] if shape else "auto",
        dtype=dtype,
        fill_value=case["fill"],
        order=case["order"],
        # big-endian: every chunk stored, also one whose values all equal the fill
        # value (zarr-python skips those), as netcdf-c byte-swaps the fill of unwritten
        # chunks (see _arrays)
        config={"write_empty_chunks": case["dtype"].byteorder == ">"},
        **_CODECS[case["codec"]](),
    )
    rng = np.random.default_rng(case["seed"])
    region = tuple(slice(0, n) for n in case["written"])
    block = array[region]
    if block.size or not shape:
        values = rng.integers(0, 100, size=np.shape(block)).astype(dtype)
        array[region] = values
    expected = np.asarray(array[...])
    out = root / "out.file"
    report = _convert(root / "src.zarr", out, "nczarr")
    verbatim = case["codec"] == "blosc" and shape and (case["order"] == "C" or len(shape) == 1)
    assert bool(report.reencoded) != bool(verbatim)
    np.testing.assert_array_equal(_read_nc(out)["v"], expected)


def test_reencoding_on_a_dask_cluster_matches_a_local_run(tmp_path: Path) -> None:
    """``convert(client=...)``: the view (with its recoders) travels to the workers."""
    _codec_store(tmp_path)
    _string_stores(tmp_path)
    with local_client() as client:
        for name in ("v2", "zp3"):
            local, remote = tmp_path / f"{name}.local", tmp_path / f"{name}.remote"
            expected = _convert(tmp_path / f"{name}.zarr", local, "nczarr")
            report = _convert(tmp_path / f"{name}.zarr", remote, "nczarr", client=client)
            assert report.chunks_reencoded == expected.chunks_reencoded > 0
            assert file_tree(remote) == file_tree(local)
