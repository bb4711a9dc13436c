"""``nczarr.to_icechunk`` on sources that broke it: Zarr v2 stores with ``/`` chunk
keys, NaN/infinite attributes (which Icechunk cannot store), and sources in
directories whose names hold a space, non-ASCII or ``%``, and S3 keys holding ``%``,
``#`` or ``?``. The repositories are read by
icechunk with zarr and xarray in a process without nczarr, compared with the source's
producer; what cannot be written is refused before a repository exists."""

from __future__ import annotations

import re
from pathlib import Path

import icechunk
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import UnsupportedError

from .refreaders import (
    floats,
    make_nczarr,
    netcdf_values,
    read_saved,
    s3_repository,
    s3_repository_job,
)


def icechunk_job(repo: Path, how: str, container: str | None) -> dict:
    return {
        "kind": "icechunk",
        "repo": str(repo),
        "how": how,
        "groups": [""],
        "containers": [container] if container else [],
    }


def test_slash_separator_zarr_v2_store(tmp_path: Path) -> None:
    """zarr-python's Zarr v2 array with ``dimension_separator "/"`` (keys ``v/1/0``),
    one chunk never written: the repository reads as zarr and xarray read the store
    (icechunk refused ``v/1/0``, taken for array ``v/1``, and left the repository)."""
    src = tmp_path / "z2.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=2)
    a = g.create_array(
        "v",
        shape=(4, 4),
        chunks=(2, 2),
        dtype="f4",
        fill_value=np.nan,
        chunk_key_encoding={"name": "v2", "separator": "/"},
    )
    a[:2, :] = np.arange(8).reshape(2, 4)
    a[2:, :2] = -1
    a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    assert (src / "v" / "1" / "0").is_file() and not (src / "v" / "1" / "1").exists()
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(str(src), repo)
    assert result["virtual"] == 3 and result["copied"] == 0
    by_zarr, by_xarray = read_saved(
        icechunk_job(repo, "zarr", result["container"]),
        icechunk_job(repo, "xarray", result["container"]),
    )
    assert by_zarr == {"v": floats(zarr.open_array(src / "v", mode="r")[...])}
    with xr.open_zarr(src, consolidated=False) as oracle:
        assert by_xarray == {"v": floats(oracle["v"].values)}
    assert by_zarr["v"][-1] is None  # the chunk never written reads as the fill, NaN


