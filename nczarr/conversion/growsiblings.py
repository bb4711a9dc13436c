"""Reading many sources that share one layout (:mod:`nczarr.conversion.combine`) once.

365 daily files of one producer hold the same metadata objects, often byte for byte
(one day each: the same shapes too). Reading each into the model costs far more than
copying its chunks, so :func:`read_sources` reads the first source fully and remembers
which metadata objects its reading looked at (every object of every node, and the
names at its root: which root objects and append journal it holds); a later source
whose objects at those keys hold the very same bytes is read as that model, without
parsing anything again: only its chunk objects are listed (one listing of the source).
Sound because reading an NCZarr store (current layout, every group with its
``_nczarr_group`` list) looks at nothing else: identical bytes give an identical model.
Any other source is read fully (and, when it is plain, remembered too: sources of
another length share its model).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import InvalidModeError
from ..load import MAX_METADATA_SIZE, load_metadata
from ..maps.base import ZMap
from ..maps.pending import JOURNAL_KEY
from ..records import record, replace
from ..translate.conventions import GROUP_KEYS, LAYOUT_V2, ZARRAY, ZATTRS, ZGROUP
from ..translate.detect import nczarr_key
from ..translate.grow import find_dimension
from ..translate.select import check_matched
from .growparts import Part, PartOptions, chunks_in, read_part, sizes_in

__all__ = ["read_sources"]


@record(frozen=False)
class _Known:
    """The keys a first full read looked at, and the parts read so far by their bytes."""

    keys: tuple[str, ...]
    parts: dict[tuple[Any, ...], Part]


def _looked_at(meta: dict[str, Any]) -> tuple[str, ...] | None:
    """The keys a full read of a store with these metadata objects fetches below its
    root (each array's ``.zarray`` and ``.zattrs``, each group's ``.zgroup`` and
    ``.zattrs``) and the root objects it holds (the root's listing stands for those it
    does not hold); None when that read also depends on a listing (a group without
    ``_nczarr_group``)."""
    nodes = {key.rpartition("/")[0] for key in meta if "/" in key}
    keys = {key for key in meta if "/" not in key}
    for node in sorted(nodes):
        if f"{node}/{ZARRAY}" in meta:
            keys.update((f"{node}/{ZARRAY}", f"{node}/{ZATTRS}"))
            continue
        group, _ = nczarr_key(meta, node, GROUP_KEYS, ZGROUP)
        if not isinstance(group, dict):
            return None
        keys.update((f"{node}/{ZGROUP}", f"{node}/{ZATTRS}"))
    root, _ = nczarr_key(meta, "", GROUP_KEYS, ZGROUP)
    return tuple(sorted(keys)) if isinstance(root, dict) else None


def _fingerprint(
    zmap: ZMap, keys: Sequence[str], listing: Sequence[str], seen: Mapping[str, bytes]
) -> tuple[Any, ...]:
    """The names at the root of ``listing`` (which root objects and journal exist) and
    the bytes of ``keys``: those ``load_metadata`` read (``seen``) when it read every
    one of them that is listed, as a later source's are read (capped alike); else read
    again (metadata read from ``.zmetadata``, or a limit of the caller's)."""
    root = sorted({key.split("/", 1)[0] for key in listing})
    journal = (JOURNAL_KEY,) if JOURNAL_KEY in root else ()  # its metadata is read
    wanted = [*keys, *journal]
    listed = set(listing)
    if not journal and all(key in seen for key in wanted if key in listed):
        raw = {key: seen[key] for key in wanted if key in seen}
    else:
        raw = zmap.getitems_capped(wanted, MAX_METADATA_SIZE + 1)
    return (tuple(root), *sorted(raw.items()))


def _fingerprint_of(
    keys: Sequence[str], roots: tuple[str, ...], got: Mapping[str, bytes]
) -> tuple[Any, ...]:
    """:func:`_fingerprint` from the names at the root of a listing (sorted) and the
    objects read with it (:meth:`~nczarr.maps.mapcore.MapCore.list_reading` of ``keys``
    and the journal, capped as there)."""
    journal = (JOURNAL_KEY,) if JOURNAL_KEY in roots else ()
    raw = {key: got[key] for key in (*keys, *journal) if key in got}
    return (roots, *sorted(raw.items()))


class _FullReads:
    """Sources read fully (:meth:`read`): the chunk sizes kept from their listings
    (``sizes``), and whether listing a source ahead, while its metadata is read, still
    pays (not once a source turned out to be read through a view, which lists its
    arrays itself: a combine of Zarr v3 sources lists each once, not twice)."""

    def __init__(self) -> None:
        self.sizes = _Sizes()
        self._ahead = True

    def read(
        self, zmap: ZMap, opts: PartOptions, known: _Known | None, listed: list[str] | None
    ) -> tuple[Part, _Known | None]:
        """Read ``zmap`` fully; remember it when its model can stand for identical
        sources. On a map that makes round trips every key is listed once, in a thread
        while its metadata is read (its chunk objects, their sizes, its root names for
        the fingerprint; ``listed``: the listing the pass read already): the first
        source of a combine on S3 is read by the client before anything else starts.
        A local source is listed a variable at a time, as before."""
        lenient: list[str] = []
        if zmap.file_format() is not None or zmap.reencoded:
            return read_part(zmap, opts), known
        seen: dict[str, bytes] = {}  # the objects' bytes, for the fingerprint
        ahead = listed is None and self._ahead and zmap.round_trips
        meta, listing = _listing_while(
            zmap, ahead, lambda: load_metadata(zmap, warnings=lenient, seen=seen)
        )
        listing = listed if listing is None else listing
        part = read_part(zmap, opts, metadata=(meta, lenient), listing=listing)
        if part.view is not None:
            self._ahead = False
        elif listing is not None:  # read straight from its map: copied from it
            part = replace(part, sizes=self.sizes.of(listing, part.stored))
        keys = _looked_at(meta)
        if part.view is not None or part.dataset.layout != LAYOUT_V2 or lenient or keys is None:
            return part, known
        if known is None:
            known = _Known(keys, {})
        if keys == known.keys:
            every = listing if listing is not None else list(zmap.keys_below(""))
            known.parts[_fingerprint(zmap, keys, every, seen)] = part
        return part, known


def _listing_while(
    zmap: ZMap, ahead: bool, work: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], list[str] | None]:
    """``(work(), every key of zmap)``, listed in a thread while ``work`` runs (with the
    sizes an object store's listing gives: :class:`~nczarr.maps.mapcore.ListedKeys`);
    without ``ahead``, ``(work(), None)``. An error of ``work`` comes first; the
    listing is waited for either way (the map is not closed under it)."""
    if not ahead:
        return work(), None
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="nczarr-list") as pool:
        listing = pool.submit(lambda: zmap.list_reading({})[0])
        return work(), listing.result()


