"""What pure-Zarr producers write that netCDF cannot type, in the one form NCZarr writes.

Pure functions over the model, applied by the dispatcher before the NCZarr writer
(``docs/conversion.md``, "Producers' conventions"). Each change is what xarray's
netcdf4 engine writes for the same value, so xarray reads the NCZarr copy back as it
read the source, and each is announced by a warning naming the variable or attribute:

* a fixed-bytes array (``Variable.logical == "bytes"``, ``|S<n>``) becomes ``char``
  with a string-length dimension ``string<n>``: the very chunk bytes (under keys with
  one more coordinate, see :class:`nczarr.readthrough.TrailingAxis`), and xarray joins
  the characters into ``S<n>`` bytes again;
* a ``bool`` array (``Variable.logical == "bool"``, stored as 0/1 bytes) becomes
  ``byte`` with the attribute ``dtype = "bool"``: the very chunk bytes, and xarray's
  ``BooleanCoder`` decodes bool again (netCDF readers see 0 and 1);
* an attribute whose JSON value has no netCDF type (``true``, ``null``, an object, a
  nested, empty or mixed list; ``Attribute.json``) is written as its netCDF reading:
  booleans as ``ubyte`` 0/1, everything else as ``char`` holding the JSON text (which
  netcdf-c's own JSON convention stores as the JSON value itself).
"""

from __future__ import annotations

from ..records import replace
from .attrs import exact_doubles, json_text_safe
from .model import Attribute, Dataset, Dimension, Group, Variable

__all__ = ["bool_as_byte", "bytes_as_char", "nczarr_forms", "bytes_as_text"]

#: The attribute xarray's netcdf4 engine writes on a bool variable stored as int8.
BOOL_MARKER = "dtype"


def nczarr_forms(dataset: Dataset) -> tuple[Dataset, list[str]]:
    """``dataset`` with bool arrays and untyped JSON attributes in their NCZarr form,
    and one warning per change (``dataset`` is returned as is when nothing changes)."""
    warnings: list[str] = []
    root = _group(dataset.root, warnings)
    if not warnings:
        return dataset, warnings
    return replace(dataset, root=root), warnings


def _group(group: Group, warnings: list[str]) -> Group:
    attributes = _attributes(group.attributes, group.path, warnings)
    dims = dict(group.dimensions)
    variables = {n: _variable(v, dims, warnings) for n, v in group.variables.items()}
    groups = {n: _group(g, warnings) for n, g in group.groups.items()}
    return replace(
        group, dimensions=dims, attributes=attributes, variables=variables, groups=groups
    )


def bool_as_byte(dataset: Dataset) -> Dataset:
    """``dataset`` with its bool arrays in their NCZarr form (``byte`` with the attribute
    ``dtype = "bool"``; the very chunk bytes), without a warning: what an NCZarr store
    holds of an array a source holds as bool, so that appending that source to the
    store compares like with like (its NCZarr copy's warning said the change already)."""

    def group(g: Group) -> Group:
        variables = {
            n: _variable(v, {}, []) if v.logical == "bool" else v for n, v in g.variables.items()
        }
        return replace(g, variables=variables, groups={n: group(c) for n, c in g.groups.items()})

    if not any(v.logical == "bool" for v in dataset.root.all_variables()):
        return dataset
    return replace(dataset, root=group(dataset.root))


def bytes_as_char(dataset: Dataset, paths: set[str]) -> Dataset:
    """``dataset`` with the fixed-bytes variables at ``paths`` (FQNs) in their NCZarr
    ``char`` form (a ``string<n>`` dimension added), as a translated view serves them
    (the chunk keys with the extra coordinate, :class:`nczarr.readthrough.TrailingAxis`):
    a combine plans and reads a part's chunks from this model, so its chunk keys are
    those the view lists (the warning is the view's, said when it was written)."""

    def group(g: Group) -> Group:
        dims = dict(g.dimensions)
        variables = {
            n: _as_char(v, dims, []) if v.path in paths and v.logical == "bytes" else v
            for n, v in g.variables.items()
        }
        groups = {n: group(c) for n, c in g.groups.items()}
        return replace(g, dimensions=dims, variables=variables, groups=groups)

    return replace(dataset, root=group(dataset.root)) if paths else dataset


