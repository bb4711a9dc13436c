"""The convert journal: what lets ``resume`` trust what a target already holds.

A chunk object in a target may have the source's size and still hold other bytes:
an older dataset at the same place, a convert of another source, the remains of an
interrupted ``overwrite``. ``resume`` therefore skips an object by its size only
when the target carries a journal written by *this* convert:

* every convert writes :data:`JOURNAL_KEY` into the target (a small JSON object
  naming the source, the target format and a digest of the plan: every metadata
  object, so include/exclude, ``noxarray`` and ``consolidated`` are part of it)
  once the target is empty -- after ``overwrite`` has removed the old content,
  before the first chunk is copied;
* the chunk keys are not in a convert's digest: they are listed from the source
  once, by the copy itself (a second walk of every directory only to hash the keys
  cost ~6 % of a file -> file convert). A resume of a target with this convert's
  journal checks instead that every object in the target is one the plan writes
  (:func:`check_only_planned`): a chunk the source no longer holds is refused as
  before, a chunk the source gained is copied;
* it is deleted after the root metadata is written, so a finished target holds
  only the dataset;
* a target with a journal of another convert is refused; a target without a
  journal is resumed only if every object in it is one the plan writes and every
  metadata object already there holds the planned bytes, and then each chunk is
  compared byte for byte with the source (a content check) instead of by size.

Readers ignore the journal: its name starts with ``.`` and is no Zarr or NCZarr
object name. :func:`remove_temporaries` deletes the temporary files an atomic write
of a killed process left in a directory target (``FileMap`` never lists them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

from ..errors import TargetExistsError
from ..maps.base import ZMap
from ..maps.pending import JOURNAL_KEY, decode_append_journal  # an append's journal too
from ..maps.replace import WRITING_MARK
from ..records import record

__all__ = [
    "ROOT_OBJECTS",
    "clear_target",
    "JOURNAL_KEY",
    "Journal",
    "plan_digest",
    "resume_mode",
    "write_journal",
    "remove_journal",
    "remove_temporaries",
    "source_identity",
    "check_only_planned",
    "sha256",
    "SourceIdentities",
    "NAMED_SOURCES",
]

_KIND = "nczarr-convert-journal"

# SHA-256 from CPython's built-in module where it has one: ``hashlib`` loads OpenSSL's
# libcrypto first (~11 M instructions, ~3 % of a 1,600-chunk ``nczarr convert``
# process, docs/performance.md); the digest is the same.
try:
    from _sha2 import sha256  # CPython >= 3.12
except ImportError:  # pragma: no cover - depends on the Python version and build
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:
        from hashlib import sha256


@record
class Journal:
    """What identifies one convert: its source, target format and plan digest."""

    source: str
    target_format: str
    plan: str

    def encode(self) -> bytes:
        from .._version import __version__

        doc = {
            "kind": _KIND,
            "version": 1,
            "source": self.source,
            "target_format": self.target_format,
            "plan": self.plan,
            "written_by": f"nczarr {__version__}",
        }
        return json.dumps(doc, indent=1, sort_keys=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> Journal | None:
        """The journal stored in ``data``, or ``None`` if it is not one."""
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            return None
        if not isinstance(doc, dict) or doc.get("kind") != _KIND:
            return None
        fields = (doc.get("source"), doc.get("target_format"), doc.get("plan"))
        if not all(isinstance(f, str) for f in fields):
            return None
        return cls(*fields)  # type: ignore[arg-type]


def plan_digest(
    target_format: str, metadata: Iterable[tuple[str, bytes]], chunk_keys: Iterable[str] = ()
) -> str:
    """SHA-256 over the target format, every metadata object and every chunk key
    (a convert passes none: see the module doc and :func:`check_only_planned`)."""
    h = sha256(f"format={target_format}\n".encode())
    for key, value in metadata:
        h.update(f"meta {key} {len(value)}\n".encode())
        h.update(sha256(value).digest())
    for key in chunk_keys:
        h.update(f"chunk {key}\n".encode())
    return h.hexdigest()


def source_identity(location: Any, realpath: Callable[[str], str] = os.path.realpath) -> str:
    """A stable text for a :class:`~nczarr.conversion.overlap.Location` (local paths
    resolved by ``realpath``: a combine passes one resolver for all its sources)."""
    path = realpath(location.path) if location.kind == "local" else location.path
    return f"{location.kind}|{location.service}|{location.container}|{path}"


def write_journal(dst: ZMap, journal: Journal) -> None:
    """Record that ``dst`` is being filled by ``journal``'s convert."""
    dst[JOURNAL_KEY] = journal.encode()


#: Names of the root group's metadata objects, removed first when overwriting a target.
ROOT_OBJECTS = ("zarr.json", ".zgroup", ".zmetadata", ".zattrs")


