"""A package's names imported from their modules when first asked for (PEP 562).

``import nczarr`` (and ``nczarr.maps``, ``nczarr.translate``) then costs only what a
caller uses: a command's start imports no backend, writer or model it does not need
(docs/performance.md, "The command's start").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, modules: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: name -> the value of that name in its
    module (``modules``: name -> module, relative to ``package`` or absolute), kept in
    ``namespace`` (the package's ``globals()``) so it is imported once."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
