"""``open_map``: one entry point from a netCDF-style URL (or a path) to the right zmap.

The URL is parsed by :func:`nczarr.maps.url.parse_url`; its storage word
(:attr:`~nczarr.maps.url.NCZarrURL.storage`) names the backend in a registry,
:data:`known_backends` (as fsspec's ``known_implementations``): each entry says which
function opens the map (imported when first used, so opening a directory never
imports s3fs), which extra installs its dependencies, and whether it is local. A word
not in the registry is an fsspec protocol. The local opener looks at the file system
where a URL leaves the choice open (a zip archive without a ``.zip`` suffix, an
existing directory).
"""

from __future__ import annotations

import importlib
import os
import stat
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import MissingDependencyError, NCZarrError, StorageError, StorageNotFoundError
from ..records import record
from .base import ZMap, check_mode
from .url import NCZarrURL, parse_url

__all__ = [
    "Backend",
    "ZIP_MAGIC",
    "backend_for",
    "is_remote",
    "known_backends",
    "merge_options",
    "open_local",
    "open_map",
    "open_plain_dir",
    "open_source",
    "probe_local",
    "register_backend",
]


@record
class Backend:
    """How maps of one URL storage word are opened.

    Attributes
    ----------
    opener
        ``"module:function"``, imported when first used; the function is called as
        ``function(url: NCZarrURL, mode: str, storage_options: dict) -> ZMap``.
    extra
        The ``pip install nczarr[extra]`` that installs the backend's dependencies.
    local
        Whether the storage is this machine's disk (``--storage-option`` is not applied).
    """

    opener: str
    extra: str | None = None
    local: bool = False

    def load(self) -> Callable[[NCZarrURL, str, dict[str, Any]], ZMap]:
        """The opener function (its module imported now)."""
        module, _, name = self.opener.partition(":")
        try:
            return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
        except ModuleNotFoundError as exc:
            name = exc.name or ""
            if self.extra is None or name == "nczarr" or name.startswith("nczarr."):
                raise
            raise MissingDependencyError(
                f"opening this storage needs {exc.name!r}: pip install 'nczarr[{self.extra}]'"
            ) from exc


#: URL storage word -> backend. A word that is not here is an fsspec protocol
#: (:data:`FSSPEC_BACKEND`).
known_backends: dict[str, Backend] = {
    "file": Backend("nczarr.maps.open:open_local", local=True),
    "zip": Backend("nczarr.maps.open:open_local", local=True),
    "s3": Backend("nczarr.maps.s3:open_url", extra="s3"),
}

#: Every other storage word: a map over fsspec's filesystem of that protocol.
FSSPEC_BACKEND = Backend("nczarr.maps.fsspec:open_url")


def register_backend(
    storage: str,
    opener: str,
    *,
    extra: str | None = None,
    local: bool = False,
    clobber: bool = False,
) -> None:
    """Make URLs whose storage word is ``storage`` open with ``opener`` (see
    :class:`Backend`). An existing entry is replaced only with ``clobber=True``."""
    if storage in known_backends and not clobber:
        raise ValueError(
            f"a backend for {storage!r} is already registered "
            f"({known_backends[storage].opener}); pass clobber=True to replace it"
        )
    known_backends[storage] = Backend(opener, extra, local)


def backend_for(storage: str) -> Backend:
    """The backend that opens URLs with this storage word."""
    return known_backends.get(storage, FSSPEC_BACKEND)


