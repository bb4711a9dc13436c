"""Value classes that cost nothing to define: ``@record``, nczarr's dataclass.

Why not :mod:`dataclasses` itself: on Python 3.11-3.13, ``@dataclass`` writes each
class's ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` (and, frozen,
``__setattr__``/``__delattr__``) as source text and compiles it with ``exec`` when the
module is imported, ~4 M instructions (~1 ms) a frozen class, and ``import
dataclasses`` loads :mod:`inspect` (with ``ast``, ``dis``, ``tokenize``): ~38 M more.
The ``nczarr`` command converting a ``.nc`` file defined 32 such classes before it
copied a byte: 166 M of the 384 M instructions of its whole start (43 %, callgrind,
docs/performance.md). ``@record`` builds the same methods as closures over the
class's field list instead: defining a class costs tens of microseconds against a
frozen dataclass's ~1 ms; making an instance costs what a dataclass's does by
position and up to about twice by name. ``typing.NamedTuple`` classes were no
alternative: they are tuples (iterable, equal to other tuples), with no default
factories, no ``__post_init__`` and no mutable form.

What it implements is what nczarr uses of :mod:`dataclasses`, with the same meaning:
fields are the class's annotations in order (``ClassVar`` ones excluded, a base
record's fields first), with defaults or :func:`field` (``default_factory``, ``init``,
``repr``, ``compare``); a mutable default (list, dict, set) is refused;
``__post_init__`` runs after ``__init__``; ``frozen`` (the default) makes assignment
raise :class:`FrozenInstanceError` (an ``AttributeError``); ``eq`` compares records of
the same class field by field, as tuples; frozen equal records hash, mutable ones do
not; ``slots=True`` gives the class ``__slots__``; :func:`replace`, :func:`fields` and
``__match_args__`` and ``copy.replace`` (3.13). A method the class body defines is
kept. Type checkers see a dataclass (:func:`typing.dataclass_transform`).

To everything else a record is a dataclass too, built only when asked:
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` (and pytest's
and dask's handling of dataclasses) read ``__dataclass_fields__``, which a record
makes, importing :mod:`dataclasses`, the first time it is read;
``inspect.signature`` of a record class reads its lazily made ``__signature__``; an
assignment to a frozen record raises :class:`dataclasses.FrozenInstanceError`
(imported then; ``nczarr.records.FrozenInstanceError`` names it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

from .build import build_record
from .fields import MISSING, Field, field, fields, replace

__all__ = [
    "MISSING",
    "Field",
    "FrozenInstanceError",
    "field",
    "fields",
    "record",
    "replace",
]

T = TypeVar("T", bound=type)


def __getattr__(name: str) -> Any:
    """``FrozenInstanceError``: :class:`dataclasses.FrozenInstanceError` (an
    ``AttributeError``), imported when first named."""
    if name == "FrozenInstanceError":
        import dataclasses

        return dataclasses.FrozenInstanceError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@overload
def record(cls: T, /) -> T: ...
@overload
def record(
    *, frozen: bool = True, eq: bool = True, repr: bool = True, slots: bool = False
) -> Callable[[T], T]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(
    cls: T | None = None,
    /,
    *,
    frozen: bool = True,
    eq: bool = True,
    repr: bool = True,
    slots: bool = False,
) -> T | Callable[[T], T]:
    """Make ``cls`` a record (``@record``, or ``@record(frozen=False)`` ...): see the
    module docstring for what each option means."""

    def wrap(cls: T) -> T:
        return build_record(cls, frozen=frozen, eq=eq, repr=repr, slots=slots)

    return wrap if cls is None else wrap(cls)
