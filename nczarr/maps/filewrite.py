"""How a directory map's files are written: atomically, or created in place.

The write half of :class:`~nczarr.maps.file.FileMap`, over the map's
:class:`~nczarr.maps.confined.ConfinedTree`. An atomic write fills a temporary file in
the target directory, then ``os.replace`` moves it over the key, so a reader sees the
old content or the new, never a part; temporary names start with :data:`TEMP_PREFIX`,
are never listed, and a killed write's are found by :func:`remove_temporaries`. A
copy that may be seen short until it returns (a chunk copier writing metadata last)
creates a new file in place instead (:func:`write_new`): one directory operation, not
two. A failed write removes what it created; OS errors become the errors of
:mod:`nczarr.errors`, naming the key and the root.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable

from ..errors import NCZarrError, ObjectExistsError, raise_os_error
from .confined import ConfinedTree
from .localfs import DirHandle, flag

__all__ = ["TEMP_PREFIX", "remove_temporaries", "write_atomic", "write_in_parent", "write_new"]

#: Names of in-flight temporary files start with this; they are never keys.
TEMP_PREFIX = ".~nczarr-tmp-"

#: ``fill(fd)`` writes a file's content to the open descriptor ``fd``.
Fill = Callable[[int], object]


def write_in_parent(tree: ConfinedTree, key: str, fill: Fill) -> bool:
    """Hot path of a write (every chunk of a copy): the parent directory is opened
    and verified once and the file written in it. No parent can hold content (the
    parent is a directory), and a directory at the leaf makes the rename fail: then,
    as when the parent is missing, False sends the caller the slow path."""
    tree.check_reserved(key)
    cut = key.rfind("/")
    if cut < 0:
        return False
    try:
        parent = tree.open_verified(key[:cut], key)
    except OSError as exc:
        raise_os_error(exc, f"{key!r} in {tree.root!r}")
    if parent is None:
        return False
    try:
        _write_temp(parent, key[cut + 1 :], fill)
    except IsADirectoryError:
        return False
    except OSError as exc:
        raise_os_error(exc, f"{key!r} in {tree.root!r}")
    finally:
        parent.close()
    return True


def write_new(tree: ConfinedTree, key: str, fill: Fill) -> bool:
    """Create ``key`` in place with ``fill`` if it does not exist and its parent
    directories do; ``False`` (nothing done) otherwise."""
    try:
        parent, name = tree.parent(key)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise_os_error(exc, f"{key!r} in {tree.root!r}")
    try:
        try:
            fd = parent.open(
                name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_BINARY") | flag("O_CLOEXEC"),
                0o666,
            )
        except (FileExistsError, FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return False  # exists (or a link or directory is there), or the parent went
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {tree.root!r}")
        try:
            try:
                fill(fd)
            finally:
                os.close(fd)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                parent.unlink(name)
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, f"{key!r} in {tree.root!r}")
            raise
        return True
    finally:
        parent.close()


def write_atomic(tree: ConfinedTree, key: str, fill: Fill) -> None:
    """Atomically make ``key`` hold what ``fill(fd)`` writes to a fresh file."""
    try:
        parent, name = tree.parent(key, create=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ObjectExistsError(
            f"cannot write {key!r}: a parent is a file in {tree.root!r}"
        ) from exc
    except OSError as exc:
        raise_os_error(exc, f"{key!r} in {tree.root!r}")
    try:
        try:
            _write_temp(parent, name, fill)
        except IsADirectoryError:
            # An empty directory tree where the file goes (the leaf rule checked it).
            parent.rmtree(name)
            tree.unpin(key)
            _write_temp(parent, name, fill)
    except IsADirectoryError as exc:
        raise ObjectExistsError(
            f"cannot write {key!r}: it became a directory in {tree.root!r}"
        ) from exc
    except OSError as exc:
        raise_os_error(exc, f"{key!r} in {tree.root!r}")
    finally:
        parent.close()


def remove_temporaries(root: str, directories: Iterable[str] | None = None) -> int:
    """Delete temporary files of killed atomic writes below ``root`` (symbolic links
    are not followed); return how many were removed. ``directories``: only those
    directly in these directories (keys, ``""`` for the root), not below them, so a
    caller that knows where its writes went lists no chunk directory."""
    if directories is not None:
        return sum(_remove_in(root, key) for key in dict.fromkeys(directories))
    removed = 0
    for directory, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            if name.startswith(TEMP_PREFIX):
                try:
                    os.unlink(os.path.join(directory, name))
                except FileNotFoundError:
                    continue
                removed += 1
    return removed


def _remove_in(root: str, key: str) -> int:
    """Temporaries directly in the directory of ``key``, if it is inside ``root``."""
    path = os.path.join(root, *key.split("/")) if key else root
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(os.path.join(real_root, "")):
        return 0  # reached through a link out of the tree: not ours
    try:
        names = [n for n in os.listdir(path) if n.startswith(TEMP_PREFIX)]
    except (FileNotFoundError, NotADirectoryError):
        return 0
    removed = 0
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(path, name))
            removed += 1
    return removed


def _write_temp(parent: DirHandle, name: str, fill: Fill) -> None:
    """Write a temporary file in ``parent`` with ``fill``, then move it to ``name``."""
    temp = TEMP_PREFIX + os.urandom(8).hex()  # secrets.token_hex, without importing random
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_BINARY") | flag("O_CLOEXEC")
    fd = parent.open(temp, flags, 0o666)
    try:
        try:
            fill(fd)
        finally:
            os.close(fd)
        parent.replace(temp, name)
    except BaseException:
        with contextlib.suppress(OSError):
            parent.unlink(temp)
        raise
