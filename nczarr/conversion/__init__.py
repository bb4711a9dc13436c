"""Conversion between formats: :func:`convert` and :func:`migrate`.

``plan`` (pure) decides what to write, ``apply`` writes it, ``api`` is the public face.
"""

from __future__ import annotations

from .api import FORMATS, ConvertReport, convert, migrate

__all__ = ["ConvertReport", "convert", "migrate", "FORMATS"]
