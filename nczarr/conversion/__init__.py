"""Conversion between formats: :func:`convert` and :func:`migrate`.

``plan`` (pure) decides what to write, ``apply`` writes it; ``api`` (convert) and
``migrate`` are the public face, ``report`` what they return.
"""

from __future__ import annotations

from ..translate.conventions import FORMATS
from .api import convert
from .migrate import migrate
from .report import ConvertReport

__all__ = ["ConvertReport", "convert", "migrate", "FORMATS"]
