"""File-to-file copies between directories held open by a session, with no lookups.

The fast path of :meth:`~nczarr.maps.confined.ConfinedTree.copy_new` and
:meth:`~nczarr.maps.confined.ConfinedTree.copy_new_many`: inside a ``session()`` of
both directory maps every directory used is opened and verified once and held
(:mod:`nczarr.maps.pins`), so a chunk copy costs what ``cp`` pays -- the source opened
``O_NOFOLLOW | O_NONBLOCK`` relative to its held directory and checked regular by
``fstat``, the target created ``O_EXCL`` relative to its own, the kernel copy between
them. Anything that is not that plain case answers None, leaves nothing behind, and
the caller takes the checked path (:class:`~nczarr.maps.confined.ConfinedTree`),
which copies or refuses it properly.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator

from ..keys import FORBIDDEN_CHARACTERS
from .kernelcopy import FALLBACK_ERRNOS, copy_fd
from .localfs import DirHandle, flag
from .pins import PinnedDirs

__all__ = ["copy_between", "copy_pairs", "copy_runs", "session_flags"]

#: ``copy(fd_in, fd_out, size)`` -> bytes copied (:func:`nczarr.maps.kernelcopy.copy_fd`).
Copier = Callable[[int, int, int], int]


def session_flags() -> tuple[int, int] | None:
    """``(read flags, create flags)`` of the session fast path, or None where the
    platform lacks ``O_NOFOLLOW`` or ``O_NONBLOCK`` (the checked path then runs)."""
    if not (flag("O_NOFOLLOW") and flag("O_NONBLOCK")):
        return None
    common = flag("O_BINARY") | flag("O_CLOEXEC")
    read = os.O_RDONLY | common | flag("O_NONBLOCK") | flag("O_NOFOLLOW")
    return read, os.O_WRONLY | os.O_CREAT | os.O_EXCL | common


def copy_between(
    src_pins: PinnedDirs,
    src_key: str,
    dst_pins: PinnedDirs,
    key: str,
    flags: tuple[int, int],
    copy: Copier,
) -> int | None:
    """Copy ``src_key`` to the new ``key`` when both parent directories are held;
    the bytes copied, or None (a directory not held yet, or not the plain case)."""
    s_cut, d_cut = src_key.rfind("/"), key.rfind("/")
    s_dir = src_pins.get(src_key[:s_cut] if s_cut >= 0 else "")
    if s_dir is None:
        return None
    try:
        d_dir = dst_pins.get(key[:d_cut] if d_cut >= 0 else "")
        if d_dir is None:
            return None
        try:
            return _copy_at(s_dir, src_key[s_cut + 1 :], d_dir, key[d_cut + 1 :], flags, copy)
        finally:
            d_dir.close()
    finally:
        s_dir.close()


def copy_runs(
    src_pins: PinnedDirs,
    dst_pins: PinnedDirs,
    keys: Iterable[str],
    hidden: tuple[str, str],
    flags: tuple[int, int],
    copy: Copier,
    fallback: Callable[[str], object] | None = None,
) -> Iterator[tuple[str, object]]:
    """:func:`copy_between` for many keys (the same key on both sides), yielding
    ``(key, bytes copied or None)`` in order, the held directories looked up once per
    run of keys in one directory. A key whose leaf name is not plainly valid (empty,
    ``.``/``..``, a backslash, a control character, one of the ``hidden`` prefixes, a
    long key) yields None, for the checked path to refuse it properly.

    ``fallback(key)``: what to yield instead of None, called here before the next key
    is copied (the checked path, which may hold the key's directory for the next
    keys). This loop is the per-chunk cost of a convert between directories, so the
    copy of :func:`_copy_at` is written out in it, and where the kernel copies
    (``copy_file_range``, which itself refuses anything but two regular files) the
    source is not ``fstat``-ed first: :func:`_by_kernel`."""
    odd = FORBIDDEN_CHARACTERS.search
    read, create = flags
    kernel = _by_kernel(copy)
    open_at, fstat, close, is_regular = os.open, os.fstat, os.close, stat.S_ISREG
    current: str | None = None
    s_dir: DirHandle | None = None
    d_dir: DirHandle | None = None
    s_fd = d_fd = -1
    try:
        for key in keys:
            cut = key.rfind("/")
            prefix, name = (key[:cut], key[cut + 1 :]) if cut >= 0 else ("", key)
            if prefix != current:
                s_dir, d_dir = _give_back(s_dir, d_dir)
                current = prefix
                s_dir, d_dir = src_pins.get(prefix), dst_pins.get(prefix)
                s_fd = s_dir.fd if s_dir is not None and s_dir.fd is not None else -1
                d_fd = d_dir.fd if d_dir is not None and d_dir.fd is not None else -1
            if (
                s_fd < 0
                or d_fd < 0
                or len(key) > 250
                or name in ("", ".", "..")
                or name.startswith(hidden)
                or "\\" in name
                # a printable ASCII name has no control character: no regex search
                or (not (name.isascii() and name.isprintable()) and odd(name))
            ):
                # not held yet (the checked path pins it) or not plain: ask again after
                s_dir, d_dir = _give_back(s_dir, d_dir)
                current = None
                yield key, None if fallback is None else fallback(key)
                continue
            # _copy_at(s_dir, name, d_dir, name, flags, copy), written out
            copied: int | None = None
            try:
                fd_in = open_at(name, read, dir_fd=s_fd)
            except OSError:
                fd_in = -1
            if fd_in >= 0:
                try:
                    if kernel is not None:
                        copied = _create_and_copy(fd_in, -1, name, d_fd, create, kernel)
                    else:
                        size = fstat(fd_in)
                        if is_regular(size.st_mode):
                            copied = _create_and_copy(fd_in, size.st_size, name, d_fd, create, copy)
                finally:
                    close(fd_in)
            if copied is None and fallback is not None:
                yield key, fallback(key)
            else:
                yield key, copied
    finally:
        _give_back(s_dir, d_dir)


def _by_kernel(copy: Copier) -> Copier | None:
    """For :func:`~nczarr.maps.kernelcopy.copy_fd` where the platform has
    ``copy_file_range`` (looked up per batch, so the other paths stay testable): a
    copier of a whole file (``size`` -1) that asks the kernel until the end, as ``cp``
    does, and so needs no ``fstat``: ``copy_file_range`` fails on anything but two
    regular files (``EINVAL``, ``EISDIR``). On a failure before the first byte, the
    source is ``fstat``-ed: not a regular file raises (the caller removes the new file
    and takes the checked path), else :func:`copy_fd` copies it another way. None:
    ``copy`` is another copier, or the platform has no ``copy_file_range``."""
    if copy is not copy_fd or not hasattr(os, "copy_file_range"):
        return None
    kernel_copy = os.copy_file_range

    def by_kernel(fd_in: int, fd_out: int, size: int) -> int:
        total = 0
        try:
            while n := kernel_copy(fd_in, fd_out, _BLOCK):
                total += n
            return total
        except OSError as exc:
            if total or exc.errno not in FALLBACK_ERRNOS:
                raise
        found = os.fstat(fd_in)
        if not stat.S_ISREG(found.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return copy_fd(fd_in, fd_out, found.st_size)

    return by_kernel


#: Bytes asked of one ``copy_file_range`` call (the kernel caps it lower anyway).
_BLOCK = 1 << 30


def _create_and_copy(
    fd_in: int, size: int, name: str, d_fd: int, create: int, copy: Copier
) -> int | None:
    """Create ``name`` in the directory ``d_fd`` (``O_EXCL``) and copy ``size`` bytes
    of ``fd_in`` into it; None (and nothing left behind) where that fails."""
    try:
        fd_out = os.open(name, create, 0o666, dir_fd=d_fd)
    except OSError:
        return None
    try:
        copied = copy(fd_in, fd_out, size)
    except BaseException:
        os.close(fd_out)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=d_fd)
        if isinstance(sys.exc_info()[1], OSError):
            return None
        raise
    os.close(fd_out)
    return copied


def _give_back(*handles: DirHandle | None) -> tuple[None, None]:
    """Close (give back to the session) the lent handles that are not None."""
    for handle in handles:
        if handle is not None:
            handle.close()
    return None, None


def _copy_at(
    s_dir: DirHandle,
    s_name: str,
    d_dir: DirHandle,
    d_name: str,
    flags: tuple[int, int],
    copy: Copier,
) -> int | None:
    """The system calls of one copy between held directories (None: not the plain case)."""
    try:
        fd_in = os.open(s_name, flags[0], dir_fd=s_dir.fd)
    except OSError:
        return None
    try:
        size = os.fstat(fd_in)
        if not stat.S_ISREG(size.st_mode):
            return None
        return _create_and_copy(fd_in, size.st_size, d_name, d_dir.fd, flags[1], copy)  # type: ignore[arg-type]
    finally:
        os.close(fd_in)


def copy_pairs(
    src_dir: Callable[[str], DirHandle | None],
    dst_dir: Callable[[str], DirHandle | None],
    pairs: Iterable[tuple[str, str]],
    hidden: tuple[str, str],
    flags: tuple[int, int],
    copy: Copier,
) -> Iterator[tuple[str, str, int | None]]:
    """:func:`copy_runs` for ``(src_key, key)`` pairs (a combine copies each source's
    chunks under shifted keys), yielding ``(src_key, key, bytes copied or None)`` in
    order. ``src_dir(prefix)`` and ``dst_dir(prefix)`` lend a held directory (opening
    and verifying it first if need be) or answer None; the two are looked up once per
    run of pairs with the same two directories. A pair whose directory is not lent, or
    whose leaf names are not plainly valid (as in :func:`copy_runs`), yields None, for
    the checked path to copy or refuse it properly."""
    current: tuple[str, str] | None = None
    s_dir: DirHandle | None = None
    d_dir: DirHandle | None = None
    try:
        for src_key, key in pairs:
            s_cut, d_cut = src_key.rfind("/"), key.rfind("/")
            s_prefix, s_name = (
                (src_key[:s_cut], src_key[s_cut + 1 :]) if s_cut >= 0 else ("", src_key)
            )
            d_prefix, d_name = (key[:d_cut], key[d_cut + 1 :]) if d_cut >= 0 else ("", key)
            if (s_prefix, d_prefix) != current:
                s_dir, d_dir = _give_back(s_dir, d_dir)
                current = (s_prefix, d_prefix)
                s_dir, d_dir = src_dir(s_prefix), dst_dir(d_prefix)
            if (
                s_dir is None
                or d_dir is None
                or max(len(src_key), len(key)) > 250
                or not _plain_name(s_name, hidden)
                or not _plain_name(d_name, hidden)
            ):
                s_dir, d_dir = _give_back(s_dir, d_dir)
                current = None
                yield src_key, key, None
                continue
            yield src_key, key, _copy_at(s_dir, s_name, d_dir, d_name, flags, copy)
    finally:
        _give_back(s_dir, d_dir)


def _plain_name(name: str, hidden: tuple[str, str]) -> bool:
    """Whether a leaf name is plainly valid (what :func:`copy_runs` asks inline)."""
    return not (
        name in ("", ".", "..")
        or name.startswith(hidden)
        or "\\" in name
        or FORBIDDEN_CHARACTERS.search(name)
    )
