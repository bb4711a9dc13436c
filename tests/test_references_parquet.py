"""Reference sets in fsspec's Parquet layout (``nczarr.write_references(src,
"x.parq")``, ``nczarr refs SRC OUT.parq``), read by xarray and zarr 3 through fsspec's
``reference://`` filesystem in a process without nczarr, compared with netCDF4's (or
zarr-python's) reading of the source."""

from __future__ import annotations

import base64
import json
import zipfile
from pathlib import Path

import fsspec
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.cli.main import main as cli_main
from nczarr.errors import InvalidModeError, TargetExistsError, UnsupportedError

from .ncoracle import extract_fixture
from .refreaders import (
    floats,
    make_nc,
    make_nczarr,
    netcdf_values,
    read_saved,
    refs_job,
    tree_hash,
)


def parquet_entries(out: Path, keys: list[str]) -> dict:
    """The references ``keys`` of a Parquet set as fsspec's lazy reader serves them."""
    fs = fsspec.filesystem("reference", fo=str(out), remote_protocol="file")
    return {k: fs.references[k] for k in keys}


def same_as_json(out: Path, refs: dict) -> None:
    """The Parquet set holds the JSON set: the same metadata objects (as JSON values),
    the same chunk entries (inlined chunks as their bytes)."""
    want = {k: v for k, v in refs["refs"].items() if k != ".zmetadata"}
    fs = fsspec.filesystem("reference", fo=str(out), remote_protocol="file")
    assert set(fs.references.zmetadata) == {k for k in want if is_metadata(k)}
    got = parquet_entries(out, list(want))
    for key, value in want.items():
        if isinstance(value, list):
            assert list(got[key]) == value, key
        elif is_metadata(key):
            assert json.loads(got[key]) == json.loads(value), key
        else:
            assert bytes(got[key]) == base64.b64decode(value[len("base64:") :]), key


def is_metadata(key: str) -> bool:
    return key.rsplit("/", 1)[-1].startswith(".z")


# ---------------------------------------------------------------- netcdf-c sources
@pytest.mark.parametrize("mode", ["nczarr,file", "zarr,file"])
def test_netcdf_c_store_parquet(tmp_path: Path, mode: str) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store, mode)
    before = tree_hash(store)
    out = tmp_path / "refs.parq"
    counts = nczarr.write_references(str(store), out, record_size=3)
    assert counts["inlined"] == 0 and counts["pointers"] == 4 + 3 + 1
    assert tree_hash(store) == before
    same_as_json(out, nczarr.references(str(store)))
    assert sorted(p.name for p in (out / "t").iterdir()) == ["refs.0.parq", "refs.1.parq"]
    by_zarr, by_xarray = read_saved(
        refs_job(out, "zarr", ("", "g")), refs_job(out, "xarray", ("", "g"))
    )
    assert by_zarr == netcdf_values(url, masked=False)
    assert by_xarray == netcdf_values(url, masked=True)
    assert tree_hash(store) == before


def test_netcdf_c_pure_zarr_shuffle_and_legacy_parquet(tmp_path: Path) -> None:
    shuffle = extract_fixture("pure_netcdf4101_shuffle.zip", tmp_path / "a")
    legacy = extract_fixture("ref_oldformat_v2attrs.zip", tmp_path / "b")
    hashes = {p: tree_hash(p) for p in (shuffle, legacy)}
    nczarr.write_references(str(shuffle), tmp_path / "shuffle.parq")
    nczarr.write_references(str(legacy), tmp_path / "legacy.parq")
    got = read_saved(
        refs_job(tmp_path / "shuffle.parq", "zarr"),
        refs_job(tmp_path / "legacy.parq", "zarr", ("", "g1")),
    )
    assert got[0] == netcdf_values(f"file://{shuffle}#mode=zarr,file", masked=False)
    assert got[1] == netcdf_values(f"file://{legacy}#mode=nczarr,file", masked=False)
    assert {p: tree_hash(p) for p in hashes} == hashes


# ---------------------------------------------------------------- zarr-python sources
def test_zarr_python_consolidated_store_parquet(tmp_path: Path) -> None:
    """A consolidated store: the view's .zmetadata is carried by the layout's own."""
    store = tmp_path / "zp.zarr"
    ds = xr.Dataset(
        {"a": (("x", "y"), np.arange(24, dtype="i4").reshape(4, 6))},
        coords={"x": np.arange(4.0)},
    )
    ds.to_zarr(store, zarr_format=2, encoding={"a": {"chunks": (2, 3)}}, consolidated=True)
    out = tmp_path / "zp.parq"
    nczarr.write_references(str(store), out)
    same_as_json(out, nczarr.references(str(store)))
    by_zarr, by_xarray = read_saved(refs_job(out, "zarr"), refs_job(out, "xarray"))
    group = zarr.open_group(store, mode="r")
    assert by_zarr == {name: floats(arr[...]) for name, arr in group.arrays()}
    assert by_xarray["a"] == floats(ds["a"].values)


