"""The order in which a store's metadata objects are written: arrays, then groups
deepest first, the root last, ``.zattrs`` before ``.zarray``/``.zgroup`` within a node,
so that an interrupted writer never leaves a store that looks complete. Pure; shared
by convert, migrate and ``to_nczarr``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .conventions import ZARR_JSON, ZARRAY

__all__ = ["array_nodes", "order_metadata"]

#: Rank of an object name inside one node: lower is written first.
_WITHIN_NODE = {".zattrs": 0, ".zmetadata": 1, ".zarray": 2, ".zgroup": 2}


def _split(key: str) -> tuple[str, str]:
    node, _, name = key.rpartition("/")
    return node, name


def order_metadata(metadata: Mapping[str, bytes]) -> list[str]:
    """The keys of ``metadata`` in safe write order: arrays, groups deepest first, root last.

    >>> order_metadata({".zgroup": b"", ".zattrs": b"", "v/.zarray": b"",
    ...                 "g/.zgroup": b"", "v/.zattrs": b"", "g/h/.zgroup": b""})
    ['v/.zattrs', 'v/.zarray', 'g/h/.zgroup', 'g/.zgroup', '.zattrs', '.zgroup']
    """
    arrays = array_nodes(metadata)

    def rank(key: str) -> tuple[Any, ...]:
        node, name = _split(key)
        depth = node.count("/") + 1 if node else 0
        if node in arrays:
            kind = 0
        elif node:
            kind = 1
        else:
            kind = 2
        return (kind, -depth if kind == 1 else 0, node, _WITHIN_NODE.get(name, 0), name)

    return sorted(metadata, key=rank)


def array_nodes(metadata: Mapping[str, bytes]) -> set[str]:
    """The nodes of ``metadata`` that are arrays: those with a ``.zarray``, or with a
    ``zarr.json`` whose ``node_type`` is ``"array"``.

    >>> sorted(array_nodes({"v/.zarray": b"{}", "g/.zgroup": b"{}",
    ...                     "w/zarr.json": b'{"node_type": "array"}'}))
    ['v', 'w']
    """
    arrays = set()
    for key, value in metadata.items():
        node, name = _split(key)
        if name == ZARRAY or (name == ZARR_JSON and _is_v3_array(value)):
            arrays.add(node)
    return arrays


def _is_v3_array(value: bytes) -> bool:
    try:
        doc = json.loads(value)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("node_type") == "array"
