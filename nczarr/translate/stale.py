"""What a stale ``.zmetadata`` disagrees on (pure: metadata in, message out).

``.zmetadata`` is a copy of a Zarr v2 store's metadata objects that goes stale when an
array is added or changed after it was written; :func:`nczarr.load.load_metadata`
reads the objects themselves and warns with :func:`stale_message`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .conventions import ZARRAY, ZATTRS, ZGROUP, ZMETADATA
from .model import same_value

__all__ = ["STALE_CONSOLIDATED", "stale_message"]


#: Words every stale-``.zmetadata`` warning holds (callers pick these warnings out).
STALE_CONSOLIDATED = "' is stale ("


def stale_message(
    url: str, consolidated: Mapping[str, Any], listed: Mapping[str, Any]
) -> str | None:
    """What a stale ``.zmetadata`` disagrees on (nodes named), or None when it agrees."""

    def nodes(meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for key, value in meta.items():
            prefix, _, base = key.rpartition("/")
            if base in (ZARRAY, ZGROUP, ZATTRS):
                out.setdefault(prefix, {})[base] = value
        return out

    old, new = nodes(consolidated), nodes(listed)
    missing = sorted(p for p in new if p not in old)
    gone = sorted(p for p in old if p not in new)
    # NaN-aware: a NaN attribute (xarray's float _FillValue) parsed twice is not equal
    changed = sorted(p for p in new if p in old and not same_value(new[p], old[p]))
    if not (missing or gone or changed):
        return None

    def names(prefixes: list[str]) -> str:
        return ", ".join(repr("/" + p) for p in prefixes)

    parts = [
        f"{what}: {names(found)}"
        for what, found in (
            ("not in it", missing),
            ("in it but no longer stored", gone),
            ("changed since", changed),
        )
        if found
    ]
    return (
        f"{url}: '{ZMETADATA}{STALE_CONSOLIDATED}{'; '.join(parts)}): nczarr reads the stored "
        "metadata objects, while xarray and zarr-python opening the store with consolidated "
        "metadata see only what .zmetadata says; rewrite it (zarr.consolidate_metadata) or "
        "delete it"
    )
