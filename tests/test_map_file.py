"""FileMap specifics: opening, atomic writes, pruning, symlinks, and interop with
zarr-python's LocalStore and netcdf-c (through netCDF4)."""

from __future__ import annotations

import errno
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from nczarr.errors import (
    InvalidKeyError,
    InvalidURLError,
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
    raise_os_error,
)
from nczarr.maps.file import TEMP_PREFIX, FileMap, local_path


def files_below(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def dirs_below(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir())


# ------------------------------------------------------------------------- opening
def test_constructor_accepts_paths_and_file_urls(tmp_path):
    root = tmp_path / "a b#c.file"
    with FileMap(root, mode="w") as m:
        m["k"] = b"v"
    url = root.as_uri()
    assert "%20" in url and "%23" in url
    forms = [FileMap(str(root)), FileMap(root), FileMap(url), FileMap("file://localhost" + url[7:])]
    assert all(f == forms[0] for f in forms)
    assert [f["k"] for f in forms] == [b"v"] * 4
    assert forms[0].url == url and forms[0].root == str(root)
    assert repr(forms[0]) == f"FileMap({url!r}, mode='r')"


def test_relative_paths_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with FileMap("rel.file", mode="w") as m:
        assert m.root == str(tmp_path / "rel.file")
        assert m.url == (tmp_path / "rel.file").as_uri()


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("file://otherhost/x", "not local"),
        ("file:///x/y#mode=nczarr,file", "no query or fragment"),
        ("file:///x/y?a=1", "no query or fragment"),
    ],
)
def test_bad_file_urls(url, match):
    with pytest.raises(InvalidURLError, match=match):
        FileMap(url, mode="a")
    with pytest.raises(InvalidURLError):
        local_path(url)


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_missing_root_for_read_modes(tmp_path, mode):
    root = tmp_path / "missing.file"
    with pytest.raises(StorageNotFoundError) as info:
        FileMap(root, mode=mode)
    assert str(root) in str(info.value) and isinstance(info.value, FileNotFoundError)
    assert not root.exists()


@pytest.mark.parametrize("mode", ["a", "w", "w-"])
def test_writable_modes_create_the_root(tmp_path, mode):
    root = tmp_path / "deep" / "new.file"
    FileMap(root, mode=mode).close()
    assert root.is_dir() and list(root.iterdir()) == []


