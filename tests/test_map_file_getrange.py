"""``FileMap.getrange``: byte ranges of a directory map's files (issue 17).

A sharded read makes two range reads per chunk, so the plain case is a file opened
without following a link, relative to its verified directory, and read with one
``pread``; these tests pin down that it still refuses what the checked path refuses
(a leaf or a directory swapped for a link out of the root) and reads ranges exactly.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nczarr.errors import StoragePermissionError
from nczarr.maps import fileread
from nczarr.maps.file import FileMap

DATA = bytes(range(256)) * 40


@pytest.fixture(params=["pread", "lseek"])
def m(request, tmp_path, monkeypatch) -> FileMap:
    """A map holding ``g/c/0/0`` (``DATA``); ``lseek``: a platform without ``pread``."""
    if request.param == "lseek":
        monkeypatch.delattr(os, "pread")
    fmap = FileMap(tmp_path / "r.file", mode="w")
    fmap["g/c/0/0"] = DATA
    return fmap


@pytest.mark.parametrize(
    ("start", "length"),
    [(0, 16), (10_000, 240), (10_200, 100), (-20, None), (-20, 5), (5, 0), (20_000, 4), (0, None)],
)
def test_ranges_are_slices_of_the_file(m: FileMap, start: int, length: int | None) -> None:
    stop = None if length is None else start + length
    assert m.getrange("g/c/0/0", start, length) == DATA[slice(start, stop)]
    with m.session():  # directories held open: the same bytes
        assert m.getrange("g/c/0/0", start, length) == DATA[slice(start, stop)]


def test_a_short_read_is_completed(m: FileMap, monkeypatch) -> None:
    """``pread``/``read`` may return fewer bytes than asked: the rest is read."""
    real_pread, real_read = getattr(os, "pread", None), os.read
    if real_pread is not None:
        monkeypatch.setattr(os, "pread", lambda fd, n, off: real_pread(fd, min(n, 7), off))
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 7)))
    assert m.getrange("g/c/0/0", 100, 50) == DATA[100:150]


def test_missing_key_and_directory(m: FileMap) -> None:
    with pytest.raises(KeyError):
        m.getrange("g/c/0/1", 0, 4)
    with pytest.raises(KeyError):
        m.getrange("g/c/0", 0, 4)  # a directory is a prefix, not a key
    with pytest.raises(KeyError):
        m.getrange("nope/0", 0, 4)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_leaf_swapped_for_a_link_out_of_the_root_is_refused(m: FileMap, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"not yours")
    assert m.getrange("g/c/0/0", 0, 3) == DATA[:3]  # its directory is known now
    leaf = tmp_path / "r.file" / "g" / "c" / "0" / "0"
    leaf.unlink()
    leaf.symlink_to(secret)
    with pytest.raises(StoragePermissionError, match="outside the map's root"):
        m.getrange("g/c/0/0", 0, 3)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_directory_swapped_for_a_link_out_of_the_root_is_refused(
    m: FileMap, tmp_path: Path
) -> None:
    outside = tmp_path / "outside" / "0"
    outside.mkdir(parents=True)
    (outside / "0").write_bytes(b"not yours")
    assert m.getrange("g/c/0/0", 0, 3) == DATA[:3]
    shutil.rmtree(tmp_path / "r.file" / "g" / "c")
    (tmp_path / "r.file" / "g" / "c").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(StoragePermissionError, match="outside the map's root"):
        m.getrange("g/c/0/0", 0, 3)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_a_link_inside_the_root_is_read_through(m: FileMap, tmp_path: Path) -> None:
    (tmp_path / "r.file" / "g" / "c" / "0" / "1").symlink_to("0")
    assert m.getrange("g/c/0/1", 4, 4) == DATA[4:8]


def test_plain_case_needs_the_platform_flags(m: FileMap, monkeypatch) -> None:
    """Without ``O_NOFOLLOW``/``O_NONBLOCK`` every range read takes the checked path."""
    monkeypatch.setattr(fileread, "_PLAIN_FLAGS", 0)
    assert m.getrange("g/c/0/0", 1, 2) == DATA[1:3]
