"""``FileMap.copy_many``: a chunk copier's batch of kernel copies between directories.

Inside a session of both maps, the held directories are looked up once per run of keys
in one directory instead of once per key; every file is still opened relative to a
verified directory with the same checks, and anything that is not the plain case takes
``copy_from``'s checked path. These tests show the results and the refusals are those of
``copy_from`` key by key, and that the per-key directory lookups are gone.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from pathlib import Path

import pytest

from nczarr.conversion.apply import copy_chunks
from nczarr.errors import (
    InvalidKeyError,
    NCZarrWarning,
    ReadOnlyError,
    StorageError,
    StoragePermissionError,
)
from nczarr.maps.base import NOT_SUPPORTED
from nczarr.maps.file import TEMP_PREFIX, FileMap
from nczarr.maps.memory import MemoryMap
from nczarr.maps.pins import PinnedDirs


def _source(root: Path, arrays: int = 2, chunks: int = 30) -> FileMap:
    m = FileMap(root, mode="w")
    for a in range(arrays):
        m[f"g/v{a}/.zarray"] = b"{}"
        for i in range(chunks):
            m[f"g/v{a}/{i}"] = f"{a}.{i}".encode() * 50
    return m


def test_copy_many_copies_like_copy_from_with_every_strategy(tmp_path, strategy) -> None:
    src = _source(tmp_path / "s")
    keys = [f"g/v{a}/{i}" for a in range(2) for i in range(30)] + ["g/v0/.zarray"]
    dst = FileMap(tmp_path / "d", mode="w")
    with src.session(), dst.session():
        got = list(dst.copy_many(src, keys))
    assert got == [(k, len(src[k])) for k in keys]
    assert {k: dst[k] for k in keys} == {k: src[k] for k in keys}


def test_copy_many_outside_a_session_and_from_other_maps(tmp_path) -> None:
    src = _source(tmp_path / "s", arrays=1, chunks=3)
    dst = FileMap(tmp_path / "d", mode="w")
    assert list(dst.copy_many(src, ["g/v0/0", "g/v0/2"])) == [("g/v0/0", 150), ("g/v0/2", 150)]
    assert dst["g/v0/2"] == src["g/v0/2"]
    other = MemoryMap({"k": b"v"})
    assert list(dst.copy_many(other, ["k"])) == [("k", NOT_SUPPORTED)]
    assert list(MemoryMap().copy_many(src, ["g/v0/0"])) == [("g/v0/0", NOT_SUPPORTED)]


def test_copy_many_refuses_what_copy_from_refuses(tmp_path, strategy) -> None:
    src = _source(tmp_path / "s", arrays=1, chunks=3)
    dst = FileMap(tmp_path / "d", mode="w")
    bad = {
        "g/v0/missing": KeyError,
        "g/v0/..": InvalidKeyError,
        f"g/v0/{TEMP_PREFIX}x": InvalidKeyError,
        "g/v0/a\\b": InvalidKeyError,
        "g/v0/" + "x" * 1100: InvalidKeyError,
    }
    with src.session(), dst.session():
        for key, error in bad.items():
            with pytest.raises(error):
                dst.copy_from(src, key, key, atomic=False)
            # after a good key, so that the directory is held: the batch's own path
            with pytest.raises(error):
                list(dst.copy_many(src, ["g/v0/0", key]))
    assert sorted(os.listdir(tmp_path / "d" / "g" / "v0")) == ["0"]
    ro = FileMap(tmp_path / "d", mode="r")
    with pytest.raises(ReadOnlyError), src.session(), ro.session():
        list(ro.copy_many(src, ["g/v0/1"]))


def test_a_directory_swapped_for_a_link_during_copy_many_is_not_followed(
    tmp_path, strategy
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "5").write_bytes(b"secret")
    src = _source(tmp_path / "s", arrays=1, chunks=10)
    dst = FileMap(tmp_path / "d", mode="w")

    def keys():
        yield "g/v0/0"
        yield "g/v0/1"
        # between two keys of one directory run: both directories become links out
        os.rename(tmp_path / "s" / "g" / "v0", tmp_path / "moved")
        (tmp_path / "s" / "g" / "v0").symlink_to(outside, target_is_directory=True)
        shutil.rmtree(tmp_path / "d" / "g" / "v0")
        (tmp_path / "d" / "g" / "v0").symlink_to(outside, target_is_directory=True)
        yield from (f"g/v0/{i}" for i in range(2, 10))

    copied = []
    with src.session(), dst.session():
        results = dst.copy_many(src, keys())
        while True:
            try:
                key, n = next(results)
            except StopIteration:
                break
            except (StorageError, StoragePermissionError, KeyError):
                break  # refused, or the held directory is gone: both keep out
            copied.append(key)
            assert n == len(f"0.{key[-1]}".encode()) * 50  # from the held (moved) directory
    assert copied[:2] == ["g/v0/0", "g/v0/1"]
    assert sorted(p.name for p in outside.iterdir()) == ["5"]
    assert (outside / "5").read_bytes() == b"secret"


def test_copy_chunks_looks_up_held_directories_once_per_directory(tmp_path, monkeypatch) -> None:
    src = _source(tmp_path / "s", arrays=2, chunks=40)
    dst = FileMap(tmp_path / "d", mode="w")
    keys = sorted(k for k in src if not k.endswith(".zarray"))
    lookups = [0]
    real_get = PinnedDirs.get

    def get(self, prefix):
        lookups[0] += 1
        return real_get(self, prefix)

    monkeypatch.setattr(PinnedDirs, "get", get)
    stats = copy_chunks(src, dst, keys)
    assert stats.copied == len(keys) == 80 and all(dst[k] == src[k] for k in keys)
    # a few per directory (the batch's and the first key's checked path), not two per
    # key as a copy_from per key makes
    assert lookups[0] < len(keys) / 2, lookups[0]


def _results(dst: FileMap, src: FileMap, key: str) -> object:
    """What copy_many yields for ``key`` after a good key held its directory, or the
    class of the error it raises."""
    try:
        return list(dst.copy_many(src, ["g/v0/0", key]))[1][1]
    except Exception as exc:  # compared below
        return type(exc)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_copy_many_not_a_regular_file_is_what_copy_from_says(tmp_path, strategy) -> None:
    """The kernel path asks no ``fstat`` before copying (``copy_file_range`` refuses
    anything but regular files): a FIFO, a directory or a link as a chunk still gets
    copy_from's answer, and leaves no file behind."""
    src = _source(tmp_path / "s", arrays=1, chunks=3)
    os.mkfifo(tmp_path / "s" / "g" / "v0" / "fifo")
    (tmp_path / "s" / "g" / "v0" / "subdir").mkdir()
    (tmp_path / "outside").write_bytes(b"secret")
    (tmp_path / "s" / "g" / "v0" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "s" / "g" / "v0" / "in").symlink_to(tmp_path / "s" / "g" / "v0" / "1")
    for key in ("g/v0/fifo", "g/v0/subdir", "g/v0/out", "g/v0/in"):
        expected_dst = FileMap(tmp_path / f"expected-{key[5:]}", mode="w")
        try:
            expected: object = expected_dst.copy_from(src, key, key, atomic=False)
        except Exception as exc:  # the oracle's answer, compared below
            expected = type(exc)
        dst = FileMap(tmp_path / f"d-{key[5:]}", mode="w")
        with src.session(), dst.session():
            assert _results(dst, src, key) == expected, key
        made = sorted(os.listdir(tmp_path / f"d-{key[5:]}" / "g" / "v0"))
        oracle = tmp_path / f"expected-{key[5:]}" / "g" / "v0"
        assert made == sorted({"0", *(os.listdir(oracle) if oracle.exists() else [])}), key
    assert (tmp_path / "outside").read_bytes() == b"secret"


