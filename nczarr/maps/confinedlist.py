"""Listing a :class:`~nczarr.maps.confined.ConfinedTree`: which directory entries are
keys, and the keys of the files below a directory.

Apart from the tree's path checks so each module keeps one job; the listing asks the
tree only for what it already holds (its root, the hidden prefix of temporary files)
and for :meth:`~nczarr.maps.confined.ConfinedTree.child`, which reaches and checks a
subdirectory as every other path is checked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator

from ..errors import raise_os_error, warn_all
from ..keys import FORBIDDEN_CHARACTERS
from .localfs import DirHandle, first_visit

__all__ = ["ConfinedListing"]


class ConfinedListing:
    """The listing half of :class:`~nczarr.maps.confined.ConfinedTree` (a base class:
    it relies on the tree's ``root``, ``hidden_prefix``, ``real_root``,
    ``real_prefix`` and ``child``)."""

    root: str
    hidden_prefix: str
    real_root: str
    real_prefix: str
    child: Callable[..., DirHandle]

    def visible(self, name: str, directory: str) -> bool:
        """Whether a directory entry's name can be (part of) a key."""
        if name.startswith(self.hidden_prefix):
            return False
        if "\\" in name or FORBIDDEN_CHARACTERS.search(name):
            warn_all(
                [
                    f"skipping {os.path.join(directory, name)!r} in {self.root!r}: its name "
                    "is not valid UTF-8 or holds control characters, so it cannot be a key"
                ],
                stacklevel=4,
            )
            return False
        return True

    def entries(
        self, directory: DirHandle, key: str, *, stream: bool = False
    ) -> Iterator[tuple[str, bool]]:
        """``(name, is_dir)`` of the visible files and directories in ``directory``;
        symlinks are followed only when they resolve inside the root. ``stream``: read
        the directory as it is consumed instead of all at once (memory flat in its
        size; entries made or removed meanwhile may or may not be listed)."""
        target = directory.fd if directory.fd is not None else directory.path
        with os.scandir(target) as it:
            if stream:
                yield from self._visible(it, directory)
                return
            entries = list(it)
        yield from self._visible(entries, directory)

    def _listed(self, directory: DirHandle) -> list[tuple[str, bool]]:
        """:meth:`entries` of ``directory`` read at once, as a list (no generator per
        directory: a combine lists five small directories per source)."""
        target = directory.fd if directory.fd is not None else directory.path
        with os.scandir(target) as it:
            return list(self._visible(it, directory))

    def _visible(
        self, entries: Iterable[os.DirEntry[str]], directory: DirHandle
    ) -> Iterator[tuple[str, bool]]:
        """:meth:`entries` of the directory entries ``entries``."""
        hidden, odd = self.hidden_prefix, FORBIDDEN_CHARACTERS.search
        for entry in entries:
            name = entry.name
            # visible() is asked only of the rare name that may fail it; a printable
            # ASCII name has no control character (no regex search per entry)
            if (
                name.startswith(hidden)
                or "\\" in name
                or (not (name.isascii() and name.isprintable()) and odd(name))
            ) and not self.visible(name, directory.path):
                continue
            if entry.is_symlink():
                real = os.path.realpath(directory.join(name))
                if not (real == self.real_root or real.startswith(self.real_prefix)):
                    continue
            try:
                if entry.is_file():
                    yield name, False
                elif entry.is_dir():
                    yield name, True
            except OSError:
                continue

    def files_below(
        self,
        directory: DirHandle,
        key: str,
        *,
        stream: bool = False,
        on_file: Callable[[DirHandle, str, str], object] | None = None,
    ) -> Iterator[str]:
        """Keys of the files anywhere below ``directory`` (key ``key``), depth first.

        ``directory`` is consumed (closed); a directory reached twice (through a link)
        is listed once; an entry that vanishes meanwhile is skipped. ``stream``: each
        directory read as it is consumed (see :meth:`entries`). ``on_file(directory,
        name, key)`` is called for each file before its key is yielded, with the
        directory it was listed in, reached and checked as every listed directory is
        (a listing that reads some files as it goes opens no directory twice).
        """
        seen: set[tuple[int, int]] = set()
        stack = [(directory, key)]
        try:
            while stack:
                current, ckey = stack.pop()
                try:
                    if not first_visit(current, seen):
                        continue
                    listed = (
                        self.entries(current, ckey, stream=True)
                        if stream
                        else self._listed(current)
                    )
                    for name, is_dir in listed:
                        child = f"{ckey}/{name}" if ckey else name
                        if not is_dir:
                            if on_file is not None:
                                on_file(current, name, child)
                            yield child
                            continue
                        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                            stack.append((self.child(current, name, child), child))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except OSError as exc:
                    raise_os_error(exc, f"{ckey!r} in {self.root!r}")
                finally:
                    current.close()
        finally:
            for d, _ in stack:
                d.close()

    def has_file(self, directory: DirHandle, key: str) -> bool:
        """Whether some file (a key) lies anywhere below ``directory`` (consumed)."""
        # streamed: the first file answers, a directory of many chunks is not read whole
        with contextlib.closing(self.files_below(directory, key, stream=True)) as files:
            return next(files, None) is not None
