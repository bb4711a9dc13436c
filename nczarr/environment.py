"""Settings read from the environment (``NCZARR_*`` sizes): one parser, whose refusal
names the variable and its value, instead of a bare ``int()`` error at import."""

from __future__ import annotations

import os

from .errors import InvalidSettingError

__all__ = ["env_bytes"]


def env_bytes(name: str, default: int) -> int:
    """The byte count in environment variable ``name`` (a whole number, ``_`` allowed
    between digits), ``default`` when it is unset or empty; an ``InvalidSettingError``
    naming it for anything else, or for a negative number."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidSettingError(
            f"environment variable {name}={raw!r}: not a whole number of bytes"
        ) from None
    if value < 0:
        raise InvalidSettingError(f"environment variable {name}={raw!r}: negative")
    return value
