"""Planning a grown store: several datasets concatenated along one dimension.

Pure: netCDF-4 models and chunk key sets in, a :class:`GrowPlan` out, no I/O. The
same plan serves ``convert([src1, src2, ...], dst, concat_dim=)`` (a new store),
``convert(src, dst, append_dim=)`` and ``to_nczarr(mode="a", append_dim=)`` (the
target is the first part, and its chunks are left where they are).

What the plan decides, and why:

* the parts must agree on everything but the dimension's length: the same
  variables, types and dimensions, the same sizes of every other dimension, the
  same attributes (``combine_attrs="identical"``; ``"override"``: the first part's
  win). A disagreement is refused naming the variable or attribute, before anything
  is written. Variables without the dimension must also hold equal values: the plan
  lists them (:attr:`GrowPlan.compare`), the caller reads and compares them.
* the target is the first part's model with the dimension (and every array along
  it) grown to the sum of the lengths; an unlimited dimension stays unlimited, a
  fixed one stays fixed. Encodings (type, fill value, codecs, chunk shape) are the
  first part's.
* each target chunk of an array along the dimension is either **one source chunk**
  (same encoding and chunk shape, the part starting on a chunk boundary, the target
  chunk's valid region inside the part): its bytes are copied verbatim under the
  shifted key (:attr:`GrowPlan.copies`); or it is **assembled** from the values of
  one or more parts and encoded again (:attr:`GrowPlan.assembled`). A part that
  starts on a chunk boundary after an unaligned one is copied verbatim again.
  Chunks a part does not store (fill values) are not copied.
"""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from ..errors import InvalidModeError, MetadataError
from ..records import record, replace
from .growchunks import Copies, Copy, chunk_key, chunk_plan, grid_of, same_encoding
from .model import Attribute, Dataset, Group, Variable
from .recode_plan import with_maxstrlen

__all__ = [
    "COMBINE_ATTRS",
    "VALUE_ATTRIBUTES",
    "GrowPlan",
    "Copy",
    "Copies",
    "chunk_key",
    "find_dimension",
    "plan_growth",
    "same_encoding",
]

#: How attributes of the parts combine: all equal, or the first part's win.
COMBINE_ATTRS = ("identical", "override")

#: Attributes that say what stored values mean (CF packing, fill, units, time
#: calendar): a variable's must agree in every part, whatever ``combine_attrs`` says,
#: since chunks are copied without being decoded.
VALUE_ATTRIBUTES = frozenset(
    {
        "scale_factor",
        "add_offset",
        "_FillValue",
        "missing_value",
        "units",
        "calendar",
        "_Unsigned",
        "valid_min",
        "valid_max",
        "valid_range",
    }
)


@record
class GrowPlan:
    """What growing a store writes.

    Attributes
    ----------
    dataset
        The target's model (the dimension and the arrays along it grown).
    dimension
        The dimension's FQN.
    offsets, lengths
        Where each part starts along the dimension in the target, and its length
        (arrays of 64-bit ints).
    copies
        Chunks copied verbatim (with shifted keys), grouped by part (:class:`Copies`:
        made as iterated).
    assembled
        ``(array path, chunk coordinates)`` of the target chunks assembled from the
        parts' values and encoded again.
    compare
        FQNs of the variables without the dimension: their values must be equal in
        every part (the caller checks, before writing).
    warnings
        What the combination changed (attributes of later parts dropped by
        ``combine_attrs="override"``).
    """

    dataset: Dataset
    dimension: str
    offsets: Sequence[int]
    lengths: Sequence[int]
    copies: Copies
    assembled: tuple[tuple[str, tuple[int, ...]], ...]
    compare: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @property
    def target_chunk_keys(self) -> Iterator[str]:
        """Every chunk key the plan writes, copies first (made as iterated: a combine of
        thousands of sources holds no key string per chunk)."""
        yield from (c.target_key for c in self.copies)
        for path, coords in self.assembled:
            yield chunk_key(self.dataset.find_variable(path), coords)


def find_dimension(dataset: Dataset, name: str) -> str:
    """The FQN of dimension ``name`` (a bare name: in the root group; or an FQN).

    Raises
    ------
    InvalidModeError
        No such dimension (the message lists the root group's dimensions).
    """
    fqn = name if name.startswith("/") else "/" + name
    try:
        dataset.find_dimension(fqn)
    except KeyError:
        known = ", ".join(sorted(dataset.root.dimensions)) or "none"
        raise InvalidModeError(
            f"no dimension {name!r} to concatenate along (root dimensions: {known})"
        ) from None
    return fqn


def _variables(dataset: Dataset) -> dict[str, Variable]:
    return {v.path: v for v in dataset.root.all_variables()}


def _groups(dataset: Dataset) -> dict[str, Group]:
    return {g.path: g for g in dataset.root.walk()}


