"""The methods a record is given, as closures over its fields (what ``@dataclass``
compiles from source text): ``__init__`` (calls giving the first fields by position
or fields by name, with plain defaults for the rest, are stored without binding),
``__repr__``, ``__eq__``, frozen ``__setattr__``/``__delattr__`` and a slotted
record's pickling state."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from .fields import MISSING, Field

__all__ = [
    "frozen_delattr",
    "frozen_error",
    "frozen_setattr",
    "make_eq",
    "make_init",
    "make_repr",
    "slot_getstate",
    "slot_setstate",
    "values_of",
]


def frozen_error(message: str) -> Exception:
    import dataclasses  # an assignment to a frozen record: the error path only

    return dataclasses.FrozenInstanceError(message)


def values_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of the attributes ``names`` of an object (``attrgetter`` returns a
    bare value for one name)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    if not names:
        return lambda obj: ()
    return attrgetter(*names)  # type: ignore[return-value]


def make_init(cls: type, all_fields: tuple[Field, ...], slots: bool) -> Callable[..., None]:
    init = tuple((f.name, f.default, f.default_factory) for f in all_fields if f.init)
    names = tuple(name for name, _, _ in init)
    unset = tuple(
        (f.name, f.default, f.default_factory)
        for f in all_fields
        if not f.init and (f.default is not MISSING or f.default_factory is not MISSING)
    )
    count = len(init)
    post_init = getattr(cls, "__post_init__", None)
    store, bind = _storer(cls, all_fields, slots), _binder(cls.__qualname__, init, names)
    # The common call without binding: the first n fields by position, the rest plain
    # defaults (tails[n]: those defaults; None: a field after n has none, or a factory).
    quick = not unset and post_init is None
    tails = [_plain_defaults(init[n:]) for n in range(count + 1)]
    setters = tuple(getattr(cls, name).__set__ for name in names) if slots else None
    tail_pairs = [
        None
        if tail is None or setters is None
        else tuple(zip(setters[n:], tail.values(), strict=True))
        for n, tail in enumerate(tails)
    ]
    # ... and a call by name: every name a field's, the fields not named plain defaults
    every_name, defaults = frozenset(names), _plain_defaults(init, partial=True) or {}
    required = every_name - defaults.keys()

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if quick and not kwargs and len(args) <= count:
            tail = tails[len(args)]
            if tail is not None:
                if setters is None:
                    self.__dict__.update(zip(names, args, strict=False))
                    if tail:
                        self.__dict__.update(tail)
                else:
                    for setter, value in zip(setters, args, strict=False):
                        setter(self, value)
                    for setter, value in tail_pairs[len(args)]:
                        setter(self, value)
                return
        if quick and not args and required <= kwargs.keys() <= every_name:
            if len(kwargs) < count:
                store(self, defaults.items())
            store(self, kwargs.items())
            return
        values = bind(args, kwargs)
        for name, default, factory in unset:
            values[name] = default if default is not MISSING else factory()
        store(self, values.items())
        if post_init is not None:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _plain_defaults(
    fields_: tuple[tuple[str, Any, Any], ...], partial: bool = False
) -> dict[str, Any] | None:
    """``{name: default}`` of the ``(name, default, factory)`` fields with a plain
    default: all of them, else None (``partial``: those that have one)."""
    if not partial and any(default is MISSING for _, default, _ in fields_):
        return None
    return {name: default for name, default, _ in fields_ if default is not MISSING}


def _storer(cls: type, all_fields: tuple[Field, ...], slots: bool) -> Callable[[Any, Any], None]:
    """``store(instance, (name, value) pairs)``: into the instance's ``__dict__``, or its
    slots (past a frozen ``__setattr__`` either way)."""
    if not slots:
        return lambda obj, pairs: obj.__dict__.update(pairs)
    setters = {f.name: getattr(cls, f.name).__set__ for f in all_fields}

    def store(obj: Any, pairs: Any) -> None:
        for name, value in pairs:
            setters[name](obj, value)

    return store


def _binder(
    qualname: str, init: tuple[tuple[str, Any, Any], ...], names: tuple[str, ...]
) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """``bind(args, kwargs)``: the field values of any call, with defaults, factories
    and the errors of a wrong call, as a dataclass's ``__init__`` gives them (``init``:
    the ``(name, default, factory)`` of the fields ``__init__`` takes, named ``names``)."""
    count = len(init)

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > count:
            raise TypeError(
                f"{qualname}.__init__() takes {count + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        values = dict(zip(names, args, strict=False))  # fewer args than names: defaults
        for name, default, factory in init[len(args) :]:
            if name in kwargs:
                values[name] = kwargs.pop(name)
            elif default is not MISSING:
                values[name] = default
            elif factory is not MISSING:
                values[name] = factory()
            else:
                raise TypeError(f"{qualname}.__init__() missing required argument: {name!r}")
        if kwargs:
            name = next(iter(kwargs))
            if name in values:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {name!r}")
        return values

    return bind


def make_repr(all_fields: tuple[Field, ...]) -> Callable[[Any], str]:
    shown = tuple(f.name for f in all_fields if f.repr)

    def __repr__(self: Any) -> str:
        body = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({body})"

    return __repr__


def make_eq(all_fields: tuple[Field, ...]) -> Callable[[Any, Any], Any]:
    key = values_of(tuple(f.name for f in all_fields if f.compare))

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)  # as tuples: an identical NaN is equal, as there

    return __eq__


def frozen_setattr(cls: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot assign to field {name!r} of {type(self).__qualname__}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def frozen_delattr(cls: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot delete field {name!r} of {type(self).__qualname__}")
        super(cls, self).__delattr__(name)

    return __delattr__


def slot_getstate(all_fields: tuple[Field, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """Pickling a frozen slotted record: its field values (unpickling cannot assign them
    through the frozen ``__setattr__``)."""
    key = values_of(tuple(f.name for f in all_fields))
    return lambda self: key(self)


def slot_setstate(all_fields: tuple[Field, ...]) -> Callable[[Any, tuple[Any, ...]], None]:
    names = tuple(f.name for f in all_fields)

    def __setstate__(self: Any, state: tuple[Any, ...]) -> None:
        for name, value in zip(names, state, strict=True):
            object.__setattr__(self, name, value)

    return __setstate__
