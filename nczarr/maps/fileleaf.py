"""The leaf rule of a directory map, checked on disk: a key holding content is never a
prefix of another key (:mod:`nczarr.maps.base`). A file is a key and a directory a
prefix, so one ``stat`` of the leaf usually settles it."""

from __future__ import annotations

import stat

from ..errors import ObjectExistsError, raise_os_error
from ..keys import parent_keys
from .confined import ConfinedTree

__all__ = ["check_leaf_rule"]


def check_leaf_rule(tree: ConfinedTree, key: str) -> None:
    """Raise :class:`~nczarr.errors.ObjectExistsError` if writing normalized ``key``
    into ``tree`` would break the leaf rule (a parent is a file, or ``key`` is a
    directory holding files); a directory holding none is replaced by the write."""
    tree.check_reserved(key)
    if "/" in key:
        # Hot path (every chunk of a copy): the parent directory exists, so no
        # parent holds content; one stat of the leaf settles the rest.
        try:
            parent = tree.open_verified(key[: key.rfind("/")], key)
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {tree.root!r}")
        if parent is not None:
            try:
                mode = parent.stat(key[key.rfind("/") + 1 :]).st_mode
            except FileNotFoundError:
                return
            except OSError as exc:
                raise_os_error(exc, f"{key!r} in {tree.root!r}")
            finally:
                parent.close()
            if stat.S_ISREG(mode):
                return
    try:
        st = tree.lstat_key(key)
    except OSError as exc:
        raise_os_error(exc, f"{key!r} in {tree.root!r}")
    if st is not None and stat.S_ISREG(st.st_mode):
        return  # an overwrite: the parents are directories, the leaf is a file
    if st is not None and stat.S_ISDIR(st.st_mode):
        # A directory where the file should go: refused if it holds content.
        try:
            parent, name = tree.parent(key)
            try:
                below = tree.child(parent, name, key)
            finally:
                parent.close()
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise_os_error(exc, f"{key!r} in {tree.root!r}")
        if tree.has_file(below, key):
            raise ObjectExistsError(
                f"cannot write {key!r}: it is a prefix of existing keys in {tree.root!r}"
            )
        return
    # A file where a directory is needed: stop at the nearest existing directory.
    for parent_key in parent_keys(key):
        try:
            pst = tree.lstat_key(parent_key)
        except OSError as exc:
            raise_os_error(exc, f"{parent_key!r} in {tree.root!r}")
        if pst is None:
            continue
        if stat.S_ISDIR(pst.st_mode):
            return
        raise ObjectExistsError(
            f"cannot write {key!r}: {parent_key!r} holds content, and content-bearing "
            "keys are leaves"
        )
