"""Icechunk repositories of the translated view (``nczarr.to_icechunk``): chunks as
virtual references into the source, read by zarr and xarray through icechunk in a
process without nczarr, compared with netCDF4's reading of the source."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import icechunk
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import TargetExistsError, UnsupportedError

from .ncoracle import extract_fixture
from .refreaders import (
    floats,
    make_nc,
    make_nczarr,
    netcdf_values,
    read_saved,
    s3_repository,
    s3_repository_job,
    tree_hash,
)


def icechunk_job(repo: Path, how: str, groups: tuple[str, ...], result: dict) -> dict:
    containers = [result["container"]] if result["container"] else []
    return {
        "kind": "icechunk",
        "repo": str(repo),
        "how": how,
        "groups": list(groups),
        "containers": containers,
    }


def xarray_values(url: str, groups: tuple[str, ...]) -> dict[str, list]:
    """xarray's netcdf4 engine (libnetcdf) on the source: the oracle for xarray reading
    the Zarr v3 repository (a default fill value masks in neither: no _FillValue)."""
    out: dict[str, list] = {}
    for g in groups:
        with xr.open_dataset(url, engine="netcdf4", group=g or None) as ds:
            for name, var in ds.variables.items():
                if var.dtype.kind in "iuf":
                    out[(g + "/" + name).strip("/")] = floats(var.values)
    return out


def virtual_locations(repo: Path, container: str | None) -> list[str]:
    """Every virtual chunk location the repository's ``main`` holds."""
    local = getattr(icechunk.credentials, "LocalFileSystemAccess", None)  # icechunk 2
    authorize = icechunk.containers_credentials({container: local}) if container else None
    opened = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(repo)), authorize_virtual_chunk_access=authorize
    )
    return sorted(opened.readonly_session(branch="main").all_virtual_chunk_locations())


@pytest.mark.parametrize("mode", ["nczarr,file", "zarr,file"])
def test_netcdf_c_store_virtual(tmp_path: Path, mode: str) -> None:
    store = tmp_path / "src.zarr"
    url = make_nczarr(store, mode)
    before = tree_hash(store)
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(str(store), repo)
    assert result["container"] == store.as_uri() + "/"
    assert result["virtual"] == 8 and result["copied"] == 0
    chunk_files = sorted(
        p.as_uri() for p in store.rglob("*") if p.is_file() and not p.name.startswith(".z")
    )
    assert virtual_locations(repo, result["container"]) == chunk_files  # nothing copied
    by_zarr, by_xarray = read_saved(
        icechunk_job(repo, "zarr", ("", "g"), result),
        icechunk_job(repo, "xarray", ("", "g"), result),
    )
    assert by_zarr == netcdf_values(url, masked=False)
    assert by_xarray == xarray_values(url, ("", "g"))
    assert tree_hash(store) == before


