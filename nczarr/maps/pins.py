"""Directory handles a directory map holds open for one session (a convert's copy).

Outside a session, :class:`~nczarr.maps.confined.ConfinedTree` opens and checks a
key's parent directory at every use (two or three system calls per key). Inside one
(:meth:`ConfinedTree.pinned`, entered by :meth:`nczarr.maps.file.FileMap.session`),
each directory is opened and verified once, and its descriptor is kept: every later
file of that directory is opened relative to it (``openat`` with ``O_NOFOLLOW`` for
reads), so a chunk costs what ``cp`` pays. The guarantee is kept, not weakened: a held
descriptor names the directory that was verified, so a directory swapped for a
symbolic link afterwards is never followed (the link's target is never read or
written); what was verified is what is used. A directory moved elsewhere during the
session keeps receiving the session's files (it is the verified directory; no other
is reached); after the session every use is checked again.

Only descriptor handles are held; where the platform has no ``dir_fd`` support the
tree stays in path mode and checks at every use, as outside a session.
"""

from __future__ import annotations

import threading

from .localfs import DirHandle

__all__ = ["Pin", "PinnedDirs"]

#: Directories held open at once per map and session (least recently used closed
#: first): a convert lists keys directory by directory, so a handful is in use.
MAX_PINNED = 64


class Pin(DirHandle):
    """A held directory handle lent to a caller: ``close()`` gives it back (the
    descriptor stays open until the session ends or the pin is evicted)."""

    __slots__ = ("_evicted", "_owner", "_users")

    def __init__(self, handle: DirHandle, owner: PinnedDirs) -> None:
        super().__init__(handle.path, handle.fd)
        self.via_link = handle.via_link
        self._owner = owner
        self._users = 0
        self._evicted = False

    def close(self) -> None:
        owner = self._owner  # as owner.release(self), inline: once per file of a copy
        with owner._lock:
            self._users -= 1
            if self._evicted and self._users <= 0:
                self.really_close()

    def really_close(self) -> None:
        DirHandle.close(self)


class PinnedDirs:
    """Prefix -> :class:`Pin`, thread-safe; a pin in use when evicted or dropped is
    closed when its last user gives it back."""

    def __init__(self, limit: int = MAX_PINNED) -> None:
        self._pins: dict[str, Pin] = {}
        self._lock = threading.Lock()
        self._limit = limit
        self._closed = False

    def get(self, prefix: str) -> Pin | None:
        """The held handle of ``prefix`` (lent: the caller closes it), or None."""
        with self._lock:
            pin = self._pins.pop(prefix, None)
            if pin is None:
                return None
            self._pins[prefix] = pin  # most recently used last
            pin._users += 1
            return pin

    def add(self, prefix: str, handle: DirHandle) -> DirHandle:
        """Hold ``handle`` (just opened and verified) for ``prefix``; return it lent.

        A path-mode handle (no descriptor) is returned as it is, not held."""
        if isinstance(handle, Pin) or handle.fd is None:
            return handle
        pin = Pin(handle, self)
        with self._lock:
            if self._closed:  # the session ended meanwhile: lend it unheld
                return handle
            old = self._pins.pop(prefix, None)
            if old is not None:
                self._retire(old)
            self._pins[prefix] = pin
            pin._users = 1
            while len(self._pins) > self._limit:
                self._retire(self._pins.pop(next(iter(self._pins))))
        return pin

    def release(self, pin: Pin) -> None:
        with self._lock:
            pin._users -= 1
            if pin._evicted and pin._users <= 0:
                pin.really_close()

    def drop(self, prefix: str) -> None:
        """Forget ``prefix`` and every directory below it (removed or replaced)."""
        below = prefix + "/"
        with self._lock:
            for key in [k for k in self._pins if not prefix or k == prefix or k.startswith(below)]:
                self._retire(self._pins.pop(key))

    def close(self) -> None:
        """Forget every directory (the session ends)."""
        self.drop("")
        with self._lock:
            self._closed = True

    def _retire(self, pin: Pin) -> None:
        pin._evicted = True
        if pin._users <= 0:
            pin.really_close()
