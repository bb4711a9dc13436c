"""Value classes that cost nothing to define: ``@record``, nczarr's dataclass.

Why not :mod:`dataclasses` itself: on Python 3.11-3.13, ``@dataclass`` writes each
class's ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` (and, frozen,
``__setattr__``/``__delattr__``) as source text and compiles it with ``exec`` when the
module is imported, ~4 M instructions (~1 ms) a frozen class, and ``import
dataclasses`` loads :mod:`inspect` (with ``ast``, ``dis``, ``tokenize``): ~38 M more.
The ``nczarr`` command converting a ``.nc`` file defined 32 such classes before it
copied a byte: 165 M of the 383 M instructions of its whole start (callgrind; a third
of what it paid above ``cp`` for 400 MB, docs/performance.md). ``@record`` builds the
same methods as closures over the class's field list instead: defining a class costs
~10 us, and an instance about what a frozen dataclass's does (1.5 us against 1.2 us
for five fields). Compiled-once alternatives were no better: ``typing.NamedTuple``
classes are tuples (iterable, equal to other tuples), with no default factories, no
``__post_init__`` and no mutable form.

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
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

__all__ = [
    "MISSING",
    "Field",
    "FrozenInstanceError",  # noqa: F822 - dataclasses', imported when named (__getattr__)
    "field",
    "fields",
    "record",
    "replace",
]

T = TypeVar("T", bound=type)

_FIELDS = "__record_fields__"


class _Missing:
    """The type of :data:`MISSING`."""

    def __repr__(self) -> str:
        return "MISSING"


#: No default (a :class:`Field`'s ``default`` and ``default_factory``).
MISSING: Any = _Missing()


def __getattr__(name: str) -> Any:
    """``FrozenInstanceError``: :class:`dataclasses.FrozenInstanceError` (an
    ``AttributeError``), imported when first named."""
    if name == "FrozenInstanceError":
        import dataclasses

        return dataclasses.FrozenInstanceError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _frozen(message: str) -> Exception:
    import dataclasses  # an assignment to a frozen record: the error path only

    return dataclasses.FrozenInstanceError(message)


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
        return getattr(class_or_instance, _FIELDS)  # type: ignore[no-any-return]
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
        return _build(cls, frozen=frozen, eq=eq, repr=repr, slots=slots)

    return wrap if cls is None else wrap(cls)


# ---------------------------------------------------------------- building a class


def _build(cls: T, *, frozen: bool, eq: bool, repr: bool, slots: bool) -> T:
    all_fields = _collect(cls)
    if slots:
        cls = _with_slots(cls, all_fields)
    setattr(cls, _FIELDS, all_fields)
    _define(cls, "__match_args__", tuple(f.name for f in all_fields if f.init))
    _define(cls, "__init__", _make_init(cls, all_fields, slots))
    if repr:
        _define(cls, "__repr__", _make_repr(all_fields))
    if eq:
        _define(cls, "__eq__", _make_eq(all_fields))
    _set_hash(cls, all_fields, eq=eq, frozen=frozen)
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in cls.__dict__:
                raise TypeError(f"cannot overwrite {name} of frozen record {cls.__qualname__}")
        names = frozenset(f.name for f in all_fields)
        cls.__setattr__ = _frozen_setattr(cls, names)  # type: ignore[method-assign,assignment]
        cls.__delattr__ = _frozen_delattr(cls, names)  # type: ignore[method-assign,assignment]
        if slots:
            _define(cls, "__getstate__", _slot_getstate(all_fields))
            _define(cls, "__setstate__", _slot_setstate(all_fields))
    _define(cls, "__replace__", _replace_method)
    _define(cls, "__dataclass_fields__", _OnFirstRead("__dataclass_fields__", _dataclass_fields))
    _define(cls, "__signature__", _OnFirstRead("__signature__", _signature))
    return cls


def _collect(cls: type) -> tuple[Field, ...]:
    """The fields of ``cls``: its bases' (records), then its own annotations."""
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        if "__dataclass_fields__" in base.__dict__ and _FIELDS not in base.__dict__:
            # a dataclass, not a record: its fields would be lost
            raise TypeError(
                f"record {cls.__qualname__} cannot extend dataclass {base.__qualname__}"
            )
        for f in base.__dict__.get(_FIELDS, ()):
            found[f.name] = f
    # not inspect.get_annotations: importing inspect is what this module avoids
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(value, MISSING, True, True, True)
        f.name = name
        if isinstance(f.default, list | dict | set):
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
    key = _values(tuple(f.name for f in all_fields if f.compare))
    cls.__hash__ = lambda self: hash(key(self))  # type: ignore[method-assign]


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of the attributes ``names`` of an object (``attrgetter`` returns a
    bare value for one name)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    if not names:
        return lambda obj: ()
    return attrgetter(*names)  # type: ignore[return-value]


