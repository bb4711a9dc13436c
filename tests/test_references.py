"""Reference sets (``nczarr.references``, ``nczarr refs``) read by fsspec, xarray and
zarr in a process without nczarr, compared with netCDF4's (or zarr-python's) reading
of the source itself."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.cli.main import main as cli_main
from nczarr.errors import UnsupportedError

from .ncoracle import extract_fixture
from .refreaders import read_saved, refs_job


def read_refs(
    fo: str | Path, how: str, groups: tuple[str, ...] = ("",), remote: dict | None = None
) -> dict[str, list]:
    """Values of the numeric arrays of reference set ``fo``, read by fsspec and xarray or
    zarr 3 in a process without nczarr (``refreaders.read_saved``), NaN as None."""
    protocol = "s3" if remote else None  # None: fsspec's guess from the references
    (values,) = read_saved(
        refs_job(fo, how, groups, remote_protocol=protocol, remote_options=remote)
    )
    return values


def floats(values: Any) -> list:
    return [
        None if v != v else v
        for v in np.ma.filled(np.ma.asarray(values, dtype=float), np.nan).ravel().tolist()
    ]


def netcdf_values(url: str, masked: bool) -> dict[str, list]:
    """netCDF4's values of every numeric variable (masked as NaN when ``masked``)."""
    out: dict[str, list] = {}
    with netCDF4.Dataset(url) as ds:
        ds.set_auto_mask(masked)

        def walk(group: Any, prefix: str) -> None:
            for name, var in group.variables.items():
                if np.dtype(var.dtype).kind in "iuf":
                    out[(prefix + "/" + name).strip("/")] = floats(var[...])
            for name, sub in group.groups.items():
                walk(sub, prefix + "/" + name)

        walk(ds, "")
    return out


def tree_hash(path: Path) -> str:
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        digest.update(str(p.relative_to(path) if p != path else p.name).encode())
        digest.update(p.read_bytes())
    return digest.hexdigest()


def write_refs(tmp_path: Path, refs: dict) -> Path:
    out = tmp_path / "refs.json"
    out.write_text(json.dumps(refs))
    return out


def chunk_entries(refs: dict, view_metadata: dict[str, bytes]) -> dict[str, Any]:
    return {k: v for k, v in refs["refs"].items() if k not in view_metadata}


def make_nczarr(path: Path, mode: str = "nczarr,file") -> str:
    """A netcdf-c store (numeric variables, a fill value, a group), written by netCDF4."""
    url = f"file://{path}#mode={mode}"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("x", 10)
        ds.createDimension("y", 6)
        v = ds.createVariable("t", "f4", ("x", "y"), chunksizes=(5, 3), zlib=True, shuffle=True)
        v[:] = np.arange(60, dtype="f4").reshape(10, 6)
        v[0, 0] = np.ma.masked
        g = ds.createGroup("g")
        w = g.createVariable("c", "i2", ("x",), chunksizes=(4,))
        w[:] = np.arange(10)
        s = ds.createVariable("s", "i4", ())
        s.assignValue(7)
    return url


# ---------------------------------------------------------------- netcdf-c sources
@pytest.mark.parametrize("mode", ["nczarr,file", "zarr,file"])
def test_netcdf_c_store_read_by_xarray_and_zarr_without_nczarr(tmp_path: Path, mode: str) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store, mode)
    before = tree_hash(store)
    refs = nczarr.references(str(store))
    assert tree_hash(store) == before
    translated = nczarr.view(str(store), consolidated=True)
    metadata = translated.metadata
    # Metadata: the view's objects, byte for byte; chunks: whole source objects.
    for key, value in metadata.items():
        assert refs["refs"][key].encode() == value
    chunks = chunk_entries(refs, metadata)
    assert chunks and all(v == [str(store / k)] for k, v in chunks.items())
    fo = write_refs(tmp_path, refs)
    expected_masked = netcdf_values(url, masked=True)
    assert read_refs(fo, "xarray", ("", "g")) == expected_masked
    assert read_refs(fo, "zarr", ("", "g")) == netcdf_values(url, masked=False)
    assert tree_hash(store) == before


def test_pure_zarr_shuffle_elementsize_0(tmp_path: Path) -> None:
    """netcdf-c's pure Zarr with shuffle elementsize 0: the metadata is fixed, the
    chunk is the source's own file."""
    store = extract_fixture("pure_netcdf4101_shuffle.zip", tmp_path)
    assert b'"elementsize": 0' in (store / "ints" / ".zarray").read_bytes().replace(b" ", b" ")
    refs = nczarr.references(str(store))
    assert refs["refs"]["ints/0"] == [str(store / "ints" / "0")]
    fo = write_refs(tmp_path, refs)
    expected = netcdf_values(f"file://{store}#mode=zarr,file", masked=False)
    assert read_refs(fo, "zarr") == expected


