"""A record's fields: how one is declared (:func:`field`), listed (:func:`fields`)
and replaced in a new record (:func:`replace`), as :mod:`dataclasses` has them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["FIELDS_ATTR", "MISSING", "Field", "field", "fields", "replace"]

FIELDS_ATTR = "__record_fields__"


class _Missing:
    """The type of :data:`MISSING`."""

    def __repr__(self) -> str:
        return "MISSING"


#: No default (a :class:`Field`'s ``default`` and ``default_factory``).
MISSING: Any = _Missing()


class Field:
    """One field of a record: its name, default or default factory, and whether
    ``__init__`` takes it, ``repr`` shows it and ``==`` compares it."""

    __slots__ = ("compare", "default", "default_factory", "init", "name", "repr")

    def __init__(
        self, default: Any, default_factory: Any, init: bool, repr: bool, compare: bool
    ) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return (
            f"Field(name={self.name!r}, default={self.default!r}, "
            f"default_factory={self.default_factory!r}, init={self.init}, "
            f"repr={self.repr}, compare={self.compare})"
        )


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
) -> Any:
    """A field's options, as the class attribute of its annotation
    (``tags: dict = field(default_factory=dict)``)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, compare)


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order."""
    try:
        return getattr(class_or_instance, FIELDS_ATTR)  # type: ignore[no-any-return]
    except AttributeError:
        raise TypeError(f"{class_or_instance!r} is not a record or a record class") from None


def replace(obj: Any, /, **changes: Any) -> Any:
    """A new record of ``obj``'s class: ``obj``'s field values, ``changes`` instead where
    given (``__post_init__`` runs again; a field ``__init__`` does not take cannot be
    changed)."""
    for f in fields(obj):
        if not f.init:
            if f.name in changes:
                raise ValueError(
                    f"field {f.name!r} is not an __init__ argument: replace() cannot set it"
                )
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)
