"""A directory tree whose every path is checked, at use, to stay inside its root.

:class:`~nczarr.maps.file.FileMap` reaches files only through a :class:`ConfinedTree`:
the checks that keep a key inside the map's root (symbolic links followed only when
they resolve inside it, directories swapped for links caught, FIFOs and devices
refused) live here, apart from what the map does with the files. How each check is
made on each platform (``/proc/self/fd`` or ``F_GETPATH``, ``dir_fd`` with
``O_NOFOLLOW``, or a ``realpath`` containment check) is in the
:mod:`~nczarr.maps.file` docstring; the OS-specific lookups are
:mod:`nczarr.maps.localfs`, and the copies between directories a session holds open
(no lookup, no check left to make) are :mod:`nczarr.maps.sessioncopy`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator

from ..errors import (
    InvalidKeyError,
    NCZarrError,
    StorageError,
    StoragePermissionError,
)
from .confinedlist import ConfinedListing
from .localfs import DirHandle, fd_path, flag, use_dir_fds
from .pins import PinnedDirs
from .sessioncopy import copy_between, copy_pairs, copy_runs, session_flags

__all__ = ["ConfinedTree"]

_MAX_LINK_DEPTH = 8
_MAX_VERIFIED = 4096  # directories remembered as verified, per map
_FILE_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class ConfinedTree(ConfinedListing):
    """The directory tree at ``root``; names starting with ``hidden_prefix`` (a map's
    temporary files) are never listed, and keys using it are refused.

    Directory handles it returns are the caller's to close.
    """

    def __init__(
        self, root: str, hidden_prefix: str, real_root: str | None = None, *, lazy: bool = False
    ) -> None:
        self.root = root
        self.hidden_prefix = hidden_prefix
        # ``real_root``: the caller resolved ``os.path.realpath(root)`` already (a
        # combine resolves its sources side by side: maps.overlap.RealPaths); ``lazy``:
        # resolved when a link is first met (a combine's source opened again for its
        # copies meets none). Either way links are confined to the root's real path as
        # it is then; the root itself is reached by its path at every use.
        if real_root is None and not lazy:
            real_root = os.path.realpath(root)
        self._real_root = real_root
        # prefix -> (st_dev, st_ino, st_ctime_ns) of a directory verified inside the root
        self._verified: dict[str, tuple[int, int, int]] = {}
        # Directories held open during a session (see pinned()), else None.
        self._pins: PinnedDirs | None = None
        self._session_flags: tuple[int, int] | None = None
        self._sessions = 0
        self._session_lock = threading.Lock()

    @property
    def real_root(self) -> str:
        """``os.path.realpath`` of the root (links inside are followed only below it)."""
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    @property
    def real_prefix(self) -> str:
        """:attr:`real_root` with a trailing separator."""
        return self.real_root.rstrip(os.sep) + os.sep

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """A session: each directory used is opened and verified once and held open
        until the block ends (:mod:`nczarr.maps.pins`). Blocks nest; any thread may use
        the tree meanwhile."""
        with self._session_lock:
            if self._sessions == 0:
                self._pins = PinnedDirs()
                self._session_flags = session_flags()
            self._sessions += 1
        try:
            yield
        finally:
            with self._session_lock:
                self._sessions -= 1
                if self._sessions == 0 and self._pins is not None:
                    self._pins.close()
                    self._pins = None

    def copy_new(
        self, src: ConfinedTree, src_key: str, key: str, copy: Callable[[int, int, int], int]
    ) -> int | None:
        """Session fast path of a file-to-file copy into a key that does not exist yet:
        both parent directories already held (opened and verified earlier in the
        session), the source opened ``O_NOFOLLOW | O_NONBLOCK`` relative to its
        directory and checked regular by ``fstat``, the target created ``O_EXCL``
        relative to its own, ``copy(fd_in, fd_out, size)`` between them
        (:func:`~nczarr.maps.sessioncopy.copy_between`). Returns the bytes copied, or
        None when anything is not the plain case (no session, a directory not held
        yet, a link, an existing target, any error): nothing is left behind and the
        caller takes the checked path, which raises properly."""
        pins, src_pins, flags = self._pins, src._pins, self._session_flags
        if pins is None or src_pins is None or flags is None or src._session_flags is None:
            return None
        if self.hidden_prefix in key or src.hidden_prefix in src_key:
            return None
        return copy_between(src_pins, src_key, pins, key, flags, copy)

    def copy_new_many(
        self,
        src: ConfinedTree,
        keys: Iterable[str],
        copy: Callable[[int, int, int], int],
        fallback: Callable[[str], object] | None = None,
    ) -> Iterator[tuple[str, object]]:
        """:meth:`copy_new` for many keys (the same key on both sides), yielding
        ``(key, bytes copied or None)`` in order; None means "take the checked path"
        exactly as :meth:`copy_new`'s None does, and the caller does so before asking
        for the next key.

        The same system calls and checks per key as :meth:`copy_new`, but the held
        directories are looked up once per run of keys in one directory, not per key
        (:func:`~nczarr.maps.sessioncopy.copy_runs`): what a convert of a directory of
        chunks pays is then the kernel's work. A key whose leaf name is not plainly
        valid (empty, ``.``/``..``, a backslash, a control character, the hidden
        prefix, a long key) is left to the checked path, which refuses it properly.

        ``fallback(key)``: the checked path, called for such a key before the next one
        is copied; its result is yielded instead of None."""
        pins, src_pins, flags = self._pins, src._pins, self._session_flags
        if pins is None or src_pins is None or flags is None or src._session_flags is None:
            if fallback is None:
                return ((key, None) for key in keys)
            return ((key, fallback(key)) for key in keys)
        hidden = (self.hidden_prefix, src.hidden_prefix)
        return copy_runs(src_pins, pins, keys, hidden, flags, copy, fallback)

    def copy_new_pairs(
        self,
        src: ConfinedTree,
        pairs: Iterable[tuple[str, str]],
        copy: Callable[[int, int, int], int],
    ) -> Iterator[tuple[str, str, int | None]]:
        """:meth:`copy_new_many` for ``(src_key, key)`` pairs, yielding ``(src_key, key,
        bytes copied or None)`` in order (None: take the checked path, as there). A
        directory not held yet is opened, verified and held first (:meth:`lend_dir`), so
        even the first pair of a directory is a plain copy
        (:func:`~nczarr.maps.sessioncopy.copy_pairs`)."""
        pins, src_pins, flags = self._pins, src._pins, self._session_flags
        if pins is None or src_pins is None or flags is None or src._session_flags is None:
            yield from ((s, d, None) for s, d in pairs)
            return
        hidden = (self.hidden_prefix, src.hidden_prefix)
        yield from copy_pairs(src.lend_dir, self.lend_dir, pairs, hidden, flags, copy)

    def lend_dir(self, prefix: str) -> DirHandle | None:
        """In a session, the held directory ``prefix`` (lent: the caller closes it),
        reached first by :meth:`walk` (every component opened ``O_NOFOLLOW`` relative
        to the last, links followed only inside the root) when it is not held yet;
        None outside a session, where the directory is missing, where the platform
        holds no directory descriptors (path mode), or on any error (the checked path
        then creates, walks or refuses it properly). A walk, not :meth:`open_verified`:
        as many system calls, and nothing remembered per directory (a combine's
        thousand sources would each keep theirs)."""
        pins = self._pins
        if pins is None:
            return None
        held = pins.get(prefix)
        if held is not None:
            return held
        try:
            self.check_reserved(prefix)
            handle = self._reach(prefix)
        except (OSError, NCZarrError):
            return None
        if handle.fd is None:  # path mode: nothing to hold, every use is checked
            handle.close()
            return None
        return pins.add(prefix, handle)

    def _reach(self, prefix: str) -> DirHandle:
        """Directory ``prefix`` reached from its held parent (lent, and held first if it
        is not: each component opened ``O_NOFOLLOW`` relative to the last, as
        :meth:`walk` does from the root, which a source's second directory then does not
        open again), or walked from the root (the root, or a parent not held)."""
        if not prefix:
            return self.walk([], prefix)
        cut = prefix.rfind("/")
        parent = self.lend_dir(prefix[:cut] if cut >= 0 else "")
        if parent is None:
            return self.walk(prefix.split("/"), prefix)
        try:
            return self.child(parent, prefix[cut + 1 :], prefix)
        finally:
            parent.close()  # given back: the session holds it

    def unpin(self, prefix: str) -> None:
        """Forget held directories at and below ``prefix`` (removed or replaced)."""
        pins = self._pins
        if pins is not None:
            pins.drop(prefix)

    def check_reserved(self, key: str) -> None:
        """Refuse a key with a segment that starts with the hidden prefix."""
        if self.hidden_prefix in key:
            for segment in key.split("/"):
                if segment.startswith(self.hidden_prefix):
                    raise InvalidKeyError(
                        f"invalid key {key!r}: names starting with {self.hidden_prefix!r} are "
                        "reserved for temporary files"
                    )

    def root_dir(self) -> DirHandle:
        """The root directory as a handle (the root path itself may be a symlink)."""
        if use_dir_fds():
            fd = os.open(self.root, os.O_RDONLY | flag("O_DIRECTORY") | flag("O_CLOEXEC"))
            if not flag("O_DIRECTORY") and not stat.S_ISDIR(os.fstat(fd).st_mode):
                os.close(fd)
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", self.root)
            return DirHandle(self.root, fd)
        return DirHandle(self.root, None)

    def child(self, parent: DirHandle, name: str, key: str, depth: int = 0) -> DirHandle:
        """The subdirectory ``name`` of ``parent``, checked *now*: a real directory, or
        a symbolic link that resolves inside the root (reached again from the root
        without following any link). Raises FileNotFoundError / NotADirectoryError
        when it is missing or not a directory, StoragePermissionError on an escape."""
        path = parent.join(name)
        if parent.fd is not None:
            flags = os.O_RDONLY | flag("O_DIRECTORY") | flag("O_CLOEXEC") | flag("O_NOFOLLOW")
            try:
                fd = os.open(name, flags, dir_fd=parent.fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                fd = None
            if fd is not None:
                if flag("O_DIRECTORY") or stat.S_ISDIR(os.fstat(fd).st_mode):
                    return DirHandle(path, fd)
                os.close(fd)
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        mode = os.stat(
            name if parent.fd is not None else path, dir_fd=parent.fd, follow_symlinks=False
        ).st_mode
        if stat.S_ISLNK(mode):
            return self._through_link(path, key, depth)
        if not stat.S_ISDIR(mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        return DirHandle(path, None)  # path mode (no dir_fd on this platform)

    def _through_link(self, path: str, key: str, depth: int) -> DirHandle:
        """The directory a symlink at ``path`` leads to, if it stays inside the root."""
        real = os.path.realpath(path)
        if not (real == self.real_root or real.startswith(self.real_prefix)):
            raise StoragePermissionError(
                f"key {key!r} resolves to {real!r}, outside the map's root {self.root!r}; "
                "refusing to follow the symbolic link"
            )
        if depth > _MAX_LINK_DEPTH:
            raise StoragePermissionError(
                f"key {key!r} in {self.root!r}: symbolic links changed while resolving it"
            )
        relative = real[len(self.real_prefix) :] if real != self.real_root else ""
        directory = self.walk(relative.split(os.sep) if relative else [], key, depth=depth + 1)
        directory.via_link = True
        return directory

    def walk(
        self, segments: list[str], key: str, create: bool = False, depth: int = 0
    ) -> DirHandle:
        """The directory ``root/segments...``, every component checked at use."""
        current = self.root_dir()
        try:
            for segment in segments:
                try:
                    child = self.child(current, segment, key, depth)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        current.mkdir(segment)
                    child = self.child(current, segment, key, depth)
                current.close()
                current = child
        except BaseException:
            current.close()
            raise
        return current

    def parent(self, key: str, create: bool = False) -> tuple[DirHandle, str]:
        """``(parent directory handle, leaf name)`` of normalized ``key``."""
        self.check_reserved(key)
        cut = key.rfind("/")
        prefix, name = (key[:cut], key[cut + 1 :]) if cut >= 0 else ("", key)
        pins = self._pins
        if pins is not None and (held := pins.get(prefix)) is not None:
            return held, name
        if cut < 0:
            handle = self.root_dir()
        else:
            fast = self.open_verified(prefix, key)
            handle = fast if fast is not None else self.walk(prefix.split("/"), key, create)
        return (pins.add(prefix, handle) if pins is not None else handle), name

    def open_verified(self, prefix: str, key: str) -> DirHandle | None:
        """Fast path: open directory ``prefix`` by path, then check where the open
        directory really is. The kernel says (``/proc/self/fd`` on Linux, ``F_GETPATH``
        on macOS); the answer is remembered with the directory's device, inode and
        ctime, so later uses cost one ``fstat``: a directory swapped for a link is
        another inode, and one moved (renamed) elsewhere has a new ctime, so both are
        asked about again. None where the platform cannot tell, or the directory is
        missing (the walk then handles creation and errors)."""
        if not use_dir_fds():
            return None
        pins = self._pins
        if pins is not None and (held := pins.get(prefix)) is not None:
            return held
        path = os.path.join(self.root, prefix)
        try:
            fd = os.open(path, os.O_RDONLY | flag("O_DIRECTORY") | flag("O_CLOEXEC"))
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            ident = (st.st_dev, st.st_ino, st.st_ctime_ns)
            if self._verified.get(prefix) == ident:
                return self._lend(prefix, DirHandle(path, fd))
            real = fd_path(fd)
            if real is None or not stat.S_ISDIR(st.st_mode):
                os.close(fd)
                return None
            if not real.startswith(self.real_prefix):
                raise StoragePermissionError(
                    f"key {key!r} resolves to {real!r}, outside the map's root "
                    f"{self.root!r}; refusing to follow the symbolic link"
                )
        except BaseException:
            os.close(fd)
            raise
        if len(self._verified) > _MAX_VERIFIED:
            self._verified.clear()
        self._verified[prefix] = ident
        return self._lend(prefix, DirHandle(path, fd))

    def _lend(self, prefix: str, handle: DirHandle) -> DirHandle:
        pins = self._pins
        return pins.add(prefix, handle) if pins is not None else handle

    def open_leaf(
        self, parent: DirHandle, name: str, key: str, depth: int = 0
    ) -> tuple[int, os.stat_result]:
        """Open ``key``'s file read-only: never a FIFO or device (an NCZarrError), never
        through a symlink out of the root; a directory is a prefix (KeyError)."""
        flags = os.O_RDONLY | flag("O_BINARY") | flag("O_CLOEXEC") | flag("O_NONBLOCK")
        nofollow = flag("O_NOFOLLOW")
        fd = None
        if not flag("O_NONBLOCK"):
            # No O_NONBLOCK (Windows): opening a FIFO would block, so look first.
            st = parent.stat(name)
            if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
                if not stat.S_ISLNK(st.st_mode):
                    raise self.not_regular(key, st.st_mode)
                nofollow = 0  # a link: resolved and checked below
        if nofollow:
            try:
                fd = parent.open(name, flags | nofollow)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EMLINK):
                    raise
        if fd is None:  # a symlink (or no O_NOFOLLOW here): check where it leads
            st = parent.stat(name)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(parent.join(name))
                target_dir = self._through_link(os.path.dirname(real), key, depth)
                try:
                    return self.open_leaf(target_dir, os.path.basename(real), key, depth + 1)
                finally:
                    target_dir.close()
            if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
                raise self.not_regular(key, st.st_mode)
            fd = parent.open(name, flags)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", key)
            if not stat.S_ISREG(st.st_mode):
                raise self.not_regular(key, st.st_mode)
            # O_NONBLOCK (so that a FIFO's open returns) has no effect on regular files.
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def not_regular(self, key: str, mode: int) -> StorageError:
        kind = _FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")
        return StorageError(
            f"cannot read {key!r} in {self.root!r}: it is {kind}, not a regular file "
            "(only regular files are keys)"
        )

    def open_key(self, key: str) -> tuple[int, os.stat_result]:
        """Open ``key`` for reading (see :meth:`_open_leaf_in`): the descriptor and its
        ``fstat``."""
        parent, name = self.parent(key)
        try:
            return self.open_leaf(parent, name, key)
        finally:
            parent.close()

    def lstat_key(self, key: str) -> os.stat_result | None:
        """``stat`` of ``key``'s file (a symlink inside the root followed), or None."""
        try:
            parent, name = self.parent(key)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            st = parent.stat(name)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(parent.join(name))
                target_dir = self._through_link(os.path.dirname(real), key, 0)
                try:
                    st = target_dir.stat(os.path.basename(real))
                finally:
                    target_dir.close()
            return st
        except (FileNotFoundError, NotADirectoryError):
            return None
        finally:
            parent.close()
