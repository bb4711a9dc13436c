"""Where ``to_nczarr`` writes, and how a replaced store is swapped in only when complete.

``mode="w"`` replaces a store. Clearing it first and then writing loses it whenever
the write fails (a bad value found late, a full disk, an error in a dask task) or the
process dies. So the new store is written where the old one is not touched:

* **a local directory** (opened from a path or URL): the new store is written into a
  staging directory beside it (``.<name>.nczarr-stage-<host>-<pid>-<token>``), and
  once complete the two are exchanged with one ``renameat2(RENAME_EXCHANGE)`` where
  the kernel offers it (Linux), else with two renames (the old directory is first
  renamed to ``.<name>.nczarr-old-<host>-<pid>-<token>``, the stage then takes its
  name). The old content is then deleted. A symbolic link to the store stays a link;
  the directory it points to is replaced. A new directory store is staged too and
  renamed into place, so a killed write leaves nothing at the target.
* **a zip archive** (opened from a path or URL): the zip map already stages every
  write and replaces the archive atomically on close; on failure the pending
  changes are discarded and the archive is left as it was.
* **S3** (opened from a URL, below a key prefix): S3 cannot rename, so the new store
  is written under a sibling prefix and, once complete, copied in (server-side) after
  the old objects are deleted, root metadata first; the root ``.zgroup`` is copied
  last and the stage deleted.
* **anything else** (other fsspec stores, maps passed in open, a bucket's root): the
  old root metadata is removed first, then the old content, then the new store is
  written, root metadata last. Everything that can be checked is checked before (names,
  types, encodings, fill values, sizes), so what is left is an I/O failure; a store
  left without root metadata does not open as a dataset.

Leftovers of a killed writer on this host (stages, old copies) are removed by the next
``to_nczarr`` into the same directory store (S3 stages are not collected); an old
copy whose store is missing (a kill between the two renames) is renamed back.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import shutil
from collections.abc import Mapping
from typing import Any

from ..errors import TargetExistsError, raise_os_error, warn_all
from ..maps.base import NOT_SUPPORTED, ZMap
from ..maps.file import FileMap
from ..maps.lockfile import HOST, pid_alive
from ..maps.replace import check_replaceable, mark_writing, unmark_writing
from ..records import replace as replace_record

__all__ = ["WriteTarget", "open_write_target"]

_STAGE_TAG = ".nczarr-stage-"
_METADATA_NAMES = (".zgroup", ".zattrs", ".zarray", ".zmetadata", "zarr.json")
_OLD_TAG = ".nczarr-old-"
#: ``renameat2`` flag: swap two existing paths atomically.
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class WriteTarget:
    """A map to write the new store into, and how to finish or abandon it.

    ``map`` is where to write. :meth:`commit` makes the written store the target (and
    closes maps opened here); :meth:`abort` leaves the old target as it was.
    """

    def __init__(
        self,
        zmap: ZMap,
        owned: bool,
        replace: str | None = None,
        exchange: bool = False,
        promote_into: ZMap | None = None,
    ) -> None:
        self.map = zmap
        self._owned = owned
        self._replace = replace  # the real path of a directory store the stage becomes
        self._exchange = exchange  # whether a store is there to swap with
        self._promote_into = promote_into  # an S3 store the staged objects are copied to

    @property
    def in_place(self) -> bool:
        """Whether the new store is written straight into the target, so that a write
        killed part-way leaves a partial store there (not a stage, not a zip archive)."""
        return (
            self._replace is None and self._promote_into is None and not (self.map.writes_on_flush)
        )

    def commit(self) -> None:
        """Finish: flush and close what was opened here; move a staged store in."""
        if self._promote_into is not None:
            try:
                _promote(self.map, self._promote_into)
                self.map.clear()
            finally:
                self.map.close()
                self._promote_into.close()
            return
        if self._owned:
            self.map.close()
        if self._replace is not None:
            stage = self.map.root  # type: ignore[attr-defined]
            if self._exchange:
                _swap_in(stage, self._replace)
            else:
                _move_in(stage, self._replace)

    def abort(self) -> None:
        """Abandon the write: a staged directory is removed, a zip archive's pending
        changes dropped; the old store is left byte for byte as it was."""
        if not self._owned:
            return
        if self._promote_into is not None:
            try:
                self.map.clear()  # the partial stage; the target was not touched
            finally:
                self.map.close()
                self._promote_into.close()
            return
        self.map.discard()
        if self._replace is not None:
            _remove_tree(self.map.root)  # type: ignore[attr-defined]


def open_write_target(
    url: Any, storage_options: Mapping[str, Any] | None, mode: str
) -> tuple[WriteTarget, bool]:
    """The target to write into, and whether it held anything (the caller refuses a
    non-empty target for ``mode="w-"``: ``abort()`` then changes nothing).

    A local directory store is written into a fresh staging directory beside it, which
    becomes the store on :meth:`WriteTarget.commit` (for ``mode="w-"``, only when the
    store is missing or empty). For any other non-empty store the caller clears ``map``.
    """
    if isinstance(url, ZMap):
        if storage_options:
            raise TypeError(f"storage_options cannot be applied to an open map {url!r}")
        names = url.search("")  # the root level: empty, or what mode "w" replaces
        full = bool(names)
        if full and mode == "w":
            check_replaceable(url, url.url, names)
        return WriteTarget(url, owned=False), full
    from ..maps.open import open_map
    from ..maps.url import parse_url

    options = dict(storage_options or {})
    parsed = parse_url(os.fspath(url))
    if parsed.storage == "file":
        staged = _staged_directory(os.path.realpath(parsed.path), mode)
        if staged is not None:
            return staged, False
    if parsed.storage == "zip" and not os.path.exists(parsed.path):
        options.setdefault("layout", "netcdf")  # the only zip layout netcdf-c reads
    zmap = open_map(parsed, "a", storage_options=options)
    names = zmap.search("")
    full = bool(names)
    if full and mode == "w":
        try:
            check_replaceable(zmap, zmap.url, names)
        except BaseException:
            zmap.close()
            raise
    if full and mode == "w" and parsed.storage == "s3" and parsed.path:
        stage_url = replace_record(parsed, path=_sibling_key(parsed.path, _STAGE_TAG))
        try:
            stage = open_map(stage_url, "a", storage_options=options)
        except BaseException:
            zmap.close()
            raise
        return WriteTarget(stage, owned=True, promote_into=zmap), False
    return WriteTarget(zmap, owned=True), full


def _staged_directory(real: str, mode: str) -> WriteTarget | None:
    """A stage for the directory store at ``real``; None to write in place (``mode="w-"``
    on a non-empty store, which the caller refuses; a path that is not a directory; a
    parent where no stage can be made)."""
    _clean_leftovers(real)
    if os.path.lexists(real):
        if not os.path.isdir(real):
            return None
        with FileMap(real, mode="r") as old:
            names = old.search("")
            full = bool(names)
            if full and mode == "w":
                check_replaceable(old, old.url, names)
        if full and mode != "w":
            return None
    else:
        full = False
    stage = _new_stage(real)
    if stage is None:
        return None
    return WriteTarget(FileMap(stage, mode="a"), owned=True, replace=real, exchange=full)


# ------------------------------------------------------------------ S3
def _sibling_key(prefix: str, tag: str) -> str:
    parent, _, name = prefix.rpartition("/")
    token = f".{name}{tag}{HOST}-{os.getpid()}-{secrets.token_hex(6)}"
    return f"{parent}/{token}" if parent else token


def _promote(stage: ZMap, target: ZMap) -> None:
    """Replace ``target``'s content by the complete store at ``stage`` (S3 cannot rename):
    the old root metadata goes first, then the rest; the chunks are copied (server-side
    where the map can), then the metadata, the root ``.zgroup`` last."""
    from ..translate.order import order_metadata

    keys = list(stage.keys_below(""))
    metadata = {k: stage[k] for k in keys if k.rsplit("/", 1)[-1] in _METADATA_NAMES}
    for root_object in (".zgroup", ".zattrs", ".zmetadata", "zarr.json"):
        if root_object in target:
            del target[root_object]
    target.clear()
    mark_writing(target)  # killed from here on, the target is still one to replace
    for key in keys:
        if key in metadata:
            continue
        if target.copy_from(stage, key, key) is NOT_SUPPORTED:
            target[key] = stage[key]
    for key in order_metadata(metadata):
        target[key] = metadata[key]
    unmark_writing(target)
    target.flush()


# ------------------------------------------------------------------ directories
def _sibling(real: str, tag: str) -> str:
    parent, name = os.path.split(real)
    return os.path.join(parent, f".{name}{tag}{HOST}-{os.getpid()}-{secrets.token_hex(6)}")


def _new_stage(real: str) -> str | None:
    stage = _sibling(real, _STAGE_TAG)
    try:
        os.makedirs(os.path.dirname(stage), exist_ok=True)
        os.mkdir(stage)
    except OSError:
        return None
    return stage


def _exchange(a: str, b: str) -> bool:
    """Swap two directories atomically (Linux ``renameat2``); False where unavailable."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


