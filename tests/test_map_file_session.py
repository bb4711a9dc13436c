"""A directory map's session: directories verified once and held open for a copy.

``FileMap.session()`` (entered by ``copy_chunks`` for both maps) opens and verifies
each directory once and opens every file relative to it, so a chunk copy costs the
system calls ``cp`` makes. These tests show the confinement guarantees hold inside a
session on every path-checking strategy, and that nothing leaks when it ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from nczarr.conversion.apply import copy_chunks
from nczarr.errors import StorageError, StoragePermissionError
from nczarr.maps import pins
from nczarr.maps.file import FileMap
from nczarr.maps.memory import MemoryMap


def _source(root: Path, arrays: int = 2, chunks: int = 30) -> FileMap:
    m = FileMap(root, mode="w")
    for a in range(arrays):
        m[f"g/v{a}/.zarray"] = b"{}"
        for i in range(chunks):
            m[f"g/v{a}/{i}"] = f"{a}.{i}".encode() * 50
    return m


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _chunks(m: FileMap) -> list[str]:
    return sorted(k for k in m if not k.rsplit("/", 1)[-1].startswith("."))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_each_directory_is_opened_once_per_session(tmp_path, monkeypatch) -> None:
    src = _source(tmp_path / "s")
    dst = FileMap(tmp_path / "d", mode="w")
    dst["g/v0/.zarray"] = dst["g/v1/.zarray"] = b"{}"
    by_path: list[str] = []
    real_open = os.open

    def counting(path, flags, mode=0o777, *, dir_fd=None):
        if dir_fd is None:
            by_path.append(os.fspath(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    keys = _chunks(src)
    before = _open_fds()
    monkeypatch.setattr(os, "open", counting)
    monkeypatch.setattr(os, "supports_dir_fd", os.supports_dir_fd | {counting})
    stats = copy_chunks(src, dst, keys)
    monkeypatch.undo()
    assert stats.copied == len(keys) == 60
    assert all(dst[k] == src[k] for k in keys)
    # Four directories (two per map), each opened by path once; no file by path.
    assert sorted(by_path) == sorted(
        str(tmp_path / side / "g" / v) for side in ("s", "d") for v in ("v0", "v1")
    )
    assert _open_fds() == before  # every held directory closed when the session ended


def test_a_directory_swapped_for_a_link_during_a_session_is_not_followed(
    tmp_path, strategy
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "0").write_bytes(b"secret")
    src = _source(tmp_path / "s", arrays=1)
    dst = FileMap(tmp_path / "d", mode="w")
    with src.session(), dst.session():
        assert dst.copy_from(src, "g/v0/1", "g/v0/1", atomic=False) == 150
        assert src["g/v0/0"] == b"0.0" * 50
        moved = tmp_path / "moved"
        os.rename(tmp_path / "s" / "g" / "v0", moved)
        (tmp_path / "s" / "g" / "v0").symlink_to(outside, target_is_directory=True)
        shutil.rmtree(tmp_path / "d" / "g" / "v0")
        (tmp_path / "d" / "g" / "v0").symlink_to(outside, target_is_directory=True)
        for key in ("g/v0/0", "g/v0/2"):
            try:
                copied = dst.copy_from(src, key, key, atomic=False)
            except (StorageError, StoragePermissionError, KeyError):
                continue  # refused, or the held directory is gone: both keep out
            assert copied == 150  # read from the held (moved) directory, not the link
        with contextlib.suppress(StorageError, StoragePermissionError):
            dst["g/v0/new"] = b"x"
    assert sorted(p.name for p in outside.iterdir()) == ["0"]
    assert (outside / "0").read_bytes() == b"secret"
    # After the session every use is checked again: the link is refused.
    with pytest.raises(StoragePermissionError, match="outside the map's root"):
        src["g/v0/0"]
    with pytest.raises(StoragePermissionError):
        dst["g/v0/3"] = b"x"


def test_a_session_copy_works_with_every_strategy(tmp_path, strategy) -> None:
    src = _source(tmp_path / "s")
    (tmp_path / "s" / "alias").symlink_to(tmp_path / "s" / "g", target_is_directory=True)
    dst = FileMap(tmp_path / "d", mode="w")
    keys = [*_chunks(src)]
    stats = copy_chunks(src, dst, keys)
    assert stats.copied == len(keys) and {k: dst[k] for k in keys} == {k: src[k] for k in keys}
    assert sorted(dst) == keys
    assert src["alias/v0/3"] == src["g/v0/3"]


def test_deletes_and_rewrites_inside_a_session(tmp_path, strategy) -> None:
    m = FileMap(tmp_path / "m", mode="w")
    with m.session():
        m["a/b/c"] = b"1"
        del m["a/b/c"]  # a/b and a removed: their held handles are dropped
        assert not (tmp_path / "m" / "a").exists()
        m["a/b/c"] = b"2"
        m["a/b/d"] = b"3"
        assert m["a/b/c"] == b"2" and sorted(m) == ["a/b/c", "a/b/d"]
        m.clear()
        m["a/b/c"] = b"4"
    assert m["a/b/c"] == b"4" and sorted(m) == ["a/b/c"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_held_directories_are_bounded_and_shared_by_threads(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(pins, "MAX_PINNED", 4)
    src = _source(tmp_path / "s", arrays=12, chunks=8)
    keys = _chunks(src)
    before = _open_fds()
    peak = [0]
    dst = MemoryMap()
    real = dst._store

    def store(key: str, value: bytes) -> None:  # called from the copy threads
        peak[0] = max(peak[0], _open_fds())
        real(key, value)

    dst._store = store  # type: ignore[method-assign]
    with src.session():
        stats = copy_chunks(src, dst, keys, workers=8)  # threads read the source
    assert stats.copied == len(keys) and all(dst[k] == src[k] for k in keys)
    assert peak[0] - before <= 4 + 8 * 2 + 4  # held + per-thread files + slack
    assert _open_fds() == before
    assert threading.active_count() >= 1
