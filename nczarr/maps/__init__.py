"""Storage maps (zmaps): one ``MutableMapping[str, bytes]`` contract, many backends.

Backends whose extra is not installed (``S3Map`` needs ``nczarr[s3]``) are imported
lazily and say which extra to install when used.
"""

from __future__ import annotations

from ..lazy import lazy_exports
from .base import ZMap

__all__ = [
    "ZMap",
    "MemoryMap",
    "FileMap",
    "ZipMap",
    "S3Map",
    "FsspecMap",
    "open_map",
    "register_backend",
    "Location",
    "NOT_SUPPORTED",
]

_LAZY = {
    "MemoryMap": ".memory",
    "FileMap": ".file",
    "ZipMap": ".zip",
    "S3Map": ".s3",
    "FsspecMap": ".fsspec",
    "open_map": ".open",
    "register_backend": ".open",
    "Location": ".location",
    "NOT_SUPPORTED": ".base",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())