def _check_parts(
    parts: Sequence[Dataset], dim: str, names: Sequence[str], combine_attrs: str
) -> list[str]:
    """Refuse parts that disagree on anything but ``dim``'s length; return the warnings
    of ``combine_attrs="override"``."""
    if combine_attrs not in COMBINE_ATTRS:
        raise InvalidModeError(
            f"invalid combine_attrs {combine_attrs!r}: expected one of "
            + ", ".join(map(repr, COMBINE_ATTRS))
        )
    first_vars, first_groups = _variables(parts[0]), _groups(parts[0])
    dropped: list[str] = []
    for i, part in enumerate(parts[1:], 1):
        if part is parts[0]:  # one model read for both (identical metadata): they agree
            continue
        where = f"{names[i]} and {names[0]}"
        find_dimension(part, dim)
        groups = _groups(part)
        if set(groups) != set(first_groups):
            raise InvalidModeError(
                f"cannot combine {where}: groups differ ({sorted(set(groups) ^ set(first_groups))})"
            )
        for path, group in groups.items():
            base = first_groups[path]
            for dname, d in group.dimensions.items():
                fqn = path.rstrip("/") + "/" + dname
                other = base.dimensions.get(dname)
                if other is None:  # named with its variables (a string length: their width)
                    raise InvalidModeError(
                        _missing_dimension(where, fqn, (part, names[i]), (parts[0], names[0]))
                    )
                if fqn != dim and d.size != other.size:
                    raise InvalidModeError(
                        f"cannot combine {where}: dimension {fqn!r} has size {d.size} and "
                        f"{other.size}; only {dim!r} may differ"
                    )
            if set(group.dimensions) != set(base.dimensions):
                raise InvalidModeError(f"cannot combine {where}: dimensions of {path!r} differ")
            dropped += _check_attrs(
                where, path, group.attributes, base.attributes, combine_attrs, group=True
            )
        variables = _variables(part)
        if set(variables) != set(first_vars):
            raise InvalidModeError(
                f"cannot combine {where}: variables differ: "
                + ", ".join(sorted(set(variables) ^ set(first_vars)))
            )
        for path, var in variables.items():
            base = first_vars[path]
            if var.type != base.type or var.dimensions != base.dimensions:
                raise InvalidModeError(
                    f"cannot combine {where}: variable {path!r} is {var.type}{list(var.dimensions)}"
                    f" and {base.type}{list(base.dimensions)}"
                )
            if var.logical != base.logical:  # strings of any storage: text (growparts)
                raise InvalidModeError(
                    f"cannot combine {where}: variable {path!r} stores its values differently"
                )
            if var.text_storage == "vlen-utf8" and base.text_storage != "vlen-utf8":
                raise InvalidModeError(
                    f"cannot combine {where}: variable {path!r} holds variable-length "
                    f"strings and {names[0]} fixed-width ones, too narrow for strings not "
                    "yet read (a first source of variable-length strings, or an NCZarr "
                    "target, takes them)"
                )
            for axis, (n, m) in enumerate(zip(var.shape, base.shape, strict=True)):
                if n != m and var.dimensions[axis] != dim:
                    raise InvalidModeError(
                        f"cannot combine {where}: variable {path!r} has shape "
                        f"{list(var.shape)} and {list(base.shape)}"
                    )
            dropped += _check_attrs(where, path, var.attributes, base.attributes, combine_attrs)
    return dropped


def _missing_dimension(
    where: str, fqn: str, part: tuple[Dataset, str], first: tuple[Dataset, str]
) -> str:
    """Why ``part``'s dimension ``fqn`` is not in ``first`` (each a dataset and its
    name), naming its variables; for the string length of netCDF char variables that
    ``first`` stores as strings (a Zarr ``|S3`` or ``<U3`` array as xarray writes it,
    where netCDF writes ``S1`` with a ``string3`` axis), says so: the two forms are
    not combined."""
    users = [v for v in part[0].root.all_variables() if fqn in v.dimensions]
    strings = []
    for var in users:
        if var.type == "char" and var.dimensions[-1] == fqn and _is_string(first[0], var.path):
            strings.append(f"{var.path!r} ({var.shape[-1]} bytes a value)")
    if strings and len(strings) == len(users):
        return (
            f"cannot combine {where}: {', '.join(strings)} is netCDF char in {part[1]}, "
            f"its last dimension {fqn!r} the string length, and a string variable without "
            f"that dimension in {first[1]} (fixed-width strings as xarray and zarr-python "
            "write them): the two are combined only into NCZarr, where both are char "
            "(a combine with mode='nczarr'); appending to such a store, use the tool "
            "that wrote it"
        )
    of = f" (of {', '.join(repr(v.path) for v in users)})" if users else ""
    return f"cannot combine {where}: dimension {fqn!r}{of} is not in {first[1]}"


