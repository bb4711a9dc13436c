"""NCZarr metadata of every generation -> the netCDF-4 model.

Generations (``conventions`` module docstring): V1 separate ``.ncz*`` objects,
V2 keys inside ``.zgroup``/``.zarray`` (upper or lower case), V2 in ``.zattrs``.
Each ``_nczarr_*`` entry is looked up per object, ``.zattrs`` first, so a store
half-way through migration reads correctly.

Walk: groups, arrays and dimensions come from the group lists (netcdf-c never
searches an NCZarr group); arrays on disk but not listed are invisible, as in
netcdf-c. A group without a list falls back to the pure-Zarr rules for its
children; a listed array without NCZarr array metadata gets its dimensions by
the pure-Zarr rules (netcdf-c fails the whole open there); both with a warning.
Dimension references are FQNs resolved against dimensions declared anywhere in
the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError
from ..keys import is_node_name, join_key
from ..records import field, record, replace
from .attrs import json_text_safe
from .conventions import (
    ARRAY_KEYS,
    ARRAYS_ALT,
    DIMENSIONS_ALT,
    DIMREFS_ALT,
    GROUP_KEYS,
    GROUPS_ALT,
    LAYOUT_V1,
    TYPES_KEY,
    V1_ARRAY_NAMES,
    V1_ATTR_NAMES,
    V1_GROUP,
    ZARRAY,
    ZATTRS,
    ZGROUP,
)
from .detect import FormatInfo, nczarr_key
from .model import Attribute, Dataset, Dimension, Group, Variable
from .tree import (
    TreeBuilder,
    attribute_types,
    decode_attributes,
    discover_nodes,
    group_fqn,
)

__all__ = ["read_nczarr", "get_alt", "dimension_entries", "is_length"]


def dimension_entries(dims: Any) -> list[tuple[Dimension, None] | tuple[None, str]]:
    """The dimensions an NCZarr group declares (``"dimensions"``: an object of name ->
    size or ``{"size", "unlimited"}``, or a Zarr v3 draft's list of ``{"name", "size",
    "unlimited"}``), each as ``(Dimension, None)`` or, where an entry is not one,
    ``(None, what is wrong)``. ``unlimited`` may be a number, a boolean or netcdf-c's
    text (``"1"``, ``"true"``, ``"yes"``). The reader refuses a wrong entry; the checks
    of dimension references skip it."""
    if isinstance(dims, list):  # Zarr v3 drafts: [{"name", "size", "unlimited"}]
        entries: list[tuple[Any, Any]] = []
        out: list[tuple[Dimension, None] | tuple[None, str]] = []
        for item in dims:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                entries.append((item["name"], item))
            else:
                out.append((None, f"invalid dimension entry {item!r}"))
        return out + [_dimension(name, spec) for name, spec in entries]
    if not isinstance(dims, dict):
        return [(None, f"dimensions must be a JSON object, got {dims!r}")]
    return [_dimension(name, spec) for name, spec in dims.items()]


def is_length(value: Any) -> bool:
    """Whether a JSON value is a length: a non-negative integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _dimension(name: Any, spec: Any) -> tuple[Dimension, None] | tuple[None, str]:
    if not isinstance(name, str) or not name or "/" in name:
        return None, f"invalid dimension name {name!r}"
    size, unlimited = (
        (spec.get("size"), spec.get("unlimited", 0)) if isinstance(spec, dict) else (spec, 0)
    )
    if not is_length(size):
        return None, (
            f"dimension {name!r} must have a non-negative integer size, got {json_text_safe(spec)}"
        )
    if isinstance(unlimited, str):
        unlimited = unlimited.strip().lower() in ("1", "true", "yes")
    return Dimension(name, size, bool(unlimited)), None


