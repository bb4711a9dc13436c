"""Storage maps (zmaps): one ``MutableMapping[str, bytes]`` contract, many backends.

Backends whose extra is not installed (``S3Map`` needs ``nczarr[s3]``) are imported
lazily and say which extra to install when used.
"""

from __future__ import annotations

from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nczarr.maps' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
