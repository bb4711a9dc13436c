"""Where a convert or migrate reads and writes: URLs, open maps, and target formats.

Both :func:`~nczarr.conversion.api.convert` and :func:`~nczarr.conversion.migrate.migrate`
accept a URL, a path or an open map; the helpers here say what the user gave and open
it, closing (flushing) only the maps they opened themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import ExitStack
from typing import Any

from ..errors import InvalidModeError
from ..maps.base import ZMap
from ..translate.conventions import FORMATS
from ..translate.target import Target

__all__ = [
    "check_format",
    "open_location",
    "parsed_url",
    "target_of",
    "url_of",
    "zip_target_options",
]


def check_format(value: str, what: str) -> str:
    """``value`` if it is a target format (``"nczarr"``, ``"zarr"``), else an error naming
    ``what``."""
    if value not in FORMATS:
        raise InvalidModeError(f"invalid {what} {value!r}: expected 'nczarr' or 'zarr'")
    return value


def url_of(location: str | os.PathLike[str] | ZMap) -> str:
    """The URL a report names for ``location``."""
    return location.url if isinstance(location, ZMap) else os.fspath(location)


def open_location(
    location: str | os.PathLike[str] | ZMap,
    mode: str,
    options: Mapping[str, Any] | None,
    stack: ExitStack,
) -> ZMap:
    """A map for ``location``; maps we open are closed (flushed) by ``stack``."""
    if isinstance(location, ZMap):
        if options:
            raise TypeError(
                f"got an open map {location!r}: storage options apply to URLs only, "
                f"got {sorted(options)}"
            )
        return location
    from ..maps.open import open_map

    zmap = open_map(location, mode=mode, storage_options=options)
    stack.callback(zmap.close)
    return zmap


def parsed_url(location: str | os.PathLike[str] | ZMap) -> Any:
    """The :class:`~nczarr.maps.url.NCZarrURL` of ``location``; ``None`` for an open map or
    a chained URL (whose words are the inner URL's)."""
    from ..maps.chainurl import is_chained

    if isinstance(location, ZMap) or is_chained(location):
        return None
    from ..maps.url import parse_url

    return parse_url(location)


def target_of(
    dst: str | os.PathLike[str] | ZMap,
    mode: str | None,
    *,
    noxarray: bool | None = None,
    consolidated: bool | None = None,
    zarr_format: int | None = None,
    netcdf_scalars: bool = False,
) -> Target:
    """The :class:`~nczarr.translate.target.Target` of a convert into ``dst``: each
    option as given, else as the mode words of ``dst``'s fragment say
    (``#mode=zarr,v3,noxarray,consolidated``), else the default (NCZarr, Zarr v2,
    ``_ARRAY_DIMENSIONS`` written, consolidated as the source is).

    Raises
    ------
    InvalidModeError
        A format other than ``"nczarr"``/``"zarr"``, or an impossible combination
        (see :class:`~nczarr.translate.target.Target`).
    """
    parsed = parsed_url(dst)
    fmt = mode if mode is not None else (parsed.format if parsed is not None else None)
    fmt = check_format(fmt or "nczarr", "mode")
    if zarr_format is None:
        zarr_format = (parsed.zarr_version if parsed is not None else None) or 2
    if noxarray is None:
        noxarray = parsed is not None and not parsed.xarray_dimensions
    if consolidated is None and parsed is not None and parsed.consolidated:
        consolidated = True
    return Target(
        fmt,  # type: ignore[arg-type]
        zarr_format,
        noxarray,
        consolidated,
        netcdf_scalars,
        written_copy=True,  # metadata says what the source's producer reads
    )


def zip_target_options(
    dst: str | os.PathLike[str] | ZMap, fmt: str, options: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """``options`` for opening the target ``dst``: a new zip archive for NCZarr gets
    netcdf-c's layout (one top-level directory), which is what netcdf-c reads, even
    when the URL does not say ``#mode=nczarr``."""
    parsed = parsed_url(dst)
    if (
        parsed is not None
        and parsed.storage == "zip"
        and fmt == "nczarr"
        and not os.path.exists(parsed.path)
        and "layout" not in (options or {})
    ):
        return {**(options or {}), "layout": "netcdf"}
    return options