def test_root_that_is_a_file(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_bytes(b"x")
    for mode in ["r", "a", "w", "w-"]:
        with pytest.raises(StorageError, match="not a directory"):
            FileMap(path, mode=mode)
    assert path.read_bytes() == b"x"


def test_mode_w_empties_an_existing_tree(tmp_path):
    root = tmp_path / "t.file"
    (root / "sub" / "empty").mkdir(parents=True)
    (root / "sub" / "f").write_bytes(b"1")
    (root / "stray").write_bytes(b"2")
    m = FileMap(root, mode="w")
    assert root.is_dir() and list(root.iterdir()) == [] and len(m) == 0


def test_mode_w_minus_refuses_a_non_empty_directory(tmp_path):
    root = tmp_path / "t.file"
    (root / "empty").mkdir(parents=True)
    with pytest.raises(ObjectExistsError, match="not empty") as info:
        FileMap(root, mode="w-")
    assert str(root) in str(info.value)
    (root / "empty").rmdir()
    FileMap(root, mode="w-").close()


# ------------------------------------------------------------------ writes on disk
def test_writes_are_atomic_and_leave_no_temp_files(tmp_path):
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["a/b/c"] = b"1" * 1000
    m["a/b/c"] = b"2"  # shorter rewrite: no stale tail
    m["a/d"] = b"3"
    assert files_below(root) == {"a/b/c": b"2", "a/d": b"3"}
    assert not [p for p in root.rglob("*") if p.name.startswith(TEMP_PREFIX)]


def test_temp_names_are_never_keys(tmp_path):
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["a/real"] = b"1"
    (root / "a" / (TEMP_PREFIX + "inflight")).write_bytes(b"partial")
    (root / (TEMP_PREFIX + "x")).write_bytes(b"partial")
    assert list(m) == ["a/real"] and m.search("") == ["a"] and m.search("a") == ["real"]
    with pytest.raises(InvalidKeyError, match=repr(TEMP_PREFIX + "y")):
        m[TEMP_PREFIX + "y"] = b"1"
    with pytest.raises(InvalidKeyError, match="reserved"):
        m["a/" + TEMP_PREFIX + "inflight"]


def test_delete_prunes_empty_directories_up_to_the_root(tmp_path):
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["a/b/c/d"] = b"1"
    m["a/x"] = b"2"
    del m["a/b/c/d"]
    assert dirs_below(root) == ["a"]
    del m["a/x"]
    assert root.is_dir() and dirs_below(root) == []
    m["top"] = b"1"
    del m["top"]
    assert root.is_dir()


def test_empty_directories_of_others_are_invisible(tmp_path):
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["g/.zgroup"] = b"{}"
    (root / "empty" / "deeper").mkdir(parents=True)
    (root / "g" / "hollow").mkdir()
    assert m.search("") == ["g"] and m.search("g") == [".zgroup"]
    assert m.search("empty") == [] and list(m) == ["g/.zgroup"] and len(m) == 1
    assert "empty" not in m
    with pytest.raises(KeyError):
        m["empty"]
    m["empty"] = b"now a key"  # an empty directory does not block a write
    assert m["empty"] == b"now a key" and (root / "empty").is_file()


def test_leaf_rule_is_checked_on_the_filesystem(tmp_path):
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["a/b"] = b"1"
    with pytest.raises(ObjectExistsError, match=r"'a'.*prefix of existing keys"):
        m["a"] = b"x"
    with pytest.raises(ObjectExistsError, match="'a/b' holds content"):
        m["a/b/c"] = b"x"
    assert files_below(root) == {"a/b": b"1"} and dirs_below(root) == ["a"]


def test_os_errors_are_not_keyerrors():
    denied = OSError(errno.EACCES, "Permission denied")
    with pytest.raises(StoragePermissionError, match="'k' in x"):
        raise_os_error(denied, "'k' in x")
    with pytest.raises(StorageError, match="No space"):
        raise_os_error(OSError(errno.ENOSPC, "No space left on device"), "'k'")
    with pytest.raises(InvalidKeyError, match="too long"):
        raise_os_error(OSError(errno.ENAMETOOLONG, "File name too long"), "'k'")


def test_segment_too_long_for_the_filesystem(tmp_path):
    m = FileMap(tmp_path / "t.file", mode="w")
    key = "a/" + "n" * 300
    with pytest.raises(InvalidKeyError, match="too long"):
        m[key] = b"1"
    with pytest.raises(KeyError):
        m["a/missing"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root bypasses file permissions")
def test_permission_denied_is_storage_permission_error(tmp_path):
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["locked/k"] = b"1"
    os.chmod(root / "locked", 0)
    try:
        with pytest.raises(StoragePermissionError, match="'locked/k'"):
            m["locked/k"]
        with pytest.raises(StoragePermissionError):
            m.search("locked")
    finally:
        os.chmod(root / "locked", 0o755)


# ------------------------------------------------------------------------ symlinks
def test_symlinks_out_of_the_root_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"do not read")
    (tmp_path / "lone").write_bytes(b"nor this")
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["g/k"] = b"1"
    (root / "out").symlink_to(outside)
    (root / "g" / "file").symlink_to(tmp_path / "lone")
    with pytest.raises(StoragePermissionError, match=r"'out/secret'.*outside") as info:
        m["out/secret"]
    assert str(root) in str(info.value)
    with pytest.raises(StoragePermissionError, match="'g/file'"):
        m["g/file"]
    with pytest.raises(StoragePermissionError, match="'out/new'"):
        m["out/new"] = b"escape"
    with pytest.raises(StoragePermissionError):
        del m["out/secret"]
    assert not (outside / "new").exists() and (outside / "secret").exists()
    assert list(m) == ["g/k"] and m.search("") == ["g"] and m.search("g") == ["k"]


def test_symlinks_inside_the_root_are_followed(tmp_path):
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["real/k"] = b"1"
    (root / "alias").symlink_to(root / "real")
    (root / "loop").mkdir()
    (root / "loop" / "back").symlink_to(root / "loop")  # a cycle, walked once
    assert m["alias/k"] == b"1"
    assert sorted(m) == ["alias/k", "real/k"] and m.search("") == ["alias", "real"]


# ---------------------------------------------------------------------- identity
def test_pickle_of_a_w_map_does_not_truncate(tmp_path):
    m = FileMap(tmp_path / "t.file", mode="w")
    m["k"] = b"v"
    copy = pickle.loads(pickle.dumps(m))
    assert copy.mode == "r+" and dict(copy) == {"k": b"v"} and copy.url == m.url


def test_ranges_read_only_the_bytes_asked(tmp_path):
    m = FileMap(tmp_path / "t.file", mode="w")
    m["big"] = bytes(range(256)) * 4096
    assert m.getrange("big", 1_000_000, 3) == bytes([1_000_000 % 256 + i for i in range(3)])
    assert m.getrange("big", -2) == b"\xfe\xff" and m.getsize("big") == 1_048_576
    m["dir/k"] = b"1"
    with pytest.raises(KeyError):
        m.getrange("dir", 0, 1)
    with pytest.raises(KeyError):
        m.getsize("dir")


# ------------------------------------------------------------------------ interop
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_reads_a_tree_written_by_zarr_local_store(tmp_path, zarr_format):
    import zarr

    root = tmp_path / f"z{zarr_format}.zarr"
    store = zarr.storage.LocalStore(root)
    group = zarr.open_group(store=store, mode="w", zarr_format=zarr_format)
    group.attrs["title"] = "interop"
    arr = group.create_array("sub/a", shape=(6, 4), chunks=(3, 2), dtype="int16")
    arr[:] = np.arange(24, dtype="int16").reshape(6, 4)
    m = FileMap(root)
    on_disk = files_below(root)
    assert sorted(m) == sorted(on_disk) and len(m) == len(on_disk)
    assert m.getitems(list(on_disk)) == on_disk
    meta = "zarr.json" if zarr_format == 3 else ".zgroup"
    assert meta in m.search("") and "sub" in m.search("")
    assert m.search("sub") == sorted({k.split("/")[1] for k in on_disk if k.startswith("sub/")})
    assert "a" in m.search("sub") and m.search("sub/a")
    chunk_key = "sub/a/c/1/1" if zarr_format == 3 else "sub/a/1.1"
    assert m[chunk_key] == (root / chunk_key).read_bytes()


def test_reads_a_dataset_written_by_netcdf_c(tmp_path):
    import netCDF4

    root = tmp_path / "nc.file"
    with netCDF4.Dataset(f"file://{root}#mode=nczarr,file", "w") as ds:
        ds.createDimension("x", 3)
        v = ds.createVariable("v", "i4", ("x",))
        v[:] = [1, 2, 3]
        g = ds.createGroup("grp")
        g.createVariable("s", "f8")
    m = FileMap(root.as_uri())
    on_disk = files_below(root)
    assert sorted(m) == sorted(on_disk)
    assert {".zgroup", ".zattrs", "v/.zarray", "grp/.zgroup"} <= set(m)
    assert m.search("") == sorted({k.split("/")[0] for k in on_disk})
    assert m["v/.zarray"] == (root / "v" / ".zarray").read_bytes()
