"""``ZMap.copy_pairs``: a combine's batch of verbatim copies under shifted keys.

``copy_many`` copies a key to the same key; a combine copies each source's chunk
``temp/0.0.0`` to ``temp/41.0.0``. Inside a session of both directory maps each
directory is opened and verified once, at its first pair (a daily source holds one
chunk per directory, so waiting for the checked path to hold it would take that path
for every chunk), and every copy is ``cp``'s system calls; anything that is not the
plain case takes ``copy_from``'s checked path. These tests show the results and the
refusals are ``copy_from``'s pair by pair, and that the checked path is not taken for
plain pairs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nczarr.errors import InvalidKeyError, ReadOnlyError, StoragePermissionError
from nczarr.maps.base import NOT_SUPPORTED
from nczarr.maps.file import TEMP_PREFIX, FileMap
from nczarr.maps.memory import MemoryMap


def _day(root: Path, day: int) -> FileMap:
    m = FileMap(root, mode="w")
    m["temp/.zarray"] = b"{}"
    m["temp/0.0.0"] = f"temp {day}".encode() * 40
    m["time/0"] = f"time {day}".encode()
    return m


def _pairs(day: int) -> list[tuple[str, str]]:
    return [("temp/0.0.0", f"temp/{day}.0.0"), ("time/0", f"time/{day}")]


def test_copy_pairs_copies_under_shifted_keys_with_every_strategy(tmp_path, strategy) -> None:
    days = [_day(tmp_path / f"s{d}", d) for d in range(4)]
    dst = FileMap(tmp_path / "d", mode="w")
    with dst.session():
        for d, src in enumerate(days):
            with src.session():
                got = list(dst.copy_pairs(src, _pairs(d)))
            assert got == [(s, t, len(src[s])) for s, t in _pairs(d)]
    for d, src in enumerate(days):
        assert all(dst[t] == src[s] for s, t in _pairs(d))
    assert sorted(dst) == sorted(t for d in range(4) for _, t in _pairs(d))


def test_plain_pairs_take_no_checked_path_in_a_session(tmp_path, monkeypatch) -> None:
    days = [_day(tmp_path / f"s{d}", d) for d in range(5)]
    dst = FileMap(tmp_path / "d", mode="w")
    dst["temp/.zarray"] = b"{}"  # the target's directories exist, as after the first copy
    dst["time/.zarray"] = b"{}"
    checked = []
    real = FileMap._copy

    def spy(self, src, src_key, dst_key, atomic):
        checked.append(dst_key)
        return real(self, src, src_key, dst_key, atomic)

    monkeypatch.setattr(FileMap, "_copy", spy)
    with dst.session():
        for d, src in enumerate(days):
            with src.session():
                assert all(isinstance(n, int) for *_, n in dst.copy_pairs(src, _pairs(d)))
    assert checked == []
    assert dst["temp/3.0.0"] == days[3]["temp/0.0.0"]


def test_copy_pairs_outside_a_session_and_between_other_maps(tmp_path) -> None:
    src = _day(tmp_path / "s", 7)
    dst = FileMap(tmp_path / "d", mode="w")
    assert list(dst.copy_pairs(src, _pairs(7))) == [(s, t, len(src[s])) for s, t in _pairs(7)]
    assert dst["time/7"] == b"time 7"
    other = MemoryMap({"a/0": b"v"})
    assert list(dst.copy_pairs(other, [("a/0", "a/1")])) == [("a/0", "a/1", NOT_SUPPORTED)]
    assert list(MemoryMap().copy_pairs(src, [("time/0", "time/1")])) == [
        ("time/0", "time/1", NOT_SUPPORTED)
    ]


def test_copy_pairs_refuses_what_copy_from_refuses(tmp_path, strategy) -> None:
    src = _day(tmp_path / "s", 1)
    dst = FileMap(tmp_path / "d", mode="w")
    bad = {
        ("temp/missing", "temp/1.0.0"): KeyError,
        ("temp/0.0.0", "temp/.."): InvalidKeyError,
        ("temp/0.0.0", f"temp/{TEMP_PREFIX}x"): InvalidKeyError,
        (f"{TEMP_PREFIX}d/0", "temp/2.0.0"): InvalidKeyError,
        ("temp/0.0.0", "temp/a\\b"): InvalidKeyError,
        ("temp/0.0.0", "temp/" + "x" * 1100): InvalidKeyError,
    }
    with src.session(), dst.session():
        for pair, error in bad.items():
            with pytest.raises(error):
                list(dst.copy_pairs(src, [pair]))
    with pytest.raises(ReadOnlyError):
        list(FileMap(tmp_path / "d", mode="r").copy_pairs(src, _pairs(1)))


def test_an_existing_target_key_is_replaced(tmp_path, strategy) -> None:
    src = _day(tmp_path / "s", 2)
    dst = FileMap(tmp_path / "d", mode="w")
    dst["temp/2.0.0"] = b"old, longer than the new content" * 100
    with src.session(), dst.session():
        list(dst.copy_pairs(src, _pairs(2)))
    assert dst["temp/2.0.0"] == src["temp/0.0.0"]


def test_a_source_directory_linked_out_of_its_root_is_not_followed(tmp_path, strategy) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "0").write_bytes(b"secret")
    src = _day(tmp_path / "s", 3)
    (tmp_path / "s" / "escape").symlink_to(outside, target_is_directory=True)
    dst = FileMap(tmp_path / "d", mode="w")
    with src.session(), dst.session(), pytest.raises((StoragePermissionError, KeyError)):
        list(dst.copy_pairs(src, [("escape/0", "time/9")]))
    assert "time/9" not in dst


def test_pairs_at_the_root_copy_into_the_roots_with_every_strategy(tmp_path, strategy) -> None:
    src = FileMap(tmp_path / "s", mode="w")
    src["a"] = b"root object"
    dst = FileMap(tmp_path / "d", mode="w")
    dst[".zgroup"] = b"{}"  # the target exists
    cwd = os.getcwd()
    (tmp_path / "a").write_bytes(b"decoy")  # what a copy relative to it would read
    os.chdir(tmp_path)  # a copy relative to the working directory would land here
    try:
        with src.session(), dst.session():
            assert list(dst.copy_pairs(src, [("a", "b")])) == [("a", "b", 11)]
    finally:
        os.chdir(cwd)
    assert dst["b"] == b"root object" and not (tmp_path / "b").exists()
