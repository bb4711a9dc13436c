"""What the reader-quirk rules look at in one array, gathered once.

:func:`array_facts` turns the metadata of one Zarr v2 or v3 array (as stored) into an
:class:`ArrayFacts`, so each rule of :mod:`~nczarr.translate.compat_rules` is one
short test over plain fields instead of a walk through JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..keys import join_key
from ..records import field, record
from .conventions import (
    ARRAY_DIMENSIONS,
    ARRAY_KEYS,
    SUPERBLOCK_KEYS,
    ZARR_JSON,
    ZARRAY,
    ZATTRS,
    ZGROUP,
)
from .detect import FormatInfo, nczarr_key

__all__ = [
    "ArrayFacts",
    "array_facts",
    "array_prefixes",
    "codec_list",
    "dtype_list",
    "uppercase_keys",
    "v3_codec_names",
]


@record
class ArrayFacts:
    """One array's metadata, as the rules need it.

    Attributes
    ----------
    prefix : str
        Its key prefix (``""`` for a bare root array).
    zarr_format : {2, 3}
    doc : dict
        ``.zarray`` (v2) or ``zarr.json`` (v3) as stored.
    attrs : dict
        ``.zattrs`` (v2) or ``attributes`` (v3).
    dtypes : list of str
        v2 dtype strings (the fields' of a structured dtype); empty in v3.
    data_type : Any
        The v3 ``data_type`` (a name or ``{"name": ...}``); None in v2.
    codecs : list of dict
        v2 filters then compressor (numcodecs configs).
    v3_codecs : list of (str, dict)
        v3 codec names and configurations, the inner chain of a shard included.
    shape : Any
    dims : Any
        ``_ARRAY_DIMENSIONS`` (v2) or ``dimension_names`` (v3); None when absent.
    fill : Any
        The stored ``fill_value``; ``has_fill`` says whether the key exists.
    order : str
        v2 ``order`` (``"C"`` when absent; v3: ``"F"`` for a reversing transpose).
    nczarr_layout : bool
        The store is NCZarr.
    layout : str
        The store's layout (:class:`~nczarr.translate.detect.FormatInfo`).
    uppercase_keys : bool
        4.8.1/4.9.0 ``_NCZARR_*`` metadata in the root ``.zgroup``.
    nczarr_array : dict or None
        The array's ``_nczarr_array``/``_NCZARR_ARRAY`` object.
    nczarr_scalar : bool
        NCZarr says the array is a netCDF scalar.
    netcdf_version : str or None
        The netcdf-c release the root ``_NCProperties`` names (``"4.8.0"``).
    """

    prefix: str
    zarr_format: int
    doc: dict[str, Any]
    attrs: dict[str, Any]
    dtypes: list[str] = field(default_factory=list)
    data_type: Any = None
    codecs: list[dict[str, Any]] = field(default_factory=list)
    v3_codecs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    shape: Any = None
    dims: Any = None
    fill: Any = None
    has_fill: bool = False
    order: str = "C"
    nczarr_layout: bool = False
    layout: str = ""
    uppercase_keys: bool = False
    nczarr_array: dict[str, Any] | None = None
    nczarr_scalar: bool = False
    netcdf_version: str | None = None

    @property
    def where(self) -> str:
        """The array's path (``/g/v``)."""
        return "/" + self.prefix

    @property
    def object_dtype(self) -> bool:
        """A v2 array of Python objects (``|O``)."""
        return any(d.lstrip("<>|=") == "O" for d in self.dtypes)

    @property
    def codec_ids(self) -> list[str]:
        """The v2 codec ids, filters first."""
        return [str(c.get("id")) for c in self.codecs]


def array_prefixes(meta: Mapping[str, Any], zarr_format: int = 2) -> list[str]:
    """Key prefixes of every array (``""`` for a bare root array)."""
    out = []
    for key, value in meta.items():
        prefix, _, base = key.rpartition("/")
        if not isinstance(value, dict):
            continue
        v3_array = base == ZARR_JSON and value.get("node_type") == "array"
        if (zarr_format == 2 and base == ZARRAY) or (zarr_format == 3 and v3_array):
            out.append(prefix)
    return sorted(out)


def dtype_list(zarray: Mapping[str, Any]) -> list[str]:
    """The dtype strings of a v2 ``.zarray`` (each field's for a structured dtype)."""
    dtype = zarray.get("dtype")
    if isinstance(dtype, str):
        return [dtype]
    if isinstance(dtype, list):  # structured: [[name, dtype], ...]
        return [d[1] for d in dtype if isinstance(d, list) and len(d) > 1 and isinstance(d[1], str)]
    return []


def codec_list(zarray: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A v2 ``.zarray``'s filters then compressor."""
    filters = zarray.get("filters") or []
    compressor = zarray.get("compressor")
    codecs = [c for c in filters if isinstance(c, dict)] if isinstance(filters, list) else []
    return [*codecs, *([compressor] if isinstance(compressor, dict) else [])]


def v3_codec_names(codecs: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(name, configuration)`` of every v3 codec, a shard's inner chains included."""
    out: list[tuple[str, dict[str, Any]]] = []
    for entry in codecs if isinstance(codecs, list) else []:
        if isinstance(entry, str):
            out.append((entry, {}))
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        config = entry.get("configuration")
        config = config if isinstance(config, dict) else {}
        out.append((entry["name"], config))
        if entry["name"] == "sharding_indexed":
            out.extend(v3_codec_names(config.get("codecs")))
            out.extend(v3_codec_names(config.get("index_codecs")))
    return out


def uppercase_keys(meta: Mapping[str, Any]) -> bool:
    """4.8.1/4.9.0 NCZarr metadata (``_NCZARR_SUPERBLOCK`` in the root ``.zgroup``)."""
    root = meta.get(ZGROUP)
    return isinstance(root, dict) and SUPERBLOCK_KEYS[1] in root


def _v3_order(codecs: list[tuple[str, dict[str, Any]]], ndim: int) -> str:
    for name, config in codecs:
        if name == "transpose" and ndim > 1:
            order = config.get("order")
            if order == "F" or order == list(range(ndim))[::-1]:
                return "F"
    return "C"


def array_facts(meta: Mapping[str, Any], info: FormatInfo, prefix: str) -> ArrayFacts:
    """The facts of the array at ``prefix`` (Zarr v2 or v3, as ``info`` says)."""
    common = {
        "prefix": prefix,
        "nczarr_layout": info.format == "nczarr",
        "layout": info.layout,
        "uppercase_keys": uppercase_keys(meta),
        "netcdf_version": info.netcdf_version,
    }
    if info.zarr_format == 3:
        doc = meta[join_key(prefix, ZARR_JSON)]
        attrs = doc.get("attributes")
        v3 = v3_codec_names(doc.get("codecs"))
        shape = doc.get("shape")
        return ArrayFacts(
            zarr_format=3,
            doc=doc,
            attrs=attrs if isinstance(attrs, dict) else {},
            data_type=doc.get("data_type"),
            v3_codecs=v3,
            shape=shape,
            dims=doc.get("dimension_names"),
            fill=doc.get("fill_value"),
            has_fill="fill_value" in doc,
            order=_v3_order(v3, len(shape) if isinstance(shape, list) else 0),
            **common,
        )
    zarray = meta[join_key(prefix, ZARRAY)]
    attrs = meta.get(join_key(prefix, ZATTRS))
    attrs = attrs if isinstance(attrs, dict) else {}
    nczarr_array, _ = nczarr_key(meta, prefix, ARRAY_KEYS, ZARRAY)
    nczarr_array = nczarr_array if isinstance(nczarr_array, dict) else None
    scalar = nczarr_array is not None and (
        nczarr_array.get("scalar") in (1, True) or nczarr_array.get("storage") == "scalar"
    )
    return ArrayFacts(
        zarr_format=2,
        doc=zarray,
        attrs=attrs,
        dtypes=dtype_list(zarray),
        codecs=codec_list(zarray),
        shape=zarray.get("shape"),
        dims=attrs.get(ARRAY_DIMENSIONS),
        fill=zarray.get("fill_value"),
        has_fill="fill_value" in zarray,
        order=zarray.get("order") if zarray.get("order") in ("C", "F") else "C",
        nczarr_array=nczarr_array,
        nczarr_scalar=scalar,
        **common,
    )
