"""Which format and NCZarr generation a store's metadata is in (pure: dict in, FormatInfo out).

The input is what :func:`nczarr.load.load_metadata` returns: parsed JSON of
every metadata object, keyed by normalized map key (``".zgroup"``,
``"g/v/.zarray"``, ``".nczarr"``, ``"zarr.json"`` ...), plus ``".zmetadata"`` when
the store has consolidated metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ..errors import MetadataError
from ..keys import join_key
from ..records import record
from .conventions import (
    ARRAY_DIMENSIONS,
    ARRAY_KEYS,
    ATTR_KEYS,
    GROUP_KEYS,
    LAYOUT_V1,
    LAYOUT_V2,
    LAYOUT_V2_KEYS,
    LAYOUT_ZARR,
    NCPROPERTIES,
    SUPERBLOCK_KEYS,
    V1_SUPERBLOCK,
    ZARR_JSON,
    ZARRAY,
    ZATTRS,
    ZGROUP,
    ZMETADATA,
)
from .jsontext import kind_of

__all__ = ["FormatInfo", "detect_format", "nczarr_key", "netcdf_version"]

_NCZARR_KEYS = (*SUPERBLOCK_KEYS, *GROUP_KEYS, *ARRAY_KEYS, *ATTR_KEYS)
_NETCDF_VERSION = re.compile(r"(?:^|,)\s*netcdf=([^,]+)")


@record
class FormatInfo:
    """What a store is.

    Attributes
    ----------
    format : {"nczarr", "zarr", "netcdf"}
        NCZarr (a superblock exists), pure Zarr, or a netCDF file (``.nc``, read by
        :mod:`nczarr.ncfile`; ``layout`` is ``"netcdf4"``, ``"netcdf3-classic"``,
        ``"netcdf3-64bit-offset"`` or ``"netcdf3-cdf5"`` and ``zarr_format`` is 0).
    layout : str
        ``"nczarr-v1"`` (separate ``.ncz*`` objects), ``"nczarr-v2-keys"``
        (``_nczarr_*``/``_NCZARR_*`` keys inside ``.zgroup``/``.zarray``; also when
        only some objects still use that placement), ``"nczarr-v2"`` (everything in
        ``.zattrs``, current) or ``"zarr"``.
    zarr_format : {2, 3}
    xarray : bool
        Some array carries ``_ARRAY_DIMENSIONS`` (or, in Zarr v3, ``dimension_names``).
    consolidated : bool
        The metadata came from consolidated metadata (``.zmetadata``).
    netcdf_version : str or None
        The ``netcdf=`` part of the root ``_NCProperties`` (``"4.10.1"``).
    evidence : tuple of str
        The metadata keys that decided ``format`` and ``layout``.
    written_by : str or None
        Who wrote the store, from ``_NCProperties``: ``"netCDF 4.10.1"``,
        ``"nczarr-python 0.1.0"``, or None when it does not say.
    """

    format: Literal["nczarr", "zarr", "netcdf"]
    layout: str
    zarr_format: int
    xarray: bool
    consolidated: bool
    netcdf_version: str | None
    evidence: tuple[str, ...]
    written_by: str | None = None


def _as_dict(meta: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MetadataError(f"{key!r} must hold a JSON object, got {kind_of(value)}")
    return value


def nczarr_key(
    meta: Mapping[str, Any], prefix: str, names: Iterable[str], obj: str
) -> tuple[Any, str | None]:
    """Look up an ``_nczarr_*`` entry of one node, per object, in netcdf-c's order.

    First in the node's ``.zattrs``, then in its ``obj`` (``.zgroup`` or
    ``.zarray``), trying each spelling in ``names`` (lower then upper case).
    Returns ``(value, key_where_found)`` or ``(None, None)``.
    """
    names = tuple(names)
    for source in (ZATTRS, obj):
        key = join_key(prefix, source)
        content = _as_dict(meta, key)
        if content is None:
            continue
        for name in names:
            if name in content:
                return content[name], key
    return None, None


def netcdf_version(root_attrs: Mapping[str, Any] | None) -> str | None:
    """The library version recorded in ``_NCProperties`` (``"4.10.1"``), or None."""
    if not root_attrs:
        return None
    props = root_attrs.get(NCPROPERTIES)
    if not isinstance(props, str):
        return None
    match = _NETCDF_VERSION.search(props)
    return match.group(1).strip() if match else None


_NCZARR_PYTHON = re.compile(r"(?:^|,)\s*nczarr-python=([^,]+)")


def written_by(root_attrs: Mapping[str, Any] | None) -> str | None:
    """``"netCDF <version>"`` or ``"nczarr-python <version>"`` from ``_NCProperties``."""
    version = netcdf_version(root_attrs)
    if version:
        return f"netCDF {version}"
    props = (root_attrs or {}).get(NCPROPERTIES)
    match = _NCZARR_PYTHON.search(props) if isinstance(props, str) else None
    return f"nczarr-python {match.group(1).strip()}" if match else None


def _has_keys_in_objects(meta: Mapping[str, Any]) -> list[str]:
    found = []
    for key, value in meta.items():
        is_object = key.rsplit("/", 1)[-1] in (ZGROUP, ZARRAY) and isinstance(value, dict)
        if is_object and any(k in value for k in _NCZARR_KEYS):
            found.append(key)
    return sorted(found)


def _xarray(meta: Mapping[str, Any]) -> bool:
    for key, value in meta.items():
        if not isinstance(value, dict):
            continue
        base = key.rsplit("/", 1)[-1]
        if base == ZATTRS and ARRAY_DIMENSIONS in value:
            return True
        if base == ZARR_JSON and value.get("dimension_names") is not None:
            return True
    return False


def detect_format(meta: Mapping[str, Any]) -> FormatInfo:
    """Decide format, layout and Zarr version from loaded metadata.

    Raises
    ------
    MetadataError
        No Zarr metadata at all (not a Zarr store), or a root object that is not a
        JSON object.
    """
    consolidated = ZMETADATA in meta
    if ZARR_JSON in meta:
        root = _as_dict(meta, ZARR_JSON) or {}
        attrs = root.get("attributes") if isinstance(root.get("attributes"), dict) else {}
        is_nczarr = any(k in attrs for k in SUPERBLOCK_KEYS)
        return FormatInfo(
            format="nczarr" if is_nczarr else "zarr",
            layout=LAYOUT_ZARR,
            zarr_format=3,
            xarray=_xarray(meta),
            consolidated=consolidated or isinstance(root.get("consolidated_metadata"), dict),
            netcdf_version=netcdf_version(attrs),
            evidence=(ZARR_JSON,),
            written_by=written_by(attrs),
        )
    root_attrs = _as_dict(meta, ZATTRS)
    common = {
        "zarr_format": 2,
        "xarray": _xarray(meta),
        "consolidated": consolidated,
        "netcdf_version": netcdf_version(root_attrs),
        "written_by": written_by(root_attrs),
    }
    if V1_SUPERBLOCK in meta:
        return FormatInfo("nczarr", LAYOUT_V1, evidence=(V1_SUPERBLOCK,), **common)
    _, where = nczarr_key(meta, "", SUPERBLOCK_KEYS, ZGROUP)
    if where is not None:
        in_objects = _has_keys_in_objects(meta)
        if where == ZGROUP or in_objects:
            evidence = tuple(dict.fromkeys([where, *in_objects[:5]]))
            return FormatInfo("nczarr", LAYOUT_V2_KEYS, evidence=evidence, **common)
        return FormatInfo("nczarr", LAYOUT_V2, evidence=(ZATTRS,), **common)
    present = [k for k in (ZMETADATA, ZGROUP, ZARRAY, ZATTRS) if k in meta]
    if not present:
        present = sorted(k for k in meta if k.rsplit("/", 1)[-1] in (ZGROUP, ZARRAY, ZATTRS))[:3]
    if not present:
        raise MetadataError(
            "not a Zarr store: no .zgroup, .zarray, .zattrs, .zmetadata or zarr.json found"
        )
    return FormatInfo("zarr", LAYOUT_ZARR, evidence=tuple(present), **common)
