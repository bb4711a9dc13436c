"""open_map: the backend each URL form selects, with real directories, zips, moto S3, fsspec."""

from __future__ import annotations

import json
import uuid
import zipfile
from pathlib import Path

import pytest

from nczarr.errors import (
    InvalidModeError,
    InvalidURLError,
    ReadOnlyError,
    StorageError,
    StorageNotFoundError,
)
from nczarr.maps.base import ZMap
from nczarr.maps.memory import MemoryMap
from nczarr.maps.open import ZIP_MAGIC, open_map, probe_local
from nczarr.maps.url import parse_url

ZGROUP = json.dumps({"zarr_format": 2}).encode()


def _zip_members(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return sorted(i.filename for i in zf.infolist() if not i.is_dir())


# ------------------------------------------------------------------ given maps
def test_an_open_map_is_returned_as_is() -> None:
    m = MemoryMap()
    assert open_map(m) is m


def test_an_open_map_refuses_mode_and_options() -> None:
    m = MemoryMap()
    with pytest.raises(TypeError, match="returned as it is, so mode and storage options"):
        open_map(m, "w")
    with pytest.raises(TypeError, match="returned as it is"):
        open_map(m, anon=True)


def test_invalid_mode_is_named() -> None:
    with pytest.raises(InvalidModeError, match="invalid mode 'x'"):
        open_map("/tmp/never-created", "x")


def test_invalid_url_propagates() -> None:
    with pytest.raises(InvalidURLError, match="unknown mode word 'zar'"):
        open_map("file:///tmp/x#mode=zar")


# ------------------------------------------------------------------ directories
@pytest.mark.parametrize(
    "form",
    ["plain", "pathlike", "file_url", "file_url_localhost", "nczarr_url", "relative"],
)
def test_directory_forms_open_a_file_map(tmp_path: Path, monkeypatch, form: str) -> None:
    from nczarr.maps.file import FileMap

    target = tmp_path / "ds.file"
    monkeypatch.chdir(tmp_path)
    location = {
        "plain": str(target),
        "pathlike": target,
        "file_url": f"file://{target}#mode=nczarr,file",
        "file_url_localhost": f"file://localhost{target}#mode=zarr,file",
        "nczarr_url": parse_url(str(target)),
        "relative": "ds.file",
    }[form]
    with open_map(location, "w") as m:
        assert isinstance(m, FileMap)
        m[".zgroup"] = ZGROUP
        m["v/0.0"] = b"\x01\x02"
    assert (target / ".zgroup").read_bytes() == ZGROUP
    assert (target / "v" / "0.0").read_bytes() == b"\x01\x02"
    with open_map(location) as m:
        assert m.read_only
        assert m.search() == [".zgroup", "v"]


def test_file_mode_word_keeps_a_zip_suffix_a_directory(tmp_path: Path) -> None:
    from nczarr.maps.file import FileMap

    target = tmp_path / "odd.zip"
    with open_map(f"file://{target}#mode=nczarr,file", "w") as m:
        assert isinstance(m, FileMap)
        m["a"] = b"1"
    assert (target / "a").read_bytes() == b"1"


def test_missing_directory_read_only_is_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(StorageNotFoundError, match="nope"):
        open_map(str(missing))
    assert not missing.exists()


@pytest.mark.parametrize("content", [b"just text\n", b""])
def test_a_regular_file_that_is_not_zip_is_refused(tmp_path: Path, content: bytes) -> None:
    target = tmp_path / "notes.txt"
    target.write_bytes(content)
    with pytest.raises(StorageError) as info:
        open_map(str(target), "a")
    assert str(info.value) == (
        f"cannot open {str(target)!r}: it is a regular file, neither a directory nor a zip archive"
    )
    assert target.read_bytes() == content


def test_a_directory_map_takes_no_options(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"takes no storage options, got \['anon'\]"):
        open_map(str(tmp_path / "d"), "w", anon=True)


def test_probe_local(tmp_path: Path) -> None:
    (tmp_path / "z").write_bytes(ZIP_MAGIC[0] + b"rest")
    (tmp_path / "e").write_bytes(b"")
    (tmp_path / "t").write_bytes(b"PK\x01\x02")
    (tmp_path / "empty.zip").write_bytes(ZIP_MAGIC[1] + b"\x00" * 18)
    assert probe_local(str(tmp_path)) == "directory"
    assert probe_local(str(tmp_path / "z")) == "zip"
    assert probe_local(str(tmp_path / "empty.zip")) == "zip"
    assert probe_local(str(tmp_path / "e")) == "empty"
    assert probe_local(str(tmp_path / "t")) == "other"
    assert probe_local(str(tmp_path / "missing")) == "missing"
    assert probe_local(str(tmp_path / "z" / "below")) == "missing"


# ------------------------------------------------------------------ zip archives
@pytest.fixture
def zip_map_class() -> type:
    """The ZipMap class."""
    from nczarr.maps.zip import ZipMap

    return ZipMap


@pytest.mark.parametrize(
    ("form", "layout_prefix"),
    [
        ("{path}", ""),
        ("file://{path}", ""),
        ("file://{path}#mode=zip", ""),
        ("file://{path}#mode=nczarr,zip", "ds/"),
        ("file://{path}#mode=zarr,zip", "ds/"),
    ],
)
def test_new_zip_archives_and_their_layout(
    tmp_path: Path, zip_map_class, form: str, layout_prefix: str
) -> None:
    target = tmp_path / "ds.zip"
    with open_map(form.format(path=target), "w") as m:
        assert isinstance(m, zip_map_class)
        m[".zgroup"] = ZGROUP
        m["v/0"] = b"abc"
    assert _zip_members(target) == [f"{layout_prefix}.zgroup", f"{layout_prefix}v/0"]
    with open_map(form.format(path=target)) as m:
        assert m[".zgroup"] == ZGROUP
        assert m.search("") == [".zgroup", "v"]


def test_zip_mode_word_without_suffix(tmp_path: Path, zip_map_class) -> None:
    target = tmp_path / "ds.anyext"
    with open_map(f"file://{target}#mode=nczarr,zip", "w") as m:
        assert isinstance(m, zip_map_class)
        m["a"] = b"1"
    assert zipfile.is_zipfile(target)
    assert _zip_members(target) == ["ds/a"]


@pytest.mark.parametrize(
    ("name", "children"),
    [("ref_oldkeys.file.zip", ["v"]), ("deflate64_zarr.zip", ["a"])],
)
def test_existing_archives_auto_detect_their_layout(
    copy_fixture, zip_map_class, name: str, children: list[str]
) -> None:
    path = copy_fixture(name)
    with open_map(f"file://{path}#mode=nczarr,zip") as m:
        assert isinstance(m, zip_map_class)
        assert m.search("") == [".zattrs", ".zgroup", *children]
        assert json.loads(m[".zgroup"])["zarr_format"] == 2


def test_existing_zip_without_suffix_is_found_by_magic(copy_fixture, zip_map_class) -> None:
    source = copy_fixture("deflate64_zarr.zip")
    target = source.with_name("store.data")
    source.rename(target)
    for location in (str(target), f"file://{target}#mode=zarr"):
        with open_map(location) as m:
            assert isinstance(m, zip_map_class)
            assert m.search("") == [".zattrs", ".zgroup", "a"]


def test_layout_option_overrides_inference(tmp_path: Path, zip_map_class) -> None:
    target = tmp_path / "ds.zip"
    with open_map(f"file://{target}#mode=nczarr,zip", "w", layout="root") as m:
        m["a"] = b"1"
    assert _zip_members(target) == ["a"]


def test_zip_url_naming_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d.zip").mkdir()
    with pytest.raises(StorageError) as info:
        open_map(str(tmp_path / "d.zip"), "a")
    assert str(info.value) == (
        f"cannot open {str(tmp_path / 'd.zip')!r} as a zip archive: it is a directory"
    )


def test_zip_url_naming_another_file_is_refused_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "fake.zip"
    target.write_bytes(b"not a zip")
    with pytest.raises(StorageError, match=r"is not a zip file \(no PK signature\)"):
        open_map(str(target), "w")
    assert target.read_bytes() == b"not a zip"


# ------------------------------------------------------------------ S3 (moto)
def _objects(s3_client, bucket: str) -> dict[str, bytes]:
    listing = s3_client.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {
        o["Key"]: s3_client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listing
    }


def test_s3_endpoint_url_in_the_url(s3_endpoint: str, s3_bucket: str, s3_client) -> None:
    from nczarr.maps.s3 import S3Map

    url = f"{s3_endpoint}/{s3_bucket}/root/ds#mode=nczarr,s3"
    with open_map(url, "w") as m:
        assert isinstance(m, S3Map)
        assert (m.bucket, m.root) == (s3_bucket, "root/ds")
        m[".zgroup"] = ZGROUP
        m["v/0.0"] = b"xyz"
    assert _objects(s3_client, s3_bucket) == {"root/ds/.zgroup": ZGROUP, "root/ds/v/0.0": b"xyz"}
    with open_map(url) as m:
        assert m.search() == [".zgroup", "v"]


def test_s3_scheme_with_endpoint_option(s3_endpoint: str, s3_bucket: str, s3_client) -> None:
    from nczarr.maps.s3 import S3Map

    with open_map(f"s3://{s3_bucket}/k#mode=zarr", "w", endpoint_url=s3_endpoint) as m:
        assert isinstance(m, S3Map)
        m["a"] = b"1"
    assert _objects(s3_client, s3_bucket) == {"k/a": b"1"}
    with open_map(parse_url(f"s3://{s3_bucket}"), endpoint_url=s3_endpoint) as m:
        assert m["k/a"] == b"1"


def test_s3_options_override_the_url(s3_endpoint: str, s3_bucket: str, s3_client) -> None:
    # the URL names an endpoint that refuses connections; the option wins
    url = f"http://127.0.0.1:9/{s3_bucket}/over#mode=s3&aws.region=eu-west-1"
    with open_map(url, "w", endpoint_url=s3_endpoint, region="us-east-1") as m:
        m["a"] = b"1"
    assert _objects(s3_client, s3_bucket) == {"over/a": b"1"}


def test_s3_profile_from_the_url(
    s3_endpoint: str, s3_bucket: str, s3_client, tmp_path: Path, monkeypatch
) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[nczarr-test]\naws_access_key_id = testing\naws_secret_access_key = testing\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    url = f"{s3_endpoint}/{s3_bucket}/p#mode=s3&aws.profile=nczarr-test"
    with open_map(url, "w") as m:
        m["a"] = b"1"
    assert _objects(s3_client, s3_bucket) == {"p/a": b"1"}
    missing = f"{s3_endpoint}/{s3_bucket}/p#mode=s3&aws.profile=no-such-profile-{uuid.uuid4().hex}"
    with pytest.raises(StorageError, match=r"ProfileNotFound.*no-such-profile"):
        open_map(missing, "r")


# ------------------------------------------------------------------ fsspec
@pytest.fixture
def memory_root():
    import fsspec

    root = f"/nczarr-open-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def test_memory_protocol_opens_an_fsspec_map(memory_root: str) -> None:
    import fsspec

    from nczarr.maps.fsspec import FsspecMap

    url = f"memory://{memory_root}/ds#mode=zarr"
    with open_map(url, "w") as m:
        assert isinstance(m, FsspecMap)
        m[".zgroup"] = ZGROUP
        m["v/0"] = b"1"
    fs = fsspec.filesystem("memory")
    assert fs.cat(f"{memory_root}/ds/v/0") == b"1"
    with open_map(url) as m:
        assert isinstance(m, ZMap)
        assert m.search() == [".zgroup", "v"]


def test_fsspec_options_reach_the_filesystem(tmp_path: Path) -> None:
    # fsspec's "local" protocol takes auto_mkdir; an unknown option is the filesystem's error
    with open_map(f"local://{tmp_path}/d", "w", auto_mkdir=True) as m:
        m["a/b"] = b"1"
    assert (tmp_path / "d" / "a" / "b").read_bytes() == b"1"


def test_unknown_protocol_is_an_invalid_url() -> None:
    with pytest.raises(InvalidURLError) as info:
        open_map("zar://x/y#mode=zarr")
    assert str(info.value) == (
        "unknown protocol 'zar' in 'zar://x/y#mode=nczarr,zarr': not an fsspec protocol"
    )


def test_http_is_read_only() -> None:
    with pytest.raises(ReadOnlyError, match="read-only"):
        open_map("http://127.0.0.1:9/ds.zarr", "w")


def test_a_source_that_is_no_store_says_what_it_may_be(tmp_path: Path) -> None:
    """A source is a directory, a zip archive or a netCDF file: a missing one is not
    called a missing directory, a text file is said to be neither zip nor netCDF."""
    missing = tmp_path / "gone.nc"
    with pytest.raises(StorageNotFoundError) as info:
        open_map(str(missing), "r")
    assert str(info.value) == f"no such file or directory: {str(missing)!r}"
    text = tmp_path / "notes.txt"
    text.write_bytes(b"just text\n")
    with pytest.raises(StorageError) as refused:
        open_map(str(text), "r")
    assert str(refused.value) == (
        f"cannot open {str(text)!r}: a regular file that is neither a zip archive nor a netCDF file"
    )