def bytes_as_text(dataset: Dataset, paths: set[str]) -> tuple[Dataset, list[str]]:
    """``dataset`` with the fixed-bytes variables at ``paths`` (FQNs) written as netCDF
    strings (their chunks are re-encoded, so the char form's extra chunk coordinate
    cannot be shown; chunks under Zarr v3 keys can: ``TrailingAxis`` maps their
    ``ChunkKeys``), and one warning per such variable."""
    warnings: list[str] = []

    def group(g: Group) -> Group:
        variables = {}
        for n, v in g.variables.items():
            if v.path in paths and v.logical == "bytes":
                warnings.append(
                    f"variable {v.path!r}: fixed-width bytes |S{v.maxstrlen} are written as a "
                    "netCDF string (not as char: its chunks are re-encoded), so xarray reads "
                    "str there, not bytes"
                )
                v = replace(v, logical=None)
            variables[n] = v
        return replace(g, variables=variables, groups={n: group(c) for n, c in g.groups.items()})

    if not paths:
        return dataset, warnings
    root = group(dataset.root)
    return (replace(dataset, root=root), warnings) if warnings else (dataset, warnings)


def _string_dimension(var: Variable, dims: dict[str, Dimension]) -> str:
    """The name of the ``string<n>`` dimension in ``var``'s group (added if new)."""
    width = var.maxstrlen or 1
    name = f"string{width}"
    n = 0
    while name in dims and dims[name].size != width:
        n += 1
        name = f"string{width}_{n}"
    dims.setdefault(name, Dimension(name, width))
    return name


def _as_char(var: Variable, dims: dict[str, Dimension], warnings: list[str]) -> Variable:
    name = _string_dimension(var, dims)
    parent = var.path.rpartition("/")[0]
    width = var.maxstrlen or 1
    warnings.append(
        f"variable {var.path!r}: fixed-width bytes |S{width} are written as netCDF char with "
        f"the dimension {name!r}, as xarray's netcdf4 engine writes them: xarray reads "
        f"S{width} bytes again, netCDF readers read characters"
    )
    return replace(
        var,
        type="char",
        logical=None,
        maxstrlen=None,
        dimensions=(*var.dimensions, f"{parent}/{name}"),
        shape=(*var.shape, width),
        chunks=(*var.chunks, width),
        scalar=False,
        fill_value=None,
    )


def _variable(var: Variable, dims: dict[str, Dimension], warnings: list[str]) -> Variable:
    attributes = _attributes(var.attributes, var.path, warnings)
    if var.logical == "bytes":
        return _as_char(replace(var, attributes=attributes), dims, warnings)
    if var.logical != "bool":
        return replace(var, attributes=attributes)
    if BOOL_MARKER not in attributes:
        attributes = {**attributes, BOOL_MARKER: Attribute(BOOL_MARKER, "char", "bool")}
    warnings.append(
        f"variable {var.path!r}: bool is written as netCDF byte (0/1) with the attribute "
        'dtype = "bool", as xarray\'s netcdf4 engine writes it: xarray reads bool again, '
        "netCDF readers read 0 and 1"
    )
    return replace(var, type="byte", logical=None, attributes=attributes)


def _attributes(
    attributes: dict[str, Attribute], where: str, warnings: list[str]
) -> dict[str, Attribute]:
    out = {}
    for name, attr in attributes.items():
        if attr.json is not None and not exact_doubles(attr.json[0]):
            shown = attr.value if attr.type == "char" else list(attr.value)
            warnings.append(
                f"attribute {name!r} of {where!r}: the JSON value "
                f"{json_text_safe(attr.json[0])} has no netCDF type; written as {attr.type} "
                f"{json_text_safe(shown)}"
            )
        if attr.json is not None:
            attr = replace(attr, json=None)
        out[name] = attr
    return out
