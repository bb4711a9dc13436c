"""Unit tests of the conversion planner and applier (nczarr.conversion.plan and .apply).

The planner is tested against a small stand-in for the translated view (only the
attributes the planner reads); everything that touches storage uses real maps.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nczarr.conversion.apply import copy_chunks, delete_keys, server_side, write_metadata
from nczarr.conversion.plan import array_of_key, build_plan, order_metadata, select_dataset
from nczarr.errors import InvalidModeError
from nczarr.maps.memory import MemoryMap
from nczarr.translate.model import Dataset, Dimension, Group, Variable
from nczarr.translate.select import check_matched, matched_patterns


def _var(path: str, dims: tuple[str, ...] = ("/x",)) -> Variable:
    return Variable(
        name=path.rsplit("/", 1)[1],
        path=path,
        type="int",
        dimensions=dims,
        shape=(4,) * len(dims),
        chunks=(2,) * len(dims),
    )


def _dataset() -> Dataset:
    h = Group(name="h", path="/g/h", variables={"w": _var("/g/h/w")})
    g = Group(name="g", path="/g", variables={"v": _var("/g/v")}, groups={"h": h})
    e = Group(name="e", path="/e")
    root = Group(
        name="",
        path="/",
        dimensions={"x": Dimension("x", 4)},
        variables={"x": _var("/x"), "t": _var("/t")},
        groups={"g": g, "e": e},
    )
    return Dataset(root=root, layout="nczarr-v1")


def _paths(ds: Dataset) -> list[str]:
    return sorted(v.path for v in ds.root.all_variables())


def _groups(ds: Dataset) -> list[str]:
    return sorted(g.path for g in ds.root.walk())


@dataclass
class FakeView:
    """The attributes of a TranslatedView the planner reads, nothing more."""

    dataset: Dataset
    metadata: dict[str, bytes]
    chunks: list[str]
    source: MemoryMap = field(default_factory=MemoryMap)
    warnings: tuple[str, ...] = ("w1",)

    def chunk_keys(self):
        return iter(self.chunks)


# ------------------------------------------------------------------ ordering
def test_order_metadata_arrays_then_groups_deepest_first_root_last():
    keys = [
        ".zgroup",
        ".zattrs",
        ".zmetadata",
        "x/.zarray",
        "x/.zattrs",
        "g/.zgroup",
        "g/.zattrs",
        "g/v/.zarray",
        "g/h/.zgroup",
        "g/h/w/.zattrs",
        "g/h/w/.zarray",
    ]
    order = order_metadata(dict.fromkeys(keys, b""))
    assert order == [
        "g/h/w/.zattrs",
        "g/h/w/.zarray",
        "g/v/.zarray",
        "x/.zattrs",
        "x/.zarray",
        "g/h/.zgroup",
        "g/.zattrs",
        "g/.zgroup",
        ".zattrs",
        ".zmetadata",
        ".zgroup",
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from("abc"), min_size=0, max_size=3),
            st.sampled_from([".zgroup", ".zarray", ".zattrs"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_order_metadata_invariants(items):
    keys = {"/".join([*parts, name]) for parts, name in items}
    order = order_metadata(dict.fromkeys(keys, b""))
    assert sorted(order) == sorted(keys)
    arrays = {k.rpartition("/")[0] for k in keys if k.endswith(".zarray")}
    position = {k: i for i, k in enumerate(order)}
    for key in keys:
        node = key.rpartition("/")[0]
        if node in arrays:
            # every array object precedes every group object
            assert all(
                position[key] < position[k] for k in keys if k.rpartition("/")[0] not in arrays
            )
        if node == "" and node not in arrays:
            assert all(position[key] >= position[k] for k in keys if k.rpartition("/")[0])
        if key.endswith(".zattrs") and node + ("/" if node else "") + ".zarray" in keys:
            assert position[key] < position[node + ("/" if node else "") + ".zarray"]


# ------------------------------------------------------------------ selection
def test_select_nothing_returns_same_dataset():
    ds = _dataset()
    assert select_dataset(ds) is ds


def test_include_by_fqn_keeps_only_ancestor_groups():
    out = select_dataset(_dataset(), include=["/g/h/w"])
    assert _paths(out) == ["/g/h/w"]
    assert _groups(out) == ["/", "/g", "/g/h"]
    assert out.root.dimensions == {"x": Dimension("x", 4)}
    assert out.layout == "nczarr-v1"


def test_include_group_and_bare_name():
    out = select_dataset(_dataset(), include=["g", "t"])
    assert _paths(out) == ["/g/h/w", "/g/v", "/t"]
    assert _groups(out) == ["/", "/g", "/g/h"]


def test_include_relative_path():
    out = select_dataset(_dataset(), include=["g/v"])
    assert _paths(out) == ["/g/v"]
    assert _groups(out) == ["/", "/g"]


def test_exclude_keeps_every_other_group():
    out = select_dataset(_dataset(), exclude=["/g/h", "x"])
    assert _paths(out) == ["/g/v", "/t"]
    assert _groups(out) == ["/", "/e", "/g"]


def test_include_and_exclude_combine():
    out = select_dataset(_dataset(), include=["/g"], exclude=["w"])
    assert _paths(out) == ["/g/v"]


@pytest.mark.parametrize("pattern", ["/nope", "zz", "g/zz"])
def test_pattern_matching_nothing_is_an_error(pattern):
    with pytest.raises(InvalidModeError, match=f"variable pattern {pattern!r} matches no"):
        select_dataset(_dataset(), include=[pattern])


def test_empty_pattern_is_an_error():
    with pytest.raises(InvalidModeError, match="invalid variable pattern '/'"):
        select_dataset(_dataset(), exclude=["/"])


def test_patterns_are_checked_against_many_datasets_together():
    # a combine's sources: a pattern need match in one of them (matched_patterns over
    # each, check_matched once); select_dataset(strict=False) selects nothing there
    other = select_dataset(_dataset(), exclude=["g"])
    found = matched_patterns(other, ["t"], ["w", "nope"])
    assert found == {"t"}
    found |= matched_patterns(_dataset(), ["t"], ["w", "nope"])
    assert found == {"t", "w"}
    with pytest.raises(InvalidModeError, match="pattern 'nope' matches no variable or group!"):
        check_matched(["t"], ["w", "nope"], found, "!")
    check_matched(["t"], ["w"], found)
    assert _paths(select_dataset(other, exclude=["w"], strict=False)) == ["/t", "/x"]
    assert _paths(select_dataset(other, include=["w"], strict=False)) == []
    with pytest.raises(InvalidModeError, match="invalid variable pattern '/'"):
        select_dataset(other, exclude=["/"], strict=False)


def test_array_of_key():
    arrays = {"x", "g/v", "g/h/w"}
    assert array_of_key("g/v/0.1", arrays) == "g/v"
    assert array_of_key("g/h/w/0/1", arrays) == "g/h/w"
    assert array_of_key("g/.zgroup", arrays) is None
    assert array_of_key("x", arrays) is None


# ------------------------------------------------------------------ build_plan
def test_build_plan_without_selection_uses_view_metadata():
    metadata = {".zgroup": b"R", "x/.zarray": b"A", "x/.zattrs": b"B"}
    view = FakeView(_dataset(), metadata, ["x/0", "x/1"])
    plan = build_plan(view)
    assert plan.metadata == (("x/.zattrs", b"B"), ("x/.zarray", b"A"), (".zgroup", b"R"))
    assert plan.chunk_keys == ("x/0", "x/1")
    assert plan.keys == ("x/0", "x/1", "x/.zattrs", "x/.zarray", ".zgroup")
    assert plan.arrays == 4
    assert plan.warnings == ("w1",)
    assert plan.metadata_bytes == 3


def _zarr_source(tmp_path) -> MemoryMap:
    """A pure Zarr v2 store with arrays /x, /t, /g/v and /g/h/w (two chunks each)."""
    import numpy as np
    import zarr

    root = zarr.open_group(str(tmp_path / "src.zarr"), mode="w", zarr_format=2)
    for path in ("x", "t", "g/v", "g/h/w"):
        array = root.create_array(path, shape=(4,), chunks=(2,), dtype="i4", fill_value=-1)
        array[:] = np.arange(4)
        array.attrs["_ARRAY_DIMENSIONS"] = ["n"]
    files = sorted(p for p in (tmp_path / "src.zarr").rglob("*") if p.is_file())
    return MemoryMap(
        {p.relative_to(tmp_path / "src.zarr").as_posix(): p.read_bytes() for p in files}, mode="r"
    )


def test_a_selection_is_written_once_and_plans_only_what_it_keeps(monkeypatch, tmp_path):
    """include/exclude are the translation's: the writer runs once, on what is kept."""
    from nczarr.readthrough import TranslatedView
    from nczarr.translate import writer
    from nczarr.translate.target import Target

    calls = []
    real = writer.WRITERS[("nczarr", 2)]

    def spy(dataset, target):
        calls.append((_paths(dataset), target.noxarray))
        return real(dataset, target)

    monkeypatch.setitem(writer.WRITERS, ("nczarr", 2), spy)
    source = _zarr_source(tmp_path)
    translated = TranslatedView.from_source(
        source, Target("nczarr", noxarray=True), include=["/g/v"]
    )
    plan = build_plan(translated)
    assert calls == [(["/g/v"], True)]
    assert plan.chunk_keys == ("g/v/0", "g/v/1")
    assert plan.arrays == 1
    assert {key for key, _ in plan.metadata} == {
        ".zgroup",
        ".zattrs",
        "g/.zgroup",
        "g/.zattrs",
        "g/v/.zarray",
        "g/v/.zattrs",
    }
    assert plan.warnings[-1] == "3 array(s) left out by include/exclude: /g/h/w, /t, /x"
    # the same selection of an unselected view: the source is not read again
    again = TranslatedView.from_source(source, Target("nczarr", noxarray=True)).selected(
        include=["/g/v"]
    )
    assert build_plan(again) == plan


