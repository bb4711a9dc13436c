"""``storage_options=`` on every entry point, ``source_options``/``target_options`` on
``convert``, the CLI's ``--storage-option``/``--anon``, maps wherever URLs go, and chained
``zip::`` URLs. S3 is moto's real HTTP server; options are asserted by what reaches the
wire (headers botocore sends, the server answering or not), not by inspecting objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fsspec
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.cli import main
from nczarr.cli.options import parse_storage_option
from nczarr.errors import InvalidModeError, InvalidURLError, StorageError, StorageNotFoundError

EXAMPLE = Path(__file__).parent.parent / "examples" / "netcdf4101.zip"
LEGACY = Path(__file__).parent.parent / "examples" / "legacy.zip"

#: A closed local port: connections are refused at once.
NOWHERE = "http://127.0.0.1:9"
#: No retries, so that a refused connection fails in well under a second.
FAST_FAIL = {"config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2}}


def _variables(ds: nczarr.Dataset) -> dict[str, tuple]:
    return {v.path: v.shape for v in ds.root.all_variables()}


@pytest.fixture
def s3_store(s3_endpoint: str, s3_bucket: str) -> str:
    """The example dataset as pure Zarr in the bucket; its ``s3://`` URL (no endpoint)."""
    url = f"s3://{s3_bucket}/ds"
    nczarr.convert(EXAMPLE, url, mode="zarr", target_options={"endpoint_url": s3_endpoint})
    return url


@pytest.fixture
def public_bucket(s3_endpoint: str) -> str:
    """A public-read bucket holding the example dataset as NCZarr and as a netcdf-c zip."""
    import uuid

    import boto3

    name = f"public-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=name, ACL="public-read")
    nczarr.convert(
        EXAMPLE, f"s3://{name}/ds", mode="nczarr", target_options={"endpoint_url": s3_endpoint}
    )
    client.put_object(Bucket=name, Key="archive/netcdf4101.zip", Body=EXAMPLE.read_bytes())
    return name


def _record(zmap: Any) -> list[dict[str, str]]:
    """Headers of every request ``zmap``'s s3fs client sends from now on."""
    seen: list[dict[str, str]] = []

    def hook(request: Any, **_: Any) -> None:
        seen.append({k.lower(): str(v) for k, v in request.headers.items()})

    zmap.fs.s3.meta.events.register("before-send.s3", hook)
    return seen


# ------------------------------------------------------------------ S3 options reach s3fs
def test_endpoint_from_options_the_right_one_works_a_wrong_one_fails(
    s3_store: str, s3_endpoint: str
) -> None:
    ds = nczarr.read(s3_store, storage_options={"endpoint_url": s3_endpoint})
    assert _variables(ds) == _variables(nczarr.read(EXAMPLE))
    with pytest.raises(StorageError, match=r"127\.0\.0\.1:9"):
        nczarr.read(s3_store, storage_options={"endpoint_url": NOWHERE, **FAST_FAIL})


def test_anonymous_requests_are_unsigned_and_read_a_public_bucket(
    public_bucket: str, s3_endpoint: str
) -> None:
    url = f"s3://{public_bucket}/ds"
    with nczarr.open_map(url, storage_options={"endpoint_url": s3_endpoint, "anon": True}) as m:
        seen = _record(m)
        assert m[".zattrs"]
        assert seen and all("authorization" not in h for h in seen)
    with nczarr.open_map(url, storage_options={"endpoint_url": s3_endpoint}) as m:
        seen = _record(m)
        m[".zattrs"]
        assert all("authorization" in h for h in seen)
    ds = nczarr.read(url, storage_options={"endpoint_url": s3_endpoint, "anon": True})
    assert _variables(ds) == _variables(nczarr.read(EXAMPLE))


def test_anonymous_access_to_a_private_bucket_is_denied(s3_store: str, s3_endpoint: str) -> None:
    from nczarr.errors import StoragePermissionError

    with pytest.raises(StoragePermissionError):
        nczarr.read(s3_store, storage_options={"endpoint_url": s3_endpoint, "anon": True})


