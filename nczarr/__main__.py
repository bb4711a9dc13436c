"""``python -m nczarr``: the same as the ``nczarr`` command."""

from __future__ import annotations

import sys

from .cli.main import command

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(command())
