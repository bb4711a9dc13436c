"""Leaf-rule probes: what a write asks the storage, with and without trusted writes.

``ZMap.trusted_writes()`` lets a writer that vouches for its keys skip per-key
probes; FsspecMap (like S3Map, see test_map_s3/test_s3_requests) also skips what
its directory cache and ownership of a store it created already settle.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from nczarr.errors import ObjectExistsError, ReadOnlyError
from nczarr.maps.fsspec import FsspecMap
from nczarr.maps.memory import MemoryMap


def _counting(m: FsspecMap, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the leaf-rule probes a write makes: a stat of an ancestor (``_exists``)
    and a listing below the key (``_has_children``). (The filesystem's own write path
    may stat as it likes.)"""
    calls: Counter[str] = Counter()
    for name in ("_exists", "_has_children"):
        original = getattr(m, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kw)

        monkeypatch.setattr(m, name, counted)
    return calls


def _url() -> str:
    return f"memory://leaf-{uuid.uuid4().hex[:8]}/ds"


def test_fsspec_map_that_created_its_store_probes_nothing_per_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = FsspecMap(_url(), mode="w")
    m["v/.zarray"] = b"{}"
    calls = _counting(m, monkeypatch)
    for i in range(10):
        m[f"v/{i}.0"] = b"x"
    assert sum(calls.values()) == 0, calls
    with pytest.raises(ObjectExistsError, match=r"'v/1\.0' holds content"):
        m["v/1.0/x"] = b"y"
    with pytest.raises(ObjectExistsError, match="prefix of existing keys"):
        m["v"] = b"y"


def test_fsspec_map_on_existing_content_caches_directories(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = _url()
    FsspecMap(url, mode="w")["g/v/.zarray"] = b"{}"
    m = FsspecMap(url, mode="r+")
    calls = _counting(m, monkeypatch)
    m["g/v/0.0"] = b"x"
    first = sum(calls.values())
    calls.clear()
    m["g/v/0.1"] = b"x"
    assert first == 3  # g, g/v and below g/v/0.0
    assert calls == {"_has_children": 1}  # ancestors known: no stat of g, g/v
    calls.clear()
    with m.trusted_writes():
        m["g/v/0.2"] = b"x"
    assert sum(calls.values()) == 0


def test_trusted_writes_nest_and_end() -> None:
    m = MemoryMap(mode="w")
    m["a/b"] = b"1"
    with m.trusted_writes():
        assert m.trusting
        with m.trusted_writes():
            m["c/d"] = b"2"
        assert m.trusting
    assert not m.trusting
    with pytest.raises(ObjectExistsError):
        m["a/b/c"] = b"3"
    with pytest.raises(ReadOnlyError):
        MemoryMap({"k": b"v"}, mode="r").trusted_writes().__enter__()


def test_list_sizes_default_and_fsspec() -> None:
    data = {"a/0": b"1", "a/1": b"22", "b": b"333"}
    assert sorted(MemoryMap(dict(data)).list_sizes()) == [("a/0", 1), ("a/1", 2), ("b", 3)]
    m = FsspecMap(_url(), mode="w")
    m.setitems(data)
    assert sorted(m.list_sizes("a")) == [("a/0", 1), ("a/1", 2)]
    assert sorted(m.list_sizes()) == [("a/0", 1), ("a/1", 2), ("b", 3)]