def test_current_netcdf_c_fixture(tmp_path: Path) -> None:
    store = extract_fixture("current_netcdf4101.zip", tmp_path)
    before = tree_hash(store)
    refs = nczarr.references(str(store))
    fo = write_refs(tmp_path, refs)
    url = f"file://{store}#mode=nczarr,file"
    assert read_refs(fo, "zarr", ("", "g")) == netcdf_values(url, masked=False)
    assert tree_hash(store) == before


@pytest.mark.parametrize(
    ("fixture", "groups"),
    [("ref_oldkeys.file.zip", ("",)), ("ref_oldformat_v2attrs.zip", ("", "g1"))],
)
def test_legacy_netcdf_c_stores(tmp_path: Path, fixture: str, groups: tuple[str, ...]) -> None:
    """Older netcdf-c layouts (pre-4.8.1 keys, old attribute form): translated metadata,
    chunks pointing at the source's own files, values as netCDF4 reads the source."""
    store = extract_fixture(fixture, tmp_path)
    before = tree_hash(store)
    refs = nczarr.references(str(store))
    chunks = chunk_entries(refs, nczarr.view(str(store), consolidated=True).metadata)
    assert chunks and all(v == [str(store / k)] for k, v in chunks.items())
    fo = write_refs(tmp_path, refs)
    url = f"file://{store}#mode=nczarr,file"
    assert read_refs(fo, "zarr", groups) == netcdf_values(url, masked=False)
    assert tree_hash(store) == before


# ---------------------------------------------------------------- zarr-python sources
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_python_store(tmp_path: Path, zarr_format: int) -> None:
    store = tmp_path / "zp.zarr"
    ds = xr.Dataset(
        {"a": (("x", "y"), np.arange(24, dtype="i4").reshape(4, 6))},
        coords={"x": np.arange(4.0)},
    )
    ds.to_zarr(
        store, zarr_format=zarr_format, encoding={"a": {"chunks": (2, 3)}}, consolidated=False
    )
    before = tree_hash(store)
    refs = nczarr.references(str(store))
    chunks = chunk_entries(refs, nczarr.view(str(store), consolidated=True).metadata)
    assert chunks and all(isinstance(v, list) and len(v) == 1 for v in chunks.values())
    fo = write_refs(tmp_path, refs)
    got = read_refs(fo, "zarr")
    group = zarr.open_group(store, mode="r")
    assert got == {name: floats(arr[...]) for name, arr in group.arrays()}
    assert read_refs(fo, "xarray")["a"] == floats(ds["a"].values)
    assert tree_hash(store) == before


def test_zarr_format_3_references(tmp_path: Path) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    refs = nczarr.references(str(store), zarr_format=3)
    assert "zarr.json" in refs["refs"]
    fo = write_refs(tmp_path, refs)
    assert read_refs(fo, "zarr", ("", "g")) == netcdf_values(url, masked=False)


# ---------------------------------------------------------------- zip sources
def zip_dir(directory: Path, archive: Path, method: int, folder: str = "") -> None:
    """Zip a store's files (root layout, or netcdf-c's layout under ``folder``)."""
    with zipfile.ZipFile(archive, "w", method) as zf:
        for p in sorted(directory.rglob("*")):
            if p.is_file():
                zf.write(p, folder + p.relative_to(directory).as_posix())


@pytest.mark.parametrize("folder", ["", "src/"])
def test_zip_stored_members_are_byte_ranges(tmp_path: Path, folder: str) -> None:
    """Members stored uncompressed (netcdf-c's and zarr-python's zips) are referenced
    as [zip, offset, length] of the member's bytes."""
    directory = tmp_path / "dir.zarr"
    url = make_nczarr(directory)
    archive = tmp_path / "src.zip"
    zip_dir(directory, archive, zipfile.ZIP_STORED, folder)
    before = tree_hash(archive)
    refs = nczarr.references(str(archive))
    chunks = chunk_entries(refs, nczarr.view(str(archive), consolidated=True).metadata)
    assert chunks
    raw = archive.read_bytes()
    for key, entry in chunks.items():
        assert entry[0] == str(archive) and len(entry) == 3
        assert raw[entry[1] : entry[1] + entry[2]] == (directory / key).read_bytes()
    fo = write_refs(tmp_path, refs)
    assert read_refs(fo, "zarr", ("", "g")) == netcdf_values(url, masked=False)
    assert read_refs(fo, "xarray", ("", "g")) == netcdf_values(url, masked=True)
    assert tree_hash(archive) == before


