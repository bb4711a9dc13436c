"""The groups and arrays a store's metadata keys imply (pure).

:func:`discover_nodes` turns the keys of the loaded metadata (``.zgroup``,
``.zarray``, ``.zattrs``; the Zarr v3 reader passes stand-ins for its ``zarr.json``
documents) into :class:`Node` objects: every group, implied or not, with its
children sorted by name. Moved out of :mod:`~nczarr.translate.tree` (which
re-exports both) to keep that module within its size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError
from ..records import field, record
from .conventions import ZARRAY, ZATTRS, ZGROUP

__all__ = ["Node", "discover_nodes"]


@record(frozen=False)
class Node:
    """A group or array found in the metadata keys, with its children's names."""

    prefix: str
    kind: str  # "group" | "array"
    children: list[str] = field(default_factory=list)


def discover_nodes(meta: Mapping[str, Any]) -> tuple[dict[str, Node], list[str]]:
    """Every group and array node implied by the metadata keys, and warnings.

    Returns nodes keyed by prefix (``""`` = root), each group listing its children
    sorted by name. Arrays nested inside arrays are ignored with a warning.
    """
    kinds: dict[str, set[str]] = {}
    for key in meta:
        prefix, _, base = key.rpartition("/")
        if base in (ZGROUP, ZARRAY, ZATTRS):
            kinds.setdefault(prefix, set()).add(base)
    nodes: dict[str, Node] = {}
    warnings: list[str] = []
    for prefix in sorted(kinds, key=lambda p: (p.count("/") if p else -1, p)):
        found = kinds[prefix]
        if ZARRAY in found and ZGROUP in found:
            raise MetadataError(
                f"{prefix or '/'!r} holds both {ZGROUP} and {ZARRAY}: a node is a group or an array"
            )
        kind = "array" if ZARRAY in found else "group"
        parts = prefix.split("/") if prefix else []
        blocked = next(
            (
                "/".join(parts[:i])
                for i in range(len(parts))
                if nodes.get("/".join(parts[:i]), Node("", "group")).kind == "array"
            ),
            None,
        )
        if blocked is not None:
            warnings.append(f"ignored {prefix!r}: it lies inside array {blocked or '/'!r}")
            continue
        for i in range(len(parts)):
            parent = "/".join(parts[:i])
            child = "/".join(parts[: i + 1])
            nodes.setdefault(parent, Node(parent, "group"))
            if child != prefix:
                nodes.setdefault(child, Node(child, "group"))
            if parts[i] not in nodes[parent].children:
                nodes[parent].children.append(parts[i])
        nodes[prefix] = Node(prefix, kind, nodes.get(prefix, Node(prefix, kind)).children)
    for node in nodes.values():
        node.children.sort()
    return nodes, warnings
