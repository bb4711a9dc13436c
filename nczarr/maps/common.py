"""The small values of the zmap contract: open modes, ``NOT_SUPPORTED``, bytes-like values.

Shared by :mod:`~nczarr.maps.base` (which re-exports them) and every backend.
"""

from __future__ import annotations

from typing import Final, Literal

from ..errors import InvalidModeError

__all__ = ["MODES", "NOT_SUPPORTED", "CopySupport", "NotSupportedType", "as_bytes", "check_mode"]


#: How a map copies objects of another map itself (:meth:`ZMap.copy_support`):
#: ``"server"`` -- no byte passes through this process (e.g. S3 CopyObject), sizes from a
#: listing save a request per object; ``"local"`` -- file to file by the kernel in this
#: process, fastest from one thread.
CopySupport = Literal["server", "local"]


class NotSupportedType:
    """Type of :data:`NOT_SUPPORTED` (one instance, falsy)."""

    _instance: NotSupportedType | None = None

    def __new__(cls) -> NotSupportedType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_SUPPORTED"

    def __reduce__(self) -> str:
        return "NOT_SUPPORTED"


#: What :meth:`ZMap.copy_from` returns when the map cannot make the copy itself: the
#: caller then reads the bytes and writes them.
NOT_SUPPORTED: Final = NotSupportedType()

#: Accepted open modes, with zarr/h5py meaning.
MODES = ("r", "r+", "a", "w", "w-")


def check_mode(mode: str) -> str:
    """Validate an open mode, raising :class:`InvalidModeError` naming it."""
    if mode not in MODES:
        raise InvalidModeError(f"invalid mode {mode!r}: expected one of {', '.join(MODES)}")
    return mode


def as_bytes(value: object, key: str) -> bytes:
    """``value`` as ``bytes`` (any buffer is accepted), or ``TypeError`` naming ``key``."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    try:
        return bytes(memoryview(value))  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"cannot store {type(value).__name__} at {key!r}: values must be bytes-like"
        ) from None