def read_sources(
    maps: Iterable[ZMap],
    opts: PartOptions,
    dimension: str | None = None,
    done: Callable[[int, Part], Part] | None = None,
    client: Any = None,
) -> tuple[list[Part], Collection[int]]:
    """Every map as a :class:`~nczarr.conversion.growparts.Part` (see the module doc),
    and the indices of the parts already known to agree with the first one on every
    variable without ``dimension`` (None: none checked here).

    A later source is listed and read in one pass
    (:meth:`~nczarr.maps.mapcore.MapCore.list_reading`: a directory map opens each of
    its directories once for its listing, its metadata objects and the chunks
    compared). A part read as the first part's model whose chunk objects of the
    variables without the dimension are the first part's very keys and bytes holds the
    same values: :func:`~nczarr.conversion.growcompare.check_equal` need not look at it
    again, and its bytes are compared here, in the same pass, rather than in a second
    one that would open its directories again.

    ``maps`` may be opened one at a time: ``done(index, part)`` is told when a source's
    part is read (before the next source is asked for) and returns what to keep of it
    (the part without its map, for instance: memory flat in the sources); the first
    part's chunks compared are then read at once, while its map is open. With a dask
    ``client`` the later sources' reads run on its workers (:class:`_Ahead`). With
    ``opts.matched``, a pattern that matches in no source is refused at the end."""
    parts: list[Part] = []
    known: _Known | None = None
    same = _Indices()
    first: tuple[tuple[str, ...], list[str], dict[str, bytes]] | None = None
    wanted: dict[str, int | None] = {}
    last = _Last()
    fulls = _FullReads()
    ahead = _Ahead(maps, client)
    for index, zmap in enumerate(ahead):
        twin = listing = None
        got: dict[str, bytes] = {}
        if known is not None and zmap.file_format() is None and not zmap.reencoded:
            if not wanted:  # the same keys for every later source: built once
                if dimension is not None and first is None:
                    first = _compared_chunks(parts[0], dimension)
                wanted = dict.fromkeys((*known.keys, *_journal(known)), MAX_METADATA_SIZE + 1)
                wanted.update(dict.fromkeys(first[1] if first else (), None))
            listing, got = ahead.list_reading(zmap, wanted)  # one pass: listing, objects
            names = frozenset(listing)
            twin = known.parts.get(_fingerprint_of(known.keys, last.roots(names), got))
        if twin is None or listing is None:
            part, known = fulls.read(zmap, opts, known, listing)
            if index == 0 and dimension is not None and done is not None:
                first = _compared_chunks(part, dimension)  # while its map is open
            parts.append(part if done is None else done(index, part))
            wanted = {}  # the keys read may change with what is known
            continue
        stored = last.stored(twin, names)
        part = Part(
            twin.dataset, stored, zmap, zmap, None, twin.warnings, fulls.sizes.of(listing, stored)
        )
        if first is not None and twin.dataset is parts[0].dataset:
            prefixes, keys, first_bytes = first
            mine = keys if part.stored is parts[0].stored else _below(part.stored, prefixes)
            if prefixes and mine == keys and {k: got.get(k) for k in keys} == first_bytes:
                same.add(index)
        parts.append(part if done is None else done(index, part))
    if opts.matched is not None:  # a pattern need match in one source only
        check_matched(opts.include, opts.exclude, opts.matched, " in any source")
    return parts, same