def clear_target(dst: ZMap) -> None:
    """Empty ``dst`` for an overwrite: its root objects first (a kill leaves no
    dataset, never an old root over new chunks), each deleted without asking first
    whether it exists (:meth:`~nczarr.maps.base.ZMap.delete_if_present`: one
    ``DeleteObject`` on S3, not a ``HeadObject`` too), then everything."""
    for key in ROOT_OBJECTS:
        dst.delete_if_present(key)
    dst.clear()


def remove_journal(dst: ZMap) -> None:
    """Delete the journal (the target is complete)."""
    dst.delete_if_present(JOURNAL_KEY)


def resume_mode(
    dst: ZMap,
    journal: Journal,
    planned_metadata: dict[str, bytes],
    planned_chunks: frozenset[str],
    shown: str,
) -> str:
    """How ``resume`` may skip what non-empty ``dst`` holds: ``"size"`` or ``"content"``.

    Raises
    ------
    TargetExistsError
        ``dst`` holds a journal of another convert, or (without a journal) an object
        the plan does not write, or a metadata object with other bytes. Nothing was
        changed.
    """
    try:
        stored = dst[JOURNAL_KEY]
    except KeyError:
        stored = None
    if stored is not None:
        found = Journal.decode(stored)
        if found == journal:
            return "size"
        what = (
            "an unfinished to_nczarr write"
            if stored == WRITING_MARK
            else "an unfinished append"
            if decode_append_journal(stored) is not None
            else "a journal nczarr cannot read"
            if found is None
            else (
                f"an interrupted convert of {found.source.split('|')[-1]!r} to "
                f"{found.target_format}"
                + (" with another plan" if found.source == journal.source else "")
            )
        )
        raise TargetExistsError(
            f"cannot resume into {shown!r}: it holds {what}, not this convert; pass "
            "overwrite=True (--overwrite) to replace it. Nothing was changed"
        )
    for key in dst.keys_below(""):
        if key in planned_chunks:
            continue
        if key not in planned_metadata:
            raise TargetExistsError(
                f"cannot resume into {shown!r}: it holds {key!r}, which this convert does "
                "not write (not an interrupted convert of this source); pass "
                "overwrite=True (--overwrite) to replace it. Nothing was changed"
            )
        if dst[key] != planned_metadata[key]:
            raise TargetExistsError(
                f"cannot resume into {shown!r}: its {key!r} differs from what this convert "
                "writes (another dataset or options); pass overwrite=True (--overwrite) "
                "to replace it. Nothing was changed"
            )
    return "content"


def check_only_planned(
    dst: ZMap, planned_metadata: Mapping[str, bytes], planned_chunks: Container[str], shown: str
) -> None:
    """Refuse a resume into ``dst`` if it holds an object the plan does not write
    (besides the journal): what a journal whose digest has no chunk keys leaves to
    check (a chunk the source has lost since the interrupted run, or anything else).

    Raises
    ------
    TargetExistsError
        Naming the first such key. Nothing was changed.
    """
    for key in dst.keys_below(""):
        if key in planned_chunks or key in planned_metadata or key == JOURNAL_KEY:
            continue
        raise TargetExistsError(
            f"cannot resume into {shown!r}: it holds {key!r}, which this convert does "
            "not write (the source changed since the interrupted convert?); pass "
            "overwrite=True (--overwrite) to replace it. Nothing was changed"
        )


def remove_temporaries(dst: ZMap) -> int:
    """Delete temporary files of killed atomic writes below the target
    (:meth:`~nczarr.maps.base.ZMap.remove_temporaries`); return how many."""
    return dst.remove_temporaries()


#: Sources a combine's journal names one by one; beyond, the first and a digest of all
#: (the journal's text would otherwise grow with the sources: memory flat).
NAMED_SOURCES = 16


class SourceIdentities:
    """A combine journal's text for its sources (:func:`source_identity` of each, as they are
    checked): up to :data:`NAMED_SOURCES` named, joined by ``+``; more, as the first,
    their count and the SHA-256 of all of them joined (a resume compares the text: the
    same sources give the same text). Nothing is kept per source."""

    def __init__(self) -> None:
        self._named: list[str] = []
        self._digest = sha256()
        self._count = 0

    def add(self, identity: str) -> None:
        self._digest.update((b"+" if self._count else b"") + identity.encode())
        if self._count < NAMED_SOURCES + 1:
            self._named.append(identity)
        self._count += 1

    def text(self) -> str:
        if self._count <= NAMED_SOURCES:
            return "+".join(self._named)
        return f"{self._named[0]} (+{self._count - 1} more, sha256 {self._digest.hexdigest()})"
