"""``python -m nczarr.cli``: the same as the ``nczarr`` command."""

from __future__ import annotations

import sys

from .main import command

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(command())