#: Later sources whose listing and metadata objects are read ahead, in threads, while
#: an earlier one is compared, when their maps make round trips (S3, HTTP...).
AHEAD = 8


class _Ahead:
    """The maps of :func:`read_sources` in order, each later source's
    :meth:`~nczarr.maps.mapcore.MapCore.list_reading` started up to :data:`AHEAD`
    sources ahead, in threads, when the maps make round trips
    (:attr:`~nczarr.maps.base.ZMap.round_trips`): 365 sources on S3 then overlap their
    requests instead of waiting for one source's requests at a time. Maps are still
    pulled (opened, checked) in order; local ones are not pulled ahead (one open at a
    time). A read ahead with other ``wanted`` keys than the comparison asks for is not
    used: the source is read again. A failure is raised when its source's turn comes,
    a failure to pull a map (its open or overlap check) too: errors come in source
    order, as one source at a time would raise them.

    With a dask ``client`` the reads run on the cluster's workers instead
    (:class:`~nczarr.conversion.growcluster.SourceReads`: tasks of :data:`AHEAD`
    sources, a few per worker thread ahead), so more workers read more sources at once
    and the client's CPU goes to opening, checking and comparing them."""

    def __init__(self, maps: Iterable[ZMap], client: Any = None) -> None:
        self._maps = iter(maps)
        self._pulled: deque[ZMap | _Failed] = deque()
        self._started: dict[int, tuple[Mapping[str, int | None], Any]] = {}  # futures
        self._pool: Any = None  # a ThreadPoolExecutor once a source makes round trips
        self._client = client
        self._cluster: Any = None  # growcluster.SourceReads once a source makes round trips
        self._ended = False

    def __iter__(self) -> Iterator[ZMap]:
        try:
            while True:
                if self._pulled:
                    item = self._pulled.popleft()
                    if isinstance(item, _Failed):
                        raise item.error
                    yield item
                    continue
                if self._ended:
                    return
                zmap = next(self._maps, None)
                if zmap is None:
                    return
                if self._client is not None and self._cluster is None and _read_ahead(zmap):
                    self._on_cluster().warm(zmap)  # the workers' clients, meanwhile
                yield zmap
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
            if self._cluster is not None:
                self._cluster.cancel()

    def list_reading(
        self, zmap: ZMap, wanted: Mapping[str, int | None]
    ) -> tuple[list[str], dict[str, bytes]]:
        """``zmap.list_reading(wanted)``, from the read started ahead if there is one;
        then the next sources' reads are started."""
        started = self._started.pop(id(zmap), None)
        if zmap.round_trips:
            self._start(wanted)
        if started is not None and started[0] is wanted:
            if self._cluster is not None:
                return self._cluster.result(*started[1])
            return started[1].result()
        if started is not None and self._cluster is not None:
            self._cluster.drop(started[1][0])  # read with other keys: not kept on the cluster
        return zmap.list_reading(wanted)

    def _pull(self) -> ZMap | None:
        """The next map, queued; None at the end or after a failure to pull one (queued
        to be raised at its turn: nothing is pulled after it)."""
        if self._ended:
            return None
        try:
            zmap = next(self._maps, None)
        except Exception as exc:
            self._ended = True
            self._pulled.append(_Failed(exc))
            return None
        if zmap is None:
            self._ended = True
            return None
        self._pulled.append(zmap)
        return zmap

    def _start(self, wanted: Mapping[str, int | None]) -> None:
        """Pull maps until :data:`AHEAD` wait, starting the reads of those that make
        round trips and are read by listing (not netCDF files or views)."""
        if self._client is not None:
            self._start_on_cluster(wanted)
            return
        while len(self._pulled) < AHEAD:
            zmap = self._pull()
            if zmap is None:
                return
            if _read_ahead(zmap):
                if self._pool is None:
                    # only here: a combine of local sources imports no thread pool
                    from concurrent.futures import ThreadPoolExecutor

                    self._pool = ThreadPoolExecutor(AHEAD, thread_name_prefix="nczarr-ahead")
                future = self._pool.submit(zmap.list_reading, wanted)
                self._started[id(zmap)] = (wanted, future)

    def _on_cluster(self) -> Any:
        """The :class:`~nczarr.conversion.growcluster.SourceReads` of this pass."""
        if self._cluster is None:
            from .growcluster import SourceReads

            self._cluster = SourceReads(self._client, AHEAD)
        return self._cluster

    def _start_on_cluster(self, wanted: Mapping[str, int | None]) -> None:
        """Pull maps while a whole task of :data:`AHEAD` more fits the cluster's window
        (or to the end), each run of those read by listing started as one task."""
        reads = self._on_cluster()
        while not self._ended and len(self._pulled) + reads.ahead <= reads.window:
            batch = []
            for _ in range(reads.ahead):
                zmap = self._pull()
                if zmap is None:
                    break
                if _read_ahead(zmap):
                    batch.append(zmap)
            if batch:
                task = reads.submit(batch, wanted)
                for position, zmap in enumerate(batch):
                    self._started[id(zmap)] = (wanted, (task, position))


