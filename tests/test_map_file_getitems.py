"""FileMap.getitems opens each directory once per run of keys, and answers exactly as
``m[k]`` would, key by key: missing keys and directories omitted, links out of the
root refused, links inside followed, reserved names refused."""

from __future__ import annotations

import contextlib

import pytest

from nczarr.errors import InvalidKeyError, StoragePermissionError
from nczarr.maps.file import TEMP_PREFIX, FileMap


def _one_by_one(m: FileMap, keys: list[str]) -> dict[str, bytes]:
    out = {}
    for key in keys:
        with contextlib.suppress(KeyError):
            out[key] = m[key]
    return out


def test_getitems_matches_single_reads_across_directories(tmp_path):
    m = FileMap(tmp_path / "t.file", mode="w")
    for key in ("a/0.0", "a/0.1", "b/c/0", "b/c/1", "top", "a/deep/x"):
        m[key] = key.encode()
    (tmp_path / "t.file" / "alias").symlink_to(tmp_path / "t.file" / "a")
    keys = [
        "a/0.0", "a/0.1", "a/9.9",  # a run in one directory, one missing
        "b/c/1", "a/0.0",  # back to a directory seen before
        "nodir/0", "nodir/1",  # a missing directory
        "a/deep",  # a directory is not a key
        "top", "/a/0.1", "alias/0.1",  # the root, a leading slash, a link inside
    ]  # fmt: skip
    got = m.getitems(keys)
    assert got == _one_by_one(m, keys)
    assert got["alias/0.1"] == b"a/0.1" and "a/deep" not in got and "nodir/0" not in got


def test_getitems_refuses_links_out_of_the_root_and_reserved_names(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"do not read")
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m["g/k"] = b"1"
    (root / "out").symlink_to(outside)
    (root / "g" / "file").symlink_to(outside / "secret")
    with pytest.raises(StoragePermissionError, match="'out/secret'"):
        m.getitems(["g/k", "out/secret"])
    with pytest.raises(StoragePermissionError, match="'g/file'"):
        m.getitems(["g/k", "g/file"])  # second key of a run in one directory
    with pytest.raises(InvalidKeyError):
        m.getitems(["g/k", f"g/{TEMP_PREFIX}x"])
