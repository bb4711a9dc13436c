"""netCDF files (netCDF-4/HDF5, netCDF-3 classic, 64-bit offset, CDF-5) as sources.

netCDF4 (netcdf-c) is the oracle: the model nczarr reads from a ``.nc`` file is
what netCDF4 reports for it, and every converted target (NCZarr read back by
netCDF4, pure Zarr v2/v3 read by zarr-python) holds the values netCDF4 reads from
the file. Verbatim copies are compared byte for byte with the chunks HDF5 stored
(h5py's ``read_direct_chunk``) or the file's bytes (netCDF-3).
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path
from typing import Any

import h5py
import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.cli import main
from nczarr.errors import MetadataError, NCZarrError, NCZarrWarning, UnsupportedTypeError
from nczarr.integrations.xarray_backend import NCZarrBackendEntrypoint
from nczarr.ncfile.source import NetCDFFileMap

from .ncfiles import assert_same_values, build_netcdf3, build_netcdf4, nc_values, stored_chunks
from .ncoracle import describe, describe_url, diff

STORAGE_FIELDS = ("compressor", "filters", "chunks", "warnings", "maxstrlen", "text_storage")
NC3_FORMATS = ("NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA")
LAYOUTS = {
    "NETCDF4": "netcdf4",
    "NETCDF4_CLASSIC": "netcdf4",
    "NETCDF3_CLASSIC": "netcdf3-classic",
    "NETCDF3_64BIT_OFFSET": "netcdf3-64bit-offset",
    "NETCDF3_64BIT_DATA": "netcdf3-cdf5",
}
ALL_FORMATS = tuple(LAYOUTS)


def _build(tmp_path: Path, fmt: str) -> Path:
    path = tmp_path / f"{fmt.lower()}.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fmt.startswith("NETCDF4"):
            return build_netcdf4(path, fmt)
        return build_netcdf3(path, fmt)


def _quiet_convert(*args: Any, **kwargs: Any) -> nczarr.ConvertReport:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        return nczarr.convert(*args, **kwargs)


def _zarr_values(root: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(group: Any, path: str) -> None:
        for name, array in group.arrays():
            out[f"{path}/{name}"] = array[...]
        for name, sub in group.groups():
            walk(sub, f"{path}/{name}")

    walk(root, "")
    return out


# ------------------------------------------------------------------------ the model
@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_read_gives_what_netcdf4_reports(tmp_path: Path, fmt: str) -> None:
    path = _build(tmp_path, fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        dataset = nczarr.read(str(path))
    assert dataset.layout == LAYOUTS[fmt]
    ignore = STORAGE_FIELDS if fmt.startswith("NETCDF4") else (*STORAGE_FIELDS, "endian")
    assert diff(dataset, describe_url(str(path), LAYOUTS[fmt]), ignore=ignore) == []


def test_read_single_record_variable_netcdf3(tmp_path: Path) -> None:
    path = build_netcdf3(tmp_path / "one.nc", single_record=True)
    dataset = nczarr.read(str(path))
    ignore = (*STORAGE_FIELDS, "endian")
    assert diff(dataset, describe_url(str(path), "netcdf3-classic"), ignore=ignore) == []
    # the only record variable: its records are back to back, several per chunk
    assert dataset.find_variable("/time").chunks == (4,)


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_detect_names_the_format(tmp_path: Path, fmt: str) -> None:
    info = nczarr.detect(str(_build(tmp_path, fmt)))
    assert (info.format, info.layout) == ("netcdf", LAYOUTS[fmt])


def test_hidden_attributes_are_not_user_attributes(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4")
    with h5py.File(path) as f:  # they are in the file ...
        assert "_NCProperties" in f.attrs and "DIMENSION_LIST" in f["v_i4"].attrs
        assert "CLASS" in f["time"].attrs and "_Netcdf4Dimid" in f["time"].attrs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        dataset = nczarr.read(str(path))
    names = {a for g in dataset.root.walk() for a in g.attributes}
    names |= {a for v in dataset.root.all_variables() for a in v.attributes}
    hidden = {"_NCProperties", "DIMENSION_LIST", "CLASS", "NAME", "_Netcdf4Dimid"}
    assert not names & hidden  # ... and not in the model


def test_default_fill_values_without_fillvalue(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        dataset = nczarr.read(str(path))
    assert dataset.find_variable("/v_f4").fill_value == 9.969209968386869e36
    assert dataset.find_variable("/v_i2").fill_value == -32767
    assert dataset.find_variable("/v_u8").fill_value == 18446744073709551614
    assert dataset.find_variable("/filled").fill_value == -1.0


# ------------------------------------------------------------------------ convert
TARGETS = [
    ("nczarr", "out.file", {}),
    ("nczarr", "out.zip", {}),
    ("zarr", "out.zarr", {}),
    ("zarr", "out3.zarr", {"zarr_format": 3}),
    ("zarr", "out.zip", {}),
    ("zarr", "out3.zip", {"zarr_format": 3}),
]


def _target_values(fmt: str, out: Path, extra: dict[str, Any]) -> dict[str, Any]:
    if out.suffix == ".zip":  # this netCDF4 wheel's netcdf-c reads no zip: unpack it
        with zipfile.ZipFile(out) as archive:
            archive.extractall(out.with_suffix(".unzipped"))
        out = out.with_suffix(".unzipped")
        top = list(out.iterdir())
        if fmt == "nczarr" and len(top) == 1 and top[0].is_dir():
            out = top[0]  # netcdf-c's layout: one top-level directory
    if fmt == "nczarr":
        return nc_values(f"file://{out}#mode=nczarr,file")
    return _zarr_values(zarr.open_group(str(out), mode="r"))


@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize(("target", "name", "extra"), TARGETS)
def test_convert_holds_the_files_values(
    tmp_path: Path, fmt: str, target: str, name: str, extra: dict[str, Any]
) -> None:
    path = _build(tmp_path, fmt)
    out = tmp_path / name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = nczarr.convert(str(path), str(out), target, **extra)
        got = _target_values(target, out, extra)  # zarr warns of numcodecs codecs in v3
    assert report.source_layout == LAYOUTS[fmt]
    assert_same_values(nc_values(str(path)), got)


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT_DATA"])
def test_nczarr_target_has_the_files_metadata(tmp_path: Path, fmt: str) -> None:
    path = _build(tmp_path, fmt)
    _quiet_convert(str(path), str(tmp_path / "out"), "nczarr")
    ignore = (*STORAGE_FIELDS, "endian", "layout")
    assert diff(describe(tmp_path / "out"), describe_url(str(path)), ignore=ignore) == []


VERBATIM = [
    "v_i1",
    "v_u2",
    "v_f8",
    "fletcher",
    "plain",
    "big",
    "partial",
    "comp_zstd",
    "comp_bzip2",
    "comp_blosc_lz4",
    "g/v",
]


@pytest.mark.parametrize("target", ["nczarr", "zarr"])
def test_netcdf4_chunks_are_copied_byte_for_byte(tmp_path: Path, target: str) -> None:
    path = _build(tmp_path, "NETCDF4")
    out = tmp_path / "out"
    report = _quiet_convert(str(path), str(out), target)
    for name in VERBATIM:
        stored = stored_chunks(path, name)
        assert stored, name
        copied = {p.name: p.read_bytes() for p in (out / name).iterdir() if p.name[0] != "."}
        assert copied == stored, name
    assert "/v_i1" not in dict(report.reencoded)


def test_fletcher32_is_listed_first_and_decodes(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4")
    _quiet_convert(str(path), str(tmp_path / "out"), "zarr")
    meta = (tmp_path / "out" / "fletcher" / ".zarray").read_text()
    import json

    zarray = json.loads(meta)
    assert [f["id"] for f in zarray["filters"]] == ["fletcher32", "shuffle"]
    assert zarray["compressor"]["id"] == "zlib"
    got = zarr.open_array(str(tmp_path / "out" / "fletcher"), mode="r")[...]
    with netCDF4.Dataset(path) as ds:
        np.testing.assert_array_equal(got, ds["fletcher"][...])


def test_unwritten_chunks_stay_absent(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4")
    _quiet_convert(str(path), str(tmp_path / "out"), "nczarr")
    chunks = sorted(p.name for p in (tmp_path / "out" / "partial").iterdir() if p.name[0] != ".")
    assert chunks == ["2.0.0"]
    assert not [p for p in (tmp_path / "out" / "in_empty").iterdir() if p.name[0] != "."]


def test_contiguous_variables_are_byte_ranges_of_the_file(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4")
    _quiet_convert(str(path), str(tmp_path / "out"), "zarr")
    with h5py.File(path) as f:
        ds = f["contiguous"]
        raw = path.read_bytes()[ds.id.get_offset() : ds.id.get_offset() + ds.id.get_storage_size()]
    assert (tmp_path / "out" / "contiguous" / "0.0").read_bytes() == raw


@pytest.mark.parametrize("fmt", NC3_FORMATS)
def test_netcdf3_chunks_are_the_files_bytes(tmp_path: Path, fmt: str) -> None:
    path = _build(tmp_path, fmt)
    out = tmp_path / "out"
    report = _quiet_convert(str(path), str(out), "nczarr")
    assert report.reencoded == ()
    data = path.read_bytes()
    with netCDF4.Dataset(path) as ds:
        for name in ("r_i4", "f_f8", "r_small"):
            var = ds[name]
            values = np.asarray(var[...]).astype(var.dtype.newbyteorder(">"))
            records = values.shape[0] if var.dimensions[0] == "time" else 1
            for r in range(records):
                chunk = (out / name / ".".join([str(r)] + ["0"] * (values.ndim - 1))).read_bytes()
                assert chunk == (values[r : r + 1] if records > 1 else values).tobytes()
                assert chunk in data  # a byte range of the file


def test_reencoded_variables_are_named(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4")
    with pytest.warns(NCZarrWarning) as caught:
        report = nczarr.convert(str(path), str(tmp_path / "out"), "zarr")
    messages = [str(w.message) for w in caught]
    assert "re-encoded array '/fletcher8': shuffle after fletcher32" in " ".join(messages)
    assert "re-encoded array '/strings': variable-length strings" in " ".join(messages)
    reasons = dict(report.reencoded)
    assert set(reasons) == {"/fletcher8", "/strings"}
    assert "fletcher32" in reasons["/fletcher8"]
    assert "variable-length strings" in reasons["/strings"]


def test_user_defined_types_are_refused_unless_excluded(tmp_path: Path) -> None:
    path = tmp_path / "types.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", 2)
        cmp = ds.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
        ds.createVariable("pairs", cmp, ("n",))[:] = np.zeros(2, cmp.dtype)
        enum = ds.createEnumType("u1", "cloud", {"clear": 0, "cloudy": 1})
        ds.createVariable("sky", enum, ("n",))[:] = np.array([0, 1], "u1")
        ds.createVariable("ok", "i4", ("n",))[:] = [1, 2]
    with pytest.warns(NCZarrWarning) as caught:
        dataset = nczarr.read(str(path))
    assert [str(w.message).split(":")[0] for w in caught] == [
        "skipped array '/pairs'",
        "skipped array '/sky'",
    ]
    assert dataset.skipped == ("/pairs", "/sky")
    with pytest.raises(UnsupportedTypeError, match="/pairs"):
        nczarr.convert(str(path), str(tmp_path / "out"), "nczarr")
    with pytest.warns(NCZarrWarning):
        report = nczarr.convert(
            str(path), str(tmp_path / "out"), "nczarr", exclude=["pairs", "sky"]
        )
    assert report.arrays == 1 and report.chunks_copied == 1


# ------------------------------------------------------------------- other entry points
def test_view_and_open_zarr(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4_CLASSIC")
    expected = nc_values(str(path))
    with pytest.warns(NCZarrWarning, match="re-encoded array '/fletcher8'"):
        view = nczarr.view(str(path), "zarr")
    try:
        from nczarr.integrations.zarr_store import ZarrStore

        got = _zarr_values(zarr.open_group(ZarrStore(view), mode="r"))
    finally:
        view.close()
    assert_same_values(expected, got)
    with pytest.warns(NCZarrWarning, match="re-encoded array '/fletcher8'"):
        group = nczarr.open_zarr(str(path))
    assert_same_values(expected, _zarr_values(group))


def test_cli_convert_info_ls_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _build(tmp_path, "NETCDF3_64BIT_OFFSET")
    assert main(["info", str(path)]) == 0
    assert "netcdf3-64bit-offset" in capsys.readouterr().out
    assert main(["ls", str(path)]) == 0
    assert "r_i4" in capsys.readouterr().out
    assert main(["dump", "-h", str(path)]) == 0
    cdl = capsys.readouterr().out
    assert "time = UNLIMITED" in cdl and "int r_i4(time, lat, lon)" in cdl
    assert main(["convert", str(path), str(tmp_path / "out.zarr"), "--mode", "zarr"]) == 0
    assert_same_values(
        nc_values(str(path)), _zarr_values(zarr.open_group(str(tmp_path / "out.zarr")))
    )


def test_info_and_check_of_a_netcdf4_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = _build(tmp_path, "NETCDF4")
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert "netcdf4: netCDF-4 file (HDF5)" in text
    assert f"written by    netCDF {netCDF4.__netcdf4libversion__.split('-')[0]}" in text
    report = nczarr.check(str(path))
    assert report.info.layout == "netcdf4"
    assert not report.for_reader("netcdf-c 4.10+")
    assert [f.severity for f in report.for_reader("zarr-python 3")] == ["refuses"]


def test_xarray_engine_leaves_nc_files_to_xarray(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4_CLASSIC")
    assert not NCZarrBackendEntrypoint().guess_can_open(str(path))
    assert not NCZarrBackendEntrypoint().guess_can_open("s3://bucket/x.nc")


def test_source_map_is_read_only_and_lists_chunks(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4_CLASSIC")
    with NetCDFFileMap(str(path)) as source:
        assert "v_i4/0.0.0" in source and "partial/0.0.0" not in source
        with pytest.raises(NCZarrError):
            source["x"] = b"1"
        import pickle

        again = pickle.loads(pickle.dumps(source))
        assert again["v_i4/1.1.1"] == source["v_i4/1.1.1"]
        again.close()


# ------------------------------------------------------------------------ faults
def test_truncated_netcdf4_file(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4")
    cut = tmp_path / "cut.nc"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    with pytest.raises(NCZarrError, match=r"cut\.nc"):
        nczarr.read(str(cut))


def test_corrupt_superblock(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4_CLASSIC")
    data = bytearray(path.read_bytes())
    data[8:40] = b"\xff" * 32
    bad = tmp_path / "bad.nc"
    bad.write_bytes(bytes(data))
    with pytest.raises(MetadataError, match=r"bad\.nc.*(corrupt|not a readable)"):
        nczarr.read(str(bad))


def test_netcdf3_header_lying_about_sizes(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF3_CLASSIC")
    cut = tmp_path / "short.nc"
    cut.write_bytes(path.read_bytes()[:-100])  # numrecs now promises more than the file holds
    with pytest.raises(MetadataError, match=r"short\.nc.*variable '.*' ends at byte"):
        nczarr.read(str(cut))
    head = tmp_path / "head.nc"
    head.write_bytes(path.read_bytes()[:40])
    with pytest.raises(MetadataError, match=r"head\.nc.*truncated netCDF-3"):
        nczarr.read(str(head))


def test_plain_hdf5_gets_netcdf_cs_phony_dimensions(tmp_path: Path) -> None:
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(12, dtype="i4").reshape(3, 4))
        f.create_dataset("b", data=np.arange(3, dtype="f8"))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)  # the values live in the object header
        space = h5py.h5s.create_simple((4,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16LE, space, dcpl=dcpl)
        f["compact"][:] = np.arange(4, dtype="i2")
        f.attrs["title"] = "plain"
    dataset = nczarr.read(str(path))
    oracle = describe_url(str(path), "netcdf4")
    assert diff(dataset, oracle, ignore=(*STORAGE_FIELDS, "endian")) == []
    _quiet_convert(str(path), str(tmp_path / "out"), "nczarr")
    assert_same_values(nc_values(str(path)), nc_values(f"file://{tmp_path / 'out'}#mode=nczarr"))


def test_chunk_with_a_skipped_filter_is_reencoded(tmp_path: Path) -> None:
    path = tmp_path / "mask.h5"
    values = np.arange(8, dtype="i4").reshape(2, 4)
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("v", shape=(2, 4), chunks=(1, 4), dtype="i4", compression="gzip")
        ds[0] = values[0]
        ds.id.write_direct_chunk((1, 0), values[1].tobytes(), filter_mask=1)  # deflate skipped
    with pytest.warns(NCZarrWarning, match="filter skipped"):
        report = nczarr.convert(str(path), str(tmp_path / "out"), "zarr")
    assert [p for p, _ in report.reencoded] == ["/v"]
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "out" / "v"))[...], values)


@pytest.mark.parametrize("target", ["out", "out.zip"])
def test_file_truncated_after_opening(tmp_path: Path, target: str) -> None:
    path = _build(tmp_path, "NETCDF3_CLASSIC")
    with NetCDFFileMap(str(path)) as source:
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size - 40)
        with pytest.raises(NCZarrError, match=r"chunk '.*'.*file ends before byte"):
            nczarr.convert(source, str(tmp_path / target), "zarr")


def test_filter_without_a_zarr_codec_is_reencoded(tmp_path: Path) -> None:
    path = tmp_path / "lzf.h5"
    values = np.arange(600, dtype="f4").reshape(20, 30)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=values, chunks=(8, 30), compression="lzf")
    with pytest.warns(NCZarrWarning, match="re-encoded array '/v': HDF5 filter 'lzf'"):
        report = nczarr.convert(str(path), str(tmp_path / "out"), "nczarr")
    assert [p for p, _ in report.reencoded] == ["/v"]
    assert_same_values({"/v": values}, nc_values(f"file://{tmp_path / 'out'}#mode=nczarr"))


def test_netcdf3_header_lying_about_a_variables_size(tmp_path: Path) -> None:
    import struct

    from nczarr.ncfile.cdf import parse_header

    path = _build(tmp_path, "NETCDF3_CLASSIC")
    data = path.read_bytes()
    var = next(v for v in parse_header(data, "x").variables if v.name == "f_i4")
    stored = struct.pack(">iIi", var.type_code, var.vsize, var.begin)
    assert data.count(stored) == 1
    lying = struct.pack(">iIi", var.type_code, var.vsize + 8, var.begin)
    bad = tmp_path / "lies.nc"
    bad.write_bytes(data.replace(stored, lying))
    with pytest.raises(MetadataError, match=r"lies\.nc: variable 'f_i4'.*header says it takes"):
        nczarr.read(str(bad))


def test_corrupt_hdf5_btree(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF4_CLASSIC")
    data = bytearray(path.read_bytes())
    at = data.find(b"TREE", 1000)  # a chunk B-tree node (v1), past the root group's
    assert at > 0
    data[at + 4 : at + 40] = b"\xfe" * 36
    bad = tmp_path / "btree.nc"
    bad.write_bytes(bytes(data))
    with pytest.raises(MetadataError, match=r"btree\.nc: variable '/\w+': corrupt.*B-tree"):
        nczarr.read(str(bad))


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT_DATA"])
def test_xarray_engine_reads_nc_as_xarrays_netcdf4_engine(tmp_path: Path, fmt: str) -> None:
    import xarray as xr

    path = _build(tmp_path, fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        ours = xr.open_dataset(str(path), engine="nczarr")
    with xr.open_dataset(str(path), engine="netcdf4") as theirs, ours:
        xr.testing.assert_identical(ours, theirs)


def test_resume_skips_the_chunks_already_copied(tmp_path: Path) -> None:
    path = _build(tmp_path, "NETCDF3_64BIT_DATA")
    out = tmp_path / "out"
    first = _quiet_convert(str(path), str(out), "nczarr")
    (out / "r_i4" / "2.0.0").unlink()  # as if killed before that chunk
    (out / ".zattrs").unlink()
    again = _quiet_convert(str(path), str(out), "nczarr", resume=True)
    assert again.chunks_copied == 1
    assert again.chunks_skipped == first.chunks_copied - 1
    assert_same_values(nc_values(str(path)), nc_values(f"file://{out}#mode=nczarr,file"))
