"""Making a class a record: its fields collected (a base record's first, ``ClassVar``
annotations left out, mutable defaults and a field without a default after one with
refused), slots if asked, and the methods of :mod:`.methods` and :mod:`.compat` set
where the class body does not define them; hash as a dataclass's."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from .compat import OnFirstRead, dataclass_fields, replace_method, signature
from .fields import FIELDS_ATTR, MISSING, Field
from .methods import (
    frozen_delattr,
    frozen_setattr,
    make_eq,
    make_init,
    make_repr,
    slot_getstate,
    slot_setstate,
    values_of,
)

__all__ = ["build_record"]

T = TypeVar("T", bound=type)


def build_record(cls: T, *, frozen: bool, eq: bool, repr: bool, slots: bool) -> T:
    all_fields = _collect(cls)
    if slots:
        cls = _with_slots(cls, all_fields)
    setattr(cls, FIELDS_ATTR, all_fields)
    _define(cls, "__match_args__", tuple(f.name for f in all_fields if f.init))
    _define(cls, "__init__", make_init(cls, all_fields, slots))
    if repr:
        _define(cls, "__repr__", make_repr(all_fields))
    if eq:
        _define(cls, "__eq__", make_eq(all_fields))
    _set_hash(cls, all_fields, eq=eq, frozen=frozen)
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in cls.__dict__:
                raise TypeError(f"cannot overwrite {name} of frozen record {cls.__qualname__}")
        names = frozenset(f.name for f in all_fields)
        cls.__setattr__ = frozen_setattr(cls, names)  # type: ignore[method-assign,assignment]
        cls.__delattr__ = frozen_delattr(cls, names)  # type: ignore[method-assign,assignment]
        if slots:
            _define(cls, "__getstate__", slot_getstate(all_fields))
            _define(cls, "__setstate__", slot_setstate(all_fields))
    _define(cls, "__replace__", replace_method)
    _define(cls, "__dataclass_fields__", OnFirstRead("__dataclass_fields__", dataclass_fields))
    _define(cls, "__signature__", OnFirstRead("__signature__", signature))
    return cls


def _collect(cls: type) -> tuple[Field, ...]:
    """The fields of ``cls``: its bases' (records), then its own annotations."""
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        if "__dataclass_fields__" in base.__dict__ and FIELDS_ATTR not in base.__dict__:
            # a dataclass, not a record: its fields would be lost
            raise TypeError(
                f"record {cls.__qualname__} cannot extend dataclass {base.__qualname__}"
            )
        for f in base.__dict__.get(FIELDS_ATTR, ()):
            found[f.name] = f
    # not inspect.get_annotations: importing inspect is what this module avoids
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(value, MISSING, True, True, True)
        f.name = name
        if type(f.default).__hash__ is None:  # dataclasses' rule: list, dict, set ...
            raise ValueError(
                f"mutable default {type(f.default).__name__} for field {name!r} of "
                f"{cls.__qualname__}: use field(default_factory=...)"
            )
        if isinstance(value, Field):  # the class attribute is the default, as a dataclass's
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        found[name] = f
    _check_order(cls, found.values())
    return tuple(found.values())


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):  # ``from __future__ import annotations``
        return annotation.partition("[")[0].strip() in ("ClassVar", "typing.ClassVar")
    return annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar


def _check_order(cls: type, found: Any) -> None:
    defaulted = False
    for f in found:
        if not f.init:
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            if defaulted:
                raise TypeError(
                    f"non-default argument {f.name!r} follows default argument "
                    f"in {cls.__qualname__}"
                )
        else:
            defaulted = True


def _with_slots(cls: T, all_fields: tuple[Field, ...]) -> T:
    """``cls`` made again with ``__slots__`` for the fields its bases do not hold."""
    inherited = {name for base in cls.__mro__[1:] for name in base.__dict__.get("__slots__", ())}
    namespace = dict(cls.__dict__)
    names = tuple(f.name for f in all_fields if f.name not in inherited)
    for name in (*names, "__dict__", "__weakref__"):
        namespace.pop(name, None)  # a default as class attribute would hide its slot
    namespace["__slots__"] = names
    namespace["__qualname__"] = cls.__qualname__  # not in a class's __dict__
    return type(cls)(cls.__name__, cls.__bases__, namespace)  # type: ignore[return-value]


def _define(cls: type, name: str, value: Any) -> None:
    """Set ``name`` on ``cls`` unless its body defines it."""
    if name not in cls.__dict__:
        setattr(cls, name, value)


def _set_hash(cls: type, all_fields: tuple[Field, ...], *, eq: bool, frozen: bool) -> None:
    """Hash as a dataclass's: frozen equal records by their compared fields, mutable
    ones not at all; a class body's own ``__hash__`` is kept, and ``eq=False`` leaves
    the inherited one."""
    own = cls.__dict__.get("__hash__", MISSING)
    explicit = not (own is MISSING or (own is None and "__eq__" in cls.__dict__))
    if not eq or explicit:
        return
    if not frozen:
        cls.__hash__ = None  # type: ignore[assignment]
        return
    key = values_of(tuple(f.name for f in all_fields if f.compare))
    cls.__hash__ = lambda self: hash(key(self))  # type: ignore[method-assign]
