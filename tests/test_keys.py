"""Property tests: ``normalize_key`` over the whole key space, and ``search`` of the
memory, directory and zip maps against a model built from random key sets."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from nczarr.errors import InvalidKeyError
from nczarr.keys import MAX_KEY_BYTES, normalize_key, normalize_prefix

# Segment characters: anything printable except "/" and "\" (and surrogates).
SEGMENT_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\\x7f")
segments = st.text(SEGMENT_CHARS, min_size=1, max_size=12).filter(lambda s: s not in (".", ".."))
valid_bodies = st.lists(segments, min_size=1, max_size=6).map("/".join)


@given(valid_bodies, st.booleans())
def test_valid_keys_round_trip(body, slash):
    assume(len(body.encode("utf-8")) <= MAX_KEY_BYTES)
    key = "/" + body if slash else body
    assert normalize_key(key) == body
    assert normalize_key(body) == body == normalize_key("/" + body)
    assert normalize_prefix(key) == body == normalize_prefix(key + "/")


def _insert(parts: list[str], index: int, bad: str) -> str:
    index %= len(parts) + 1
    return "/".join([*parts[:index], bad, *parts[index:]])


@st.composite
def invalid_keys(draw):
    """(key, fragment of the expected message) for every class of invalid key."""
    parts = draw(st.lists(segments, min_size=1, max_size=4))
    where = draw(st.integers(0, 10))
    kind = draw(
        st.sampled_from(["empty", "root", "gap", "trailing", "dot", "dotdot", "bs", "ctl", "long"])
    )
    if kind == "empty":
        return "", "root holds no content"
    if kind == "root":
        return "/", "root holds no content"
    if kind == "gap":
        cut = where % (len(parts) + 1)
        return "/".join(parts[:cut]) + "//" + "/".join(parts[cut:]), "empty, '.' and '..'"
    if kind == "trailing":
        return "/".join(parts) + "/", "empty, '.' and '..' segments"
    if kind == "dot":
        return _insert(parts, where, "."), "empty, '.' and '..' segments"
    if kind == "dotdot":
        return _insert(parts, where, ".."), "empty, '.' and '..' segments"
    if kind == "bs":
        seg = draw(segments)
        cut = draw(st.integers(0, len(seg)))
        return _insert(parts, where, seg[:cut] + "\\" + seg[cut:]), "backslashes"
    if kind == "ctl":
        ctl = draw(st.sampled_from([chr(c) for c in range(32)] + ["\x7f"]))
        return _insert(parts, where, "a" + ctl), "control characters"
    filler = "x" * (MAX_KEY_BYTES + 1 - len("/".join(parts)))
    return "/".join([*parts, filler]), "longer than"


@given(invalid_keys())
def test_every_invalid_class_is_rejected(case):
    key, why = case
    with pytest.raises(InvalidKeyError) as info:
        normalize_key(key)
    message = str(info.value)
    assert why in message
    if why != "longer than":
        assert repr(key) in message
    else:
        assert repr(key[:60]) in message


@given(st.one_of(st.integers(), st.binary(), st.none(), st.lists(st.text())))
def test_non_strings_are_rejected(value):
    with pytest.raises(InvalidKeyError, match="are str"):
        normalize_key(value)  # type: ignore[arg-type]
    with pytest.raises(InvalidKeyError, match="are str"):
        normalize_prefix(value)  # type: ignore[arg-type]


# ---------------------------------------------------------------- search vs model
NAMES = st.sampled_from(["a", "b", "c0", ".zarray", "0.0", "\u00e9t\u00e9"])
raw_keys = st.lists(st.lists(NAMES, min_size=1, max_size=4).map("/".join), max_size=25)


def leaf_consistent(keys: list[str]) -> list[str]:
    """Keep keys in order, dropping any that would break the leaf rule."""
    kept: list[str] = []
    for key in keys:
        clash = any(k == key or k.startswith(key + "/") or key.startswith(k + "/") for k in kept)
        if not clash:
            kept.append(key)
    return kept


def model_search(keys: set[str], prefix: str) -> list[str]:
    cut = len(prefix) + 1 if prefix else 0
    out = set()
    for key in keys:
        if prefix and not key.startswith(prefix + "/"):
            continue
        out.add(key[cut:].split("/", 1)[0])
    return sorted(out)


def prefixes_to_probe(keys: set[str]) -> set[str]:
    probes = {"", "zz", "a/zz", "a/b/c0/.zarray/x"}
    for key in keys:
        parts = key.split("/")
        probes.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return probes


def check_against_model(m, keys: set[str]) -> None:
    assert sorted(m) == sorted(keys) and len(m) == len(keys)
    for prefix in prefixes_to_probe(keys):
        expected = model_search(keys, prefix) if prefix not in keys else []
        assert m.search(prefix) == expected, prefix
        assert m.search("/" + prefix) == expected, prefix
        assert sorted(m.keys_below(prefix)) == sorted(
            k for k in keys if k == prefix or k.startswith(prefix + "/") or not prefix
        )


def exercise(m, keys: list[str], drop: list[bool]) -> set[str]:
    for key in keys:
        m[key] = key.encode()
    live = set(keys)
    check_against_model(m, live)
    for key, gone in zip(keys, drop, strict=False):
        if gone:
            del m[key]
            live.discard(key)
    check_against_model(m, live)
    return live


@settings(max_examples=60, deadline=None)
@given(raw_keys, st.lists(st.booleans(), max_size=25))
def test_memory_search_matches_model(keys, drop):
    from nczarr.maps.memory import MemoryMap

    exercise(MemoryMap(), leaf_consistent(keys), drop)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_keys, st.lists(st.booleans(), max_size=25))
def test_file_search_matches_model(keys, drop):
    from nczarr.maps.file import FileMap

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds.file"
        m = FileMap(root, mode="w")
        live = exercise(m, leaf_consistent(keys), drop)
        check_against_model(FileMap(root), live)
        # No empty directories stay behind on disk after deletes.
        dirs = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}
        assert dirs == {
            "/".join(k.split("/")[:i]) for k in live for i in range(1, k.count("/") + 1)
        }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_keys, st.lists(st.booleans(), max_size=25))
def test_zip_search_matches_model(keys, drop):
    from nczarr.maps.zip import ZipMap

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ds.zip"
        m = ZipMap(path, mode="w")
        live = exercise(m, leaf_consistent(keys), drop)
        m.close()
        check_against_model(ZipMap(path), live)
