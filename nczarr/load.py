"""Load a store's metadata objects, detect its format, read it into the netCDF-4 model.

The I/O side of reading; everything after :func:`load_metadata` is pure
(:mod:`nczarr.translate`). Public: :func:`detect`, :func:`read`,
:class:`FormatInfo`, and :func:`load_metadata` for tools that need the raw JSON.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .errors import MetadataError, warn_all
from .keys import is_node_name, join_key
from .maps.base import ZMap
from .maps.open import open_source
from .maps.pending import JOURNAL_KEY, with_pending
from .maps.url import dataset_name
from .records import replace
from .translate.consolidated import expand_consolidated, expand_v3_consolidated
from .translate.conventions import (
    ARRAYS_ALT,
    GROUP_KEYS,
    GROUPS_ALT,
    RESERVED_NODE_NAMES,
    V1_ARRAY_NAMES,
    V1_ATTR_NAMES,
    V1_GROUP,
    V1_SUPERBLOCK,
    ZARR_JSON,
    ZARRAY,
    ZATTRS,
    ZGROUP,
    ZMETADATA,
)
from .translate.detect import FormatInfo, detect_format, nczarr_key
from .translate.jsontext import parse_node_object
from .translate.model import Dataset
from .translate.stale import STALE_CONSOLIDATED, stale_message

if TYPE_CHECKING:
    from .translate.read_zarr3 import ChunkKeys

__all__ = [
    "FormatInfo",
    "MAX_METADATA_SIZE",
    "load_metadata",
    "loaded_metadata",
    "detect",
    "detect_loaded",
    "read",
    "read_with_chunk_keys",
    "STALE_CONSOLIDATED",
]

#: Largest metadata object (bytes) :func:`load_metadata` reads unless told otherwise;
#: a bigger one (a zip bomb, a runaway ``.zattrs``) is a MetadataError naming the key.
MAX_METADATA_SIZE = 64 * 2**20


def _fetch(zmap: ZMap, keys: Iterable[str], limit: int) -> dict[str, bytes]:
    """Metadata objects, none read (or inflated) beyond ``limit`` bytes; an object
    whose declared size (a zip member's) passes ``limit`` is refused unread."""
    return _fetch_level(zmap, keys, limit)[1]


def _fetch_level(
    zmap: ZMap, keys: Iterable[str], limit: int, likely: tuple[str, ...] | None = None
) -> tuple[list[str] | None, dict[str, bytes]]:
    """:func:`_fetch`; with ``likely``, ``keys`` are names at the root, read with
    :meth:`~nczarr.maps.base.ZMap.search_reading` (which may give the root's listing)."""
    keys = list(keys)
    for key in keys:
        declared = zmap.declared_size(key)
        if declared is not None and declared > limit:
            raise MetadataError(
                f"{zmap.url}: {key!r} declares {declared} bytes, more than the metadata size "
                f"limit of {limit} bytes (max_metadata_size)"
            )
    names = None
    if likely is None:
        raw = zmap.getitems_capped(keys, limit + 1)
    else:
        names, raw = zmap.search_reading("", keys, limit + 1, likely=likely)
    for key, data in raw.items():
        if len(data) > limit:
            raise MetadataError(
                f"{zmap.url}: {key!r} is larger than the metadata size limit of {limit} "
                "bytes (max_metadata_size)"
            )
    return names, raw


_ROOT_OBJECTS = (
    ZMETADATA,
    ZARR_JSON,
    ZGROUP,
    ZATTRS,
    ZARRAY,
    V1_SUPERBLOCK,
    V1_GROUP,
    *V1_ATTR_NAMES,
)
#: Root objects most stores hold (NCZarr V2, Zarr v3, Zarr v2 unconsolidated): a map
#: that lists the root reads them while it lists (one round trip for most stores).
_LIKELY_ROOT = (ZARR_JSON, ZGROUP, ZATTRS)
_GROUP_OBJECTS = (ZGROUP, ZATTRS)
_ARRAY_OBJECTS = (ZARRAY, ZATTRS)
_UNKNOWN_OBJECTS = (ZGROUP, ZARRAY, ZATTRS)
_V1_GROUP_OBJECTS = (V1_GROUP, *V1_ATTR_NAMES)
_V1_ARRAY_OBJECTS = (*V1_ARRAY_NAMES, *V1_ATTR_NAMES)


def _parse_into(
    meta: dict[str, Any], raw: dict[str, bytes], url: str, warnings: list[str] | None
) -> None:
    for key, data in raw.items():
        try:
            meta[key] = parse_node_object(data, key=key, warnings=warnings)
        except MetadataError as exc:
            raise MetadataError(f"{url}: {exc}") from None


def _listed_children(meta: dict[str, Any], prefix: str, v1: bool) -> list[tuple[str, str]] | None:
    """``[(name, kind)]`` from the node's NCZarr group list, or None if it has none."""
    content = meta.get(join_key(prefix, V1_GROUP)) if v1 else None
    if not isinstance(content, dict):
        try:
            content, _ = nczarr_key(meta, prefix, GROUP_KEYS, ZGROUP)
        except MetadataError:
            return None
    if not isinstance(content, dict):
        return None
    out: list[tuple[str, str]] = []
    for alts, kind in ((ARRAYS_ALT, "array"), ((*GROUPS_ALT, "subgroups"), "group")):
        names = next((content[a] for a in alts if a in content), [])
        if not isinstance(names, list) or not all(is_node_name(n) for n in names):
            return None
        out.extend((n, kind) for n in names)
    return out


class _Crawl:
    """What every step of one :func:`load_metadata` walk reads with: the map, its URL,
    the lenient-warnings list, the size limit and the root's listing (None: not
    listed, or a journal's keys not in it)."""

    __slots__ = ("limit", "root", "seen", "url", "warnings", "zmap")

    def __init__(
        self,
        zmap: ZMap,
        url: str,
        warnings: list[str] | None,
        limit: int,
        root: list[str] | None,
        seen: dict[str, bytes] | None = None,
    ) -> None:
        self.zmap, self.url, self.warnings = zmap, url, warnings
        self.limit, self.root, self.seen = limit, root, seen

    def search(self, prefix: str) -> list[str]:
        """``zmap.search(prefix)``; the root's listing if the root was listed."""
        root = self.root
        return root if root is not None and prefix == "" else self.zmap.search(prefix)

    def read_into(self, meta: dict[str, Any], keys: Iterable[str]) -> None:
        """Read the metadata objects ``keys`` (those that exist) and parse them into
        ``meta``."""
        raw = _fetch(self.zmap, keys, self.limit)
        if self.seen is not None:
            self.seen.update(raw)
        _parse_into(meta, raw, self.url, self.warnings)


def _checked_consolidated(crawl: _Crawl, meta: dict[str, Any]) -> dict[str, Any]:
    """The stored metadata objects of a store with ``.zmetadata``, which is checked.

    ``.zmetadata`` is a copy that goes stale when an array is added or changed after
    it was written (xarray's ``append_dim``, zarr-python writes). The objects
    themselves are the truth: they are listed and read, and where ``.zmetadata``
    disagrees a warning names the arrays and groups (xarray and zarr-python opening
    the store with consolidated metadata see only what ``.zmetadata`` says). A store
    holding nothing but ``.zmetadata`` is read from it.
    """
    consolidated = dict(meta)
    expand_consolidated(consolidated, crawl.url)
    listed = {k: v for k, v in meta.items() if k != ZMETADATA}
    if ZARRAY not in listed:
        _walk(crawl, listed)
    if not listed:
        return consolidated
    message = stale_message(crawl.url, consolidated, listed)
    if message is not None:
        if crawl.warnings is None:
            warn_all([message])
        else:
            crawl.warnings.append(message)
    listed[ZMETADATA] = meta[ZMETADATA]
    return listed


#: Names in a group's listing that are its metadata objects, not its children. Any
#: other name is a child to look into, a leading "." included: zarr-python writes
#: arrays named ".hidden" (they were left out of a walked store without a word).
_NOT_NODES = frozenset({*RESERVED_NODE_NAMES[2], ZARR_JSON})


def _load_v3(crawl: _Crawl, meta: dict[str, Any]) -> None:
    root = meta[ZARR_JSON]
    if not isinstance(root, dict):
        raise MetadataError(f"{crawl.url}: '{ZARR_JSON}' must hold a JSON object")
    if root.get("node_type") != "group" or expand_v3_consolidated(meta, crawl.url):
        return
    pending = [""]
    while pending:
        candidates = []
        for prefix in pending:
            candidates.extend(
                join_key(prefix, name) for name in crawl.search(prefix) if name not in _NOT_NODES
            )
        crawl.read_into(meta, (join_key(c, ZARR_JSON) for c in candidates))
        # groups, and nodes whose document is no Zarr v3 node (read_zarr3 keeps the
        # nodes below such a one, a group's: one odd node never fails a whole store)
        pending = [c for c in candidates if _may_hold_nodes(meta, join_key(c, ZARR_JSON))]


def _may_hold_nodes(meta: Mapping[str, Any], key: str) -> bool:
    """Whether the node of the ``zarr.json`` at ``key`` may have nodes below it: a
    group, or a document read that is no array's."""
    if key not in meta:
        return False
    doc = meta[key]
    return not (isinstance(doc, dict) and doc.get("node_type") == "array")


def load_metadata(
    zmap: ZMap,
    *,
    warnings: list[str] | None = None,
    max_metadata_size: int | None = None,
    seen: dict[str, bytes] | None = None,
) -> dict[str, Any]:
    """Parsed JSON of every metadata object of a store, keyed by normalized map key.

    Keys look like ``".zgroup"``, ``"g/v/.zarray"``, ``".nczarr"``. When
    ``.zmetadata`` exists its entries are used (and ``".zmetadata"`` is kept in the
    result, which is how :func:`detect` knows). Otherwise the tree is walked one
    level at a time: NCZarr group lists say which children to fetch (V1
    ``.nczgroup``, ``_nczarr_group`` in ``.zattrs`` or ``.zgroup``); groups without
    one are listed with ``zmap.search``. Each level's objects are fetched with one
    ``zmap.getitems`` call (concurrent on network maps).

    No object is read beyond ``max_metadata_size`` bytes (default
    :data:`MAX_METADATA_SIZE`, looked up at call time).

    With a ``warnings`` list, an object that is not UTF-8 is read as netcdf-c reads
    it (the undecodable bytes kept, see :func:`~nczarr.translate.attrs.parse_json`)
    and a warning naming its key is appended; without one it is an error.

    With a ``seen`` dict, every object read is put there as read (at most the limit
    plus one byte: what ``getitems_capped`` of that size gives), so a caller that
    compares stores by their bytes need not read them again.

    Raises
    ------
    MetadataError
        An object is not valid JSON (the message names the URL and the key).
    """
    url = zmap.url
    meta: dict[str, Any] = {}
    limit = MAX_METADATA_SIZE if max_metadata_size is None else max_metadata_size
    # an append killed among its metadata writes: read the metadata it was writing
    names, raw = _fetch_level(zmap, (*_ROOT_OBJECTS, JOURNAL_KEY), limit, _LIKELY_ROOT)
    if seen is not None:
        seen.update(raw)
    source = zmap
    zmap, raw = with_pending(zmap, raw)
    _parse_into(meta, raw, url, warnings)
    # a journal's keys are not in the root's listing
    crawl = _Crawl(zmap, url, warnings, limit, names if zmap is source else None, seen)
    if ZMETADATA in meta and ZARR_JSON not in meta:
        return _checked_consolidated(crawl, meta)
    if ZARR_JSON in meta:
        _load_v3(crawl, meta)
        return meta
    if ZARRAY in meta:
        return meta
    if not meta:
        raise MetadataError(_not_a_store(zmap))
    _walk(crawl, meta)
    return meta


def _walk(crawl: _Crawl, meta: dict[str, Any]) -> None:
    """Add every metadata object below the root objects already in ``meta``."""
    v1 = V1_SUPERBLOCK in meta
    pending = [""]
    while pending:
        wanted: list[str] = []
        kinds: dict[str, str] = {}
        for prefix in pending:
            listed = _listed_children(meta, prefix, v1)
            if listed is None:
                found = crawl.search(prefix)
                listed = [(n, "unknown") for n in found if n not in _NOT_NODES]
            for name, kind in listed:
                child = join_key(prefix, name)
                kinds[child] = kind
                names: Iterable[str] = {
                    "array": _ARRAY_OBJECTS,
                    "group": _GROUP_OBJECTS,
                    "unknown": _UNKNOWN_OBJECTS,
                }[kind]
                if v1:
                    names = (*names, *(_V1_ARRAY_OBJECTS if kind != "group" else ()))
                    names = (*names, *(_V1_GROUP_OBJECTS if kind != "array" else ()))
                wanted.extend(join_key(child, n) for n in dict.fromkeys(names))
        crawl.read_into(meta, wanted)
        pending = []
        for child, kind in kinds.items():
            if kind == "array" or join_key(child, ZARRAY) in meta:
                continue
            if kind == "group" or any(
                join_key(child, n) in meta for n in (ZGROUP, ZATTRS, V1_GROUP)
            ):
                pending.append(child)


def loaded_metadata(
    zmap: ZMap, seen: dict[str, bytes] | None = None
) -> tuple[dict[str, Any], list[str]] | None:
    """``(objects, lenient warnings)`` of :func:`load_metadata`, as
    :func:`read_with_chunk_keys` takes them; None for a netCDF file or metadata that
    cannot be loaded (the reader then reports why). ``seen``: as for
    :func:`load_metadata`, the bytes of every object read."""
    lenient: list[str] = []
    if zmap.file_format() is not None:
        return None
    try:
        return load_metadata(zmap, warnings=lenient, seen=seen), lenient
    except MetadataError:
        return None


def _not_a_store(zmap: ZMap) -> str:
    """The error for a location with no Zarr metadata at its root, naming stores found
    one level below it (the usual mistake: the parent directory of a store)."""
    message = (
        f"{zmap.url}: not a Zarr store: no .zgroup, .zarray, .zattrs, .zmetadata or "
        "zarr.json at its root"
    )
    children = [n for n in zmap.search("") if not n.startswith(".")][:200]
    found = zmap.getitems(join_key(n, obj) for n in children for obj in (ZGROUP, ZARRAY, ZARR_JSON))
    stores = sorted({key.split("/", 1)[0] for key in found})
    if stores:
        shown = ", ".join(repr(n) for n in stores[:5])
        message += f"; stores one level below it: {shown}"
    return message


def _with_url(exc: MetadataError, url: str) -> MetadataError:
    text = str(exc)
    if url in text:
        return exc
    return type(exc)(f"{url}: {text}")


def _detect(
    zmap: ZMap, warnings: list[str] | None = None, meta: dict[str, Any] | None = None
) -> tuple[dict[str, Any], FormatInfo]:
    """The store's metadata (``meta`` if already loaded) and what format it is."""
    own = zmap.file_format()
    if own is not None:  # a .nc file: its own reader (nczarr.ncfile)
        return {}, own
    if meta is None:
        meta = load_metadata(zmap, warnings=warnings)
    try:
        return meta, detect_format(meta)
    except MetadataError as exc:
        raise _with_url(exc, zmap.url) from None


def detect_loaded(zmap: ZMap, meta: dict[str, Any]) -> FormatInfo:
    """:func:`detect` of ``zmap`` from its metadata already loaded (``meta``), not read
    again; an error names the store as :func:`detect`'s does."""
    return _detect(zmap, meta=meta)[1]


def detect(
    src: str | os.PathLike[str] | ZMap, *, storage_options: Mapping[str, Any] | None = None
) -> FormatInfo:
    """What a store is: format, NCZarr generation, Zarr version, provenance.

    Parameters
    ----------
    src : str, path-like or ZMap
        A netCDF-style URL or path (opened read-only with
        :func:`nczarr.maps.open.open_map`), or an open map (left open).
    storage_options : mapping, optional
        Options for opening ``src`` from a URL (``anon=True``, ``endpoint_url``, ...;
        see :func:`nczarr.open_map`).

    Raises
    ------
    MetadataError
        Not a Zarr store at all (empty directory, text file, a zip of something
        else), or metadata that is not valid JSON; the message names the URL.
    """
    zmap, owned = open_source(src, storage_options)
    try:
        return _detect(zmap, [])[1]
    finally:
        if owned:
            zmap.close()


def read(
    src: str | os.PathLike[str] | ZMap, *, storage_options: Mapping[str, Any] | None = None
) -> Dataset:
    """Read any NCZarr, Zarr v2 or Zarr v3 store's metadata into the netCDF-4 model.

    Parameters
    ----------
    src : str, path-like or ZMap
        As for :func:`detect`.
    storage_options : mapping, optional
        As for :func:`detect`.

    Returns
    -------
    Dataset
        ``Dataset.layout`` is the detected layout; ``Dataset.warnings`` lists what
        was skipped, renamed, guessed or decoded leniently (unsupported dtypes,
        unknown codecs, fallbacks, Zarr v3 codecs without a byte-identical Zarr v2
        form, metadata that is not UTF-8); each is also announced as an
        :class:`~nczarr.errors.NCZarrWarning`.

    Raises
    ------
    MetadataError, DimensionConflictError
        Malformed metadata (the message names the URL, the key and the problem).
    """
    dataset = read_with_chunk_keys(src, storage_options=storage_options)[0]
    warn_all(dataset.warnings)
    return dataset


def read_with_chunk_keys(
    src: str | os.PathLike[str] | ZMap,
    *,
    storage_options: Mapping[str, Any] | None = None,
    metadata: tuple[dict[str, Any], Sequence[str]] | None = None,
) -> tuple[Dataset, dict[str, ChunkKeys]]:
    """:func:`read`, plus how chunk keys of Zarr v3 arrays map to Zarr v2 keys.

    ``metadata``: ``(objects, warnings)`` that :func:`load_metadata` already gave for
    ``src`` (with a ``warnings`` list), so a caller that looked at them first does not
    read them twice.

    Returns
    -------
    (Dataset, dict)
        The dict maps the key prefix of every Zarr v3 array (``"g/v"``) to its
        :class:`~nczarr.translate.read_zarr3.ChunkKeys`; it is empty for Zarr v2
        and NCZarr stores, whose chunk keys are already v2 keys.
    """
    zmap, owned = open_source(src, storage_options)
    try:
        lenient = [] if metadata is None else list(metadata[1])
        meta, info = _detect(zmap, lenient, None if metadata is None else metadata[0])
        keys: dict[str, ChunkKeys] = {}
        try:
            if info.format == "netcdf":
                dataset = zmap.dataset  # type: ignore[attr-defined]
            elif info.zarr_format == 3:
                from .translate.read_zarr3 import chunk_key_encodings, read_zarr3

                dataset = read_zarr3(meta, info, name=dataset_name(zmap.url))
                keys = chunk_key_encodings(meta)
            elif info.format == "nczarr":
                from .translate.read_nczarr import read_nczarr

                dataset = read_nczarr(meta, info)
            else:
                from .translate.read_zarr2 import read_zarr2

                dataset = read_zarr2(meta, info, name=dataset_name(zmap.url))
        except MetadataError as exc:
            raise _with_url(exc, zmap.url) from None
        if lenient:
            dataset = replace(dataset, warnings=(*lenient, *dataset.warnings))
        return dataset, keys
    finally:
        if owned:
            zmap.close()
