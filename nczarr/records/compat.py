"""A record as a dataclass to whoever asks: ``__dataclass_fields__`` (read by
``dataclasses.fields``/``replace``/``asdict``/``is_dataclass``, pytest, dask) and
``__signature__`` (``inspect.signature``, ``help``), each made, importing what it
needs, the first time it is read; and ``copy.replace`` (Python 3.13+)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .fields import MISSING, fields, replace

__all__ = ["OnFirstRead", "dataclass_fields", "replace_method", "signature"]


class OnFirstRead:
    """A class attribute that ``make(cls)`` makes the first time it is read on ``cls``
    (or an instance of it), then kept on that class."""

    def __init__(self, name: str, make: Callable[[type], Any]) -> None:
        self._name, self._make = name, make

    def __get__(self, obj: Any, owner: type) -> Any:
        value = self._make(owner)
        setattr(owner, self._name, value)
        return value


def _annotations(cls: type) -> dict[str, Any]:
    """Every field's annotation, a base's first (strings, as the modules write them)."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        found.update(klass.__dict__.get("__annotations__", {}))  # noqa: RUF063 - inspect is what records do not import
    return found


def dataclass_fields(cls: type) -> dict[str, Any]:
    """``__dataclass_fields__``: the record's fields as :mod:`dataclasses` describes
    them, so that its functions (``fields``, ``replace``, ``asdict``, ``is_dataclass``)
    take records."""
    import dataclasses

    annotations = _annotations(cls)
    made = {}
    for f in fields(cls):
        spec = dataclasses.field(
            default=dataclasses.MISSING if f.default is MISSING else f.default,
            default_factory=(
                dataclasses.MISSING if f.default_factory is MISSING else f.default_factory
            ),
            init=f.init,
            repr=f.repr,
            compare=f.compare,
        )
        spec.name, spec.type = f.name, annotations.get(f.name, Any)
        spec._field_type = dataclasses._FIELD  # type: ignore[attr-defined] # what fields() keeps
        made[f.name] = spec
    return made


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


def signature(cls: type) -> Any:
    """``__signature__``: ``__init__``'s parameters, as a dataclass's (for ``help``,
    ``inspect.signature`` and what builds objects from signatures)."""
    import inspect

    annotations = _annotations(cls)
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [
        inspect.Parameter(
            f.name,
            kind,
            default=(
                f.default
                if f.default is not MISSING
                else _Factory()
                if f.default_factory is not MISSING
                else inspect.Parameter.empty
            ),
            annotation=annotations.get(f.name, inspect.Parameter.empty),
        )
        for f in fields(cls)
        if f.init
    ]
    return inspect.Signature(parameters, return_annotation=None)


def replace_method(self: Any, /, **changes: Any) -> Any:
    """``copy.replace(record, ...)`` (Python 3.13+): :func:`replace`."""
    return replace(self, **changes)
