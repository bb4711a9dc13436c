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