def _is_string(dataset: Dataset, path: str) -> bool:
    """Whether ``dataset`` has a ``string`` variable at ``path``."""
    try:
        return dataset.find_variable(path).type == "string"
    except KeyError:
        return False


def _check_attrs(
    where: str,
    path: str,
    attrs: Mapping[str, Attribute],
    base: Mapping[str, Attribute],
    combine_attrs: str,
    *,
    group: bool = False,
) -> list[str]:
    differ = sorted(
        name
        for name in set(attrs) | set(base)
        if not _same_attribute(name, attrs.get(name), base.get(name))
    )
    if not differ:
        return []
    named = ", ".join(f"{path.rstrip('/')}/{name}" if path != "/" else name for name in differ)
    values = [] if group else [n for n in differ if n in VALUE_ATTRIBUTES]
    if values:  # whatever combine_attrs is: offering 'override' would offer a refusal
        raise InvalidModeError(
            f"cannot combine {where}: attribute(s) "
            + ", ".join(f"{path}/{n}" for n in values)
            + " differ; they say what the stored values mean, so no source's can be kept"
        )
    if combine_attrs == "identical":
        raise InvalidModeError(
            f"cannot combine {where}: attribute(s) differ: {named} (pass "
            "combine_attrs='override' to keep the first source's)"
        )
    return [f"attribute(s) {named} of {where} differ: the first source's kept"]


#: CF's default calendar and its synonym: a ``calendar`` attribute saying so equals none.
_DEFAULT_CALENDARS = ("standard", "gregorian")


def _same_attribute(name: str, a: Attribute | None, b: Attribute | None) -> bool:
    if a is not None and b is not None:
        return a == b
    if name == "calendar":
        given = a if a is not None else b
        return given is not None and str(given.value).lower() in _DEFAULT_CALENDARS
    return a is None and b is None


def _grown(dataset: Dataset, dim: str, total: int) -> Dataset:
    """``dataset`` with ``dim`` and every array along it ``total`` long."""
    group_path, _, name = dim.rpartition("/")
    group_path = group_path or "/"

    def visit(group: Group) -> Group:
        dims = group.dimensions
        if group.path == group_path:
            dims = {**dims, name: replace(dims[name], size=total)}
        variables = {
            n: replace(
                v,
                shape=tuple(
                    total if d == dim else s for d, s in zip(v.dimensions, v.shape, strict=True)
                ),
            )
            if dim in v.dimensions
            else v
            for n, v in group.variables.items()
        }
        groups = {n: visit(g) for n, g in group.groups.items()}
        return replace(group, dimensions=dims, variables=variables, groups=groups)

    return replace(dataset, root=visit(dataset.root))


def _widest_text(
    target: Dataset, parts: Sequence[Dataset], names: Sequence[str], first_is_target: bool
) -> Dataset:
    """``target`` with each fixed-width string variable as wide as its widest part's
    (a netCDF-4 file's strings are measured per file, so a later file's may be longer).
    An append's store keeps its width (its chunks stay): a wider source is refused,
    naming the variable, before anything is written."""
    widths: dict[str, int] = {}
    models = {id(p): p for p in parts}.values()  # parts read as one model share it
    for var in target.root.all_variables():
        if var.type != "string" or var.maxstrlen is None:
            continue
        widest = max(_width(p.find_variable(var.path), var) for p in models)
        if widest <= var.maxstrlen:
            continue
        if first_is_target:  # a width the type allows, not the values' (not read yet)
            raise InvalidModeError(
                f"cannot append to {names[0]}: variable {var.path!r} stores strings of at "
                f"most {var.maxstrlen} bytes and a source's type allows {widest}-byte "
                "strings (a width in characters counts 4 bytes each; nothing was changed)"
            )
        widths[var.path.strip("/")] = widest
    return with_maxstrlen(target, widths) if widths else target


def _width(part: Variable, target: Variable) -> int:
    """How wide ``target`` (fixed-width strings) must be for ``part``'s strings: a
    width in characters (UTF-32) is up to 4 bytes a character in UTF-8 bytes."""
    width = part.maxstrlen or 0
    return 4 * width if part.text_storage == "unicode" and target.text_storage is None else width


def _cover(
    covered: bytearray, var: Variable, dim: str, offsets: Sequence[int], coords: tuple[int, ...]
) -> None:
    """Mark the parts that assembled chunk ``coords`` of ``var`` reads."""
    axis = var.dimensions.index(dim)
    n = var.chunks[axis]
    start, stop = coords[axis] * n, min((coords[axis] + 1) * n, var.shape[axis])
    first = bisect.bisect_right(offsets, start) - 1
    last = bisect.bisect_right(offsets, stop - 1) - 1
    for part in range(max(first, 0), last + 1):
        covered[part] = 1


