"""FileMap.copy_file and the local fast path of copy_chunks (kernel-side file copies)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from nczarr.conversion.apply import copy_chunks
from nczarr.errors import ObjectExistsError, ReadOnlyError
from nczarr.maps import kernelcopy
from nczarr.maps.file import TEMP_PREFIX, FileMap


def _maps(tmp_path: Path, items: dict[str, bytes]) -> tuple[FileMap, FileMap]:
    src = FileMap(tmp_path / "src", mode="w")
    for key, value in items.items():
        src[key] = value
    return src, FileMap(tmp_path / "dst", mode="w")


def _no_temp_files(root: Path) -> bool:
    return not any(p.name.startswith(TEMP_PREFIX) for p in root.rglob("*"))


@pytest.mark.parametrize("atomic", [True, False])
def test_copy_file_copies_bytes_and_returns_size(tmp_path, atomic):
    big = os.urandom(3 * 2**20 + 7)
    src, dst = _maps(tmp_path, {"v/0.0": big, "v/0.1": b"", "w/g/1": b"abc"})
    assert dst.copy_file(src, "v/0.0", atomic=atomic) == len(big)
    assert dst.copy_file(src, "/v/0.1", atomic=atomic) == 0
    assert dst.copy_file(src, "w/g/1", atomic=atomic) == 3
    assert dict(dst.items()) == {"v/0.0": big, "v/0.1": b"", "w/g/1": b"abc"}
    assert _no_temp_files(tmp_path / "dst")


def test_copy_file_replaces_existing_key(tmp_path):
    src, dst = _maps(tmp_path, {"v/0": b"new bytes"})
    dst["v/0"] = b"old, longer content"
    assert dst.copy_file(src, "v/0", atomic=False) == 9
    assert dst["v/0"] == b"new bytes"


def test_copy_file_missing_key_and_checks(tmp_path):
    src, dst = _maps(tmp_path, {"a": b"1", "b/c": b"2"})
    with pytest.raises(KeyError, match="'nope'"):
        dst.copy_file(src, "nope")
    dst["b"] = b"leaf"
    with pytest.raises(ObjectExistsError, match="'b' holds content"):
        dst.copy_file(src, "b/c", atomic=False)
    ro = FileMap(tmp_path / "dst", mode="r")
    with pytest.raises(ReadOnlyError, match="cannot write 'a'"):
        ro.copy_file(src, "a")
    assert "b/c" not in dst


@pytest.mark.parametrize("refused", [("copy_file_range",), ("copy_file_range", "sendfile")])
def test_copy_file_falls_back_when_the_kernel_refuses(tmp_path, monkeypatch, refused):
    data = os.urandom(100_000)
    src, dst = _maps(tmp_path, {"k": data})

    def refuse(*args):
        raise OSError(errno.EXDEV if "range" in refused[-1] else errno.EINVAL, "refused")

    for name in refused:
        monkeypatch.setattr(kernelcopy, f"_{name}", refuse)
    assert dst.copy_file(src, "k", atomic=False) == len(data)
    assert dst["k"] == data


def test_failed_in_place_copy_leaves_no_file(tmp_path, monkeypatch):
    src, dst = _maps(tmp_path, {"v/0": b"x" * 1000, "v/1": b"y"})
    dst.copy_file(src, "v/1", atomic=False)  # the directory is now known

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kernelcopy, "_copy_file_range", full)
    with pytest.raises(Exception, match="No space left on device"):
        dst.copy_file(src, "v/0", atomic=False)
    assert sorted(dst) == ["v/1"]
    assert _no_temp_files(tmp_path / "dst")


def test_copy_chunks_file_to_file_resume_recopies_short_chunk(tmp_path):
    items = {f"v/{i}": bytes([i]) * (100 + i) for i in range(20)}
    src, dst = _maps(tmp_path, items)
    dst["v/3"] = items["v/3"][:50]  # what a killed in-place copy leaves
    dst["v/4"] = items["v/4"]
    seen = []
    stats = copy_chunks(
        src, dst, sorted(items), workers=8, resume=True, progress=lambda d, t: seen.append(d)
    )
    assert (stats.copied, stats.skipped) == (19, 1)
    assert stats.bytes == sum(len(v) for v in items.values()) - len(items["v/4"])
    assert dict(dst.items()) == items
    assert seen == list(range(1, 21))


def test_copy_chunks_subclass_overriding_store_is_honoured(tmp_path):
    stored = []

    class Recording(FileMap):
        def _store(self, key, value):
            stored.append(key)
            super()._store(key, value)

    src, _ = _maps(tmp_path, {"a/0": b"0", "a/1": b"1"})
    dst = Recording(tmp_path / "rec", mode="w")
    copy_chunks(src, dst, ["a/0", "a/1"], workers=2)
    assert sorted(stored) == ["a/0", "a/1"]
    assert dict(dst.items()) == {"a/0": b"0", "a/1": b"1"}
