"""The netCDF-4 data model every reader produces and every writer consumes.

Frozen records (:mod:`nczarr.records`), so tests can compare whole datasets with ``==``. Values are
plain Python (no numpy arrays), and equality treats NaN as equal to NaN so that a
round trip of a NaN fill value or attribute compares equal.

Attribute values by type:

* ``char``: ``str`` (the whole character array as text)
* ``string``: ``tuple[str, ...]``
* numeric types: ``tuple[int, ...]`` or ``tuple[float, ...]`` (length >= 1)
"""

from __future__ import annotations

import math
from typing import Any, Literal

from ..records import field, fields, record

__all__ = [
    "NC_TYPES",
    "NUMERIC_TYPES",
    "Attribute",
    "Dimension",
    "Variable",
    "Group",
    "Dataset",
    "same_value",
]

#: netCDF-4 atomic type names nczarr models (no user-defined types).
NUMERIC_TYPES = (
    "byte",
    "ubyte",
    "short",
    "ushort",
    "int",
    "uint",
    "int64",
    "uint64",
    "float",
    "double",
)
NC_TYPES = (*NUMERIC_TYPES, "char", "string")


def same_value(a: Any, b: Any) -> bool:
    """Equality that treats NaN == NaN and recurses into tuples, lists and dicts."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class _NaNEq:
    """Mixin: a record's equality field by field with :func:`same_value`."""

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return all(
            same_value(getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)  # type: ignore[arg-type]
            if f.compare
        )

    __hash__ = None  # type: ignore[assignment]


@record(eq=False)
class Attribute(_NaNEq):
    """A typed netCDF attribute.

    ``json`` keeps, as a 1-tuple, the untyped JSON value a pure Zarr producer wrote
    when the netCDF type cannot hold it as written (``true``, ``null``, an object, a
    nested, empty or mixed list): pure Zarr writers write it back unchanged, the
    NCZarr writer writes ``type``/``value`` and warns. Not part of equality.
    """

    name: str
    type: str
    value: Any
    json: tuple[Any] | None = field(default=None, compare=False)


@record(eq=False)
class Dimension(_NaNEq):
    """A shared dimension defined in a group."""

    name: str
    size: int
    unlimited: bool = False


@record(eq=False)
class Variable(_NaNEq):
    """A netCDF variable backed by one Zarr array.

    ``dimensions`` are dimension FQNs (``"/lat"``, ``"/g/x"``); ``shape`` and
    ``chunks`` are the netCDF shape (``()`` for scalars, even though NCZarr stores a
    scalar as shape ``[1]``). ``compressor`` and ``filters`` are numcodecs-style
    config dicts as the readers normalise them (``nczarr.translate.codecs``: numeric
    strings -> numbers, shuffle ``elementsize`` 0 -> the item size; order kept).
    ``fill_value`` is the decoded Zarr fill value (``None``: no fill).

    Two fields say how the source stores values that netCDF's own Zarr encoding does
    not describe (see :mod:`nczarr.reencode`): ``text_storage`` for a ``string``
    variable whose values are not fixed-width UTF-8 bytes (``"|S<maxstrlen>"``):
    ``"unicode"`` (numpy ``"<U<maxstrlen>"``, UTF-32, what xarray writes) or
    ``"vlen-utf8"`` (variable-length UTF-8, zarr-python's strings; ``filters`` then
    start with numcodecs' ``vlen-utf8``); ``shards`` for a sharded Zarr v3 array: the
    shard shape (each source object holds many ``chunks``, which are the inner chunks).
    ``logical`` says what zarr-python and xarray show where the netCDF type does not:
    ``"bool"`` (a ``ubyte`` array of 0/1 that Zarr stores as ``|b1``/``bool``) or
    ``"bytes"`` (a ``string`` array of fixed-width ``|S<maxstrlen>`` numpy bytes, not
    text); pure Zarr writers keep them, the NCZarr writer encodes them as xarray's
    netcdf4 engine does (``docs/conversion.md``). ``absent_fill`` is what a chunk the
    source does not store holds when that is not ``fill_value`` (None: the fill value):
    zarr-python stores no chunk whose values all equal its ``fill_value`` (0), while
    xarray keeps the netCDF fill value (-7) in a ``_FillValue`` attribute; a reader of
    such a store sees 0 there, so a copy must too (:mod:`nczarr.translate.recode_plan`).
    """

    name: str
    path: str
    type: str
    dimensions: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    fill_value: Any = None
    compressor: dict[str, Any] | None = None
    filters: tuple[dict[str, Any], ...] = ()
    order: Literal["C", "F"] = "C"
    dimension_separator: Literal[".", "/"] = "."
    attributes: dict[str, Attribute] = field(default_factory=dict)
    scalar: bool = False
    maxstrlen: int | None = None
    endian: Literal["little", "big"] = "little"
    text_storage: Literal["unicode", "vlen-utf8"] | None = None
    shards: tuple[int, ...] | None = None
    logical: Literal["bool", "bytes"] | None = None
    absent_fill: Any = None
    #: A sharded array's index as the source wrote it (``index_location`` and
    #: ``index_codecs`` of its ``sharding_indexed`` codec): a Zarr v3 target keeps the
    #: shards verbatim only with the same index. A detail of ``shards``: not compared.
    shard_index: dict[str, Any] | None = field(default=None, compare=False)


