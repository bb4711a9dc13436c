"""The pure planner of grown stores (``nczarr.translate.grow``), against a simulation:
parts are 1-d arrays cut into chunks; the plan's verbatim copies put part chunks under
target keys, its assembled chunks are taken from the concatenation; the target read
back must be the concatenation, and a copy must never be planned where a part chunk's
values are not exactly the target chunk's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nczarr.errors import InvalidModeError
from nczarr.translate.grow import plan_growth
from nczarr.translate.model import Dataset, Dimension, Group, Variable


def _part(length: int, chunk: int, sep: str = ".") -> Dataset:
    var = Variable(
        name="v",
        path="/v",
        type="int",
        dimensions=("/t",),
        shape=(length,),
        chunks=(chunk,),
        fill_value=-1,
        dimension_separator=sep,  # type: ignore[arg-type]
    )
    root = Group(name="/", path="/", dimensions={"t": Dimension("t", length, True)})
    root.variables["v"] = var
    return Dataset(root=root)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 7), st.integers(1, 4)), min_size=2, max_size=5),
    st.booleans(),
)
def test_a_plan_rebuilds_the_concatenation(parts, first_is_target):
    if parts[0][0] == 0:
        parts[0] = (1, parts[0][1])
    datasets = [_part(n, c) for n, c in parts]
    values = [np.arange(n) + 100 * i for i, (n, _) in enumerate(parts)]
    stored = []
    chunks_of = []
    for (n, c), vals in zip(parts, values, strict=True):
        own = {}
        for k in range(-(-n // c)):
            block = np.full(c, -1)
            piece = vals[k * c : (k + 1) * c]
            block[: len(piece)] = piece
            block[len(piece) :] = 999  # past the end: garbage a reader must not see
            own[f"v/{k}"] = block
        chunks_of.append(own)
        stored.append(frozenset(own))
    plan = plan_growth(datasets, "t", stored, first_is_target=first_is_target)
    total = sum(n for n, _ in parts)
    truth = np.concatenate(values)
    n = parts[0][1]
    target = dict(chunks_of[0]) if first_is_target else {}
    for copy in plan.copies:
        target[copy.target_key] = chunks_of[copy.part][copy.source_key]
    assembled = {coords for _, coords in plan.assembled}
    for (k,) in assembled:
        block = np.full(n, -1)
        piece = truth[k * n : (k + 1) * n]
        block[: len(piece)] = piece
        target[f"v/{k}"] = block
    got = np.concatenate([target[f"v/{k}"] for k in range(-(-total // n))])[:total]
    np.testing.assert_array_equal(got, truth)
    # every target chunk is written once, by a copy or by assembly (or kept, for an append)
    copied = {c.target_key for c in plan.copies}
    assert not copied & {f"v/{k}" for (k,) in assembled}
    assert plan.dataset.find_variable("/v").shape == (total,)
    assert plan.dataset.find_dimension("/t").size == total


def test_keys_follow_the_target_separator():
    a = _part(4, 2, sep="/")
    b = _part(4, 2, sep="/")
    plan = plan_growth([a, b], "t", [frozenset({"v/0", "v/1"})] * 2)
    assert [c.target_key for c in plan.copies] == ["v/0", "v/1", "v/2", "v/3"]


def test_other_dimensions_must_agree():
    a = _part(4, 2)
    b = _part(4, 2)
    b.root.dimensions["x"] = Dimension("x", 3)
    with pytest.raises(InvalidModeError, match="'/x' is not in"):
        plan_growth([a, b], "t", [frozenset()] * 2)


def _part2(length: int, sep: str) -> Dataset:
    var = Variable(
        name="v",
        path="/v",
        type="int",
        dimensions=("/t", "/x"),
        shape=(length, 2),
        chunks=(2, 1),
        dimension_separator=sep,  # type: ignore[arg-type]
    )
    dims = {"t": Dimension("t", length, True), "x": Dimension("x", 2)}
    return Dataset(root=Group(name="/", path="/", dimensions=dims, variables={"v": var}))


def test_shifted_keys_take_the_target_separator_from_any_source_separator():
    first, second = _part2(2, "/"), _part2(2, ".")
    plan = plan_growth(
        [first, second], "t", [frozenset({"v/0/0", "v/0/1"}), frozenset({"v/0.0", "v/0.1"})]
    )
    moves = {(c.source_key, c.target_key) for c in plan.copies}
    assert moves == {("v/0/0", "v/0/0"), ("v/0/1", "v/0/1"), ("v/0.0", "v/1/0"), ("v/0.1", "v/1/1")}


def _two_variable_part(length: int, chunk_a: int, chunk_b: int) -> Dataset:
    """One part with ``a`` and ``b`` along ``t``, chunked differently."""
    root = Group(name="/", path="/", dimensions={"t": Dimension("t", length, True)})
    for name, chunk in (("a", chunk_a), ("b", chunk_b)):
        root.variables[name] = Variable(
            name=name,
            path=f"/{name}",
            type="int",
            dimensions=("/t",),
            shape=(length,),
            chunks=(chunk,),
            fill_value=-1,
        )
    return Dataset(root=root)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 7),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(2, 9),
    st.booleans(),
)
def test_parts_of_one_model_write_every_target_chunk_of_every_variable(
    length, chunk_a, chunk_b, count, first_is_target
):
    """Parts read as one model with the same stored keys (a daily series: a combine
    shares the model, and the copies of one part are shifted for the next): each target
    chunk of each variable is written exactly once, by a copy or an assembly. On
    fc4711d a part shifted by whole chunks of ``a`` but not of ``b`` reused the copies
    of a part where every chunk of ``b`` was assembled: ``b``'s aligned chunks there
    were neither copied nor assembled (never written; the report counted them)."""
    dataset = _two_variable_part(length, chunk_a, chunk_b)
    stored = frozenset(
        f"{name}/{k}"
        for name, chunk in (("a", chunk_a), ("b", chunk_b))
        for k in range(-(-length // chunk))
    )
    plan = plan_growth([dataset] * count, "t", [stored] * count, first_is_target=first_is_target)
    total = length * count
    for name, chunk in (("a", chunk_a), ("b", chunk_b)):
        written = [c.target_key for c in plan.copies if c.target_key.startswith(f"{name}/")]
        written += [f"{name}/{k}" for path, (k,) in plan.assembled if path.strip("/") == name]
        if first_is_target:  # the store's own chunks before the first source stay
            written += [f"{name}/{k}" for k in range(length // chunk)]
        every = sorted(f"{name}/{k}" for k in range(-(-total // chunk)))
        assert sorted(written) == every, name
