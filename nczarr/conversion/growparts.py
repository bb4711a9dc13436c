"""Reading the parts of a grown store (:mod:`nczarr.conversion.combine`): each source
as the engine sees it (its model, its stored chunk keys, where its chunk bytes come
from), decoding regions of its arrays, and assembling a target chunk from several
parts (the variables that must be equal in every part are compared in
:mod:`nczarr.conversion.growcompare`)."""

from __future__ import annotations

from collections.abc import (
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedError, UnsupportedTypeError
from ..keys import parent_keys
from ..load import read_with_chunk_keys
from ..maps.base import ZMap
from ..readthrough import TrailingAxis, TranslatedView
from ..records import record
from ..translate.conventions import ZARRAY
from ..translate.dtypes import nc_to_zarr_dtype
from ..translate.grow import GrowPlan
from ..translate.model import Dataset, Variable
from ..translate.netcdf_forms import bytes_as_char
from ..translate.recode_plan import Reencoding, plan_reencoding
from ..translate.select import (
    dropped_warning,
    matched_patterns,
    select_dataset,
    selected_paths,
)
from ..translate.target import Target

if TYPE_CHECKING:  # numpy and the re-encoder only when a chunk is assembled or compared
    import numpy as np

    from ..reencode import ChunkRecoder

__all__ = [
    "LIST_SIZES_FROM",
    "Part",
    "PartOptions",
    "Reader",
    "assemble",
    "chunks_in",
    "listed",
    "part_of_view",
    "read_part",
    "sizes_in",
]


@record(frozen=False)
class PartOptions:
    """What every part's view and the writer share; ``include``/``exclude`` select the
    same variables in every source (:func:`~nczarr.translate.select.select_dataset`).
    ``matched`` None: a pattern that matches nothing in a source is refused there;
    else a source may lack what a pattern names, and the patterns that match in each
    source read are added to it (the caller checks them against all its sources:
    :func:`~nczarr.translate.select.check_matched`)."""

    fmt: str
    zarr_format: int
    noxarray: bool
    consolidated: bool
    netcdf_scalars: bool
    include: Sequence[str] | None = None
    exclude: Sequence[str] | None = None
    matched: set[str] | None = None

    def note_matched(self, read: Dataset) -> None:
        """Add the patterns that match in ``read`` (a source as read) to :attr:`matched`."""
        if self.matched is not None and (self.include or self.exclude):
            self.matched.update(matched_patterns(read, self.include, self.exclude))


#: Chunks a variable of a source must average for their sizes to come from one listing
#: of the variable rather than a request each (S3: ``HeadObject``).
LIST_SIZES_FROM = 4


@record(slots=True)
class Part:
    """One source as the engine reads it.

    ``chunks`` serves chunk bytes as ``dataset`` describes them (the map itself, or its
    translated view when some array is re-encoded or shown under other keys);
    ``verbatim`` is where a verbatim copy reads (the map itself unless the view maps
    keys, so that kernel and server-side copies apply). Both None: a part kept without
    its map (a combine's, :func:`~nczarr.conversion.growsources.detached`), whose
    readers open it again (:class:`~nczarr.conversion.growsources.Readers`).
    ``sizes``: the stored chunk objects' sizes when the source's listing gave them
    (an object store's: :class:`~nczarr.maps.mapcore.ListedKeys`), else None; a
    server-side copy given its size makes no request for it.
    """

    dataset: Dataset
    stored: frozenset[str]
    chunks: ZMap
    verbatim: ZMap
    view: TranslatedView | None
    warnings: tuple[str, ...]
    sizes: Mapping[str, int] | None = None

    def copy_source(self, key: str) -> ZMap:
        """Where chunk ``key`` is copied from."""
        if self.view is not None and self.view.reencoded_array(key) is not None:
            return self.view
        return self.verbatim

    def known_sizes(self, keys: Collection[str]) -> Mapping[str, int]:
        """The sizes of chunk objects ``keys`` of :attr:`verbatim` known without a
        request a chunk (a server-side copy given its size is one ``CopyObject``, a dry
        run counts bytes): those the source's listing gave (:attr:`sizes`); else, on a
        map that makes round trips, from one listing of each variable the keys belong
        to when those hold at least :data:`LIST_SIZES_FROM` of them on average (past
        ``growsiblings.SIZES_KEPT``); else none (each size is asked). Keys not asked
        may be among them (callers look up theirs)."""
        if self.sizes is not None:
            return self.sizes
        if not self.verbatim.round_trips or self.verbatim is self.view:
            return {}  # a view's listing asks each size of its source anyway
        variables = {v.path.strip("/") for v in self.dataset.root.all_variables()}
        used: set[str] = set()  # the variables the keys are chunks of
        for key in keys:
            used.update(p for p in parent_keys(key) if p in variables)
        if not used or len(keys) < LIST_SIZES_FROM * len(used):
            return {}
        listed = (self.verbatim.list_sizes(p) for p in sorted(used))
        return {k: n for sizes in listed for k, n in sizes if k in keys}


def part_of_view(view: TranslatedView) -> Part:
    """``view`` as a part: its chunk keys listed (an array at a time, or
    :data:`LISTINGS_AT_ONCE` arrays at once when its source awaits its storage: an
    append's target on S3 is listed so before anything else can start)."""
    return Part(
        dataset=_as_shown(view),
        stored=_shown_chunks(view),
        chunks=view,
        verbatim=view if view.keys_mapped else view.source,
        view=view,
        warnings=view.warnings,
    )


def _as_shown(view: TranslatedView) -> Dataset:
    """``view``'s model with the arrays it shows with one more chunk axis (fixed bytes
    shown as NCZarr ``char``: :class:`~nczarr.readthrough.TrailingAxis`) in that form:
    the chunk keys planned and read are then those the view lists (``s/0.0.0``; the
    fixed-bytes model's ``s/0.0`` matched none of them, and every chunk was left out)."""
    keys = view.translation.layout.keys
    shown = {"/" + path for path, encoding in keys.items() if isinstance(encoding, TrailingAxis)}
    return bytes_as_char(view.dataset, shown)


def read_part(
    zmap: ZMap,
    opts: PartOptions,
    metadata: tuple[dict[str, Any], list[str]] | None = None,
    listing: Sequence[str] | None = None,
) -> Part:
    """``zmap`` as a part: read directly when nothing needs translating (the common
    case, and the cheap one: no metadata is written per source), else through a view.
    ``metadata``: what :func:`nczarr.load.load_metadata` gave for ``zmap`` already;
    ``listing``: every key of ``zmap`` if the caller listed them already (the chunk
    objects are found there: no listing a variable; their sizes are the caller's to
    keep, :func:`sizes_in`)."""
    if zmap.file_format() is None and not zmap.reencoded:
        read, v3_keys = read_with_chunk_keys(zmap, metadata=metadata)
        opts.note_matched(read)
        dataset = select_dataset(read, opts.include, opts.exclude, strict=opts.matched is None)
        variables = list(dataset.root.all_variables())
        # a bare root array (shown under another prefix): its .zarray among the root
        # objects load_metadata read, when it read them
        root_array = ZARRAY in metadata[0] if metadata is not None else ZARRAY in zmap
        plain = (
            not v3_keys
            and not selected_paths(read.skipped, opts.include, opts.exclude)
            and not root_array
            and not plan_reencoding(dataset, opts.fmt)[1]
            and not (opts.fmt == "nczarr" and any(v.logical == "bytes" for v in variables))
        )
        if plain:
            stored = (
                frozenset(listed(zmap, variables))
                if listing is None
                else chunks_in(listing, variables)
            )
            return Part(
                dataset=dataset,
                stored=stored,
                chunks=zmap,
                verbatim=zmap,
                view=None,
                warnings=(*dataset.warnings, *dropped_warning(read, dataset)),
            )
    return part_of_view(_view(zmap, opts))


def _shown_chunks(view: TranslatedView) -> frozenset[str]:
    """Every chunk key ``view`` shows (:meth:`~nczarr.readthrough.TranslatedView.chunk_keys`)."""
    arrays = view.shown_arrays
    if not view.source.async_reads or len(arrays) < 2:
        return frozenset(view.chunk_keys())
    return frozenset(key for keys in _at_once(view.array_chunk_keys, arrays) for key in keys)


def _at_once(lister: Callable[[str], Iterable[str]], prefixes: Sequence[str]) -> list[list[str]]:
    """``[list(lister(p)) for p in prefixes]``, :data:`LISTINGS_AT_ONCE` listings at a
    time in threads (each a round trip on a map that awaits its storage)."""
    from concurrent.futures import ThreadPoolExecutor

    at_once = min(LISTINGS_AT_ONCE, len(prefixes))
    with ThreadPoolExecutor(at_once, thread_name_prefix="nczarr-list") as pool:
        return list(pool.map(lambda prefix: list(lister(prefix)), prefixes))


def chunks_in(listing: Iterable[str], variables: Sequence[Variable]) -> frozenset[str]:
    """The chunk objects of ``variables`` in ``listing`` (what :func:`listed` finds,
    from one listing of every key)."""
    arrays = {var.path.strip("/") for var in variables}
    found = set()
    for key in listing:
        cut = key.find("/")
        while cut > 0:
            if key[:cut] in arrays:
                if not any(s.startswith(".") for s in key[cut + 1 :].split("/")):
                    found.add(key)
                break
            cut = key.find("/", cut + 1)
    return frozenset(found)


def sizes_in(listing: Sequence[str], stored: frozenset[str]) -> dict[str, int] | None:
    """The sizes of the ``stored`` chunk objects, if ``listing`` gave sizes (an object
    store's: :class:`~nczarr.maps.mapcore.ListedKeys`), else None."""
    sizes = getattr(listing, "sizes", None)
    return None if sizes is None else {k: sizes[k] for k in stored if k in sizes}


#: Variables whose listings a map that awaits its storage (S3) is asked for at once.
LISTINGS_AT_ONCE = 8


def listed(zmap: ZMap, variables: Sequence[Variable]) -> Iterator[str]:
    """The chunk objects stored below each variable (no metadata objects).

    On a map that awaits its storage (:attr:`~nczarr.maps.base.ZMap.async_reads`: a
    listing is a round trip) the variables are listed :data:`LISTINGS_AT_ONCE` at a
    time, not one after another (a source read without a listing of all its keys:
    ``growsiblings`` lists a combine's S3 sources whole instead)."""
    prefixes = [var.path.strip("/") for var in variables]
    listings: Iterable[Iterable[str]]
    if zmap.async_reads and len(prefixes) > 1:
        listings = _at_once(zmap.keys_below, prefixes)
    else:
        listings = (zmap.keys_below(prefix) for prefix in prefixes)
    for prefix, keys in zip(prefixes, listings, strict=True):
        for key in keys:
            rest = key[len(prefix) + 1 :]
            if key.startswith(prefix + "/") and not any(
                segment.startswith(".") for segment in rest.split("/")
            ):
                yield key


def _view(zmap: ZMap, opts: PartOptions) -> TranslatedView:
    target = Target(
        opts.fmt,  # type: ignore[arg-type]
        zarr_format=opts.zarr_format,
        noxarray=opts.noxarray,
        consolidated=opts.consolidated,
        netcdf_scalars=opts.netcdf_scalars,
        keep_shards=False,  # chunks are assembled per inner chunk: no shards
    )
    view = TranslatedView.from_source(
        zmap, target, include=opts.include, exclude=opts.exclude, strict=opts.matched is None
    )
    opts.note_matched(view.translation.read)
    missing = selected_paths((*view.dataset.skipped, *view.left_out), opts.include, opts.exclude)
    if missing:
        raise UnsupportedTypeError(
            f"{zmap.url}: cannot combine: {', '.join(missing)} cannot be represented in "
            f"{opts.fmt} ({'; '.join(view.warnings)})"
        )
    return view


def _fill(var: Variable, dtype: np.dtype) -> Any:
    if var.fill_value is not None:
        return var.fill_value
    return "" if dtype.kind in "OUST" else 0


def _dtype(var: Variable) -> np.dtype:
    import numpy as np

    return np.dtype(
        nc_to_zarr_dtype(
            var.type, var.endian, var.maxstrlen, nczarr=False, text_storage=var.text_storage
        )
    )


class Reader:
    """Decodes chunks of one part's arrays (as the part serves them), one recoder each.
    A combine makes one per source and most never decode: nothing else is made until
    asked (slots, no dictionaries)."""

    __slots__ = ("_keys", "_recoders", "part")

    def __init__(self, part: Part) -> None:
        self.part = part
        self._recoders: dict[str, ChunkRecoder] | None = None
        self._keys: dict[str, list[str]] | None = None

    def stored_keys(self, var: Variable) -> list[str]:
        """The chunk keys of ``var`` this part stores, sorted."""
        path = var.path.strip("/")
        if self._keys is None:
            self._keys = {}
        if path not in self._keys:
            prefix = path + "/"
            self._keys[path] = sorted(k for k in self.part.stored if k.startswith(prefix))
        return self._keys[path]

    def recoder(self, var: Variable) -> ChunkRecoder:
        from ..reencode import ChunkRecoder

        path = var.path.strip("/")
        if self._recoders is None:
            self._recoders = {}
        if path not in self._recoders:
            own = self.part.dataset.find_variable(var.path)
            self._recoders[path] = ChunkRecoder(
                self.part.chunks, Reencoding(own, own, "combined"), path, None
            )
        return self._recoders[path]

    def region(
        self,
        var: Variable,
        box: Sequence[tuple[int, int]],
        read: Mapping[str, bytes] | None = None,
    ) -> np.ndarray:
        """The values of ``box`` (``(start, stop)`` per axis) of ``var`` in this part;
        ``read``: chunk bytes by key read already (one ``getitems``), not read again."""
        import numpy as np

        own = self.part.dataset.find_variable(var.path)
        dtype = _dtype(own)
        out = np.full(tuple(b - a for a, b in box), _fill(own, dtype), dtype=dtype)
        ranges = [
            range(a // n, -(-b // n)) if b > a else range(0)
            for (a, b), n in zip(box, own.chunks, strict=True)
        ]
        recoder = self.recoder(var)
        for coords in np.ndindex(*(len(r) for r in ranges)):
            chunk = tuple(r[i] for r, i in zip(ranges, coords, strict=True))
            values = recoder.decode(chunk, read)
            if values is None:
                continue
            src, dst = [], []
            for c, n, (a, b) in zip(chunk, own.chunks, box, strict=True):
                lo, hi = max(a, c * n), min(b, (c + 1) * n)
                src.append(slice(lo - c * n, hi - c * n))
                dst.append(slice(lo - a, hi - a))
            out[tuple(dst)] = values[tuple(src)]
        return as_text_of(out, own, var)

    def region_at_once(self, var: Variable, box: Sequence[tuple[int, int]]) -> np.ndarray:
        """:meth:`region`, its chunks read in one ``getitems`` (one round trip on S3,
        not one a chunk); not for sharded arrays (their shards are read by zarr)."""
        import itertools

        own = self.part.dataset.find_variable(var.path)
        if own.shards is not None:
            return self.region(var, box)
        ranges = [
            range(a // n, -(-b // n)) if b > a else range(0)
            for (a, b), n in zip(box, own.chunks, strict=True)
        ]
        recoder = self.recoder(var)
        keys = [recoder.source_key(c) for c in itertools.product(*ranges)]
        return self.region(var, box, self.part.chunks.getitems(keys))

    def scalar(self, var: Variable, read: Mapping[str, bytes]) -> np.ndarray:
        """The value of scalar ``var`` in this part (its fill if never written);
        ``read``: as for :meth:`region`."""
        import numpy as np

        values = self.recoder(var).decode((), read)
        own = self.part.dataset.find_variable(var.path)
        if values is None:
            return as_text_of(np.asarray(_fill(own, _dtype(own))), own, var)
        return as_text_of(np.asarray(values), own, var)


def as_text_of(values: np.ndarray, own: Variable, var: Variable) -> np.ndarray:
    """A part's values of string variable ``own`` as the grown ``var`` holds text:
    fixed-width UTF-8 bytes, or ``str`` (UTF-32 or variable-length). Parts store netCDF
    strings differently (an NCZarr store fixed-width bytes, a netCDF-4 file or
    zarr-python variable-length ``str``): the values are the same text, compared and
    assembled as such. Other variables' values are returned as they are."""
    import numpy as np

    if own.type != "string" or own.text_storage == var.text_storage:
        return values
    if _dtype(var).kind == "S":  # the width is checked where the values are placed
        return np.char.encode(values.astype(str), "utf-8")
    try:
        text = values if values.dtype.kind != "S" else np.char.decode(values, "utf-8")
    except UnicodeDecodeError as exc:  # netCDF text is UTF-8: these bytes are no text
        raise UnsupportedError(
            f"variable {own.path!r}: a value is not UTF-8 ({exc.object[:16]!r}...), so it "
            "cannot be combined with sources that hold this variable as text"
        ) from None
    return text.astype(_dtype(var))


def assemble(
    plan: GrowPlan, readers: Sequence[Reader], path: str, coords: tuple[int, ...]
) -> bytes:
    """The target bytes of chunk ``coords`` of ``path``, from the parts' values."""
    import numpy as np

    from ..reencode import ChunkRecoder

    var = plan.dataset.find_variable("/" + path)
    axis = var.dimensions.index(plan.dimension)
    dtype = _dtype(var)
    out = np.full(var.chunks, _fill(var, dtype), dtype=dtype)
    box = [
        (c * n, min((c + 1) * n, s)) for c, n, s in zip(coords, var.chunks, var.shape, strict=True)
    ]
    start, stop = box[axis]
    for index, (offset, length) in enumerate(zip(plan.offsets, plan.lengths, strict=True)):
        lo, hi = max(start, offset), min(stop, offset + length)
        if lo >= hi:
            continue
        reader = readers[index]  # only the parts in the chunk (readers may open sources)
        part_box = list(box)
        part_box[axis] = (lo - offset, hi - offset)
        values = reader.region(var, part_box)
        _check_width(values, dtype, "/" + path)
        where = [slice(0, b - a) for a, b in box]
        where[axis] = slice(lo - start, hi - start)
        out[tuple(where)] = values
    encoder = ChunkRecoder(readers[0].part.chunks, Reencoding(var, var, "combined"), path, None)
    return encoder.encode_values(out)


def _check_width(values: np.ndarray, dtype: np.dtype, fqn: str) -> None:
    """Refuse text that a narrower target string width would cut (numpy would, silently).
    The plan makes the target as wide as the widest part (``grow._widest_text``): only a
    source whose values exceed its own declared width gets here."""
    if dtype.kind != "S" or values.dtype.kind != "S" or values.dtype.itemsize <= dtype.itemsize:
        return
    longest = max((len(v) for v in values.ravel()), default=0)
    if longest > dtype.itemsize:
        raise UnsupportedTypeError(
            f"variable {fqn!r}: a value of {longest} bytes does not fit the target's string "
            f"width {dtype.itemsize}, wider than the source's declared width"
        )