def test_any_s3fs_option_passes_through(s3_store: str, s3_endpoint: str) -> None:
    """Options nczarr knows nothing about reach s3fs/botocore unchanged."""
    options = {
        "endpoint_url": s3_endpoint,
        "config_kwargs": {"user_agent_extra": "nczarr-passthrough"},
        "client_kwargs": {"region_name": "eu-west-3"},
    }
    with nczarr.open_map(s3_store, storage_options=options) as m:
        seen = _record(m)
        m[".zgroup"]
    assert "nczarr-passthrough" in seen[-1]["user-agent"]
    assert "/eu-west-3/s3/aws4_request" in seen[-1]["authorization"]


def test_region_option(s3_store: str, s3_endpoint: str) -> None:
    with nczarr.open_map(s3_store, endpoint_url=s3_endpoint, region="ap-south-1") as m:
        seen = _record(m)
        m[".zgroup"]
    assert "/ap-south-1/s3/aws4_request" in seen[-1]["authorization"]


def test_profile_option_selects_the_profiles_credentials(
    s3_store: str, s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[nczarr-test]\naws_access_key_id = PROFILEKEY\naws_secret_access_key = secret\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    options = {"endpoint_url": s3_endpoint, "profile": "nczarr-test"}
    with nczarr.open_map(s3_store, storage_options=options) as m:
        seen = _record(m)
        m[".zgroup"]
    assert "Credential=PROFILEKEY/" in seen[-1]["authorization"]


def test_keywords_and_storage_options_merge_and_conflicts_are_errors(
    s3_store: str, s3_endpoint: str
) -> None:
    agent = {"user_agent_extra": "nczarr-merged"}
    with nczarr.open_map(
        s3_store, storage_options={"endpoint_url": s3_endpoint}, config_kwargs=agent
    ) as m:
        seen = _record(m)
        m[".zgroup"]
        assert "nczarr-merged" in seen[-1]["user-agent"]
    with pytest.raises(TypeError, match="endpoint_url"):
        nczarr.open_map(
            s3_store, storage_options={"endpoint_url": s3_endpoint}, endpoint_url=s3_endpoint
        )
    with pytest.raises(TypeError, match="mapping"):
        nczarr.open_map(s3_store, storage_options=["endpoint_url"])


# ------------------------------------------------------------------ every entry point
def test_every_entry_point_takes_storage_options(
    s3_store: str, s3_endpoint: str, s3_bucket: str, tmp_path: Path
) -> None:
    so = {"endpoint_url": s3_endpoint}
    bad = {"endpoint_url": NOWHERE, **FAST_FAIL}
    assert nczarr.detect(s3_store, storage_options=so).zarr_format == 2
    with pytest.raises(StorageError):
        nczarr.detect(s3_store, storage_options=bad)
    assert "v" in nczarr.read(s3_store, storage_options=so).root.variables
    with nczarr.view(s3_store, mode="nczarr", storage_options=so) as v:
        assert "v/.zarray" in v
    with pytest.raises(StorageError):
        nczarr.view(s3_store, storage_options=bad)
    group = nczarr.open_zarr(s3_store, storage_options=so)
    assert group["v"].shape == (3, 6)
    # convert: one set of options per side
    local = tmp_path / "local.zarr"
    report = nczarr.convert(s3_store, local, mode="zarr", source_options=so)
    assert report.chunks_copied > 0
    with pytest.raises(StorageError):
        nczarr.convert(s3_store, tmp_path / "x.zarr", mode="zarr", source_options=bad)
    back = f"s3://{s3_bucket}/back"
    nczarr.convert(local, back, mode="nczarr", target_options=so)
    assert nczarr.detect(back, storage_options=so).format == "nczarr"
    with pytest.raises(StorageError):
        nczarr.convert(local, f"s3://{s3_bucket}/y", target_options=bad)
    # migrate in place on S3
    report = nczarr.migrate(back, to="zarr", storage_options=so)
    assert nczarr.detect(back, storage_options=so).format == "zarr"
    with pytest.raises(StorageError):
        nczarr.migrate(back, storage_options=bad)


def test_a_map_is_accepted_wherever_a_url_is(tmp_path: Path) -> None:
    src = nczarr.open_map(EXAMPLE)
    assert nczarr.detect(src).format == "nczarr"
    assert "v" in nczarr.read(src).root.variables
    assert "v/.zarray" in nczarr.view(src)
    assert nczarr.open_zarr(nczarr.view(src))["v"].shape == (3, 6)
    dst = nczarr.MemoryMap(mode="w")
    nczarr.convert(src, dst, mode="zarr", zarr_format=3)
    assert json.loads(dst["zarr.json"])["node_type"] == "group"
    copy = tmp_path / "copy.zarr"
    nczarr.convert(src, copy, mode="nczarr")
    with nczarr.open_map(copy, mode="r+") as m:
        assert nczarr.migrate(m, to="zarr").target_format == "zarr"
    for call in (
        lambda: nczarr.read(src, storage_options={"anon": True}),
        lambda: nczarr.detect(src, storage_options={"anon": True}),
        lambda: nczarr.view(src, storage_options={"anon": True}),
        lambda: nczarr.open_zarr(src, storage_options={"anon": True}),
        lambda: nczarr.convert(src, tmp_path / "z", source_options={"anon": True}),
        lambda: nczarr.open_map(src, storage_options={"anon": True}),
    ):
        with pytest.raises(TypeError, match="anon"):
            call()


def test_local_stores_refuse_options(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="storage options"):
        nczarr.read(tmp_path, storage_options={"anon": True})


# ------------------------------------------------------------------ chained URLs
def test_zip_on_s3_opens_read_only(public_bucket: str, s3_endpoint: str) -> None:
    url = f"zip::s3://{public_bucket}/archive/netcdf4101.zip"
    so = {"endpoint_url": s3_endpoint}
    want = nczarr.read(EXAMPLE)
    assert _variables(nczarr.read(url, storage_options=so)) == _variables(want)
    assert nczarr.detect(url, storage_options=so).layout == nczarr.detect(EXAMPLE).layout
    with nczarr.open_map(url, storage_options=so) as m:
        assert m.read_only and m.url == url
        assert sorted(m.search("")) == sorted(nczarr.open_map(EXAMPLE).search(""))
        assert m["v/.zarray"] == nczarr.open_map(EXAMPLE)["v/.zarray"]
    with pytest.raises(InvalidModeError, match="read-only"):
        nczarr.open_map(url, mode="a", storage_options=so)
    anon = nczarr.read(url, storage_options={**so, "anon": True})
    assert _variables(anon) == _variables(want)
    with pytest.raises(StorageError, match=r"zip::s3://.*EndpointConnectionError"):
        nczarr.read(url, storage_options={"endpoint_url": NOWHERE, **FAST_FAIL})


def test_zip_in_fsspec_memory_converts_like_the_local_zip(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/nczarr-test/legacy.zip", LEGACY.read_bytes())
    try:
        url = "zip::memory://nczarr-test/legacy.zip"
        remote = tmp_path / "remote.zarr"
        local = tmp_path / "local.zarr"
        nczarr.convert(url, remote, mode="zarr")
        nczarr.convert(LEGACY, local, mode="zarr")
        a = xr.open_zarr(remote, consolidated=False).load()
        b = xr.open_zarr(local, consolidated=False).load()
        xr.testing.assert_identical(a, b)
        group = nczarr.open_zarr(nczarr.view(url))
        assert set(group.array_keys()) == set(zarr.open_group(local, mode="r").array_keys())
        with pytest.raises(InvalidModeError, match="read-only"):
            nczarr.convert(local, url, mode="nczarr")
        with pytest.raises(StorageNotFoundError):
            nczarr.open_map("zip::memory://nczarr-test/missing.zip")
    finally:
        fs.rm("/nczarr-test", recursive=True)


def test_chained_urls_other_than_zip_are_refused() -> None:
    with pytest.raises(InvalidURLError, match="only zip::"):
        nczarr.open_map("simplecache::s3://bucket/x.zip")
    with pytest.raises(InvalidURLError, match="more than two"):
        nczarr.open_map("zip::zip::memory://x.zip")


def test_chained_map_pickles(tmp_path: Path) -> None:
    import pickle

    fs = fsspec.filesystem("memory")
    fs.pipe("/nczarr-pickle/x.zip", EXAMPLE.read_bytes())
    try:
        with nczarr.open_map("zip::memory://nczarr-pickle/x.zip") as m:
            copy = pickle.loads(pickle.dumps(m))
            assert copy == m and copy["v/.zarray"] == m["v/.zarray"]
            copy.close()
    finally:
        fs.rm("/nczarr-pickle", recursive=True)


# ------------------------------------------------------------------ the command line
def test_parse_storage_option_values() -> None:
    assert parse_storage_option("anon=true") == ("anon", True)
    assert parse_storage_option("anon=false") == ("anon", False)
    assert parse_storage_option("max_concurrency=4") == ("max_concurrency", 4)
    assert parse_storage_option("x=1.5") == ("x", 1.5)
    assert parse_storage_option('client_kwargs={"region_name": "eu-west-1"}') == (
        "client_kwargs",
        {"region_name": "eu-west-1"},
    )
    assert parse_storage_option("endpoint_url=http://h:9000") == ("endpoint_url", "http://h:9000")
    assert parse_storage_option("profile=dev") == ("profile", "dev")


def test_cli_storage_options_apply_to_remote_locations(
    s3_store: str, s3_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opt = ["--storage-option", f"endpoint_url={s3_endpoint}"]
    assert main(["info", s3_store, *opt]) == 0
    assert "zarr" in capsys.readouterr().out
    assert main(["ls", s3_store, *opt]) == 0
    assert "v" in capsys.readouterr().out.split()
    assert main(["dump", "-h", s3_store, *opt]) == 0
    assert "variables:" in capsys.readouterr().out
    # convert: the remote source gets the options, the local target none
    dst = tmp_path / "out.zarr"
    assert main(["convert", s3_store, str(dst), "--mode", "zarr", "--zarr-format", "3", *opt]) == 0
    capsys.readouterr()
    assert (dst / "zarr.json").exists()
    # a wrong endpoint: a one-line error, exit 1
    bad = ["--storage-option", f"endpoint_url={NOWHERE}", "--storage-option"]
    bad.append('config_kwargs={"retries": {"max_attempts": 1}}')
    assert main(["info", s3_store, *bad]) == 1
    assert "127.0.0.1:9" in capsys.readouterr().err
    # options for local locations only: a usage error
    with pytest.raises(SystemExit) as exc:
        main(["info", str(dst), "--anon"])
    assert exc.value.code == 2
    assert "local" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["info", s3_store, "--storage-option", "novalue"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["info", s3_store, "--storage-option", "a=1", "--storage-option", "a=2"])
    assert exc.value.code == 2


def test_cli_anon_reads_a_public_bucket(
    public_bucket: str, s3_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"s3://{public_bucket}/ds"
    assert main(["info", url, "--anon", "--storage-option", f"endpoint_url={s3_endpoint}"]) == 0
    assert "nczarr" in capsys.readouterr().out
    zipped = f"zip::s3://{public_bucket}/archive/netcdf4101.zip"
    endpoint = f"endpoint_url={s3_endpoint}"
    assert main(["dump", "-h", zipped, "--anon", "--storage-option", endpoint]) == 0
    out = capsys.readouterr().out
    assert out.startswith("netcdf netcdf4101 {")


def test_cli_migrate_on_s3(
    s3_endpoint: str, s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"s3://{s3_bucket}/legacy"
    nczarr.convert(LEGACY, url, mode="nczarr", target_options={"endpoint_url": s3_endpoint})
    opt = ["--storage-option", f"endpoint_url={s3_endpoint}"]
    assert main(["migrate", url, "--to", "zarr", *opt]) == 0
    capsys.readouterr()
    assert nczarr.detect(url, storage_options={"endpoint_url": s3_endpoint}).format == "zarr"


def test_open_zarr_translates_an_open_netcdf_map_and_leaves_it_open() -> None:
    with nczarr.open_map(EXAMPLE) as m:
        group = nczarr.open_zarr(m)
        assert group["c"].dtype.kind == "S"  # netcdf-c's ">S1" char array, translated
        assert not m.closed
        assert m["v/.zarray"]