def test_deflated_zip_members_are_inlined_loudly(tmp_path: Path) -> None:
    """Deflated members cannot be ranged into: copied in (announced) within
    max_inlined, refused above it, left out (announced) when excluded."""
    directory = tmp_path / "dir.zarr"
    url = make_nczarr(directory)
    archive = tmp_path / "deflated.zip"
    zip_dir(directory, archive, zipfile.ZIP_DEFLATED)
    with pytest.warns(
        nczarr.NCZarrWarning, match=r"array /t cannot be referenced \(stored compressed"
    ):
        refs = nczarr.references(str(archive))
    chunks = chunk_entries(refs, nczarr.view(str(archive), consolidated=True).metadata)
    assert chunks and all(isinstance(v, str) and v.startswith("base64:") for v in chunks.values())
    fo = write_refs(tmp_path, refs)
    assert read_refs(fo, "zarr", ("", "g")) == netcdf_values(url, masked=False)
    t_bytes = sum(len(base64.b64decode(v[7:])) for k, v in chunks.items() if k.startswith("t/"))
    assert t_bytes > 30  # the other arrays copy 24 and 4 bytes
    with pytest.raises(UnsupportedError, match=r"/t .*exclude=\['/t'\]"):
        nczarr.references(str(archive), max_inlined=30)
    with pytest.warns(nczarr.NCZarrWarning, match=r"left out by include/exclude: /t"):
        refs = nczarr.references(str(archive), max_inlined=30, exclude=["/t"])
    assert not any(k.startswith("t/") for k in refs["refs"])


# ---------------------------------------------------------------- re-encoded arrays
def test_reencoded_array_is_inlined_or_refused(tmp_path: Path) -> None:
    """A sharded Zarr v3 array is re-encoded by the view: its chunks cannot be pointed
    at, so they are inlined as the view serves them (announced) or refused."""
    store = tmp_path / "sharded.zarr"
    root = zarr.open_group(store, mode="w", zarr_format=3)
    arr = root.create_array("a", shape=(8,), chunks=(2,), shards=(4,), dtype="i4")
    arr[:] = np.arange(8)
    translated = nczarr.view(str(store), consolidated=True)
    assert translated.reencoded
    with pytest.warns(nczarr.NCZarrWarning, match="re-encoded by the view"):
        refs = nczarr.references(str(store))
    chunks = chunk_entries(refs, translated.metadata)
    assert chunks and all(v.startswith("base64:") for v in chunks.values())
    for key, value in chunks.items():
        assert base64.b64decode(value[len("base64:") :]) == translated[key]
    fo = write_refs(tmp_path, refs)
    assert list(read_refs(fo, "zarr").values()) == [floats(np.arange(8))]
    with pytest.raises(UnsupportedError, match="exclude="):
        nczarr.references(str(store), max_inlined=4)


