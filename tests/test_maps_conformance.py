"""The zmap contract, tested once for every backend (memory, file, zip, s3, fsspec).

Each test takes ``kind`` (see ``MapKind`` in conftest): ``kind.make(mode)`` opens the
same store each time and ``kind.raw()`` shows what physically landed. A backend whose
module has not landed yet is skipped, so the suite turns green as backends arrive.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nczarr.errors import (
    InvalidKeyError,
    InvalidModeError,
    NCZarrError,
    ObjectExistsError,
    ReadOnlyError,
)
from nczarr.maps.base import ZMap

SAMPLE = {
    ".zgroup": b'{"zarr_format": 2}',
    "g/.zattrs": b"{}",
    "g/v/.zarray": b'{"shape": [2]}',
    "g/v/0.0": bytes(range(256)),
    "g/v/0.1": b"",
    "g/\u540d\u524d": b"unicode key",
    "x/y/z/deep": b"\x00\xff\x00",
}

INVALID_KEYS = ["", "/", "a//b", "a/", "./a", "a/./b", "a/../b", "..", "a\\b", "a\x00b", "a\nb"]


@pytest.fixture
def kind(map_kind):
    """``map_kind`` under its short name."""
    return map_kind


def fresh(kind) -> ZMap:
    """A new, empty, writable map of this kind."""
    return kind.make("w")


def filled(kind) -> ZMap:
    """A writable map holding SAMPLE."""
    m = fresh(kind)
    for key, value in SAMPLE.items():
        m[key] = value
    return m


def reopen(kind, mode: str) -> ZMap:
    """Open the store again; a memory map has no store, so it reopens a snapshot."""
    if kind.kind == "memory":
        from nczarr.maps.memory import MemoryMap

        return MemoryMap(kind.raw(), mode=mode)
    return kind.make(mode)


def persistent(kind) -> None:
    if kind.kind == "memory":
        pytest.skip("a MemoryMap is not a store that can be reopened")


# --------------------------------------------------------------------- mapping basics
def test_values_are_bytes_for_any_bytes_like(kind):
    m = fresh(kind)
    m["a"] = b"bytes"
    m["b"] = bytearray(b"bytearray")
    m["c"] = memoryview(b"xxmemoryview")[2:]
    m["d"] = np.arange(3, dtype="<i4")
    got = {k: m[k] for k in "abcd"}
    assert got == {
        "a": b"bytes",
        "b": b"bytearray",
        "c": b"memoryview",
        "d": b"\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00",
    }
    assert all(type(v) is bytes for v in got.values())
    with pytest.raises(TypeError, match="'e'"):
        m["e"] = "text"  # type: ignore[assignment]
    assert "e" not in m
    m.close()


def test_get_set_del_contains_len_iter(kind):
    m = filled(kind)
    assert len(m) == len(SAMPLE)
    assert sorted(m) == sorted(SAMPLE)
    assert {k: m[k] for k in m} == SAMPLE
    assert "g/v/0.0" in m and "g" not in m and "g/v" not in m and 42 not in m
    m["g/v/0.0"] = b"overwritten"
    assert m["g/v/0.0"] == b"overwritten"
    del m["g/v/0.1"]
    assert "g/v/0.1" not in m
    assert len(m) == len(SAMPLE) - 1
    m.close()


def test_delete_if_present_deletes_a_key_and_ignores_an_absent_one(kind):
    m = filled(kind)
    m.delete_if_present("g/v/0.1")
    m.delete_if_present("no/such/key")  # no KeyError
    m.delete_if_present("g/v")  # a prefix, not a key: nothing below it is deleted
    assert sorted(m) == sorted(k for k in SAMPLE if k != "g/v/0.1")
    m.close()


def test_iteration_is_lazy(kind):
    m = filled(kind)
    it = iter(m)
    assert iter(it) is it and not isinstance(it, list | tuple)
    assert next(it) in SAMPLE
    below = m.keys_below("g/v")
    assert iter(below) is below
    assert sorted(below) == ["g/v/.zarray", "g/v/0.0", "g/v/0.1"]
    assert sorted(m.keys_below("/g/v/0.0")) == ["g/v/0.0"]
    assert list(m.keys_below("g/v/0")) == []
    m.close()


def test_leading_slash_means_the_same_key(kind):
    m = fresh(kind)
    m["/a/b"] = b"1"
    assert m["a/b"] == b"1" and m["/a/b"] == b"1"
    assert "a/b" in m and "/a/b" in m
    assert list(m) == ["a/b"]
    m["a/b"] = b"2"
    assert m["/a/b"] == b"2" and len(m) == 1
    del m["/a/b"]
    assert "a/b" not in m and len(m) == 0
    m.close()


MISSING_KEYS = ["nope", "/g/nope", "g/v/0.0/below", "g", "g/v"]


@contextlib.contextmanager
def _for_key(key: str) -> Iterator[None]:
    """A failure inside names the key it was checking (one test checks them all)."""
    try:
        yield
    except (Exception, pytest.fail.Exception) as exc:
        raise AssertionError(f"key {key!r}: {exc!r}") from exc


def test_missing_key_raises_keyerror_naming_it(kind):
    # every missing key on one filled store (a store each cost ~1 s on S3): the
    # lookups change nothing, which the listing after them asserts
    m = filled(kind)
    for missing in MISSING_KEYS:
        expected = missing.lstrip("/")
        with _for_key(missing):
            with pytest.raises(KeyError) as info:
                m[missing]
            assert info.value.args == (expected,)
            with pytest.raises(KeyError) as info:
                del m[missing]
            assert info.value.args == (expected,)
            with pytest.raises(KeyError) as info:
                m.getsize(missing)
            assert info.value.args == (expected,)
            assert not isinstance(info.value, NCZarrError)
    assert sorted(m) == sorted(SAMPLE)
    m.close()


def test_invalid_keys_are_refused_naming_the_key(kind):
    # every invalid key on one store (a store each cost ~1 s on S3): each refusal
    # leaves it as it was, which the listing after each key asserts
    m = fresh(kind)
    m["ok"] = b"1"
    actions = (
        lambda key: m[key],
        lambda key: m.__setitem__(key, b"x"),
        lambda key: m.__delitem__(key),
        lambda key: key in m,
        lambda key: m.getsize(key),
    )
    for key in INVALID_KEYS:
        with _for_key(key):
            for action in actions:
                with pytest.raises(InvalidKeyError) as info:
                    action(key)
                assert repr(key) in str(info.value)
                assert isinstance(info.value, ValueError)
            assert list(m) == ["ok"]
    m.close()


def test_overlong_key_is_refused(kind):
    m = fresh(kind)
    key = "k/" + "x" * 1023
    with pytest.raises(InvalidKeyError, match="longer than 1024 UTF-8 bytes"):
        m[key] = b"x"
    assert len(m) == 0
    m.close()


# ----------------------------------------------------------------------- leaf rule
@pytest.mark.parametrize(
    ("existing", "new", "named"),
    [
        ("a/b", "a", "'a'"),  # a prefix of an existing key
        ("a/b", "/a", "'a'"),
        ("a/b/c", "a/b", "'a/b'"),
        ("a", "a/b", "'a'"),  # below an existing key
        ("a/b", "a/b/c/d", "'a/b'"),
    ],
)
def test_leaf_rule_both_directions(kind, existing, new, named):
    m = fresh(kind)
    m[existing] = b"content"
    with pytest.raises(ObjectExistsError) as info:
        m[new] = b"other"
    assert named in str(info.value)
    assert isinstance(info.value, FileExistsError)
    assert dict(m) == {existing: b"content"}
    assert m.search("") == [existing.split("/")[0]]
    m.close()
    assert kind.raw() == {existing: b"content"}


# ------------------------------------------------------------------------- search
def test_search_semantics(kind):
    m = filled(kind)
    top = [".zgroup", "g", "x"]
    assert m.search() == top and m.search("") == top and m.search("/") == top
    inner = sorted([".zattrs", "v", "\u540d\u524d"])
    assert m.search("g") == inner and m.search("/g") == inner and m.search("g/") == inner
    assert m.search("g/v") == [".zarray", "0.0", "0.1"]
    assert m.search("x") == ["y"] and m.search("x/y/z") == ["deep"]
    assert m.search("g/v/0.0") == []  # a leaf
    assert m.search(".zgroup") == []
    assert m.search("g/v/0") == []  # not a whole segment
    assert m.search("nope") == [] and m.search("g/nope/deeper") == []
    with pytest.raises(InvalidKeyError, match="'a//b'"):
        m.search("a//b")
    m.close()


def test_search_after_deletes_leaves_no_empty_directories(kind):
    m = filled(kind)
    del m["x/y/z/deep"]
    assert m.search("") == [".zgroup", "g"]
    assert m.search("x") == [] and m.search("x/y") == []
    for key in ["g/v/.zarray", "g/v/0.0", "g/v/0.1"]:
        del m["/" + key]
    assert m.search("g") == sorted([".zattrs", "\u540d\u524d"])
    m.close()
    expected = {k: v for k, v in SAMPLE.items() if not k.startswith(("x/", "g/v/"))}
    assert kind.raw() == expected
    again = reopen(kind, "r")
    assert again.search("") == [".zgroup", "g"] and again.search("x") == []
    again.close()
    if kind.kind in ("file", "fsspec"):
        root = Path(kind.url.removeprefix("file://"))
        assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()) == [
            "g"
        ]
    if kind.kind == "zip":
        with zipfile.ZipFile(kind.url) as zf:
            names = zf.namelist()
        assert not [n for n in names if n.startswith(("x/", "g/v/"))]


# --------------------------------------------------------------- bulk and ranges
def test_getitems_omits_missing_keys(kind):
    m = filled(kind)
    got = m.getitems(["g/.zattrs", "/.zgroup", "nope", "g/v", "g/v/0.1"])
    assert got == {"g/.zattrs": b"{}", "/.zgroup": SAMPLE[".zgroup"], "g/v/0.1": b""}
    assert m.getitems([]) == {}
    with pytest.raises(InvalidKeyError, match="'a//b'"):
        m.getitems(["a//b"])
    m.close()


RANGES = [(0, 10), (0, None), (250, None), (250, 100), (-5, None), (100, 0), (300, 5), (10, 1000)]


def test_getrange_and_getsize(kind):
    m = filled(kind)
    data = SAMPLE["g/v/0.0"]

    def want(start: int, length: int | None) -> bytes:
        return data[start:] if length is None else data[start : start + length]

    assert [m.getrange("g/v/0.0", s, n) for s, n in RANGES] == [want(s, n) for s, n in RANGES]
    assert m.getsize("g/v/0.0") == 256 and m.getsize("/g/v/0.1") == 0
    m.close()
    again = reopen(kind, "r")
    got = [again.getrange("/g/v/0.0", s, n) for s, n in RANGES]
    assert got == [want(s, n) for s, n in RANGES]
    assert again.getsize("g/v/0.0") == 256
    with pytest.raises(KeyError):
        again.getrange("g/v/nope", 0, 1)
    again.close()


def test_setitems_and_clear(kind):
    m = fresh(kind)
    m.setitems(SAMPLE)
    assert dict(m) == SAMPLE
    m.clear()
    assert len(m) == 0 and m.search("") == [] and list(m) == []
    m["after/clear"] = b"1"
    m.close()
    assert kind.raw() == {"after/clear": b"1"}


def test_concurrent_writers(kind):
    m = fresh(kind)

    def work(n: int) -> None:
        for i in range(10):
            m[f"t{n}/{i}"] = f"{n}.{i}".encode()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(m) == 60 and m.search("") == [f"t{n}" for n in range(6)]
    assert m["t3/7"] == b"3.7"
    m.close()
    assert len(kind.raw()) == 60


# -------------------------------------------------------------------------- modes
def test_read_only_mode_refuses_every_write(kind):
    m = filled(kind)
    m.close()
    before = kind.raw()
    r = reopen(kind, "r")
    assert r.read_only and r.mode == "r"
    attempts = [
        lambda: r.__setitem__("g/.zattrs", b"new"),
        lambda: r.__setitem__("brand/new", b"new"),
        lambda: r.__delitem__("g/.zattrs"),
        lambda: r.delete_if_present("g/.zattrs"),
        lambda: r.setitems({"k": b"v"}),
        lambda: r.clear(),
    ]
    for attempt in attempts:
        with pytest.raises(ReadOnlyError) as info:
            attempt()
        assert isinstance(info.value, PermissionError)
        assert "read-only" in str(info.value)
    with pytest.raises(ReadOnlyError, match="'brand/new'"):
        r["brand/new"] = b"x"
    assert dict(r) == SAMPLE
    r.close()
    assert kind.raw() == before


def test_invalid_mode(kind):
    if kind.kind == "memory":
        from nczarr.maps.memory import MemoryMap

        with pytest.raises(InvalidModeError, match="'x'"):
            MemoryMap(mode="x")
        return
    with pytest.raises(InvalidModeError, match="'x'"):
        kind.make("x")


def test_mode_w_truncates(kind):
    persistent(kind)
    filled(kind).close()
    m = kind.make("w")
    assert len(m) == 0 and m.search("") == []
    m["only"] = b"1"
    m.close()
    assert kind.raw() == {"only": b"1"}


def test_mode_w_minus_refuses_a_store_with_keys(kind):
    persistent(kind)
    m = kind.make("w-")  # a new store: fine
    m["k"] = b"v"
    m.close()
    with pytest.raises(ObjectExistsError):
        kind.make("w-")
    assert kind.raw() == {"k": b"v"}
    m = kind.make("a")
    del m["k"]
    m.close()
    kind.make("w-").close()  # exists but empty: fine


@pytest.mark.parametrize("mode", ["a", "r+"])
def test_modes_a_and_r_plus_keep_content(kind, mode):
    persistent(kind)
    filled(kind).close()
    m = kind.make(mode)
    assert dict(m) == SAMPLE and not m.read_only
    m["added"] = b"1"
    del m["g/.zattrs"]
    m.close()
    expected = {k: v for k, v in SAMPLE.items() if k != "g/.zattrs"} | {"added": b"1"}
    assert kind.raw() == expected


# ---------------------------------------------------------------------- lifecycle
def test_close_and_context_manager(kind):
    with fresh(kind) as m:
        m["k"] = b"v"
        assert not m.closed
    assert m.closed
    with pytest.raises(ValueError, match="closed"):
        m["k2"] = b"v"
    m.close()  # idempotent
    assert kind.raw() == {"k": b"v"}
    again = reopen(kind, "r")
    assert again["k"] == b"v"
    again.close()


def test_pickle_round_trip_reopens_the_same_store(kind):
    m = filled(kind)
    m.flush()
    copy = pickle.loads(pickle.dumps(m))
    assert type(copy) is type(m)
    assert dict(copy) == SAMPLE
    if kind.kind != "memory":
        assert copy.mode == "r+"  # a "w" map never truncates on unpickle
        assert copy.url == m.url
    copy.close()
    m.close()
    assert kind.raw() == SAMPLE
    if kind.kind != "memory":
        r = kind.make("r")
        r2 = pickle.loads(pickle.dumps(r))
        assert r2 == r and r2.mode == "r" and r2["g/.zattrs"] == b"{}"
        r.close()
        r2.close()


def test_equality_and_repr(kind):
    m = filled(kind)
    m.close()
    a, b = reopen(kind, "r"), reopen(kind, "r")
    assert a == b and hash(a) == hash(b)
    c = reopen(kind, "r+")
    assert a != c
    assert a != "not a map"
    text = repr(a)
    assert text.startswith(type(a).__name__ + "(") and "mode='r'" in text
    assert os.environ["AWS_SECRET_ACCESS_KEY"] not in text.replace("test-", "")
    assert "secret" not in text.lower()
    for x in (a, b, c):
        x.close()


# ------------------------------------------------------------------- what landed
def test_raw_content_is_exactly_the_keys_written(kind):
    m = filled(kind)
    m["g/v/0.0"] = b"replaced"
    del m["x/y/z/deep"]
    m["x/other"] = b"moved"
    m.close()
    expected = dict(SAMPLE)
    expected["g/v/0.0"] = b"replaced"
    del expected["x/y/z/deep"]
    expected["x/other"] = b"moved"
    assert kind.raw() == expected
    again = reopen(kind, "r")
    assert dict(again) == expected and len(again) == len(expected)
    again.close()