# ------------------------------------------------------------------ apply
def _source(n: int, size: int = 10) -> MemoryMap:
    return MemoryMap({f"a/{i}": bytes([i % 256]) * (size + i % 3) for i in range(n)}, mode="r")


def test_copy_chunks_copies_bytes_and_reports_progress():
    src = _source(50)
    dst = MemoryMap()
    seen = []
    stats = copy_chunks(src, dst, sorted(src), workers=4, progress=lambda d, t: seen.append((d, t)))
    assert dict(dst._data) == dict(src._data)
    assert stats.copied == 50 and stats.skipped == 0
    assert stats.bytes == sum(len(v) for v in src._data.values())
    assert seen == [(i, 50) for i in range(1, 51)]


def test_copy_chunks_bounded_in_flight_window():
    src = _source(200)
    gate = threading.Lock()
    state = {"now": 0, "peak": 0}

    class Counting(MemoryMap):
        def _load(self, key):
            with gate:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            return super()._load(key)

    class Releasing(MemoryMap):
        def _store(self, key, value):
            super()._store(key, value)
            with gate:
                state["now"] -= 1

    counting = Counting(dict(src._data), mode="r")
    copy_chunks(counting, Releasing(), sorted(src), workers=3)
    assert 1 <= state["peak"] <= 3


