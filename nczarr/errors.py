"""The one exception hierarchy of nczarr.

Every error nczarr raises on purpose derives from :class:`NCZarrError`. Each leaf
also inherits the builtin exception a caller would naturally catch (``ValueError``,
``PermissionError``, ``FileNotFoundError`` ...), so code that does not know nczarr
still handles our errors correctly.
"""

from __future__ import annotations

import errno
import warnings
from collections.abc import Iterable
from typing import NoReturn

__all__ = [
    "NCZarrError",
    "InvalidKeyError",
    "InvalidURLError",
    "InvalidModeError",
    "ObjectExistsError",
    "ReadOnlyError",
    "StoragePermissionError",
    "StorageNotFoundError",
    "StorageError",
    "MetadataError",
    "CorruptChunkError",
    "DimensionConflictError",
    "UnsupportedError",
    "TargetExistsError",
    "UnsupportedTypeError",
    "MissingDependencyError",
    "InvalidNameError",
    "ValueRangeError",
    "EncodingError",
    "InvalidSettingError",
    "NCZarrWarning",
    "warn_all",
    "raise_os_error",
]


class NCZarrError(Exception):
    """Root of every error nczarr raises deliberately."""


class InvalidKeyError(NCZarrError, ValueError):
    """A map key is malformed (empty segment, ``.``/``..``, control character, too long)."""


class InvalidURLError(NCZarrError, ValueError):
    """A dataset URL or one of its parts (scheme, host, fragment, mode word) is malformed."""


class InvalidModeError(NCZarrError, ValueError):
    """An open mode or option value is not one nczarr accepts."""


class ObjectExistsError(NCZarrError, FileExistsError):
    """A write would break the leaf rule, or a store that must not exist does."""


class TargetExistsError(ObjectExistsError):
    """A conversion target exists and is not empty, and ``overwrite`` was not given."""


class ReadOnlyError(NCZarrError, PermissionError):
    """A write was attempted through a map (or view) opened read-only."""


class StoragePermissionError(NCZarrError, PermissionError):
    """The storage backend refused access (AccessDenied, EACCES)."""


class StorageNotFoundError(NCZarrError, FileNotFoundError):
    """The storage container itself does not exist (no such bucket, directory or archive)."""


class StorageError(NCZarrError, OSError):
    """Any other failure of the storage backend (network, corrupt archive, ...)."""


class MetadataError(NCZarrError, ValueError):
    """Stored metadata is malformed; the message names the key and what is wrong."""


class CorruptChunkError(NCZarrError, ValueError):
    """A chunk (or shard) object cannot be decoded as its array declares: truncated,
    damaged, a shard index pointing outside its object, or inflating past the chunk's
    declared size; the message names the store, the array and the chunk."""


class DimensionConflictError(MetadataError):
    """One dimension name is used with two different lengths in one group."""


class UnsupportedError(NCZarrError, NotImplementedError):
    """The input is valid but uses a feature nczarr does not support."""


class UnsupportedTypeError(UnsupportedError):
    """An array's data type cannot be represented in the target format; the message names it."""


class MissingDependencyError(NCZarrError, ImportError):
    """An optional package a backend needs is not installed; the message names it."""


class InvalidNameError(NCZarrError, ValueError):
    """A group, variable, dimension or attribute name cannot be written so that every
    reader finds it again (empty, ``/``, a metadata object's name, control characters,
    too long); the message names it."""


class ValueRangeError(NCZarrError, OverflowError):
    """A value does not fit the type it is stored as (``_FillValue`` 1000 for ``int8``);
    the message names the variable and the value."""


class EncodingError(NCZarrError, ValueError, TypeError):
    """A dataset cannot be encoded as netCDF (xarray's CF encoding refuses a variable's
    values or ``encoding``); both builtins, as ``to_netcdf`` raises either."""


class InvalidSettingError(NCZarrError, ValueError):
    """An ``NCZARR_*`` environment variable holds a value nczarr cannot use; the message
    names the variable and the value."""


class NCZarrWarning(UserWarning):
    """Something was not a verbatim copy or a strict reading: re-encoded, renamed, skipped,
    or decoded leniently. The message names the array or key and the reason."""


def warn_all(messages: Iterable[str], stacklevel: int = 3) -> None:
    """Announce each message as an :class:`NCZarrWarning`.

    Translators stay pure and return their warnings as strings; the public entry points
    (``read``, ``view``, ``convert`` ...) pass them here so that they also reach Python's
    ``warnings`` machinery (filters, ``pytest.warns``, logging capture).
    """
    for message in messages:
        warnings.warn(message, NCZarrWarning, stacklevel=stacklevel)


def raise_os_error(exc: OSError, what: str) -> NoReturn:
    """Re-raise an OSError as the nczarr error a caller should see, naming ``what``."""
    if isinstance(exc, NCZarrError):
        raise exc  # already ours (e.g. a refused symlink), already names the key
    if exc.errno in (errno.EACCES, errno.EPERM):
        raise StoragePermissionError(f"permission denied: {what}: {exc}") from exc
    if exc.errno == errno.ENAMETOOLONG:
        raise InvalidKeyError(f"name too long for the file system: {what}") from exc
    raise StorageError(f"cannot access {what}: {exc}") from exc