# ---------------------------------------------------------------- netCDF files
@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT_OFFSET"])
def test_netcdf_file_parquet(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "src.nc"
    url = make_nc(path, fmt)
    before = tree_hash(path)
    out = tmp_path / "nc.parq"
    nczarr.write_references(str(path), out)
    refs = nczarr.references(str(path))
    same_as_json(out, refs)
    chunks = [v for k, v in refs["refs"].items() if not is_metadata(k)]
    assert chunks and all(v[0] == str(path) and len(v) == 3 for v in chunks)
    by_zarr, by_xarray = read_saved(refs_job(out, "zarr"), refs_job(out, "xarray"))
    assert by_zarr == netcdf_values(url, masked=False)
    assert by_xarray == netcdf_values(url, masked=True)
    assert tree_hash(path) == before


# ---------------------------------------------------------------- many chunks
def test_many_chunks_paged_by_record_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2,000 chunks, 150 per record file: 14 files, written as each fills (entries reach
    fsspec's writer in grid order), read back as zarr-python reads the source. The
    chunk zarr-python left unwritten (all fill) is given its encoded fill-value chunk,
    announced: fsspec's Parquet reader cannot leave a chunk out."""
    store = tmp_path / "many.zarr"
    root = zarr.open_group(store, mode="w", zarr_format=2)
    arr = root.create_array("m", shape=(40, 50), chunks=(1, 1), dtype="i2", fill_value=-1)
    values = np.arange(2000, dtype="i2").reshape(40, 50)
    values[3, 7] = -1  # a chunk equal to the fill value: zarr does not write it
    arr[:] = values
    before = tree_hash(store)
    out = tmp_path / "many.parq"
    assert cli_main(["refs", str(store), str(out), "--record-size", "150"]) == 0
    printed = capsys.readouterr()
    assert "1999 into" in printed.out
    assert "array /m: 1 chunk(s) missing from the source written" in printed.err
    files = sorted((out / "m").iterdir())
    assert len(files) == 14
    (got,) = read_saved(refs_job(out, "zarr"))
    assert got == {"m": floats(values)}
    assert tree_hash(store) == before


# ---------------------------------------------------------------- zips
def test_stored_zip_parquet(tmp_path: Path) -> None:
    """Members stored uncompressed: [zip, offset, length] entries in the Parquet set."""
    directory = tmp_path / "dir.zarr"
    url = make_nczarr(directory)
    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for p in sorted(directory.rglob("*")):
            if p.is_file():
                zf.write(p, "src/" + p.relative_to(directory).as_posix())  # netcdf-c's layout
    before = tree_hash(archive)
    out = tmp_path / "zip.parq"
    counts = nczarr.write_references(str(archive), out)
    assert counts["inlined"] == 0
    path, offset, length = parquet_entries(out, ["t/0.0"])["t/0.0"]
    assert path == str(archive)
    assert archive.read_bytes()[offset : offset + length] == (directory / "t/0.0").read_bytes()
    by_zarr, by_xarray = read_saved(
        refs_job(out, "zarr", ("", "g")), refs_job(out, "xarray", ("", "g"))
    )
    assert by_zarr == netcdf_values(url, masked=False)
    assert by_xarray == netcdf_values(url, masked=True)
    assert tree_hash(archive) == before


# ---------------------------------------------------------------- inlined chunks
def test_deflated_zip_members_inlined_in_parquet(tmp_path: Path) -> None:
    directory = tmp_path / "dir.zarr"
    url = make_nczarr(directory)
    archive = tmp_path / "deflated.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(directory.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(directory).as_posix())
    out = tmp_path / "z.parq"
    with pytest.warns(nczarr.NCZarrWarning, match=r"array /t cannot be referenced"):
        counts = nczarr.write_references(str(archive), out)
    assert counts["pointers"] == 0 and counts["inlined"] == 8
    (got,) = read_saved(refs_job(out, "zarr", ("", "g")))
    assert got == netcdf_values(url, masked=False)
    # Past max_inlined: refused, and nothing is left at OUT.
    other = tmp_path / "refused.parq"
    with pytest.raises(UnsupportedError, match=r"/t .*exclude="):
        nczarr.write_references(str(archive), other, max_inlined=30)
    assert not other.exists()


# ---------------------------------------------------------------- refusals
def test_parquet_refusals_touch_nothing(tmp_path: Path) -> None:
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    before = tree_hash(store)
    with pytest.raises(UnsupportedError, match="Zarr v2 metadata only"):
        nczarr.write_references(str(store), tmp_path / "v3.parq", zarr_format=3)
    assert not (tmp_path / "v3.parq").exists()
    with pytest.raises(InvalidModeError, match="overlap"):
        nczarr.write_references(str(store), store / "in.parq")
    # OUT exists and is something else: refused, untouched.
    foreign = tmp_path / "foreign.parq"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(TargetExistsError, match="not a Parquet reference set"):
        nczarr.write_references(str(store), foreign)
    assert (foreign / "keep.txt").read_text() == "mine"
    # A Parquet reference set written before is replaced.
    out = tmp_path / "again.parq"
    nczarr.write_references(str(store), out, exclude=["/g"])
    nczarr.write_references(str(store), out)
    assert (out / "g" / "c").is_dir()
    assert tree_hash(store) == before


def test_cli_refs_parquet_zarr_format_3_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    assert cli_main(["refs", str(store), str(tmp_path / "o.parq"), "--zarr-format", "3"]) == 1
    assert "write zarr_format=3 references as JSON" in capsys.readouterr().err


# ---------------------------------------------------------------- S3
def test_s3_source_parquet(tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    for p in sorted(store.rglob("*")):
        if p.is_file():
            s3_client.put_object(
                Bucket=s3_bucket, Key=f"st/{p.relative_to(store).as_posix()}", Body=p.read_bytes()
            )
    out = tmp_path / "s3.parq"
    options = {"endpoint_url": s3_endpoint}
    nczarr.write_references(f"s3://{s3_bucket}/st", out, storage_options=options)
    entries = parquet_entries(out, ["t/0.0"])
    assert list(entries["t/0.0"]) == [f"s3://{s3_bucket}/st/t/0.0"]
    remote = {"remote_protocol": "s3", "remote_options": options}
    by_zarr, by_xarray = read_saved(
        refs_job(out, "zarr", ("", "g"), **remote), refs_job(out, "xarray", ("", "g"), **remote)
    )
    assert by_zarr == netcdf_values(url, masked=False)
    assert by_xarray == netcdf_values(url, masked=True)