#: First bytes of a zip archive: a local file header, or the end record of an empty one.
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def merge_options(
    storage_options: Mapping[str, Any] | None, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """``storage_options`` plus keyword options; a name given both ways is an error.

    Raises
    ------
    TypeError
        ``storage_options`` is not a mapping, or a name is given twice.
    """
    if storage_options is None:
        return dict(extra)
    if not isinstance(storage_options, Mapping):
        raise TypeError(f"storage_options must be a mapping, got {type(storage_options).__name__}")
    twice = sorted(set(storage_options) & set(extra))
    if twice:
        raise TypeError(f"storage option(s) {twice} given both in storage_options and as keywords")
    return {**storage_options, **extra}


def is_remote(url_or_path: Any) -> bool:
    """Whether a URL names storage other than the local disk (S3, fsspec, chained).

    Maps are never remote (they are already open). Used by the CLI to apply
    ``--storage-option`` to remote locations only.
    """
    if isinstance(url_or_path, ZMap):
        return False
    from .chainurl import is_chained

    if is_chained(url_or_path):
        return True
    url = url_or_path if isinstance(url_or_path, NCZarrURL) else parse_url(url_or_path)
    return not backend_for(url.storage).local


def open_map(
    url_or_path: str | os.PathLike[str] | NCZarrURL | ZMap,
    mode: str = "r",
    *,
    storage_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> ZMap:
    """Open the zmap a URL or path names.

    Parameters
    ----------
    url_or_path
        A URL or local path as accepted by :func:`~nczarr.maps.url.parse_url`, a chained
        URL of a zip archive elsewhere (``zip::s3://bucket/x.zip``,
        ``zip::memory://x.zip``; read-only, see :mod:`nczarr.maps.chained`), an
        :class:`~nczarr.maps.url.NCZarrURL`, or an open :class:`ZMap`, which is returned
        as it is (``mode`` and options must then be left at their defaults).
    mode
        ``"r"``, ``"r+"``, ``"a"``, ``"w"`` or ``"w-"`` (see :class:`ZMap`).
    storage_options
        Passed to the backend (the fsspec/xarray name); for S3 they override what the
        URL says and reach ``s3fs.S3FileSystem`` unchanged (``anon=True`` for public
        buckets, ``endpoint_url``, ``region``, ``profile``, ``key``/``secret``,
        ``client_kwargs``, ``config_kwargs``, ... every option s3fs accepts); for zip
        archives ``layout`` overrides the inferred one; for other fsspec protocols
        they go to the filesystem. A directory map takes none.
    **options
        The same options as keywords (``open_map(url, anon=True)``), merged with
        ``storage_options``.

    Returns
    -------
    ZMap
        The backend chosen from :attr:`NCZarrURL.storage`:

        * ``s3`` (``s3://``, an AWS host, or ``#mode=...,s3`` with an endpoint):
          :class:`~nczarr.maps.s3.S3Map` with the URL's endpoint, region and profile.
        * ``zip`` (``#mode=zip`` or a ``.zip`` suffix), or ``file`` naming an existing
          file that starts with zip magic bytes: :class:`~nczarr.maps.zip.ZipMap`. An
          archive being created (missing, or ``mode="w"``) by a URL that names an
          NCZarr format (``#mode=nczarr,zip``) gets netcdf-c's layout (one top-level
          directory); existing archives are left to auto-detect.
        * ``file``: :class:`~nczarr.maps.file.FileMap` over an existing or new directory.
        * any other protocol: :class:`~nczarr.maps.fsspec.FsspecMap`.

    Raises
    ------
    InvalidURLError
        The URL is malformed or names a protocol fsspec does not know.
    StorageError
        A local path is a regular file that is not a zip archive, or a zip URL names
        a directory.
    """
    storage_options = merge_options(storage_options, options)
    if isinstance(url_or_path, ZMap):
        if mode != "r" or storage_options:
            raise TypeError(
                f"open_map got an open map {url_or_path!r}: it is returned as it is, "
                f"so mode and storage options cannot be applied (mode={mode!r}, "
                f"options {sorted(storage_options)})"
            )
        return url_or_path
    check_mode(mode)
    from .chainurl import is_chained

    if is_chained(url_or_path):
        from .chained import open_chained

        return open_chained(url_or_path, mode, storage_options)  # type: ignore[arg-type]
    url = url_or_path if isinstance(url_or_path, NCZarrURL) else parse_url(url_or_path)
    from .. import hooks  # a file holding a whole dataset (.nc): lent from above

    if hooks.file_source is not None:
        opened = hooks.file_source(url, mode, storage_options)
        if opened is not None:
            return opened
    return backend_for(url.storage).load()(url, mode, storage_options)


def open_plain_dir(
    location: str | os.PathLike[str] | ZMap,
    realpath: Callable[[str], str] | None = os.path.realpath,
) -> ZMap | None:
    """What ``open_map(location, "r")`` opens for a plain path naming an existing
    directory (a :class:`~nczarr.maps.file.FileMap`), without parsing it as a URL, its
    real root resolved by ``realpath`` (a combine's
    :class:`~nczarr.maps.overlap.RealPaths`: sources side by side share their parents'
    resolution). None for anything else: a URL or anything that may be one (a ``:`` or
    ``#``), a ``.zip`` name, a name with a control character, a path that is no
    directory (a file, an archive, missing, unreadable); :func:`open_map` then opens it
    (or refuses it) as it always does. A combine of 365 sources parsed and resolved
    each in full: about a tenth of its time. ``realpath`` None: the real root is
    resolved when first needed (a combine's source opened again for its copies)."""
    if isinstance(location, ZMap):
        return None
    text = os.fspath(location)
    if (
        not isinstance(text, str)
        or not text
        or ":" in text
        or "#" in text
        or not (text.isascii() and text.isprintable())
        or text.lower().endswith(".zip")
    ):
        return None
    path = os.path.abspath(text)
    from .file import FileMap

    try:
        if realpath is None:
            return FileMap(path, "r", lazy_real_root=True)
        return FileMap(path, "r", real_root=realpath(path))
    except NCZarrError:  # not a directory (or an error): open_map says what it is
        return None


def open_local(url: NCZarrURL, mode: str, storage_options: dict[str, Any]) -> ZMap:
    """A directory (:class:`~nczarr.maps.file.FileMap`) or zip archive
    (:class:`~nczarr.maps.zip.ZipMap`) map, as the URL and what is on disk say."""
    path = url.path
    kind = probe_local(path)
    if url.storage == "zip" or kind == "zip":
        if kind == "directory":
            raise StorageError(f"cannot open {path!r} as a zip archive: it is a directory")
        if kind == "other":
            raise StorageError(
                f"cannot open {path!r} as a zip archive: it is not a zip file "
                "(no PK signature) and will not be overwritten"
            )
        return _open_zip(
            url,
            mode,
            creating=kind in ("missing", "empty") or mode == "w",
            storage_options=storage_options,
        )
    if kind in ("other", "empty"):
        if mode == "r":  # the file-source hook was asked first: not a netCDF file
            raise StorageError(
                f"cannot open {path!r}: a regular file that is neither a zip archive "
                "nor a netCDF file"
            )
        raise StorageError(
            f"cannot open {path!r}: it is a regular file, neither a directory nor a zip archive"
        )
    if kind == "missing" and mode == "r":  # a source: a directory, zip or netCDF file
        raise StorageNotFoundError(f"no such file or directory: {path!r}")
    if storage_options:
        raise TypeError(
            f"a directory map ({path!r}) takes no storage options, got {sorted(storage_options)}"
        )
    from .file import FileMap

    return FileMap(path, mode)


def _open_zip(
    url: NCZarrURL, mode: str, *, creating: bool, storage_options: dict[str, Any]
) -> ZMap:
    from .zip import ZipMap

    options: dict[str, Any] = {}
    if creating and "nczarr" in url.mode:
        options["layout"] = "netcdf"
    options.update(storage_options)
    return ZipMap(url.path, mode, **options)


def probe_local(path: str) -> str:
    """What is at a local path: ``"missing"``, ``"directory"``, ``"zip"`` (a file
    starting with zip magic bytes), ``"empty"`` (a 0-byte file) or ``"other"``.

    Permission errors while looking propagate as :class:`StorageError` subclasses
    naming the path.
    """
    try:
        if os.path.isdir(path):
            return "directory"
        # Only regular files are probed: opening a FIFO would block (O_NONBLOCK makes it
        # return where the platform has it; the stat covers the rest).
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise StorageError(f"cannot open {path!r}: it is not a regular file or directory")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise StorageError(f"cannot open {path!r}: it is not a regular file or directory")
            head = os.read(fd, 4)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing"
    except PermissionError as exc:
        from ..errors import StoragePermissionError

        raise StoragePermissionError(f"permission denied reading {path!r}: {exc}") from None
    except IsADirectoryError:
        return "directory"
    except StorageError:
        raise
    except OSError as exc:
        raise StorageError(f"cannot inspect {path!r}: {exc}") from None
    if not head:
        return "empty"
    return "zip" if head in ZIP_MAGIC else "other"


def open_source(
    src: Any, storage_options: Mapping[str, Any] | None = None, *, caller: str = ""
) -> tuple[ZMap, bool]:
    """The map of ``src`` (an open map, a URL or a path) and whether it was opened here
    (then the caller closes it). Storage options with an open map are a TypeError, as
    is anything else; ``caller`` names the function in the message (``view``)."""
    if isinstance(src, ZMap):
        if storage_options:
            who = f"{caller} got" if caller else "got"
            raise TypeError(
                f"{who} an open map {src!r}: storage options apply to URLs only, "
                f"got {sorted(storage_options)}"
            )
        return src, False
    if isinstance(src, str | os.PathLike):
        return open_map(os.fspath(src), mode="r", storage_options=storage_options), True
    raise TypeError(f"expected a URL, a path or a ZMap, got {type(src).__name__}")
