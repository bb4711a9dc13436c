"""How a directory map's files are read: one key, many keys, a cap or a byte range.

The read half of :class:`~nczarr.maps.file.FileMap`, over the map's
:class:`~nczarr.maps.confined.ConfinedTree` (every path checked to stay inside the
root). Reading many keys (:func:`read_many`) opens and verifies each directory once
for a run of keys in it, the chunks of an array as zarr asks for them: a plain
regular file is then one ``openat``, ``fstat``, ``read`` and ``close``, and anything
else (a link, a FIFO, a missing file) takes the checked path of a single read. A
missing key is a ``KeyError`` (or left out of a many-key result); OS errors become
the errors of :mod:`nczarr.errors`, naming the key and the root.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import raise_os_error
from ..keys import normalize_key
from .confined import ConfinedTree
from .localfs import flag, read_fd

__all__ = ["list_reading", "load_key", "read_capped", "read_many", "read_range"]


def load_key(tree: ConfinedTree, key: str) -> bytes:
    """The content of normalized ``key``; ``KeyError(key)`` if it is not a file."""
    return _read_opened(tree, key, lambda: tree.open_key(key))


def read_many(tree: ConfinedTree, keys: Iterable[str], cap: int | None = None) -> dict[str, bytes]:
    """``{key: content}`` of the ``keys`` that are files (at most ``cap`` bytes of
    each), consecutive keys in one directory sharing one opened, verified parent
    directory (same checks as :func:`load_key` for each)."""
    out: dict[str, bytes] = {}
    parent: Any = None
    parent_prefix: str | None = None
    # The plain case inline (a regular file opened without following a link,
    # relative to its verified directory): open_leaf's checks, without its calls.
    plain = _plain_read_flags()
    hidden = tree.hidden_prefix
    try:
        for key in keys:
            nkey = normalize_key(key)
            cut = nkey.rfind("/")
            prefix = nkey[:cut] if cut >= 0 else ""
            if prefix != parent_prefix:
                if parent is not None:
                    parent.close()
                parent, parent_prefix = None, prefix
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    parent = tree.parent(nkey)[0]
            if parent is None:
                continue  # no such directory: no such key
            name = nkey[cut + 1 :]
            if plain and parent.fd is not None and hidden not in nkey:
                data = _read_plain(parent.fd, name, plain, cap)
                if data is not None:
                    out[key] = data
                    continue
            if cap is not None:  # anything else: the checked path
                _read_capped(tree, key, nkey, cap, out)
                continue
            with contextlib.suppress(KeyError):
                out[key] = _load_in(tree, parent, nkey, name)
    except OSError as exc:
        raise_os_error(exc, f"reading keys in {tree.root!r}")
    finally:
        if parent is not None:
            parent.close()
    return out


def list_reading(
    tree: ConfinedTree, wanted: Mapping[str, int | None]
) -> tuple[list[str], dict[str, bytes]]:
    """Every key of the tree (as a listing of its root) and ``{key: content}`` of the
    ``wanted`` keys that are files (key -> at most that many bytes, None: all), read as
    the listing passes their directory: each directory opened and checked once for
    both (a combine's source: its listing and its ~10 metadata objects). A wanted file
    that is listed but not the plain case (a link inside the tree) takes
    :func:`read_many`'s path; one not listed is not a key: left out."""
    out: dict[str, bytes] = {}
    left: list[str] = []
    plain = _PLAIN_FLAGS
    hidden = tree.hidden_prefix

    def read(directory: Any, name: str, key: str) -> None:
        if key not in wanted:
            return
        if plain and directory.fd is not None and hidden not in key:
            data = _read_plain(directory.fd, name, plain, wanted[key])
            if data is not None:
                out[key] = data
                return
        left.append(key)

    try:
        start = tree.root_dir()
    except (FileNotFoundError, NotADirectoryError):
        return [], {}
    except OSError as exc:
        raise_os_error(exc, f"listing {tree.root!r}")
    keys = list(tree.files_below(start, "", on_file=read))
    for key in left:
        cap = wanted[key]
        out.update(read_many(tree, [key]) if cap is None else read_capped(tree, [key], cap))
    return keys, out


def read_capped(tree: ConfinedTree, keys: Iterable[str], cap: int) -> dict[str, bytes]:
    """At most ``cap`` bytes of each file of ``keys``, never reading more (keys in
    one directory, the metadata objects a crawl probes, share one opened, verified
    parent directory, as in :func:`read_many`)."""
    if cap < 0:
        raise ValueError(f"cap must be >= 0, got {cap}")
    return read_many(tree, keys, cap)


def _read_capped(tree: ConfinedTree, key: str, nkey: str, cap: int, out: dict[str, bytes]) -> None:
    """The checked read of at most ``cap`` bytes of ``nkey`` into ``out[key]``."""
    try:
        with open(tree.open_key(nkey)[0], "rb") as f:
            out[key] = f.read(cap)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return
    except OSError as exc:
        raise_os_error(exc, f"{nkey!r} in {tree.root!r}")


def read_range(tree: ConfinedTree, key: str, start: int, length: int | None) -> bytes:
    """Bytes ``start:start+length`` of ``key``, read without loading the whole file.

    A sharded read makes two of these per chunk (the shard index, then the chunk), so
    the plain case costs what :func:`read_many`'s does: the parent directory opened and
    verified (:meth:`ConfinedTree.parent`), the file opened ``O_NOFOLLOW`` relative to
    it, one ``fstat`` (a regular file), one ``pread``; no buffered file object, no
    second ``fstat`` or ``seek``. Anything else (a link, a FIFO, a missing file, a
    platform without those flags) takes the checked path (:meth:`ConfinedTree.open_leaf`).
    """
    nkey = normalize_key(key)
    try:
        parent, name = tree.parent(nkey)
        try:
            opened = _open_plain(parent.fd, name) if parent.fd is not None else None
            fd, size = opened if opened is not None else _open_checked(tree, parent, name, nkey)
        finally:
            parent.close()
        try:
            stop = None if length is None else start + length
            first, last, _ = slice(start, stop).indices(size)
            return _read_at(fd, first, last - first) if last > first else b""
        finally:
            os.close(fd)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise KeyError(nkey) from None
    except OSError as exc:
        raise_os_error(exc, f"{nkey!r} in {tree.root!r}")


def _open_checked(tree: ConfinedTree, parent: Any, name: str, key: str) -> tuple[int, int]:
    fd, st = tree.open_leaf(parent, name, key)
    return fd, st.st_size


def _open_plain(dir_fd: int, name: str, flags: int | None = None) -> tuple[int, int] | None:
    """``(descriptor, size)`` of the regular file ``name`` of the open directory
    ``dir_fd`` (opened with ``flags``, default the plain-case ones), or None when it is
    anything else (missing, a link, a directory, a FIFO, an error): the caller then
    takes the checked path, which reads or refuses it."""
    flags = _PLAIN_FLAGS if flags is None else flags
    if not flags:
        return None
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st.st_size


def _read_at(fd: int, offset: int, size: int) -> bytes:
    """``size`` bytes of ``fd`` from ``offset`` (fewer if it ends sooner)."""
    pread = getattr(os, "pread", None)
    if pread is None:  # Windows: no pread
        os.lseek(fd, offset, os.SEEK_SET)
        return read_fd(fd, size)
    data = pread(fd, size, offset)
    if len(data) < size:
        parts = [data]
        done = len(data)
        while done < size and (more := pread(fd, size - done, offset + done)):
            parts.append(more)
            done += len(more)
        data = b"".join(parts)
    return data


def _load_in(tree: ConfinedTree, parent: Any, key: str, name: str) -> bytes:
    """:func:`load_key` of ``key`` whose parent directory ``parent`` is already open."""
    tree.check_reserved(key)
    return _read_opened(tree, key, lambda: tree.open_leaf(parent, name, key))


def _read_opened(tree: ConfinedTree, key: str, opener: Callable[[], tuple[int, Any]]) -> bytes:
    """The whole file ``opener`` opens (and this closes); ``KeyError(key)`` if it is
    not a file, any other OSError as nczarr's error naming ``key``."""
    try:
        fd, st = opener()
        try:
            return read_fd(fd, st.st_size)
        finally:
            os.close(fd)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise KeyError(key) from None
    except OSError as exc:
        raise_os_error(exc, f"{key!r} in {tree.root!r}")


def _plain_read_flags() -> int:
    """Flags of :func:`_read_plain`, or 0 where the platform lacks ``O_NOFOLLOW`` or
    ``O_NONBLOCK`` (the checked path then reads every key)."""
    if not (flag("O_NOFOLLOW") and flag("O_NONBLOCK")):
        return 0
    return (
        os.O_RDONLY
        | flag("O_BINARY")
        | flag("O_CLOEXEC")
        | flag("O_NONBLOCK")  # a FIFO's open returns; no effect on regular files
        | flag("O_NOFOLLOW")  # a link is left to the checked path
    )


#: The flags of the plain-case opens, computed once (0: no plain case here).
_PLAIN_FLAGS = _plain_read_flags()


def _read_plain(dir_fd: int, name: str, flags: int, cap: int | None = None) -> bytes | None:
    """The bytes (at most ``cap``) of the regular file ``name`` of the open directory
    ``dir_fd``, or None when it is anything else (see :func:`_open_plain`)."""
    opened = _open_plain(dir_fd, name, flags)
    if opened is None:
        return None
    fd, size = opened
    try:
        return read_fd(fd, size if cap is None else min(size, cap))
    except OSError:
        return None
    finally:
        os.close(fd)