def get_alt(d: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    """``d[name]`` for the first spelling in ``names`` present, case-insensitively."""
    for name in names:
        if name in d:
            return d[name]
    folded = {k.casefold(): v for k, v in d.items() if isinstance(k, str)}
    for name in names:
        if name.casefold() in folded:
            return folded[name.casefold()]
    return None


@record(frozen=False)
class _Plan:
    prefix: str
    listed: bool
    arrays: list[str]
    groups: list[_Plan] = field(default_factory=list)


class _NCZarrReader:
    def __init__(self, meta: Mapping[str, Any], info: FormatInfo) -> None:
        self.meta = meta
        self.v1 = info.layout == LAYOUT_V1
        self.builder = TreeBuilder(meta, nczarr=True)
        self._nodes: dict[str, Any] | None = None

    # ------------------------------------------------------------------ lookups
    def _v1_object(self, prefix: str, names: tuple[str, ...]) -> tuple[Any, str | None]:
        for name in names:
            key = join_key(prefix, name)
            if key in self.meta:
                return self.meta[key], key
        return None, None

    def group_list(self, prefix: str) -> tuple[Any, str | None]:
        if self.v1:
            value, key = self._v1_object(prefix, (V1_GROUP,))
            if value is not None:
                return value, key
        return nczarr_key(self.meta, prefix, GROUP_KEYS, ZGROUP)

    def array_info(self, prefix: str) -> tuple[Any, str | None]:
        if self.v1:
            value, key = self._v1_object(prefix, V1_ARRAY_NAMES)
            if value is not None:
                return value, key
        return nczarr_key(self.meta, prefix, ARRAY_KEYS, ZARRAY)

    def types(self, prefix: str, obj: str) -> Mapping[str, Any] | None:
        if self.v1:
            value, key = self._v1_object(prefix, V1_ATTR_NAMES)
            if value is not None:
                if not isinstance(value, dict) or not isinstance(value.get(TYPES_KEY, {}), dict):
                    raise MetadataError(f"{key!r}: must be {{'types': {{...}}}}, got {value!r}")
                return value.get(TYPES_KEY)
        return attribute_types(self.meta, prefix, obj)

    def nodes(self) -> dict[str, Any]:
        if self._nodes is None:
            self._nodes, warnings = discover_nodes(self.meta)
            self.builder.warnings.extend(warnings)
        return self._nodes

    # ------------------------------------------------------------------ pass 1
    def scan(self, prefix: str) -> _Plan:
        """Read the group lists below ``prefix`` and declare every dimension."""
        fqn = group_fqn(prefix)
        self.builder.dims.setdefault(fqn, {})
        content, where = self.group_list(prefix)
        if content is None:
            return self._scan_unlisted(prefix)
        if not isinstance(content, dict):
            raise MetadataError(f"{where!r}: the NCZarr group entry must be a JSON object")
        self._declare_dims(fqn, get_alt(content, DIMENSIONS_ALT), where)
        arrays = _names(get_alt(content, ARRAYS_ALT), "arrays", where)
        groups = _names(get_alt(content, (*GROUPS_ALT, "subgroups")), "groups", where)
        for name in arrays:
            if join_key(join_key(prefix, name), ZARRAY) not in self.meta:
                raise MetadataError(
                    f"{where!r} lists array {name!r} but "
                    f"{join_key(join_key(prefix, name), ZARRAY)!r} does not exist"
                )
        plan = _Plan(prefix, True, arrays)
        for name in groups:
            child = join_key(prefix, name)
            if not any(join_key(child, o) in self.meta for o in (ZGROUP, ZATTRS, V1_GROUP)):
                raise MetadataError(
                    f"{where!r} lists group {name!r} but {child!r} has no {ZGROUP} or {ZATTRS}"
                )
            plan.groups.append(self.scan(child))
        return plan

    def _scan_unlisted(self, prefix: str) -> _Plan:
        node = self.nodes().get(prefix)
        children = node.children if node is not None else []
        self.builder.warnings.append(
            f"group {group_fqn(prefix)!r} has no NCZarr group metadata: its content was "
            "found by listing and read with the pure Zarr rules"
        )
        plan = _Plan(prefix, False, [])
        for child in children:
            child_prefix = join_key(prefix, child)
            if self.nodes()[child_prefix].kind == "array":
                plan.arrays.append(child)
            else:
                plan.groups.append(self.scan(child_prefix))
        return plan

    def _declare_dims(self, fqn: str, dims: Any, where: str) -> None:
        if dims is None:
            return
        for dim, problem in dimension_entries(dims):
            if problem is not None:
                raise MetadataError(f"{where!r}: {problem}")
            self.builder.add_dimension(fqn, dim, key=where)

    # ------------------------------------------------------------------ pass 2
    def build(self, plan: _Plan) -> Group:
        prefix = plan.prefix
        fqn = group_fqn(prefix)
        attributes = decode_attributes(
            self.meta.get(join_key(prefix, ZATTRS)),
            self.types(prefix, ZGROUP),
            key=join_key(prefix, ZATTRS),
        )
        variables: dict[str, Variable] = {}
        for name in plan.arrays:
            child = join_key(prefix, name)
            read = self.variable if plan.listed else self.builder.pure_variable
            variable = self.builder.isolated(child, read, fqn, child, name)
            if variable is not None:
                variables[name] = variable
        groups = {}
        for sub in plan.groups:
            group = self.build(sub)
            groups[group.name] = group
        name = prefix.rsplit("/", 1)[-1] if prefix else "/"
        return Group(name, fqn, {}, attributes, variables, groups)

    def variable(self, group: str, prefix: str, name: str) -> Variable | None:
        builder = self.builder
        spec = builder.parse_or_skip(prefix)
        if spec is None:
            return None
        zattrs = self.meta.get(join_key(prefix, ZATTRS))
        info, where = self.array_info(prefix)
        if info is None:
            builder.warnings.append(
                f"array {group_fqn(prefix)!r} has no NCZarr array metadata: dimensions "
                "taken from _ARRAY_DIMENSIONS or made anonymous"
            )
            dims, scalar = builder.pure_dimensions(group, prefix, spec, zattrs)
        else:
            dims, scalar = self._referenced_dimensions(group, prefix, info, where, spec, zattrs)
        attributes: dict[str, Attribute] = decode_attributes(
            zattrs,
            self.types(prefix, ZARRAY),
            key=join_key(prefix, ZATTRS),
            var_type=spec.dtype.nc_type,
        )
        return builder.make_variable(name, prefix, spec, dims, scalar, attributes)

    def _referenced_dimensions(
        self, group: str, prefix: str, info: Any, where: str | None, spec: Any, zattrs: Any
    ) -> tuple[tuple[str, ...], bool]:
        """Dimension FQNs and the scalar flag from the array's NCZarr array metadata; if
        that is malformed (not an object, references that are not a list of names of
        declared dimensions, one per axis, of the array's lengths), from
        ``_ARRAY_DIMENSIONS`` or anonymous, as for an array without NCZarr array
        metadata, with a warning naming the array and what is wrong.

        netcdf-c refuses the whole store there; one odd array never fails a whole
        store here (README, "Read any layout"), and its data are read as zarr-python
        reads them.
        """
        builder = self.builder
        count = len(builder.warnings)
        try:
            return self._dimensions(info, where or prefix, spec)
        except MetadataError as exc:
            del builder.warnings[count:]
            dims, scalar = builder.pure_dimensions(group, prefix, spec, zattrs)
            if not scalar and any(self._size(f) < n for f, n in zip(dims, spec.shape, strict=True)):
                # _ARRAY_DIMENSIONS names the unlimited dimension the references did, which
                # is shorter than the array: no reading of it (the caller skips the array)
                raise exc from None
            builder.warnings.append(
                f"array {group_fqn(prefix)!r}: {exc}: dimensions taken from "
                "_ARRAY_DIMENSIONS or made anonymous, as without NCZarr array metadata "
                "(netcdf-c refuses the whole store)"
            )
            return dims, scalar

    def _size(self, fqn: str) -> int:
        """The length of the dimension declared at ``fqn``."""
        group, _, name = fqn.rpartition("/")
        return self.builder.dims[group or "/"][name].size

    def _dimensions(self, info: Any, where: str, spec: Any) -> tuple[tuple[str, ...], bool]:
        if not isinstance(info, dict):
            raise MetadataError(f"{where!r}: the NCZarr array entry must be a JSON object")
        refs = get_alt(info, DIMREFS_ALT)
        refs = [] if refs is None else refs
        if not isinstance(refs, list):
            raise MetadataError(f"{where!r}: dimension references must be a list, got {refs!r}")
        scalar_flag = info.get("scalar")
        scalar = bool(scalar_flag) and scalar_flag not in ("0", "false")
        scalar = scalar or info.get("storage") == "scalar" or (not spec.shape and not refs)
        if scalar:
            if refs:
                raise MetadataError(
                    f"{where!r}: a scalar array cannot have dimension references {refs!r}"
                )
            if spec.shape not in ((), (1,)):
                raise MetadataError(
                    f"{where!r}: a scalar array must have shape [1] or [], got {list(spec.shape)}"
                )
            return (), True
        if len(refs) != len(spec.shape):
            raise MetadataError(
                f"{where!r}: {len(refs)} dimension reference(s) {json_text_safe(refs)} for an "
                f"array of rank {len(spec.shape)} (shape {list(spec.shape)})"
            )
        fqns = []
        for ref, size in zip(refs, spec.shape, strict=True):
            dim, fqn = self._resolve(ref, where)
            if dim.unlimited and dim.size < size:
                raise MetadataError(
                    f"{where!r}: unlimited dimension {fqn!r} has length {dim.size}, shorter "
                    f"than the array's shape {list(spec.shape)} (netcdf-c refuses such a "
                    "store: NetCDF: Invalid dimension size)"
                )
            if dim.unlimited and dim.size > size:
                self.builder.warnings.append(
                    f"{where!r}: unlimited dimension {fqn!r} has length {dim.size} but the "
                    f"array's shape is {list(spec.shape)}; read as records past the array's "
                    "end holding the fill value (netcdf-c refuses such a store: NetCDF: "
                    "Invalid dimension size)"
                )
            if not dim.unlimited and dim.size != size:
                raise MetadataError(
                    f"{where!r}: dimension {fqn!r} has length {dim.size} but the array's "
                    f"shape is {list(spec.shape)}"
                )
            fqns.append(fqn)
        return tuple(fqns), False

    def _resolve(self, ref: Any, where: str) -> tuple[Dimension, str]:
        if not isinstance(ref, str) or not ref.strip("/"):
            raise MetadataError(f"{where!r}: invalid dimension reference {ref!r}")
        path = ref if ref.startswith("/") else "/" + ref
        group, _, name = path.rpartition("/")
        group = group or "/"
        dim = self.builder.dims.get(group, {}).get(name)
        if dim is None:
            raise MetadataError(
                f"{where!r}: dimension reference {ref!r} names no declared dimension"
            )
        return dim, path


def _names(value: Any, what: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(is_node_name(v) for v in value):
        raise MetadataError(
            f"{where!r}: {what} must be a list of names, got {json_text_safe(value)}"
        )
    return list(dict.fromkeys(value))


def read_nczarr(meta: Mapping[str, Any], info: FormatInfo) -> Dataset:
    """Read NCZarr metadata (layouts ``nczarr-v1``, ``nczarr-v2-keys``, ``nczarr-v2``).

    Parameters
    ----------
    meta : Mapping
        Loaded metadata (see :func:`nczarr.load.load_metadata`); not modified.
    info : FormatInfo
        Detection result; ``info.layout`` selects the V1 object names and is
        recorded in the returned dataset.

    Raises
    ------
    MetadataError, DimensionConflictError
        Malformed metadata, naming the key and what is wrong.
    """
    reader = _NCZarrReader(meta, info)
    plan = reader.scan("")
    root = reader.build(plan)
    root = _attach_dims(root, reader.builder.dims)
    return Dataset(root, info.layout, tuple(reader.builder.warnings), tuple(reader.builder.skipped))


def _attach_dims(group: Group, dims: Mapping[str, Mapping[str, Dimension]]) -> Group:
    children = {k: _attach_dims(g, dims) for k, g in group.groups.items()}
    return replace(group, dimensions=dict(dims.get(group.path, {})), groups=children)
