"""What an overwrite may replace: a store, never a folder that holds other things.

``convert(overwrite=True)`` (also when combining) and ``to_nczarr(mode="w")`` empty
their target before writing. A user who names the wrong place (``--overwrite
~/data``, a bucket prefix one level too high, ``photos.zip``) would lose whatever it
holds: zarr-python's ``mode="w"`` deletes it. nczarr replaces only what is a store:
a target whose root holds Zarr or NCZarr root metadata, or the journal of an
interrupted nczarr write. Anything else is refused before a byte changes, naming
what was found, so the user empties it on purpose or picks another target.

One window is left: an overwrite empties the target (root metadata first, then the
rest, in the map's own order) before it writes its journal or mark again, so a kill
during that emptying leaves a partial tree the next overwrite refuses, naming it; the
user removes it. Keeping the mark through the emptying would need every backend's
``clear`` to spare one key.

The names are kept here, on the maps floor, because both ``conversion`` and
``integrations`` ask (they do not import each other); they are the root objects of
every layout nczarr reads (``translate.conventions``: Zarr v2 and v3, NCZarr's
legacy ``.nczarr`` superblock).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import TargetExistsError
from .base import ZMap
from .pending import JOURNAL_KEY

__all__ = [
    "STORE_ROOT_NAMES",
    "WRITING_MARK",
    "check_replaceable",
    "mark_writing",
    "unmark_writing",
]

#: Names at a store's root that make it a store nczarr may replace.
STORE_ROOT_NAMES = frozenset(
    {".zgroup", ".zarray", ".zattrs", ".zmetadata", "zarr.json", ".nczarr", JOURNAL_KEY}
)


#: What a writer without a convert's journal (``to_nczarr`` writing in place) puts
#: under :data:`JOURNAL_KEY` before its first chunk and removes after its root
#: metadata: a write killed in between leaves a store an overwrite may replace (its
#: root metadata is written last, so there may be none). Readers ignore it (only an
#: append's journal means anything to them, :mod:`nczarr.maps.pending`); a resume
#: refuses it as another writer's journal.
WRITING_MARK = b'{"kind": "nczarr-write"}'


def mark_writing(zmap: ZMap) -> None:
    """Put :data:`WRITING_MARK` at ``zmap``'s root (before the first chunk)."""
    zmap[JOURNAL_KEY] = WRITING_MARK


def unmark_writing(zmap: ZMap) -> None:
    """Remove the mark (after the root metadata: the store is complete)."""
    zmap.delete_if_present(JOURNAL_KEY)


def check_replaceable(zmap: ZMap, url: str, names: Sequence[str]) -> None:
    """Refuse to empty ``zmap`` unless its root is a store's (or empty).

    ``names``: the root level as :meth:`ZMap.search` gave it (every caller has listed
    it already: no second request on an object store).

    Raises
    ------
    TargetExistsError
        The root holds names but none of :data:`STORE_ROOT_NAMES`; the message names
        up to three of them. Nothing was changed.
    """
    if not names or STORE_ROOT_NAMES.intersection(names):
        return
    shown = ", ".join(repr(name) for name in names[:3]) + (", ..." if len(names) > 3 else "")
    raise TargetExistsError(
        f"target {url!r} is not a Zarr store (it holds {shown}): overwriting replaces "
        "a store, never other files; empty it yourself or choose another target "
        "(nothing was changed)"
    )
