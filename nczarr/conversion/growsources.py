"""The sources of a combine (:mod:`nczarr.conversion.combine`), each opened only while it
is read or its chunks are copied: memory flat in the number of sources.

A combine reads every source before it writes anything (every refusal comes first),
then copies each source's chunks. Holding every source's open map (its tree, paths,
locks) between the two passes cost about 750 bytes a source; here a source is opened
when it is read, closed after, and opened again when its chunks are copied (a plain
local directory without parsing a URL, its real path through the parents resolved
once for all: :func:`~nczarr.maps.open.open_plain_dir`). What is kept per source is
what the plan needs (its model and stored keys, shared by sources read as one model,
and its length). Maps the caller passed are the caller's (never closed here).

A source costly to open again (not a plain directory: a zip archive, an S3 store, a
netCDF file) is treated so: the first :data:`SPARED` stay open from their check to their
copies (opened once); one read through a translated view is compared to the first part
while still open (:class:`Compared`), then kept whole (map and view) but parked if its
map can park (a netCDF file: :meth:`~nczarr.maps.base.ZMap.park` closes the file and
keeps what was read; the copies open the file again without reading its metadata, and
it is parked again after them), else kept whole among the first :data:`VIEWS_KEPT`,
else closed, and opened again, its view made again, for its copies.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import InvalidModeError, NCZarrError
from ..maps.base import ZMap
from ..maps.overlap import Location, location_of
from ..translate.grow import find_dimension
from .growcompare import FirstSeen, check_equal
from .growparts import Part, Reader
from .locations import url_of

__all__ = ["Compared", "Names", "Readers", "Sources", "detached", "detacher"]

#: Readers (and their sources' maps) held at once besides the first: the last few a
#: copy, a comparison or an assembly asked for.
_HELD = 4

#: Sources costly to open again (anything but a plain local directory: a zip archive's
#: central directory read again, an S3 client made again) kept open from their check to
#: their copies, at most this many: the first ones, whose copies come first.
SPARED = 6

#: Sources read through a translated view, costly to open again and whose map cannot
#: park (:meth:`~nczarr.maps.base.ZMap.park`; a netCDF file parks) kept whole, map and
#: view, to the end of a combine, at most this many: a combine of a few opens each once;
#: one of many opens the others again (memory flat).
VIEWS_KEPT = 64


class Names(Sequence[str]):
    """The URLs messages name the sources by (:func:`url_of`), made when asked (a
    refusal names two of them): no string per source is held."""

    def __init__(self, locations: Sequence[Any], first: Sequence[str] = ()) -> None:
        self._locations = locations
        self._first = list(first)  # names before the sources' (an append's target)

    def __len__(self) -> int:
        return len(self._first) + len(self._locations)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index < len(self._first):
            return self._first[index]
        return url_of(self._locations[index - len(self._first)])


class Sources:
    """The sources of a combine, opened when asked (:meth:`open`) and closed when
    released (:meth:`release`: the callers release each source when done with it);
    every map opened here is closed by ``stack``. ``realpath`` resolves their real
    roots (sources side by side share their parents':
    :class:`~nczarr.maps.overlap.RealPaths`)."""

    def __init__(
        self,
        locations: Sequence[Any],
        options: Mapping[str, Any] | None,
        realpath: Any,
        stack: ExitStack,
        reread: Callable[[ZMap], Part] | None = None,
    ) -> None:
        self._locations = locations
        self._reread = reread  # a source's part read again (its view made again)
        self._viewed: bytearray | None = None  # per source: 1 if its view was dropped
        self._views: dict[int, Part] = {}  # those made again, while their maps are open
        self._options = options
        self._real = realpath
        self._held: dict[int, ZMap] = {}  # opened here, released when done
        self._kept: dict[int, ZMap] = {}  # opened here, kept (a view reads it)
        self._costly: set[int] = set()  # held, not a plain directory: costly to reopen
        self._spared = 0  # kept open from their check to their copies (:meth:`read`)
        self._whole = 0  # read through a view, costly to open, kept whole to the end
        self._parked: set[int] = set()  # kept whole, parked between uses (ZMap.park)
        self._busy: set[int] = set()  # of those, read by jobs in flight: not parked
        stack.callback(self.close)

    def __len__(self) -> int:
        return len(self._locations)

    def open(self, index: int, resolve: bool = True) -> ZMap:
        """Source ``index``'s map, opened read-only if it is not open. ``resolve``
        False: its real root resolved only if a link needs it (opened again for its
        copies: it was resolved, checked and read when opened first)."""
        source = self._locations[index]
        if isinstance(source, ZMap):
            if self._options:
                raise TypeError(
                    f"got an open map {source!r}: storage options apply to URLs only, "
                    f"got {sorted(self._options)}"
                )
            return source
        zmap = self._kept.get(index) or self._held.get(index)
        if zmap is not None:
            return zmap
        from ..maps.open import open_map, open_plain_dir

        zmap = None if self._options else open_plain_dir(source, self._real if resolve else None)
        if zmap is None:
            zmap = open_map(source, mode="r", storage_options=self._options)
            self._costly.add(index)
        self._held[index] = zmap
        return zmap

    def read(self, index: int) -> None:
        """Source ``index`` is read and checked: release it, unless it is one of the
        first :data:`SPARED` costly to open again; those stay open for their copies (a
        combine of a few zip or S3 sources opens each once). Every source is still
        checked before anything is written: only the closing waits."""
        if not self._spare(index):
            self.release(index)

    def _spare(self, index: int) -> bool:
        if index in self._costly and self._spared < SPARED:
            self._spared += 1
            return True
        return False

    def read_view(
        self, index: int, part: Part, before: Callable[[int, Part], object] | None = None
    ) -> Part:
        """Source ``index`` is read (and checked) through a translated view, ``part``:
        kept whole (its map open to the end: the view reads it) if it is the first or a
        plain directory (no file or client held). Another is compared to the first part
        (``before``) while its map is open, then kept whole but parked if its map can
        park (:meth:`ZMap.park`: a netCDF file closes its file and keeps what it read, a
        few KB; its reads open the file again, cheaply, and :meth:`park` closes it after
        its copies); else kept whole if it is one of the first :data:`VIEWS_KEPT`;
        else returned without its map and view, both closed, and made again when asked
        for (:meth:`part_of`). Open files and memory flat in the sources (a netCDF
        file's open view held 0.8 MB and two files), without opening a file twice."""
        if index == 0 or index not in self._costly or self._reread is None:
            self.keep(index)
            return part
        if before is not None:
            before(index, part)  # while its map is open: parked or closed next
        if self._held[index].park():  # kept whole, its file closed until read again
            self.keep(index)
            self._parked.add(index)
            return part
        if self._whole < VIEWS_KEPT:
            self._whole += 1
            self.keep(index)
            return part
        if self._viewed is None:
            self._viewed = bytearray(len(self._locations))
        self._viewed[index] = 1
        if part.view is not None:
            part.view.close()
        self.release(index)
        return Part(part.dataset, part.stored, None, None, None, part.warnings)  # type: ignore[arg-type]

    def part_of(self, index: int, part: Part) -> Part:
        """``part`` (read without its map) with its source's map opened again, and its
        view made again if it was read through one (:meth:`read_view`; the model and
        keys planned are kept: the view gives what is copied from)."""
        zmap = self.open(index, resolve=False)
        if self._viewed is None or not self._viewed[index] or self._reread is None:
            return Part(part.dataset, part.stored, zmap, zmap, None, part.warnings, part.sizes)
        fresh = self._views.get(index)
        if fresh is None:
            fresh = self._views[index] = self._reread(zmap)
        return Part(
            part.dataset, part.stored, fresh.chunks, fresh.verbatim, fresh.view, part.warnings
        )

    def keep(self, index: int) -> None:
        """Keep source ``index`` open until the end (a view of it is held); a parked
        one is not parked again until :meth:`park` is called with ``done``."""
        zmap = self._held.pop(index, None)
        if zmap is not None:
            self._kept[index] = zmap
        elif index in self._parked:
            self._busy.add(index)

    def park(self, index: int, done: bool = False) -> None:
        """Park source ``index`` again if it was parked after its check (its reads
        opened its file again), unless jobs reading it are in flight (:meth:`keep`)
        and ``done`` does not say they are over. No read of it may be in flight."""
        if index not in self._parked:
            return
        if done:
            self._busy.discard(index)
        if index not in self._busy:
            self._kept[index].park()

    def release(self, index: int, kept: bool = False) -> None:
        """Close source ``index`` if it was opened here and is not kept (with ``kept``:
        even if it is; the first is held to the end: every assembled chunk is encoded
        through it)."""
        if index == 0:
            return
        zmap = self._held.pop(index, None)
        if zmap is None and kept:
            zmap = self._kept.pop(index, None)
        if zmap is not None:
            self._costly.discard(index)
            view = self._views.pop(index, None)
            if view is not None and view.view is not None:
                view.view.close()
            zmap.close()

    def location(self, index: int) -> Location:
        """Where source ``index`` is (:func:`~nczarr.maps.overlap.location_of`): for a
        plain local path, its absolute path, as the directory map opened for it says,
        without parsing it as a URL."""
        source = self._locations[index]
        zmap = source if isinstance(source, ZMap) else self._held.get(index)
        if zmap is None:
            zmap = self._kept.get(index)
        if zmap is not None:
            return zmap.location()
        text = os.fspath(source)
        if (
            not self._options
            and isinstance(text, str)
            and text
            and ":" not in text
            and "#" not in text
            and text.isascii()
            and text.isprintable()
        ):
            return Location("local", os.path.abspath(text))
        return location_of(source, self._options)

    def close(self) -> None:
        """Close every map opened here (each even if another's close raised; the
        first error is raised at the end)."""
        error: BaseException | None = None
        self._costly.clear()
        while self._views:
            view = self._views.popitem()[1].view
            if view is not None:
                view.close()
        for held in (self._held, self._kept):
            while held:
                try:
                    held.popitem()[1].close()
                except BaseException as exc:  # re-raised below
                    error = error or exc
        if error is not None:
            raise error


class Readers(Sequence[Reader]):
    """One :class:`Reader` per part, made when asked. A part read without its map
    (``chunks`` None: :func:`detached`) gets its source's map from ``sources``; a few
    readers are kept (the first, and the last ones asked for), so a run of copies or
    an assembly does not open a source again and again. ``first``: the parts before
    the sources' (an append's target, part 0: part ``i`` is source ``i - 1``)."""

    def __init__(
        self, parts: Sequence[Part], sources: Sources | None = None, first: int = 0
    ) -> None:
        self._parts = parts
        self._sources = sources
        self._first = first
        self._cache: dict[int, Reader] = {}

    def __len__(self) -> int:
        return len(self._parts)

    @property
    def opens_sources(self) -> bool:
        """Whether asking for a reader may open (and close) a source's map: then
        readers are asked for from one thread at a time."""
        return self._sources is not None

    def __iter__(self) -> Iterator[Reader]:
        for index in range(len(self._parts)):
            yield self[index]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        reader = self._cache.get(index)
        if reader is not None:
            return reader
        part = self._parts[index]
        if part.chunks is None:
            assert self._sources is not None, "a detached part needs its sources"
            part = self._sources.part_of(index - self._first, part)
        reader = Reader(part)
        if self._sources is not None and len(self._cache) > _HELD:  # the oldest, not the first
            self.release(next(i for i in self._cache if i != 0))
        self._cache[index] = reader
        return reader

    def _source(self, index: int) -> tuple[Sources, int] | None:
        """The sources and the index among them of part ``index``; None for the first
        part (held to the end: every assembled chunk is encoded through it), a part
        before the sources (an append's target) or parts read without sources."""
        if self._sources is None or index == 0 or index < self._first:
            return None
        return self._sources, index - self._first

    def keep(self, index: int) -> None:
        """Keep part ``index``'s map open to the end (jobs running meanwhile use it)."""
        found = self._source(index)
        if found is not None:
            found[0].keep(found[1])

    def release(self, index: int) -> None:
        """Done with part ``index`` (its copies are made): its reader is dropped and its
        map closed if it was opened for it (parked if it was parked, and no job reads it)."""
        self._done(index, finished=False)

    def finish(self, index: int) -> None:
        """Done with part ``index`` for good (its copies are made): its reader dropped,
        its map closed if it was opened for it, even if it was kept (:meth:`keep`), or
        parked if it was parked."""
        self._done(index, finished=True)

    def _done(self, index: int, finished: bool) -> None:
        found = self._source(index)
        if found is None:
            return
        sources, source = found
        self._cache.pop(index, None)
        if self._parts[index].chunks is None:
            sources.release(source, kept=finished)
        else:
            sources.park(source, done=finished)


def detached(part: Part) -> Part:
    """``part`` without its map (a plain part: read straight from its map), or ``part``
    itself (read through a translated view, which holds the map)."""
    if part.view is not None or part.chunks is None:
        return part
    return Part(part.dataset, part.stored, None, None, None, part.warnings, part.sizes)  # type: ignore[arg-type]


class Compared(Container[int]):
    """The parts known to hold the first part's values in every variable without the
    dimension (``known_equal`` of :func:`~nczarr.conversion.growcompare.check_equal`):
    :attr:`known` (found so while reading, ``read_sources``) and those compared here,
    while their sources were still open (:meth:`compare`: a source read through a view,
    closed after its check, is not opened again to be compared). A part found to differ
    is not refused here: the comparison after planning refuses it, in its order."""

    def __init__(self, dimension: str, names: Sequence[str]) -> None:
        self.known: Container[int] = frozenset()
        self._dimension = dimension
        self._names = names
        self._first: Reader | None = None
        self._seen = FirstSeen()  # its compared chunks and values, read once
        self._plan: Any = None
        self._equal: bytearray | None = None

    def __contains__(self, index: object) -> bool:
        if self._equal is not None and isinstance(index, int) and self._equal[index]:
            return True
        return index in self.known

    def first(self, part: Part, count: int) -> None:
        """The first of ``count`` parts, with its map (open to the end)."""
        self._first = Reader(part)
        self._seen = FirstSeen()
        self._equal = bytearray(count)
        try:
            dim = find_dimension(part.dataset, self._dimension)
        except NCZarrError:
            return  # planning refuses it
        compare = tuple(
            v.path for v in part.dataset.root.all_variables() if dim not in v.dimensions
        )
        self._plan = _Compare(part.dataset, dim, compare)

    def compare(self, index: int, part: Part) -> None:
        """Compare ``part`` (with its map) to the first part, as the plan will."""
        plan, first = self._plan, self._first
        if plan is None or first is None or self._equal is None:
            return
        for path in plan.compare:
            try:
                other = part.dataset.find_variable(path)
            except KeyError:
                return  # planning refuses it
            mine = plan.dataset.find_variable(path)
            if (other.shape, other.dimensions) != (mine.shape, mine.dimensions):
                return
        try:
            names = [self._names[0], self._names[index]]
            check_equal(plan, [first, Reader(part)], names, seen=self._seen)
        except InvalidModeError:
            return  # refused after planning, in its order
        self._equal[index] = 1


class _Compare:
    """What :func:`~nczarr.conversion.growcompare.check_equal` reads of a plan: the first
    part's model (a grown store's variables without the dimension are the first
    part's), the dimension and the variables without it."""

    __slots__ = ("compare", "dataset", "dimension")

    def __init__(self, dataset: Any, dimension: str, compare: tuple[str, ...]) -> None:
        self.dataset = dataset
        self.dimension = dimension
        self.compare = compare


def detacher(sources: Sources, compared: Compared | None) -> Callable[[int, Part], Part]:
    """``done`` of :func:`~.growsiblings.read_sources`: keep a part without its map
    and close the map (a source read through a view: :meth:`Sources.read_view`); parts
    read as one model, with the same stored keys, are one object (nothing kept per
    source but a reference) unless their chunk sizes differ (an object store's listing
    gives them: then a part and its sizes a source, up to ``growsiblings.SIZES_KEPT``
    sizes in all).
    A view closed is compared to the first part first (``compared``; None in an
    append, whose first part is the target's: its sources are compared after
    planning). A source costly to open again stays open for its copies: a combine or
    an append of many sources holds a few open, not all."""
    last: list[Part] = []

    def done(index: int, part: Part) -> Part:
        if index == 0 and compared is not None:
            compared.first(part, len(sources))  # its map is open to the end
        kept = detached(part)
        if kept is part and part.chunks is not None:  # read through a view
            before = None if compared is None else compared.compare
            return sources.read_view(index, part, before)
        sources.read(index)  # closed, or kept for its copies (a few costly to reopen)
        if last and (last[0].dataset, last[0].stored, last[0].warnings, last[0].sizes) == (
            kept.dataset,
            kept.stored,
            kept.warnings,
            kept.sizes,  # None but from an object store's listing
        ):
            return last[0]
        last[:] = [kept]
        return kept

    return done