def _read_ahead(zmap: ZMap) -> bool:
    """Whether ``zmap`` is read ahead: it makes round trips and is read by listing."""
    return zmap.round_trips and zmap.file_format() is None and not zmap.reencoded


@record(frozen=False)
class _Failed:
    """A map :class:`_Ahead` could not pull (its open or its check raised)."""

    error: BaseException


def _journal(known: _Known) -> tuple[str, ...]:
    """The append journal's key if a known part's source holds one, else nothing: a
    later source holding one lists its name among its root names, so its fingerprint
    differs from every known part's whether or not its bytes are read (one GET a
    source saved, on S3 a round trip: it is read only when it could match)."""
    return (JOURNAL_KEY,) if any(JOURNAL_KEY in print_[0] for print_ in known.parts) else ()


class _Indices:
    """A set of part indices held as runs (``start, stop`` pairs): a combine's later
    sources are all found equal to the first, one run, not one int each."""

    __slots__ = ("_runs",)

    def __init__(self) -> None:
        self._runs: list[list[int]] = []

    def add(self, index: int) -> None:
        if self._runs and self._runs[-1][1] == index:
            self._runs[-1][1] = index + 1
        elif not any(a <= index < b for a, b in self._runs):
            self._runs.append([index, index + 1])

    def __contains__(self, index: object) -> bool:
        return any(a <= index < b for a, b in self._runs)  # type: ignore[operator]

    def __len__(self) -> int:
        return sum(b - a for a, b in self._runs)

    def __iter__(self) -> Iterator[int]:
        for a, b in self._runs:
            yield from range(a, b)


