"""One output file written whole (:func:`write_whole`): what is at the path is replaced
only once the new bytes are all stored, so a failure or a kill meanwhile leaves it as
it was, never half a document (``fsspec.open(out, "w")`` truncates it first).

Locally the bytes go to a new file beside the target, are synced, and are renamed over
it (``os.replace``); a symbolic link is followed (the file it names is replaced, the
link stays), a missing parent directory is made (as fsspec's writer does), and a
replaced file keeps its permission bits. Where the directory is not writable but the
file is, the file is rewritten in place (nothing else can be done there). On a remote
file system the bytes are one upload (``pipe_file``), which object stores (S3, GCS,
Azure) make visible whole or not at all.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from collections.abc import Mapping
from typing import Any

from ..maps.localfs import flag
from ..maps.ziparchive import copy_mode, replace_atomically

__all__ = ["write_whole"]


def write_whole(out: str, data: bytes, options: Mapping[str, Any]) -> None:
    """Store ``data`` at ``out`` (a path or fsspec URL; ``options``: fsspec's, with
    ``compression`` as ``fsspec.open`` takes it) as described in the module doc."""
    import fsspec
    from fsspec.utils import infer_compression

    options = dict(options)
    compression = options.pop("compression", None)
    if compression == "infer":
        compression = infer_compression(out)
    if compression is not None:
        data = _compressed(data, compression)
    fs, path = fsspec.core.url_to_fs(out, **options)
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if "file" not in protocols:
        fs.pipe_file(path, data)
    else:
        _replace_local(os.path.realpath(path), data)


def _compressed(data: bytes, compression: str) -> bytes:
    """``data`` through fsspec's compressor ``compression`` (``gzip``, ``bz2``...)."""
    from fsspec.compression import compr

    if compression not in compr:
        raise ValueError(f"compression {compression!r} is not one of fsspec's: {sorted(compr)}")
    buffer = io.BytesIO()
    with compr[compression](buffer, mode="wb") as f:
        f.write(data)
    return buffer.getvalue()


def _replace_local(path: str, data: bytes) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    try:
        fd, temp = _new_beside(folder)
    except PermissionError:
        if not os.path.isfile(path):
            raise
        with open(path, "r+b") as f:  # a writable file in a directory that is not
            f.write(data)
            f.truncate()
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        copy_mode(path, temp)  # a replaced file keeps its permissions (none: nothing)
        replace_atomically(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.chmod(temp, 0o600)  # copy_mode may have made it read-only (Windows)
            os.remove(temp)
        raise


def _new_beside(folder: str) -> tuple[int, str]:
    """A new file in ``folder`` with a hidden random name, created with mode 0o666
    less the umask (the kernel applies it), and its descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_BINARY") | flag("O_CLOEXEC")
    for _ in range(100):
        temp = os.path.join(folder, f".nczarr-out-{secrets.token_hex(6)}")
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")  # pragma: no cover