@pytest.mark.parametrize("kernel", ["exdev", "absent"])
def test_copy_many_without_a_kernel_copy_copies_every_byte(tmp_path, monkeypatch, kernel) -> None:
    """copy_file_range failing (EXDEV: another file system on old kernels) or absent
    (macOS): the batch copies by the fallbacks, the same bytes."""
    src = _source(tmp_path / "s", arrays=1, chunks=5)
    if kernel == "absent":
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    else:

        def refuse(*args: object) -> int:
            raise OSError(errno.EXDEV, "cross-device")

        monkeypatch.setattr(os, "copy_file_range", refuse)
    dst = FileMap(tmp_path / "d", mode="w")
    keys = [f"g/v0/{i}" for i in range(5)]
    with src.session(), dst.session():
        assert list(dst.copy_many(src, keys)) == [(k, len(src[k])) for k in keys]
    assert {k: dst[k] for k in keys} == {k: src[k] for k in keys}


def test_copy_many_names_outside_ascii_and_control_characters(tmp_path, strategy) -> None:
    """The batch skips its regex for printable ASCII names only: a non-ASCII name is
    copied, a control character or a lone surrogate is refused as copy_from refuses it."""
    src = _source(tmp_path / "s", arrays=1, chunks=2)
    src["g/v0/\u00e9t\u00e9"] = b"summer"
    dst = FileMap(tmp_path / "d", mode="w")
    with src.session(), dst.session():
        assert _results(dst, src, "g/v0/\u00e9t\u00e9") == 6
        assert _results(dst, src, "g/v0/a\x01b") is InvalidKeyError
        assert _results(dst, src, "g/v0/a\x7f") is InvalidKeyError
        assert _results(dst, src, "g/v0/a\ud800") is InvalidKeyError
    assert dst["g/v0/\u00e9t\u00e9"] == b"summer"


@pytest.mark.skipif(sys.platform == "win32", reason="control characters in Windows names")
def test_listing_skips_control_character_names_and_keeps_non_ascii(tmp_path) -> None:
    """The listing skips its regex for printable ASCII names only: a control character
    or DEL in a file's name is still skipped with a warning, a non-ASCII name listed."""
    root = tmp_path / "s"
    (root / "g").mkdir(parents=True)
    for name in ("plain", "\u00e9t\u00e9", "bad\x01", "del\x7f"):
        (root / "g" / name).write_bytes(b"x")
    m = FileMap(root, mode="r")
    with pytest.warns(NCZarrWarning, match="control characters") as caught:
        assert sorted(m.keys_below("g")) == ["g/plain", "g/\u00e9t\u00e9"]
    assert len(caught) == 2