# ---------------------------------------------------------------- inline threshold
def test_inline_threshold(tmp_path: Path) -> None:
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    metadata = nczarr.view(str(store), consolidated=True).metadata
    never = chunk_entries(nczarr.references(str(store), inline_threshold=0), metadata)
    assert all(isinstance(v, list) for v in never.values())
    sizes = {k: (store / k).stat().st_size for k in never}
    cut = sorted(sizes.values())[len(sizes) // 2]
    some = chunk_entries(nczarr.references(str(store), inline_threshold=cut), metadata)
    for key, size in sizes.items():
        if size < cut:
            assert base64.b64decode(some[key][len("base64:") :]) == (store / key).read_bytes()
        else:
            assert some[key] == [str(store / key)]


# ---------------------------------------------------------------- S3
def test_s3_source(tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client: Any) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    for p in sorted(store.rglob("*")):
        if p.is_file():
            s3_client.put_object(
                Bucket=s3_bucket, Key=f"st/{p.relative_to(store).as_posix()}", Body=p.read_bytes()
            )
    listing = lambda: sorted(  # noqa: E731
        (o["Key"], o["ETag"]) for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    )
    before = listing()
    refs = nczarr.references(f"s3://{s3_bucket}/st", storage_options={"endpoint_url": s3_endpoint})
    chunks = chunk_entries(refs, nczarr.view(str(store), consolidated=True).metadata)
    assert chunks and all(v == [f"s3://{s3_bucket}/st/{k}"] for k, v in chunks.items())
    fo = write_refs(tmp_path, refs)
    remote = {"endpoint_url": s3_endpoint}
    assert read_refs(fo, "zarr", ("", "g"), remote=remote) == netcdf_values(url, masked=False)
    assert read_refs(fo, "xarray", ("", "g"), remote=remote) == netcdf_values(url, masked=True)
    assert listing() == before


@pytest.mark.parametrize("folder", ["", "src/"])
def test_zip_on_s3_source(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client: Any, folder: str
) -> None:
    """A zip archive on S3 (``zip::s3://``): stored members are byte ranges of the
    archive object."""
    directory = tmp_path / "dir.zarr"
    url = make_nczarr(directory)
    archive = tmp_path / "src.zip"
    zip_dir(directory, archive, zipfile.ZIP_STORED, folder)
    s3_client.put_object(Bucket=s3_bucket, Key="a/src.zip", Body=archive.read_bytes())
    refs = nczarr.references(
        f"zip::s3://{s3_bucket}/a/src.zip", storage_options={"endpoint_url": s3_endpoint}
    )
    chunks = chunk_entries(refs, nczarr.view(str(archive), consolidated=True).metadata)
    raw = archive.read_bytes()
    assert chunks
    for key, entry in chunks.items():
        assert entry[0] == f"s3://{s3_bucket}/a/src.zip" and len(entry) == 3
        assert raw[entry[1] : entry[1] + entry[2]] == (directory / key).read_bytes()
    fo = write_refs(tmp_path, refs)
    remote = {"endpoint_url": s3_endpoint}
    assert read_refs(fo, "zarr", ("", "g"), remote=remote) == netcdf_values(url, masked=False)
    body = s3_client.get_object(Bucket=s3_bucket, Key="a/src.zip")["Body"].read()
    assert body == raw


# ---------------------------------------------------------------- CLI
def test_cli_refs_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    out = tmp_path / "out.json"
    assert cli_main(["refs", str(store), str(out)]) == 0
    assert json.loads(out.read_text()) == nczarr.references(str(store))
    assert read_refs(out, "zarr", ("", "g")) == netcdf_values(url, masked=False)
    with pytest.raises(SystemExit) as exit_:
        cli_main(["refs", "--help"])
    assert exit_.value.code == 0
    assert "reference set" in capsys.readouterr().out


def test_cli_refuses_output_inside_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    before = tree_hash(store)
    assert cli_main(["refs", str(store), str(store / "refs.json")]) == 1
    assert "overlap" in capsys.readouterr().err
    assert tree_hash(store) == before
    assert not os.path.exists(store / "refs.json")


def test_cli_refs_announces_inlined_arrays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "dir.zarr"
    make_nczarr(directory)
    archive = tmp_path / "deflated.zip"
    zip_dir(directory, archive, zipfile.ZIP_DEFLATED)
    out = tmp_path / "out.json"
    assert cli_main(["refs", str(archive), str(out)]) == 0
    err = capsys.readouterr().err
    assert "nczarr: warning: array /t cannot be referenced (stored compressed" in err
    assert cli_main(["refs", str(archive), str(out), "--exclude", "t", "--exclude", "g"]) == 0
    refs = json.loads(out.read_text())["refs"]
    assert not any(k.startswith(("t/", "g/")) for k in refs)
    assert "left out by include/exclude" in capsys.readouterr().err


# ---------------------------------------------------------------- netCDF files
@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_CLASSIC"])
def test_netcdf_file_chunks_are_byte_ranges(tmp_path: Path, fmt: str) -> None:
    """A ``.nc`` source: chunks (HDF5 chunks, contiguous pieces, netCDF-3 variables)
    are [file, offset, length] ranges of the file itself."""
    path = tmp_path / "src.nc"
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("x", 10)
        ds.createDimension("y", 6)
        if fmt == "NETCDF4":
            v = ds.createVariable("t", "f4", ("x", "y"), chunksizes=(5, 3), zlib=True)
        else:
            v = ds.createVariable("t", "f4", ("x", "y"))
        v[:] = np.arange(60, dtype="f4").reshape(10, 6)
        w = ds.createVariable("c", "i2", ("x",))
        w[:] = np.arange(10)
    before = tree_hash(path)
    refs = nczarr.references(str(path))
    chunks = chunk_entries(refs, nczarr.view(str(path), consolidated=True).metadata)
    assert chunks and all(v[0] == str(path) and len(v) == 3 for v in chunks.values())
    fo = write_refs(tmp_path, refs)
    url = str(path)
    assert read_refs(fo, "zarr") == netcdf_values(url, masked=False)
    assert read_refs(fo, "xarray") == netcdf_values(url, masked=True)
    assert tree_hash(path) == before
