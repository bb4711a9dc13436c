"""``nczarr.records.record`` behaves as ``dataclasses.dataclass`` where nczarr uses it.

Each case defines one class body twice, as a dataclass and as a record, and compares
what the two do: construction (positional, keyword, defaults, factories, errors),
``repr``, ``==`` and ``hash`` (hypothesis over field values, NaN included), ``replace``,
``fields``, ``__match_args__``, frozen assignment, ``__post_init__``, inheritance,
slots, pickling and copies. And a record is made without compiling code: that is
what it is for (the ``nczarr`` command's start).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import subprocess
import sys
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nczarr import records
from nczarr.records import record

#: (dataclass options, the same for record)
KINDS = {
    "frozen": ({"frozen": True}, {}),
    "mutable": ({}, {"frozen": False}),
    "frozen-slots": ({"frozen": True, "slots": True}, {"slots": True}),
    "mutable-slots": ({"slots": True}, {"frozen": False, "slots": True}),
    "frozen-no-eq": ({"frozen": True, "eq": False}, {"eq": False}),
}


def _body(field: Any) -> type:
    class Item:
        """An item."""

        name: str
        size: int
        tags: tuple[str, ...] = ()
        scale: float = 1.0
        extra: dict[str, int] = field(default_factory=dict, compare=False)
        note: str = field(default="", repr=False)
        kind: ClassVar[str] = "item"

        def describe(self) -> str:
            return f"{self.name}:{self.size}"

    return Item


def _pair(kind: str) -> tuple[type, type]:
    dc_options, record_options = KINDS[kind]
    made_dc = dataclasses.dataclass(**dc_options)(_body(dataclasses.field))
    made_record = record(**record_options)(_body(records.field))
    return made_dc, made_record


ITEM_ARGS = st.tuples(
    st.text(max_size=3),
    st.integers(-3, 3),
    st.tuples() | st.tuples(st.text(max_size=2)),
    st.sampled_from([1.0, -0.0, 0.0, float("nan"), float("inf")]),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@pytest.mark.parametrize("kind", KINDS)
@given(a=ITEM_ARGS, b=ITEM_ARGS)
def test_equality_hash_and_repr_are_a_dataclasses(kind: str, a: tuple, b: tuple) -> None:
    made_dc, made_record = _pair(kind)
    for x, y in ((a, b), (a, a)):
        dx, dy = made_dc(*x), made_dc(*y)
        rx, ry = made_record(*x), made_record(*y)
        assert repr(rx) == repr(dx)
        assert (rx == ry) == (dx == dy)
        assert (rx != ry) == (dx != dy)
        assert (rx == rx) == (dx == dx)  # one NaN object: equal, as in a tuple
        hashable = made_dc.__hash__ is not None
        assert (made_record.__hash__ is not None) == hashable
        if hashable and kind != "frozen-no-eq":
            assert (hash(rx) == hash(ry)) == (hash(dx) == hash(dy))
            assert hash(rx) == hash(dx)  # the same tuple of the compared fields


@pytest.mark.parametrize("kind", KINDS)
def test_construction_replace_fields_and_match_args_are_a_dataclasses(kind: str) -> None:
    made_dc, made_record = _pair(kind)
    for args, kwargs in [
        (("a", 1), {}),
        (("a",), {"size": 2, "note": "n"}),
        ((), {"name": "b", "size": 3, "extra": {"x": 1}, "scale": 2.5}),
    ]:
        d, r = made_dc(*args, **kwargs), made_record(*args, **kwargs)
        assert repr(r) == repr(d)
        assert r.describe() == d.describe() and r.kind == d.kind == "item"
        assert repr(records.replace(r, size=9)) == repr(dataclasses.replace(d, size=9))
        assert records.replace(r, tags=("t",)).tags == ("t",)
    assert made_record.__match_args__ == made_dc.__match_args__
    assert [
        (f.name, f.default, f.default_factory, f.init, f.repr, f.compare)
        for f in records.fields(made_record)
    ] == [
        (
            f.name,
            records.MISSING if f.default is dataclasses.MISSING else f.default,
            records.MISSING if f.default_factory is dataclasses.MISSING else f.default_factory,
            f.init,
            f.repr,
            f.compare,
        )
        for f in dataclasses.fields(made_dc)
    ]
    # each instance gets its own default_factory value
    assert made_record("a", 1).extra is not made_record("a", 1).extra
    # a class attribute holds the default, as a dataclass's (not a slotted class's)
    if "slots" not in kind:
        assert made_record.scale == made_dc.scale == 1.0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((), {}),  # missing arguments
        (("a",), {}),
        (("a", 1, (), 1.0, {}, "", "too many"), {}),
        (("a", 1), {"name": "b"}),  # twice
        (("a", 1), {"unknown": 1}),
    ],
)
def test_wrong_calls_are_refused_as_a_dataclasses(kind: str, args: tuple, kwargs: dict) -> None:
    made_dc, made_record = _pair(kind)
    with pytest.raises(TypeError):
        made_dc(*args, **kwargs)
    with pytest.raises(TypeError, match=r"Item\.__init__\(\)"):
        made_record(*args, **kwargs)
    with pytest.raises(TypeError):
        records.replace(made_record("a", 1), unknown=1)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.startswith("frozen")])
def test_a_frozen_record_refuses_assignment_and_deletion(kind: str) -> None:
    made_dc, made_record = _pair(kind)
    r, d = made_record("a", 1), made_dc("a", 1)
    for target in (d, r):
        with pytest.raises(AttributeError):
            target.size = 2
        with pytest.raises(AttributeError):
            del target.name
    with pytest.raises(dataclasses.FrozenInstanceError, match=r"'size' of .*Item$"):
        r.size = 2
    assert records.FrozenInstanceError is dataclasses.FrozenInstanceError
    assert r.size == 1


@pytest.mark.parametrize("kind", KINDS)
def test_records_pickle_and_copy(kind: str) -> None:
    _, made_record = _pair(kind)
    globals()["Item"] = made_record  # pickle finds classes by module and name
    made_record.__qualname__ = "Item"
    try:
        r = made_record("a", 1, ("t",), float("nan"), {"k": 2}, "note")
        for copied in (pickle.loads(pickle.dumps(r)), copy.copy(r), copy.deepcopy(r)):
            assert type(copied) is made_record
            assert repr(copied) == repr(r) and copied.note == "note"
            assert copied.extra == {"k": 2}
    finally:
        del globals()["Item"]


def test_slots_hold_the_fields_and_nothing_else() -> None:
    _, made_record = _pair("frozen-slots")
    r = made_record("a", 1)
    assert made_record.__slots__ == ("name", "size", "tags", "scale", "extra", "note")
    assert not hasattr(r, "__dict__")
    with pytest.raises(AttributeError):
        object.__setattr__(r, "other", 1)


def test_post_init_runs_after_init_and_after_replace() -> None:
    for decorate, field, replace in (
        (dataclasses.dataclass(frozen=True), dataclasses.field, dataclasses.replace),
        (record, records.field, records.replace),
    ):

        @decorate
        class Span:
            start: int
            stop: int
            length: int = field(init=False, default=0)

            def __post_init__(self) -> None:
                if self.stop < self.start:
                    raise ValueError(f"stop {self.stop} < start {self.start}")
                object.__setattr__(self, "length", self.stop - self.start)

        span = Span(1, 4)
        assert span.length == 3 and replace(span, stop=9).length == 8
        with pytest.raises(ValueError, match="stop 0 < start 1"):
            Span(1, 0)
        with pytest.raises(ValueError):
            replace(span, length=2)  # not an __init__ argument


def test_a_base_records_fields_come_first_and_a_body_keeps_its_own_methods() -> None:
    @record
    class Base:
        a: int
        b: int = 2

    @record
    class Child(Base):
        c: int = 3
        b: int = 5  # overridden: keeps its place

        def __eq__(self, other: object) -> bool:  # the body's own wins
            return isinstance(other, Child) and self.a == other.a

        def __hash__(self) -> int:  # so does its own hash
            return self.a

    assert [f.name for f in records.fields(Child)] == ["a", "b", "c"]
    assert repr(Child(1)).endswith(".Child(a=1, b=5, c=3)")
    assert Child(1, 7) == Child(1, 8)
    assert hash(Child(4, 7)) == 4


def test_a_class_body_that_would_share_a_value_is_refused() -> None:
    with pytest.raises(
        ValueError,
        match=r"mutable default list for field 'items' of .*Bad: use field\(default_factory",
    ):

        @record
        class Bad:
            items: list[int] = []  # noqa: RUF012 - the mistake refused

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @record
        class Order:
            a: int = 1
            b: int  # type: ignore[misc]

    @dataclasses.dataclass(frozen=True)
    class Theirs:
        a: int

    with pytest.raises(TypeError, match=r"cannot extend dataclass .*Theirs$"):

        @record
        class Ours(Theirs):  # Theirs's fields would be lost
            b: int = 0

    with pytest.raises(ValueError, match="both default and default_factory"):
        records.field(default=1, default_factory=int)
    with pytest.raises(TypeError, match="not a record"):
        records.fields(object())


def test_defining_a_record_compiles_no_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """What records are for: ``@dataclass`` runs ``exec`` for each generated method,
    ``@record`` not once."""
    calls: list[str] = []
    real_exec, real_compile = exec, compile
    monkeypatch.setattr("builtins.exec", lambda *a, **k: calls.append("exec") or real_exec(*a, **k))
    monkeypatch.setattr(
        "builtins.compile", lambda *a, **k: calls.append("compile") or real_compile(*a, **k)
    )
    for kind in KINDS:
        record(**KINDS[kind][1])(_body(records.field))
    assert calls == []
    dataclasses.dataclass(frozen=True)(_body(dataclasses.field))
    assert calls  # the check sees dataclasses' code generation


def test_importing_records_imports_neither_dataclasses_nor_inspect() -> None:
    code = (
        "import sys, nczarr.records; print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("kind", KINDS)
def test_to_dataclasses_functions_a_record_is_a_dataclass(kind: str) -> None:
    """What reads ``__dataclass_fields__`` (``dataclasses.fields``/``replace``/
    ``asdict``/``is_dataclass``, pytest, dask) and ``inspect.signature`` see a record
    as the dataclass it replaces; ``copy.replace`` (3.13) is ``replace``."""
    made_dc, made_record = _pair(kind)
    d, r = made_dc("a", 1, extra={"k": 1}), made_record("a", 1, extra={"k": 1})
    assert dataclasses.is_dataclass(made_record) and dataclasses.is_dataclass(r)
    shape = [
        (f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare)
        for f in dataclasses.fields(made_dc)
    ]
    assert [
        (f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.compare)
        for f in dataclasses.fields(r)
    ] == shape
    assert dataclasses.asdict(r) == dataclasses.asdict(d)
    assert repr(dataclasses.replace(r, size=5)) == repr(dataclasses.replace(d, size=5))
    assert str(inspect.signature(made_record)) == str(inspect.signature(made_dc))
    assert repr(r.__replace__(name="b")) == repr(dataclasses.replace(d, name="b"))
    if hasattr(copy, "replace"):  # Python 3.13+
        assert copy.replace(r, size=7).size == 7


NO_DATACLASSES = """
import sys
from nczarr.records import record, field, fields, replace
@record
class A:
    a: int
    b: dict = field(default_factory=dict)
x = replace(A(1), a=2)
assert x == A(2) and [f.name for f in fields(x)] == ["a", "b"]
print(sorted({"dataclasses", "inspect"} & set(sys.modules)))
"""


def test_records_import_neither_dataclasses_nor_inspect_until_asked() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_DATACLASSES], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