def test_copy_chunks_resume_skips_same_size_only():
    src = _source(10)
    dst = MemoryMap({"a/0": src["a/0"], "a/1": b"short", "a/2": bytes(len(src["a/2"]))})
    stats = copy_chunks(src, dst, sorted(src), workers=2, resume=True)
    assert stats.skipped == 2  # a/0 and a/2 (same size: trusted as complete)
    assert stats.copied == 8
    assert dst["a/1"] == src["a/1"]
    assert dst["a/2"] == bytes(len(src["a/2"]))


def test_copy_chunks_first_error_propagates_and_stops():
    src = _source(100)

    class Failing(MemoryMap):
        def _store(self, key, value):
            if key == "a/5":
                raise OSError(f"disk full writing {key!r}")
            super()._store(key, value)

    dst = Failing()
    with pytest.raises(OSError, match="disk full writing 'a/5'"):
        copy_chunks(src, dst, [f"a/{i}" for i in range(100)], workers=2)
    assert len(dst) < 99


def test_copy_chunks_rejects_zero_workers():
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        copy_chunks(MemoryMap(), MemoryMap(), [], workers=0)


def test_write_metadata_skip_equal_and_delete_keys():
    dst = MemoryMap({"a/.zarray": b"same", ".zgroup": b"old", ".nczarr": b"legacy"})
    written = write_metadata(
        dst, [("a/.zarray", b"same"), (".zgroup", b"new"), (".zattrs", b"{}")], skip_equal=True
    )
    assert written == [".zgroup", ".zattrs"]
    assert dst[".zgroup"] == b"new"
    assert delete_keys(dst, [".nczarr", "missing"]) == [".nczarr"]
    assert ".nczarr" not in dst


def test_server_side_only_between_s3_maps_of_one_service(s3_endpoint, s3_bucket, tmp_path):
    from nczarr.maps.file import FileMap
    from nczarr.maps.s3 import S3Map

    a = S3Map(f"s3://{s3_bucket}/a", mode="a", endpoint_url=s3_endpoint)
    b = S3Map(f"s3://{s3_bucket}/b", mode="a", endpoint_url=s3_endpoint)
    f = FileMap(tmp_path / "f", mode="a")
    assert server_side(a, b)
    assert not server_side(f, b)
    assert not server_side(a, f)
    assert not server_side(MemoryMap(), MemoryMap())
