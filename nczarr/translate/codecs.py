"""Codec (compressor/filter) configs: normalise what netcdf-c wrote so numcodecs decodes it.

netcdf-c writes codec configs numcodecs misreads:

* 4.9.0-4.9.3 wrote integer parameters as JSON strings (``{"id": "zlib",
  "level": "5"}``), which numcodecs rejects (netcdf-c issue #3200);
* every version writes ``{"id": "shuffle", "elementsize": 0}``, meaning "the
  dtype's size"; numcodecs treats 0 as a no-op and silently returns wrong numbers.

:func:`normalize_codec` fixes both; :func:`normalize_codecs` does a whole
``compressor`` + ``filters`` pair, keeping the order, and reports codecs numcodecs
does not know (they are kept unchanged: the metadata is still valid, only the data
cannot be decoded here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import MetadataError

__all__ = [
    "normalize_codec",
    "normalize_codecs",
    "is_known_codec",
    "missing_codecs",
    "STRING_PARAMETERS",
]

#: Parameters whose values are genuinely strings and must never become numbers.
STRING_PARAMETERS = frozenset({"id", "cname", "dtype", "astype", "format", "encoding", "mode"})

_INT = re.compile(r"^\s*[-+]?\d+\s*$")
_FLOAT = re.compile(r"^\s*[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?\s*$")


def _number(text: str) -> Any:
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text


#: Codec ids numcodecs (>= 0.16, the floor in pyproject.toml) registers whatever is
#: installed next to it: answered without importing numcodecs, which imports numpy,
#: multiprocessing and every codec (~0.1 s, more than a verbatim convert of a
#: thousand chunks). ``tests/test_convert_imports.py`` checks each is registered.
ALWAYS_REGISTERED = frozenset(
    {
        "zlib",
        "gzip",
        "bz2",
        "lzma",
        "blosc",
        "zstd",
        "lz4",
        "astype",
        "delta",
        "quantize",
        "fixedscaleoffset",
        "packbits",
        "categorize",
        "pickle",
        "base64",
        "shuffle",
        "bitround",
        "crc32",
        "adler32",
        "jenkins_lookup3",
        "json2",
        "vlen-utf8",
        "vlen-bytes",
        "vlen-array",
        "fletcher32",
    }
)


def is_known_codec(codec_id: str) -> bool:
    """Whether numcodecs (as installed) has a codec registered under ``codec_id``."""
    if codec_id in ALWAYS_REGISTERED:
        return True
    try:
        from numcodecs.registry import codec_registry
    except ImportError:  # pragma: no cover - numcodecs is a hard dependency
        return False
    return codec_id in codec_registry


def missing_codecs(zarray: Mapping[str, Any]) -> list[str]:
    """The ids of a Zarr v2 array's compressor and filters (``zarray``, its ``.zarray``)
    that numcodecs has no codec for here, compressor first."""
    codecs = [zarray.get("compressor"), *(zarray.get("filters") or [])]
    return [
        c["id"]
        for c in codecs
        if isinstance(c, dict) and isinstance(c.get("id"), str) and not is_known_codec(c["id"])
    ]


def normalize_codec(config: Any, itemsize: int) -> dict[str, Any]:
    """A numcodecs-ready copy of one codec config.

    Parameters
    ----------
    config : dict
        The stored config (``{"id": ..., <params>}``). Not modified.
    itemsize : int
        Bytes per element of the array's dtype.

    Returns
    -------
    dict
        Parameters given as numeric strings become numbers (``"level": "5"`` ->
        ``5``); a shuffle ``elementsize`` that is missing, zero, negative or not a
        number becomes ``itemsize``. Everything else is kept as stored.

    Raises
    ------
    MetadataError
        ``config`` is not a dict with a string ``"id"``.
    """
    if not isinstance(config, dict):
        raise MetadataError(f"codec config must be a JSON object, got {config!r}")
    codec_id = config.get("id")
    if not isinstance(codec_id, str) or not codec_id:
        raise MetadataError(f"codec config {config!r} has no string 'id'")
    out: dict[str, Any] = {}
    for name, value in config.items():
        if isinstance(value, str) and name not in STRING_PARAMETERS:
            value = _number(value)
        out[name] = value
    if codec_id == "shuffle":
        size = out.get("elementsize")
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            out["elementsize"] = itemsize
    return out


def normalize_codecs(
    compressor: Any, filters: Any, itemsize: int, *, where: str = ""
) -> tuple[dict[str, Any] | None, tuple[dict[str, Any], ...], list[str]]:
    """Normalise a ``.zarray``'s ``compressor`` and ``filters``.

    Returns ``(compressor, filters, warnings)``: the normalised compressor (or
    ``None``), the filters in stored order, and one warning per codec numcodecs
    does not know. ``where`` (the ``.zarray`` key) prefixes messages.

    Raises
    ------
    MetadataError
        ``filters`` is not a list or null, or a config is malformed.
    """
    prefix = f"{where}: " if where else ""
    if filters is None:
        filters = []
    if not isinstance(filters, list):
        raise MetadataError(f"{prefix}'filters' must be a list or null, got {filters!r}")
    warnings: list[str] = []
    try:
        out_filters = tuple(normalize_codec(f, itemsize) for f in filters)
        out_compressor = None if compressor is None else normalize_codec(compressor, itemsize)
    except MetadataError as exc:
        raise MetadataError(f"{prefix}{exc}") from None
    if out_compressor is not None and out_compressor["id"] == "lzma" and "delta" in out_compressor:
        # GDAL's LZMA codec records its delta filter distance; numcodecs' LZMA (and so
        # zarr-python) refuses the key, and the xz stream names its own filters anyway
        out_compressor = {k: v for k, v in out_compressor.items() if k != "delta"}
        warnings.append(
            f"{prefix}GDAL's lzma key 'delta' is left out (zarr-python refuses it; the xz "
            "data names its own filters, so every reader decodes the same values)"
        )
    for codec in (*out_filters, *([out_compressor] if out_compressor else [])):
        if not is_known_codec(codec["id"]):
            warnings.append(
                f"{prefix}codec {codec['id']!r} is not known to numcodecs; kept as stored, "
                "but the data cannot be decoded here"
            )
    return out_compressor, out_filters, warnings
