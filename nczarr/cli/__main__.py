"""``python -m nczarr.cli``: the same as the ``nczarr`` command."""

from __future__ import annotations

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
