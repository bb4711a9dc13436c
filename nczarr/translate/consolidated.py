"""Consolidated metadata expanded into the per-key metadata of a store: Zarr v2's
``.zmetadata`` and Zarr v3's inline ``consolidated_metadata``. Pure functions over the
loaded JSON (:func:`nczarr.load.load_metadata` reads the objects and checks the copy
against them)."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidKeyError, MetadataError
from ..keys import normalize_key
from .attrs import parse_json
from .conventions import ZARR_JSON, ZMETADATA

__all__ = ["expand_consolidated", "expand_v3_consolidated"]


def expand_consolidated(meta: dict[str, Any], url: str) -> None:
    """Add the entries of ``meta``'s ``.zmetadata`` (Zarr v2 consolidated metadata) to
    ``meta`` under their normalized keys; ``url`` names the store in errors."""
    content = meta[ZMETADATA]
    entries = content.get("metadata") if isinstance(content, dict) else None
    if not isinstance(entries, dict):
        raise MetadataError(f"{url}: '{ZMETADATA}' must hold {{'metadata': {{...}}}}")
    for key, value in entries.items():
        try:
            nkey = normalize_key(key)
        except InvalidKeyError as exc:
            raise MetadataError(f"{url}: '{ZMETADATA}' holds an invalid key: {exc}") from None
        if isinstance(value, str | bytes):  # some writers nest JSON text
            value = parse_json(value, key=f"{ZMETADATA}:{nkey}")
        meta[nkey] = value


def expand_v3_consolidated(meta: dict[str, Any], url: str) -> bool:
    """Expand the root ``zarr.json``'s inline ``consolidated_metadata``; False if it has none."""
    content = meta[ZARR_JSON].get("consolidated_metadata")
    if content is None:
        return False
    entries = content.get("metadata") if isinstance(content, dict) else None
    if not isinstance(entries, dict):
        raise MetadataError(
            f"{url}: '{ZARR_JSON}': consolidated_metadata must hold {{'metadata': {{...}}}}"
        )
    for path, value in entries.items():
        try:
            nkey = normalize_key(f"{path}/{ZARR_JSON}")
        except InvalidKeyError as exc:
            raise MetadataError(
                f"{url}: '{ZARR_JSON}': consolidated_metadata holds an invalid path: {exc}"
            ) from None
        meta.setdefault(nkey, value)
    return True
