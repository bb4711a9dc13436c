"""Groups and arrays whose names a target format reserves for its metadata (pure), and
names netCDF does not allow in an NCZarr target (a leading ".": zarr-python writes
such arrays, netcdf-c refuses a whole dataset holding one).

A Zarr v3 store keeps each node's metadata in ``<node>/zarr.json``, so an array named
``zarr.json`` (a legal netCDF, NCZarr and Zarr v2 name: netCDF4 writes one) would
live under the key of its group's metadata object: a copy fails half-written, and a
view holding both shows one of them only. Zarr v2 and NCZarr reserve ``.zarray``,
``.zattrs``, ``.zgroup``, ``.zmetadata`` (and netcdf-c's legacy ``.nczarray`` ...)
the same way. :func:`leave_out_reserved` takes such nodes out of the model before any
writer runs (the one place every writer's output passes, ``writer.write_target``):
their arrays are the writer's ``skipped`` ones, with a warning naming each, so a view
hides them loudly and ``convert`` refuses them before anything is written unless
``exclude=`` names them (``conversion/api.py``), as arrays whose codecs a target
cannot describe.
"""

from __future__ import annotations

from ..records import replace
from .conventions import RESERVED_NODE_NAMES
from .model import Dataset, Group
from .target import Target

__all__ = ["leave_out_reserved", "target_label"]


def target_label(target: Target) -> str:
    """How warnings name the target format (``NCZarr``, ``Zarr v2``, ``Zarr v3``)."""
    return "NCZarr" if target.format == "nczarr" else f"Zarr v{target.zarr_format}"


def leave_out_reserved(
    dataset: Dataset, target: Target
) -> tuple[Dataset, tuple[str, ...], tuple[str, ...]]:
    """``dataset`` without the groups and arrays ``target`` reserves the names of.

    Returns the dataset, the warnings (one per array left out, and per empty group),
    and the key prefixes (``"g/zarr.json"``) of the arrays left out, as a writer's
    ``WriteResult.skipped`` says them.
    """
    reserved = RESERVED_NODE_NAMES[target.zarr_format]
    label = target_label(target)
    warnings: list[str] = []
    skipped: list[str] = []
    nczarr = target.format == "nczarr"

    def refused(name: str) -> bool:
        # netCDF names do not start with "." (netcdf-c refuses the whole dataset)
        return name in reserved or (nczarr and name.startswith("."))

    def reason(node: str, name: str) -> str:
        if name not in reserved:
            return (
                f"{node} is named {name!r}: a netCDF name does not start with '.', and "
                "netcdf-c refuses a whole NCZarr dataset holding one"
            )
        return (
            f"{node} is named {name!r}, which a {label} store reserves for its metadata "
            f"objects (the key of one would be the other's)"
        )

    def prune(group: Group) -> Group:
        variables = {}
        for name, var in group.variables.items():
            if refused(name):
                skipped.append(var.path.lstrip("/"))
                warnings.append(
                    f"array {var.path!r} left out of the {label} output: " + reason("it", name)
                )
            else:
                variables[name] = var
        groups = {}
        for name, child in group.groups.items():
            if not refused(name):
                groups[name] = prune(child)
                continue
            inside = list(child.all_variables())
            for var in inside:
                skipped.append(var.path.lstrip("/"))
                warnings.append(
                    f"array {var.path!r} left out of the {label} output: "
                    + reason(f"its group {child.path!r}", name)
                )
            if not inside:
                warnings.append(
                    f"group {child.path!r} left out of the {label} output: " + reason("it", name)
                )
        return replace(group, variables=variables, groups=groups)

    if not any(
        refused(name) for group in dataset.root.walk() for name in (*group.variables, *group.groups)
    ):
        return dataset, (), ()
    return replace(dataset, root=prune(dataset.root)), tuple(warnings), tuple(skipped)