def _move_in(stage: str, real: str) -> None:
    """Make the complete store at ``stage`` the (missing or empty) directory ``real``."""
    try:
        os.rename(stage, real)  # POSIX replaces an empty directory
        return
    except OSError:
        pass
    try:
        os.rmdir(real)  # Windows: an empty directory must go first
        os.rename(stage, real)
    except OSError as exc:
        _remove_tree(stage)
        raise TargetExistsError(
            f"target {real!r} was created by someone else while to_nczarr wrote it ({exc}); "
            "pass mode='w' to replace it"
        ) from None


def _swap_in(stage: str, real: str) -> None:
    """Make the complete store at ``stage`` the directory ``real``; delete the old one."""
    if _exchange(stage, real):
        _remove_tree(stage)  # now the old content
        return
    old = _sibling(real, _OLD_TAG)
    try:
        os.rename(real, old)
    except OSError as exc:  # a mount point, a busy directory (Windows)
        _remove_tree(stage)
        raise_os_error(exc, f"{real!r} (to replace it by the new store)")
    try:
        os.rename(stage, real)
    except OSError:
        os.rename(old, real)
        _remove_tree(stage)
        raise
    _remove_tree(old)


def _remove_tree(path: str) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        warn_all([f"could not remove {path!r} after to_nczarr: {exc}"], stacklevel=5)


def _clean_leftovers(real: str) -> None:
    """Remove the stages and old copies killed writers on this host left beside ``real``;
    put an old copy back if the store itself is missing (killed between two renames)."""
    parent, name = os.path.split(real)
    try:
        with os.scandir(parent) as it:
            names = [e.name for e in it if e.name.startswith(f".{name}.nczarr-")]
    except OSError:
        return
    for entry in names:
        for tag in (_STAGE_TAG, _OLD_TAG):
            head = f".{name}{tag}{HOST}-"
            if not entry.startswith(head):
                continue
            pid = entry[len(head) :].split("-", 1)[0]
            if not pid.isdigit() or pid_alive(int(pid)):
                continue
            path = os.path.join(parent, entry)
            if tag == _OLD_TAG and not os.path.lexists(real):
                with contextlib.suppress(OSError):  # on failure keep it: the only copy
                    os.rename(path, real)
                break
            _remove_tree(path)