#: Chunk sizes from sources' listings kept for their copies (~100 bytes each, the keys
#: shared with the first part's): beyond them a copy asks its size, so memory stays
#: bounded in the number of sources (~20 MB at most).
SIZES_KEPT = 200_000


class _Sizes:
    """The sizes a later source's listing gave (an object store's:
    :class:`~nczarr.maps.mapcore.ListedKeys`) of its stored chunk objects, kept in its
    part for its server-side copies (one ``CopyObject`` a chunk, no ``HeadObject``),
    up to :data:`SIZES_KEPT` in all."""

    def __init__(self) -> None:
        self.kept = 0

    def of(self, listing: Sequence[str], stored: frozenset[str]) -> dict[str, int] | None:
        if self.kept + len(stored) > SIZES_KEPT:
            return None
        sizes = sizes_in(listing, stored)
        if sizes is not None:
            self.kept += len(sizes)
        return sizes


def _below(stored: frozenset[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(k for k in stored if k.startswith(prefixes)) if prefixes else []


class _Last:
    """What the previous later source's listing gave (its root names, its stored chunk
    keys): a daily series lists the very same names in every source, so each is worked
    out once and then compared as a set. Only the last is kept (memory flat)."""

    def __init__(self) -> None:
        self._names: frozenset[str] | None = None
        self._roots: tuple[str, ...] = ()
        self._twin: Part | None = None
        self._stored: frozenset[str] = frozenset()

    def roots(self, names: frozenset[str]) -> tuple[str, ...]:
        """The names at the root of the listing ``names`` (sorted)."""
        if names != self._names:
            self._names, self._twin = names, None
            self._roots = tuple(sorted({key.split("/", 1)[0] for key in names}))
        return self._roots

    def stored(self, twin: Part, names: frozenset[str]) -> frozenset[str]:
        """The chunk objects of ``twin``'s variables in the listing ``names`` (asked
        after :meth:`roots` of the same names); ``twin.stored`` itself when equal."""
        if twin is not self._twin or names != self._names:
            stored = chunks_in(names, list(twin.dataset.root.all_variables()))
            self._twin, self._stored = twin, twin.stored if stored == twin.stored else stored
        return self._stored


def _compared_chunks(
    part: Part, dimension: str
) -> tuple[tuple[str, ...], list[str], dict[str, bytes]]:
    """The key prefixes of ``part``'s variables without ``dimension`` (a bare name: the
    root group's, as :func:`~nczarr.translate.grow.find_dimension` says), their chunk
    keys (sorted) and bytes; no prefixes when there is no such dimension (the plan
    refuses it) or no such variable."""
    try:
        dim = find_dimension(part.dataset, dimension)
    except InvalidModeError:
        return (), [], {}
    prefixes = tuple(
        v.path.strip("/") + "/"
        for v in part.dataset.root.all_variables()
        if dim not in v.dimensions
    )
    keys = sorted(k for k in part.stored if k.startswith(prefixes)) if prefixes else []
    return prefixes, keys, part.chunks.getitems(keys) if keys else {}