def test_legacy_and_shuffle_stores_virtual(tmp_path: Path) -> None:
    legacy = extract_fixture("ref_oldformat_v2attrs.zip", tmp_path / "a")
    shuffle = extract_fixture("pure_netcdf4101_shuffle.zip", tmp_path / "b")
    hashes = {p: tree_hash(p) for p in (legacy, shuffle)}
    r1 = nczarr.to_icechunk(str(legacy), tmp_path / "r1")
    r2 = nczarr.to_icechunk(str(shuffle), tmp_path / "r2")
    got = read_saved(
        icechunk_job(tmp_path / "r1", "zarr", ("", "g1"), r1),
        icechunk_job(tmp_path / "r2", "zarr", ("",), r2),
    )
    assert got[0] == netcdf_values(f"file://{legacy}#mode=nczarr,file", masked=False)
    assert got[1] == netcdf_values(f"file://{shuffle}#mode=zarr,file", masked=False)
    assert {p: tree_hash(p) for p in hashes} == hashes


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_CLASSIC"])
def test_netcdf_file_virtual_byte_ranges(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "src.nc"
    url = make_nc(path, fmt)
    before = tree_hash(path)
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(str(path), repo)
    assert result["copied"] == 0
    assert set(virtual_locations(repo, result["container"])) == {path.as_uri()}
    by_zarr, by_xarray = read_saved(
        icechunk_job(repo, "zarr", ("",), result), icechunk_job(repo, "xarray", ("",), result)
    )
    assert by_zarr == netcdf_values(url, masked=False)
    assert by_xarray == xarray_values(url, ("",))
    assert tree_hash(path) == before


def test_stored_zip_members_virtual(tmp_path: Path) -> None:
    directory = tmp_path / "dir.zarr"
    url = make_nczarr(directory)
    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for p in sorted(directory.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(directory).as_posix())
    before = tree_hash(archive)
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(str(archive), repo)
    assert set(virtual_locations(repo, result["container"])) == {archive.as_uri()}
    (got,) = read_saved(icechunk_job(repo, "zarr", ("", "g"), result))
    assert got == netcdf_values(url, masked=False)
    assert tree_hash(archive) == before


def test_copied_repository(tmp_path: Path) -> None:
    """virtual=False: the chunks are copied in, no virtual reference is left."""
    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(str(store), repo, virtual=False)
    assert result == {**result, "container": None, "virtual": 0, "copied": 8}
    assert virtual_locations(repo, None) == []
    (got,) = read_saved(icechunk_job(repo, "zarr", ("", "g"), result))
    assert got == netcdf_values(url, masked=False)


def test_reencoded_array_copied_within_budget_or_refused(tmp_path: Path) -> None:
    """Variable-length strings of a ``.nc`` file are re-encoded by its map: they cannot
    be referenced. Within max_inlined their chunks are copied (announced); above,
    refused naming the array, before any repository is created. The numbers beside
    them stay virtual."""
    source = tmp_path / "s.nc"
    with netCDF4.Dataset(source, "w") as ds:
        ds.createDimension("x", 4)
        ds.createVariable("n", "f4", ("x",), chunksizes=(2,))[:] = [1.5, 2.5, 3.5, 4.5]
        words = ds.createVariable("s", str, ("x",), chunksizes=(2,))
        words[:] = np.array(["a", "bb", "ccc", "dddd"], dtype=object)
    with (
        pytest.warns(nczarr.NCZarrWarning, match="re-encoded array '/s'"),
        pytest.raises(UnsupportedError, match=r"/s cannot be referenced .*exclude=\['/s'\]"),
    ):
        nczarr.to_icechunk(str(source), tmp_path / "refused", max_inlined=1)
    assert not (tmp_path / "refused").exists()
    with pytest.warns(nczarr.NCZarrWarning) as said:
        result = nczarr.to_icechunk(str(source), tmp_path / "repo")
    messages = [str(w.message) for w in said]
    assert any("re-encoded array '/s'" in m for m in messages)
    assert any(
        re.search(r"/s cannot be referenced \(not a verbatim.*copied into the repository", m)
        for m in messages
    )
    assert result["virtual"] == 2 and result["copied"] == 2
    (got,) = read_saved(icechunk_job(tmp_path / "repo", "zarr", ("",), result))
    assert got == {"n": [1.5, 2.5, 3.5, 4.5]}


def test_sharded_v3_source_is_referenced_shard_by_shard(tmp_path: Path) -> None:
    """A Zarr v3 repository keeps a sharded source's sharding codec, so each shard
    object is one virtual chunk of the repository: nothing is re-encoded or copied."""
    store = tmp_path / "sharded.zarr"
    root = zarr.open_group(store, mode="w", zarr_format=3)
    arr = root.create_array("a", shape=(8,), chunks=(2,), shards=(4,), dtype="i4")
    arr[:] = np.arange(8)
    before = tree_hash(store)
    result = nczarr.to_icechunk(str(store), tmp_path / "repo", max_inlined=0)
    assert result["virtual"] == 2 and result["copied"] == 0
    shards = [(store / "a" / "c" / str(i)).as_uri() for i in (0, 1)]
    assert virtual_locations(tmp_path / "repo", result["container"]) == shards
    (got,) = read_saved(icechunk_job(tmp_path / "repo", "zarr", ("",), result))
    assert got == {"a": floats(np.arange(8))}
    assert tree_hash(store) == before


def test_existing_target_refused(tmp_path: Path) -> None:
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep").write_text("mine")
    with pytest.raises(TargetExistsError, match="not empty"):
        nczarr.to_icechunk(str(store), occupied)
    assert (occupied / "keep").read_text() == "mine"
    repo = tmp_path / "repo"
    nczarr.to_icechunk(str(store), icechunk.local_filesystem_storage(str(repo)))
    with pytest.raises(TargetExistsError, match="exists"):
        nczarr.to_icechunk(str(store), icechunk.local_filesystem_storage(str(repo)))


def test_s3_source_and_s3_repository(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client
) -> None:
    """Source and repository on (moto) S3: chunks are virtual references to the
    source's objects, read back through icechunk's own S3 client."""
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
    storage, options = s3_repository(s3_bucket, s3_endpoint)
    result = nczarr.to_icechunk(f"s3://{s3_bucket}/st", storage, storage_options=options)
    assert result["container"] == f"s3://{s3_bucket}/st/"
    assert result["virtual"] == 8 and result["copied"] == 0
    job = s3_repository_job(s3_bucket, s3_endpoint, result["container"])
    (got,) = read_saved(job)
    assert got == netcdf_values(url, masked=False)
    assert [k for k in listing() if k[0].startswith("st/")] == before


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_python_store_virtual(tmp_path: Path, zarr_format: int) -> None:
    """A store xarray/zarr-python wrote: read back as zarr-python reads the source."""
    store = tmp_path / "zp.zarr"
    ds = xr.Dataset(
        {"a": (("x", "y"), np.arange(24, dtype="i4").reshape(4, 6))},
        coords={"x": np.arange(4.0)},
    )
    ds.to_zarr(
        store,
        zarr_format=zarr_format,
        encoding={"a": {"chunks": (2, 3)}},
        consolidated=zarr_format == 2,
    )
    before = tree_hash(store)
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(str(store), repo)
    assert result["copied"] == 0 and result["virtual"] == 4 + 1
    (got,) = read_saved(icechunk_job(repo, "zarr", ("",), result))
    group = zarr.open_group(store, mode="r")
    assert got == {name: floats(arr[...]) for name, arr in group.arrays()}
    assert tree_hash(store) == before


def test_zip_on_s3_source_virtual(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client
) -> None:
    """A zip archive on S3 (``zip::s3://``): stored members become virtual byte ranges
    of the archive object; the repository itself is local."""
    directory = tmp_path / "dir.zarr"
    url = make_nczarr(directory)
    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for p in sorted(directory.rglob("*")):
            if p.is_file():
                zf.write(p, "src/" + p.relative_to(directory).as_posix())
    s3_client.put_object(Bucket=s3_bucket, Key="a/src.zip", Body=archive.read_bytes())
    options = {"endpoint_url": s3_endpoint, "key": "testing", "secret": "testing"}
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(f"zip::s3://{s3_bucket}/a/src.zip", repo, storage_options=options)
    assert result["container"] == f"s3://{s3_bucket}/a/"
    assert result["virtual"] == 8 and result["copied"] == 0
    (got,) = read_saved(icechunk_job(repo, "zarr", ("", "g"), result))
    assert got == netcdf_values(url, masked=False)
    body = s3_client.get_object(Bucket=s3_bucket, Key="a/src.zip")["Body"].read()
    assert body == archive.read_bytes()