@record(eq=False)
class Group(_NaNEq):
    """A netCDF group; ``path`` is its FQN (the root group is ``"/"``)."""

    name: str
    path: str
    dimensions: dict[str, Dimension] = field(default_factory=dict)
    attributes: dict[str, Attribute] = field(default_factory=dict)
    variables: dict[str, Variable] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)

    def walk(self):  # -> Iterator[Group]
        """This group and every descendant, depth first, parents before children."""
        yield self
        for child in self.groups.values():
            yield from child.walk()

    def all_variables(self):  # -> Iterator[Variable]
        """Every variable of this group and its descendants."""
        for group in self.walk():
            yield from group.variables.values()


@record(eq=False)
class Dataset(_NaNEq):
    """A whole dataset: the root group, the layout it was read from, and warnings.

    ``skipped`` lists the FQNs of the source's arrays the reader left out (their data
    type or codecs have no netCDF-4 form; ``warnings`` says why).
    """

    root: Group
    layout: str = "nczarr-v2"
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    #: FQNs of numeric arrays whose producer masks nothing (zarr-python / xarray, Zarr
    #: v2 or v3, no ``_FillValue``) while netCDF4 reading an NCZarr copy masks the type's
    #: default fill: the NCZarr translation warns (:mod:`nczarr.translate.zarr3_fills`).
    #: Not part of equality.
    unmasked_defaults: tuple[str, ...] = field(default=(), compare=False)
    #: Read by xarray's conventions: pure Zarr without ``_NCProperties`` (xarray,
    #: zarr-python, GDAL wrote it), where ``|S<n>`` is bytes and a numeric
    #: ``fill_value`` a missing value. The pure Zarr writers then write no
    #: ``_NCProperties`` either, so that every reader reads a copy, and a copy of the
    #: copy, by the source's conventions. Not part of equality.
    xarray_conventions: bool = field(default=False, compare=False)

    def find_dimension(self, fqn: str) -> Dimension:
        """The dimension with fully qualified name ``fqn`` (``KeyError`` if none)."""
        group_path, _, name = fqn.rpartition("/")
        return self.find_group(group_path or "/").dimensions[name]

    def find_group(self, fqn: str) -> Group:
        """The group with fully qualified name ``fqn`` (``KeyError`` if none)."""
        group = self.root
        for part in [p for p in fqn.split("/") if p]:
            group = group.groups[part]
        return group

    def find_variable(self, fqn: str) -> Variable:
        """The variable with fully qualified name ``fqn`` (``KeyError`` if none)."""
        group_path, _, name = fqn.rpartition("/")
        return self.find_group(group_path or "/").variables[name]
