"""The ``nczarr`` command line: a thin layer that parses, calls the library and prints.

``main`` parses and dispatches; ``cdl`` prints the CDL header and ``info`` the
``nczarr info`` report.
"""

from __future__ import annotations

from .main import command, main

__all__ = ["main", "command"]