def nc_with(path: Path, **attrs: object) -> str:
    """A netCDF-4 file whose variable ``v`` has the attributes ``attrs``."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 3)
        v = ds.createVariable("v", "f4", ("x",))
        v[:] = [1, 2, 3]
        v.setncatts(attrs)
    return str(path)


@pytest.mark.parametrize(
    ("attrs", "named"),
    [
        ({"missing_value": np.float32(np.nan)}, "'missing_value' of /v"),
        ({"valid_max": np.float32(np.inf)}, "'valid_max' of /v"),
        ({"valid_range": np.array([-np.inf, 1.0])}, "'valid_range[0]' of /v"),
    ],
)
def test_non_finite_attributes_refused_before_creating(
    tmp_path: Path, attrs: dict, named: str
) -> None:
    """Icechunk refuses bare NaN/Infinity in metadata (as zarr-python writes them in
    Zarr v3); nczarr refuses first, naming the attribute, and nothing is left: not the
    directory, nor anything in an empty one given, nor a repository in a given
    ``icechunk.Storage`` (a repository was left that refused every retry)."""
    src = nc_with(tmp_path / "a.nc", **attrs)
    repo = tmp_path / "repo"
    refusal = rf"attribute {re.escape(named)}.*nothing was written"
    with pytest.raises(UnsupportedError, match=refusal):
        nczarr.to_icechunk(src, repo)
    assert not repo.exists()
    repo.mkdir()
    with pytest.raises(UnsupportedError, match="NaN or an infinity"):
        nczarr.to_icechunk(src, repo)
    assert list(repo.iterdir()) == []
    storage = icechunk.local_filesystem_storage(str(tmp_path / "given"))
    with pytest.raises(UnsupportedError, match="NaN or an infinity"):
        nczarr.to_icechunk(src, storage)
    assert not icechunk.Repository.exists(storage)
    finite = nc_with(tmp_path / "b.nc", units="m")  # a retry into the same place works
    result = nczarr.to_icechunk(finite, repo)
    (by_zarr,) = read_saved(icechunk_job(repo, "zarr", result["container"]))
    assert by_zarr == netcdf_values(finite, masked=False)


def test_non_finite_global_attribute_refused(tmp_path: Path) -> None:
    path = tmp_path / "g.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 1)
        ds.createVariable("v", "i4", ("x",))[:] = [1]
        ds.gnan = np.nan
    with pytest.raises(UnsupportedError, match="attribute 'gnan' of /"):
        nczarr.to_icechunk(str(path), tmp_path / "repo")
    assert not (tmp_path / "repo").exists()


@pytest.mark.parametrize("directory", ["with space", "é-dir", "pct%41"])
def test_source_directory_with_odd_characters(tmp_path: Path, directory: str) -> None:
    """Icechunk matches no container whose prefix holds a percent-encoded character
    (``file:///d/with%20space/``), so such virtual chunks could not be read; the
    container is now the nearest plain ancestor directory, which icechunk reads
    ``.../with%20space/f.nc`` from."""
    folder = tmp_path / directory
    folder.mkdir()
    src = folder / "f.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.createDimension("x", 6)
        v = ds.createVariable("v", "f4", ("x",), chunksizes=(2,), zlib=True)
        v[:] = np.arange(6, dtype="f4") / 2
    repo = tmp_path / "repo"
    result = nczarr.to_icechunk(str(src), repo)
    assert result["container"] == tmp_path.as_uri() + "/"
    assert result["virtual"] == 3
    by_zarr, by_xarray = read_saved(
        icechunk_job(repo, "zarr", result["container"]),
        icechunk_job(repo, "xarray", result["container"]),
    )
    expected = netcdf_values(str(src), masked=False)
    assert by_zarr == expected == {"v": [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]}
    with xr.open_dataset(src, engine="netcdf4") as oracle:
        assert by_xarray == {"v": floats(oracle["v"].values)}


@pytest.mark.parametrize("given_empty", [False, True], ids=["absent", "empty"])
def test_a_failure_after_the_repository_is_made_leaves_the_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given_empty: bool
) -> None:
    """README: a local directory is left as it was when the call fails. A failure
    while writing (after Icechunk made the repository: an interrupted write, a key
    Icechunk refuses) removes what was made, so a retry is not refused."""
    from nczarr.conversion import icechunk_repo

    src = nc_with(tmp_path / "a.nc", units="m")
    repo = tmp_path / "repo"
    if given_empty:
        repo.mkdir()
    made: list[bool] = []

    def fail(*args: object, **kwargs: object) -> None:
        made.append(any(repo.iterdir()))  # the repository exists by now
        raise KeyboardInterrupt

    monkeypatch.setattr(icechunk_repo, "_write", fail)
    with pytest.raises(KeyboardInterrupt):
        nczarr.to_icechunk(src, repo)
    assert made == [True]
    assert list(repo.iterdir()) == [] if given_empty else not repo.exists()
    monkeypatch.undo()
    result = nczarr.to_icechunk(src, repo)  # the retry
    (by_zarr,) = read_saved(icechunk_job(repo, "zarr", result["container"]))
    assert by_zarr == netcdf_values(src, masked=False)


@pytest.mark.parametrize(
    ("key_prefix", "url_prefix"),
    [("st%41", "st%2541"), ("a#b", "a%23b"), ("q?x", "q%3Fx"), ("a b/c d", "a b/c d")],
)
def test_s3_source_keys_with_url_characters(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client, key_prefix: str, url_prefix: str
) -> None:
    """A virtual chunk's location holds the S3 key percent-encoded: Icechunk decodes
    ``%41`` in a location (it read the key ``stA/...``: NoSuchKey) and would cut a key
    at ``#`` or ``?``. A reference set keeps the key as fsspec reads it."""
    store = tmp_path / "src.zarr"
    url = make_nczarr(store)
    for p in sorted(store.rglob("*")):
        if p.is_file():
            key = f"{key_prefix}/{p.relative_to(store).as_posix()}"
            s3_client.put_object(Bucket=s3_bucket, Key=key, Body=p.read_bytes())
    storage, options = s3_repository(s3_bucket, s3_endpoint)
    result = nczarr.to_icechunk(f"s3://{s3_bucket}/{url_prefix}", storage, storage_options=options)
    assert result["virtual"] == 8 and result["copied"] == 0
    job = s3_repository_job(s3_bucket, s3_endpoint, result["container"])
    (got,) = read_saved(job)
    assert got == netcdf_values(url, masked=False)
