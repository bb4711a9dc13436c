"""Pure Zarr v2 metadata -> the netCDF-4 model (rules in :mod:`~nczarr.translate.tree`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import UnsupportedError
from ..keys import join_key
from .conventions import LAYOUT_ZARR, NCPROPERTIES, ZARR_JSON, ZATTRS
from .detect import FormatInfo, netcdf_version
from .model import Dataset, Group, Variable
from .tree import Node, TreeBuilder, discover_nodes, finish_dims, group_fqn, renamed_variable

__all__ = ["read_zarr2", "written_by_netcdf_c"]


def read_zarr2(
    meta: Mapping[str, Any], info: FormatInfo | None = None, *, name: str = "data"
) -> Dataset:
    """Read pure Zarr v2 metadata into the netCDF-4 model.

    Parameters
    ----------
    meta : Mapping
        Loaded metadata (see :func:`nczarr.load.load_metadata`); not modified.
    info : FormatInfo, optional
        Detection result; only its layout is recorded.
    name : str
        Variable name used when the store's root is a bare array.

    Raises
    ------
    MetadataError, DimensionConflictError
    UnsupportedError
        Zarr v3 metadata (``zarr.json``).
    """
    if ZARR_JSON in meta:
        raise UnsupportedError(
            "Zarr v3 stores (zarr.json) are detected but not read into the netCDF model yet"
        )
    builder = TreeBuilder(meta, nczarr=False)
    builder.xarray_conventions = not written_by_netcdf_c(meta)
    builder.legacy_char = _legacy_char_writer(meta)
    nodes, warnings = discover_nodes(meta)
    builder.warnings.extend(warnings)
    layout = info.layout if info is not None else LAYOUT_ZARR
    root_node = nodes.get("")
    if root_node is not None and root_node.kind == "array":
        builder.warnings.append(
            f"the store's root is a bare Zarr array, not a group: exposed as variable {name!r} "
            "of the root group"
        )
        variable = builder.isolated("", builder.pure_variable, "/", "", name)
        builder.unmasked_defaults = [f"/{name}" for _ in builder.unmasked_defaults]
        variables = {name: renamed_variable(variable, name)} if variable is not None else {}
        root = Group("/", "/", dict(builder.dims.get("/", {})), {}, variables, {})
        return builder.dataset(root, layout)
    built = _build_pure_group(builder, nodes, "")
    return builder.dataset(finish_dims(built, builder), layout)


def written_by_netcdf_c(meta: Mapping[str, Any]) -> bool:
    """Whether netcdf-c (or nczarr, which writes as it does) wrote this pure Zarr store:
    its root ``.zattrs`` holds ``_NCProperties``. netcdf-c writes a ``_FillValue``
    attribute for a missing value and reads a ``fill_value`` alone as no missing value;
    xarray and GDAL read the ``fill_value`` as one (see :mod:`~nczarr.translate.tree`)."""
    root = meta.get(ZATTRS)
    return isinstance(root, dict) and NCPROPERTIES in root


def _legacy_char_writer(meta: Mapping[str, Any]) -> bool:
    """Whether netcdf-c 4.8.x or 4.9.0 wrote this pure Zarr store (per ``_NCProperties``):
    those releases wrote char as ``"<U1"`` with one byte per character (4.9.1 writes
    ``">S1"``), so reading ``"<U1"`` as UTF-32 gets a quarter of the values."""
    root = meta.get(ZATTRS)
    version = netcdf_version(root if isinstance(root, dict) else None) or ""
    return version.startswith("4.8.") or version == "4.9.0"


def _build_pure_group(builder: TreeBuilder, nodes: dict[str, Node], prefix: str) -> Group:
    node = nodes.get(prefix, Node(prefix, "group"))
    fqn = group_fqn(prefix)
    builder.dims.setdefault(fqn, {})
    attributes = builder.group_attributes(prefix)
    variables: dict[str, Variable] = {}
    child_groups: list[str] = []
    for child in node.children:
        child_prefix = join_key(prefix, child)
        if nodes[child_prefix].kind == "array":
            variable = builder.isolated(
                child_prefix, builder.pure_variable, fqn, child_prefix, child
            )
            if variable is not None:
                variables[child] = variable
        else:
            child_groups.append(child)
    groups = {c: _build_pure_group(builder, nodes, join_key(prefix, c)) for c in child_groups}
    name = prefix.rsplit("/", 1)[-1] if prefix else "/"
    return Group(name, fqn, {}, attributes, variables, groups)
