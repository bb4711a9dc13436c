"""How :class:`~nczarr.maps.zip.ZipMap` persists writes: staging archive, atomic commit, merge.

Zip members cannot be rewritten in place, and an archive is never modified in place
either (a kill half-way through rewriting a central directory would lose every key).
Writes and deletes wait in memory; a *spill* moves them to a private staging archive
beside the original (a byte copy, then zipfile's append; a full rewrite when keys are
overwritten or deleted); a *commit* renames the staging archive over the original
under the archive's lock file, or, when another writer replaced the archive since it
was read, writes the other writer's archive with this map's writes and deletes
applied. See the :mod:`~nczarr.maps.zip` docstring for the guarantees, and
docs/reliability.md for how they were shown.

:class:`ArchiveCommits` is a mixin of ``ZipMap``: the commit steps share the map's
state (its pending writes, the index of the archive read, its reader), which a
separate object would have to mirror.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import zipfile
from collections.abc import Iterator

from ..errors import NCZarrError, raise_os_error
from ..keys import parent_keys
from .localfs import flag
from .lockfile import HOST, ArchiveLock, pid_alive
from .ziparchive import (
    MARKER,
    check_member,
    copy_archive,
    copy_member,
    copy_mode,
    dir_info,
    identity,
    new_member_info,
    replace_atomically,
)

__all__ = ["ArchiveCommits", "TEMP_TAG"]

#: Marks the staging files of an archive: ``.<name>.nczarr-<host>-<pid>-<token>.tmp``.
TEMP_TAG = ".nczarr-"


class ArchiveCommits:
    """Spill, commit and merge for :class:`~nczarr.maps.zip.ZipMap` (see the module doc).

    Uses the map's ``_path``, ``_layout``, ``_prefix``, ``_compression``, ``_lock``,
    its pending writes (``_pending``, ``_deleted``), the index of the archive it
    read (``_disk``, ``_dirs``, ``_extra``, ``_base_id``) and its reader
    (``_read``, ``_close_reader``, ``_require_reader``, ``_live_keys``).
    """

    _stage: str | None
    _stage_damaged: bool
    _written: set[str]
    _removed: set[str]

    def flush(self) -> None:
        """Commit pending writes and deletes: the archive is replaced atomically."""
        with self._lock:
            if self._closed or self.read_only:
                return
            if self._pending or self._deleted:
                self._spill()
            if self._stage is not None:
                self._commit()

    def close(self) -> None:
        """Commit pending changes and close the archive; further I/O raises.

        If the commit fails (a full disk, a lock held too long), the error is raised,
        the archive on disk is unchanged, and the uncommitted changes and the staging
        file are discarded, so a failed close never holds disk space. To retry instead,
        call :meth:`flush` (which keeps the changes when it fails) before ``close``.
        """
        with self._lock:
            if not self._closed:
                try:
                    self.flush()
                finally:
                    self._closed = True
                    self._close_reader()
                    self._discard_stage()

    def discard(self) -> None:
        """Drop every uncommitted write and delete, then close: the archive on disk is
        left as last committed (``to_nczarr`` uses it when a replacement fails)."""
        with self._lock:
            if self._closed:
                return
            self._pending.clear()
            self._pending_bytes = 0
            self._deleted.clear()
            self._written.clear()
            self._removed.clear()
            self._closed = True
            self._close_reader()
            self._discard_stage()

    def _target(self) -> str:
        """The archive's real path (a symlinked archive is updated, not replaced)."""
        return os.path.realpath(self._path)

    def _temp_name(self) -> str:
        directory, name = os.path.split(self._target())
        token = secrets.token_hex(6)
        return os.path.join(directory, f".{name}{TEMP_TAG}{HOST}-{os.getpid()}-{token}.tmp")

    def _remove_stale_temps(self) -> None:
        """Remove staging files of writers on this host that no longer run (killed)."""
        directory, name = os.path.split(self._target())
        start = f".{name}{TEMP_TAG}{HOST}-"
        try:
            with os.scandir(directory) as it:
                names = [e.name for e in it if e.name.startswith(start)]
        except OSError:
            return
        for temp in names:
            pid_text = temp[len(start) :].split("-", 1)[0]
            if pid_text.isdigit() and not pid_alive(int(pid_text)):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, temp))

    def _discard_stage(self) -> None:
        if self._stage is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._stage)
            self._stage = None

    def _create(self, truncate: bool) -> bool:
        """Atomically create an empty archive (replace it with ``truncate``); ``False``
        when another writer created the archive first and it must not be truncated."""
        target = self._target()
        temp = self._temp_name()
        with self._removed_on_failure(temp):
            self._write_new(temp, keys=False)
            with ArchiveLock(target):
                if not truncate and os.path.exists(target):
                    os.unlink(temp)
                    return False
                replace_atomically(temp, target)
        return True

    @contextlib.contextmanager
    def _removed_on_failure(self, temp: str) -> Iterator[None]:
        """Remove the temporary archive ``temp`` if the block fails; an OS error comes
        out as the nczarr error naming this archive."""
        try:
            yield
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, self._path)
            raise

    def _spill(self) -> None:
        """Move pending writes and deletes from memory into the staging archive."""
        appendable = (
            not self._deleted
            and not self._stage_damaged
            and not any(k in self._disk for k in self._pending)
        )
        if appendable:
            self._append_to_stage()
        else:
            temp = self._temp_name()
            with self._removed_on_failure(temp):
                self._write_new(temp, keys=True)
            self._close_reader()
            self._discard_stage()
            self._stage, self._stage_damaged = temp, False
        self._written.update(self._pending)
        self._written.difference_update(self._deleted)
        self._removed.update(self._deleted)
        self._removed.difference_update(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        self._deleted.clear()
        self._read(fixed=True, path=self._stage)

    def _append_to_stage(self) -> None:
        """Append new members to the staging archive (first a byte copy of the archive)."""
        if self._stage is None:
            stage = self._temp_name()
            with self._removed_on_failure(stage):
                copy_archive(self._target(), stage)
            self._stage = stage
        made = set(self._dirs)
        try:
            with zipfile.ZipFile(self._stage, "a") as out:
                for key, value in self._pending.items():
                    for directory in self._new_dirs(key, made):
                        out.mkdir(dir_info(self._prefix + directory))
                    out.writestr(self._new_info(key), value)
        except BaseException as exc:
            # Members already in the stage are intact (an append only writes past
            # them) and indexed in memory; the next spill rewrites the stage.
            self._stage_damaged = True
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, self._path)
            raise

    def _commit(self) -> None:
        """Rename the staging archive over the archive, or merge into a newer one."""
        stage = self._stage
        assert stage is not None
        target = self._target()
        try:
            with ArchiveLock(target):
                try:
                    current = identity(os.stat(target))
                except FileNotFoundError:
                    current = None
                if current is not None and current == self._base_id:
                    copy_mode(target, stage)
                    self._close_reader()
                    replace_atomically(stage, target)
                else:  # another writer replaced the archive since we read it
                    merged = self._temp_name()
                    try:
                        self._write_merged(merged, target)
                        self._close_reader()
                        replace_atomically(merged, target)
                    except BaseException:
                        with contextlib.suppress(OSError):
                            os.unlink(merged)
                        raise
                    self._discard_stage()
                self._stage = None
                self._written.clear()
                self._removed.clear()
                self._read(fixed=True)  # under the lock: the identity is of this version
        except BaseException as exc:
            if self._stage is not None and self._reader is None:
                self._read(fixed=True, path=self._stage)  # keep serving our writes
            if isinstance(exc, OSError) and not isinstance(exc, NCZarrError):
                raise_os_error(exc, self._path)
            raise

    def _new_dirs(self, key: str, made: set[str]) -> list[str]:
        """Directory entries (relative, outermost first) to add before ``key``."""
        wanted = []
        for parent in parent_keys(key):
            if parent in made:
                break
            if self._layout == "netcdf" or parent in self._dirs:
                wanted.append(parent)
        wanted.reverse()
        made.update(wanted)
        return wanted

    def _new_info(self, key: str) -> zipfile.ZipInfo:
        return new_member_info(self._prefix + key, self._compression)

    def _write_new(self, temp: str, keys: bool) -> None:
        """Write a complete archive to the new file ``temp``: the live keys (none when
        ``keys`` is false) and the foreign members, then sync it."""
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_CLOEXEC"), 0o666)
        with os.fdopen(fd, "wb") as raw:
            with zipfile.ZipFile(raw, "w") as out:
                out.comment = MARKER + self._layout.encode("ascii")
                made: set[str] = set()
                if self._layout == "netcdf":
                    out.mkdir(dir_info(self._prefix))
                    made.add("")
                if keys:
                    for key in self._live_keys():
                        for parent in self._new_dirs(key, made):
                            out.mkdir(dir_info(self._prefix + parent))
                        value = self._pending.get(key)
                        if value is not None:
                            out.writestr(self._new_info(key), value)
                        else:
                            copy_member(self._disk[key], self._require_reader(), out)
                    for info in self._extra:
                        copy_member(info, self._require_reader(), out)
            raw.flush()
            os.fsync(raw.fileno())

    def _write_merged(self, temp: str, target: str) -> None:
        """Write the archive another writer committed, with our writes and deletes
        applied, to the new file ``temp``."""
        prefix = self._prefix
        ours = {prefix + k for k in self._written}
        dropped = ours | {prefix + k for k in self._removed}
        stage = self._require_reader()
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flag("O_CLOEXEC"), 0o666)
        with os.fdopen(fd, "wb") as raw:
            with contextlib.ExitStack() as stack:
                out = stack.enter_context(zipfile.ZipFile(raw, "w"))
                out.comment = MARKER + self._layout.encode("ascii")
                names: set[str] = set()
                if os.path.exists(target):
                    base = stack.enter_context(zipfile.ZipFile(target))
                    for info in base.infolist():
                        if info.filename not in dropped:
                            check_member(info.filename, target)
                            copy_member(info, base, out)
                            names.add(info.filename.rstrip("/"))
                for key in sorted(self._written):
                    if self._layout == "netcdf":
                        for parent in reversed([prefix.rstrip("/"), *parent_keys(key)]):
                            name = parent if parent == prefix.rstrip("/") else prefix + parent
                            if name and name not in names:
                                out.mkdir(dir_info(name))
                                names.add(name)
                    copy_member(self._disk[key], stage, out)
            raw.flush()
            os.fsync(raw.fileno())
