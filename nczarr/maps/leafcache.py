"""What a remote map knows of its own tree, so the leaf rule costs no request per key.

The zmap leaf rule (a key holding content is never a prefix of another key) costs a
remote map requests for every write: a HEAD of each ancestor (does it hold content?)
and a listing below the key (is it a prefix of stored keys?). :class:`KnownTree`
remembers what makes those requests unnecessary, for :class:`~nczarr.maps.s3.S3Map`
and :class:`~nczarr.maps.fsspec.FsspecMap` alike:

* *directories*: prefixes seen with keys below them (written, copied or listed). They
  hold no content, so a key below them needs no HEAD of them. The set is bounded by
  the number of groups and arrays, not chunks.
* *ownership*: a map that created or emptied its root (modes ``"w"``/``"w-"``,
  ``clear()``) wrote every key below it; likewise below a prefix a listing found empty
  (zarr's ``delete_dir`` before it recreates an array). There, a key whose ancestors
  are known directories cannot have keys below it unless it is a known directory
  itself, so it needs no listing either: a fresh array costs one PUT per chunk.
* *doubt*: a delete may leave an ancestor empty or not, so its ancestors stop being
  known directories and become doubtful: writing one of them as content is probed
  again, even in an owned tree.

Writers that bypass the map and break the leaf rule behind its back can make this
knowledge wrong; the zmap contract assumes they do not. Updates are single set
operations, safe from the threads of a map's worker pool.
"""

from __future__ import annotations

from ..keys import parent_keys

__all__ = ["KnownTree"]


class KnownTree:
    """Directories, ownership and doubt of one map's tree (see the module docstring)."""

    def __init__(self) -> None:
        self._dirs: set[str] = set()
        self._doubt: set[str] = set()
        self._owned_prefixes: set[str] = set()
        self._owned = False

    def own_all(self) -> None:
        """The root was verified empty (or emptied): every later key is this map's."""
        self._dirs.clear()
        self._doubt.clear()
        self._owned_prefixes.clear()
        self._owned = True

    def own_below(self, prefix: str) -> None:
        """A listing found nothing below ``prefix``: keys written there are this map's."""
        if prefix:
            self._owned_prefixes.add(prefix)

    def saw_dirs(self, *prefixes: str) -> None:
        """``prefixes`` have keys below them (a listing or a probe said so)."""
        self._dirs.update(prefixes)
        self._doubt.difference_update(prefixes)

    def wrote(self, key: str) -> None:
        """``key`` now holds content: a leaf, below directories."""
        self._dirs.discard(key)
        self._doubt.discard(key)
        self.saw_dirs(*parent_keys(key))

    def deleted(self, key: str) -> None:
        """``key`` was deleted: its ancestors may now be empty, or not."""
        parents = list(parent_keys(key))
        self._dirs.difference_update(parents)
        self._doubt.update(parents)

    def is_dir(self, key: str) -> bool:
        """Whether ``key`` is known to have keys below it."""
        return key in self._dirs

    def unknown_ancestors(self, key: str) -> list[str]:
        """Ancestors of ``key`` not known to be directories (each may hold content)."""
        return [p for p in parent_keys(key) if p not in self._dirs]

    def settled(self, key: str) -> bool:
        """Whether writing ``key`` keeps the leaf rule without asking the store.

        True when every ancestor is a known directory, ``key`` is neither a known nor a
        doubtful directory, and every key below the root (or below one of ``key``'s
        ancestors) was written through this map.
        """
        if key in self._dirs or key in self._doubt:
            return False
        parents = list(parent_keys(key))
        if not all(p in self._dirs for p in parents):
            return False
        return self._owned or any(p in self._owned_prefixes for p in parents)