def _check_mapped(
    var: Variable,
    part_vars: Sequence[Mapping[str, Variable]],
    stored: Sequence[frozenset[str] | set[str]],
    covered: bytearray,
    names: Sequence[str],
    first_is_target: bool,
) -> None:
    """Refuse a plan that would leave out every chunk a part stores of ``var``: no
    target chunk is copied from the part or assembled from it, yet the part holds
    chunk objects of ``var`` inside its own grid, or under keys its model does not
    name (planned keys that match none of those listed: the store would read as fill,
    silently). Objects outside the part's grid (stale chunks past its extent) and
    objects that are no chunk key (``README``) are not the part's values."""
    if 0 in var.shape:
        return
    prefix = var.path.strip("/") + "/"
    for part, done in enumerate(covered):
        if done or (first_is_target and part == 0):
            continue
        src = part_vars[part][var.path]
        for key in stored[part]:
            if key.startswith(prefix) and _is_values(key[len(prefix) :], src):
                raise MetadataError(
                    f"cannot combine {names[part]}: it stores chunk {key!r} of variable "
                    f"{var.path!r}, and no chunk of the combined store is made from it (its "
                    "chunk keys do not match the variable's shape: a bug; nothing was written)"
                )


def _is_values(rest: str, src: Variable) -> bool:
    """Whether chunk key ``rest`` (below its array) may hold ``src``'s values: chunk
    coordinates inside its grid, or coordinates of another rank (a key the model does
    not name)."""
    parts = rest.replace("/", ".").split(".")
    if not all(p.isascii() and p.isdigit() for p in parts):
        return False  # no chunk key
    if len(parts) != max(len(src.shape), 1):
        return True
    grid = grid_of(src.shape, src.chunks) if src.shape else [range(1)]
    return all(int(p) in r for p, r in zip(parts, grid, strict=True))


def plan_growth(
    parts: Sequence[Dataset],
    dimension: str,
    stored: Sequence[frozenset[str] | set[str]],
    *,
    names: Sequence[str] | None = None,
    combine_attrs: Literal["identical", "override"] = "identical",
    first_is_target: bool = False,
) -> GrowPlan:
    """Plan concatenating ``parts`` along ``dimension`` (a bare name or an FQN).

    Parameters
    ----------
    parts
        The models of the parts, in order, as their chunks are served (Zarr v2 keys).
    stored
        For each part, the chunk keys it stores (absent chunks are fill values).
    names
        How messages name the parts (URLs).
    first_is_target
        The first part is the target itself (an append): its chunks inside its old
        extent stay where they are; only its partial last chunk is assembled again.

    Raises
    ------
    InvalidModeError
        Fewer than two parts, no such dimension, or parts that disagree (the message
        names the variable, dimension or attribute).
    """
    if len(parts) < 2:
        raise InvalidModeError(f"need at least two datasets to combine, got {len(parts)}")
    if names is None:  # (a sequence made as asked may be given: not copied)
        names = [f"source {i}" for i in range(len(parts))]
    dim = find_dimension(parts[0], dimension)
    warnings = _check_parts(parts, dim, names, combine_attrs)
    # 8 bytes a part (thousands of sources: no int object each)
    lengths = array("q", (p.find_dimension(dim).size for p in parts))
    offsets = array("q", itertools.accumulate((0, *lengths[:-1])))
    target = _widest_text(_grown(parts[0], dim, sum(lengths)), parts, names, first_is_target)
    by_model: dict[int, dict[str, Variable]] = {}  # parts read as one model share it
    part_vars = [by_model.get(id(p)) or by_model.setdefault(id(p), _variables(p)) for p in parts]
    copies = Copies(target, dim, part_vars, offsets, stored, first_is_target)
    assembled: list[tuple[str, tuple[int, ...]]] = []
    compare: list[str] = []
    count = 0
    for var in copies.variables:
        if dim not in var.dimensions:
            compare.append(var.path)
            if not first_is_target:  # the first part's chunks, as they are
                prefix = var.path.strip("/") + "/"
                count += sum(1 for k in stored[0] if k.startswith(prefix))
            continue
        covered = bytearray(len(parts))  # the parts some target chunk of var reads
        for item in chunk_plan(var, part_vars, dim, offsets, stored, copies.caches):
            if not isinstance(item, Copy):  # a target chunk's coordinates: assembled
                assembled.append((var.path.strip("/"), item))
                _cover(covered, var, dim, offsets, item)
                continue
            covered[item.part] = 1
            if not (first_is_target and item.part == 0):
                count += 1
        _check_mapped(var, part_vars, stored, covered, names, first_is_target)
    copies.count = count
    return GrowPlan(
        dataset=target,
        dimension=dim,
        offsets=offsets,
        lengths=lengths,
        copies=copies,
        assembled=tuple(assembled),
        compare=tuple(compare),
        warnings=tuple(warnings),
    )