# ---------------------------------------------------------------- a dataclass to others


class _OnFirstRead:
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
        found.update(klass.__dict__.get("__annotations__", {}))  # noqa: RUF063 - see _collect
    return found


def _dataclass_fields(cls: type) -> dict[str, Any]:
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


def _signature(cls: type) -> Any:
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


def _replace_method(self: Any, /, **changes: Any) -> Any:
    """``copy.replace(record, ...)`` (Python 3.13+): :func:`replace`."""
    return replace(self, **changes)


# ---------------------------------------------------------------- the methods


def _make_init(cls: type, all_fields: tuple[Field, ...], slots: bool) -> Callable[..., None]:
    init = tuple((f.name, f.default, f.default_factory) for f in all_fields if f.init)
    names = tuple(name for name, _, _ in init)
    unset = tuple(
        (f.name, f.default, f.default_factory)
        for f in all_fields
        if not f.init and (f.default is not MISSING or f.default_factory is not MISSING)
    )
    count, qualname = len(init), cls.__qualname__
    post_init = getattr(cls, "__post_init__", None)
    setters = (
        {name: getattr(cls, name).__set__ for name in (f.name for f in all_fields)}
        if slots
        else None
    )

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
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
        for name, default, factory in unset:
            values[name] = default if default is not MISSING else factory()
        if setters is None:
            self.__dict__.update(values)
        else:
            for name, value in values.items():
                setters[name](self, value)
        if post_init is not None:
            self.__post_init__()

    __init__.__qualname__ = f"{qualname}.__init__"
    return __init__


def _make_repr(all_fields: tuple[Field, ...]) -> Callable[[Any], str]:
    shown = tuple(f.name for f in all_fields if f.repr)

    def __repr__(self: Any) -> str:
        body = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({body})"

    return __repr__


def _make_eq(all_fields: tuple[Field, ...]) -> Callable[[Any, Any], Any]:
    key = _values(tuple(f.name for f in all_fields if f.compare))

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)  # as tuples: an identical NaN is equal, as there

    return __eq__


def _frozen_setattr(cls: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise _frozen(f"cannot assign to field {name!r} of {type(self).__qualname__}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _frozen_delattr(cls: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise _frozen(f"cannot delete field {name!r} of {type(self).__qualname__}")
        super(cls, self).__delattr__(name)

    return __delattr__


def _slot_getstate(all_fields: tuple[Field, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """Pickling a frozen slotted record: its field values (unpickling cannot assign them
    through the frozen ``__setattr__``)."""
    key = _values(tuple(f.name for f in all_fields))
    return lambda self: key(self)


def _slot_setstate(all_fields: tuple[Field, ...]) -> Callable[[Any, tuple[Any, ...]], None]:
    names = tuple(f.name for f in all_fields)

    def __setstate__(self: Any, state: tuple[Any, ...]) -> None:
        for name, value in zip(names, state, strict=True):
            object.__setattr__(self, name, value)

    return __setstate__
