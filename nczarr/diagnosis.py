"""``nczarr.check(url)``: what each reader (netcdf-c 4.8/4.9/4.10+, zarr-python 3,
xarray, GDAL 3.12+) would get wrong in a store, and the nczarr command that fixes it.

The verdict (``CheckReport.ok``, the CLI's exit status) follows the readers people run
today (:data:`~nczarr.translate.compat.CURRENT_READERS`: netcdf-c 4.10+, zarr-python 3,
xarray, GDAL; for a Zarr v3 store, which no released netcdf-c reads, the v3 readers
zarr-python, xarray and GDAL); what the other readers would get wrong is reported as
notes, unless ``readers=`` selects them.

The store's metadata objects are read as they are stored: consolidated metadata is
compared with them rather than trusted (a stale ``.zmetadata`` is one of the findings),
and an object whose JSON document is followed by stray bytes (netcdf-c's
non-truncating rewrite) is read up to the end of its document and reported. The rules
themselves are pure and live in :mod:`nczarr.translate.compat`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from .errors import InvalidModeError, MetadataError, ReadOnlyError
from .load import MAX_METADATA_SIZE, load_metadata
from .maps.base import ZMap
from .maps.pending import JOURNAL_KEY, decode_append_journal
from .records import field, record
from .translate.attrs import parse_json
from .translate.compat import CURRENT_READERS, NETCDF_C, READERS, Finding, findings
from .translate.compat_pending import (
    PendingAppend,
    attrs_keys,
    pending_append,
    pending_findings,
    superseded,
)
from .translate.conventions import ZARR_JSON, ZARR_METADATA_NAMES, ZMETADATA
from .translate.detect import FormatInfo, detect_format

__all__ = ["CheckReport", "check", "default_readers", "select_readers"]

_METADATA_NAMES = frozenset({*ZARR_METADATA_NAMES, ZARR_JSON})


@record
class CheckReport:
    """What :func:`check` found.

    Attributes
    ----------
    url : str
        The store checked.
    info : FormatInfo
        Its detected format and layout.
    findings : tuple[Finding, ...]
        One entry per reader and problem (empty when every reader gets it right).
    readers : tuple[str, ...]
        The readers the verdict follows (default: the ones people run today); the
        findings of the others are :attr:`notes`.
    pending : PendingAppend or None
        The append the store's journal says was interrupted while writing its
        metadata (what each reader sees of it is among the findings), or None.
    """

    url: str
    info: FormatInfo
    findings: tuple[Finding, ...] = field(default=())
    readers: tuple[str, ...] = CURRENT_READERS
    pending: PendingAppend | None = None

    @property
    def ok(self) -> bool:
        """True when every selected reader opens the store and reads what its producer wrote."""
        return not any(f.reader in self.readers for f in self.findings)

    @property
    def notes(self) -> list[Finding]:
        """The findings of readers the verdict does not follow (older netcdf-c releases)."""
        return [f for f in self.findings if f.reader not in self.readers]

    def for_reader(self, reader: str) -> list[Finding]:
        """The findings of one reader (one of :data:`nczarr.translate.compat.READERS`)."""
        return [f for f in self.findings if f.reader == reader]

    def summary(self) -> str:
        """The report as text: one block per reader, each finding with its fix."""
        shown = "netCDF file" if self.info.format == "netcdf" else f"Zarr v{self.info.zarr_format}"
        lines = [f"{self.url}: {self.info.layout} ({shown})"]
        if self.pending is not None:
            lines.append(f"  pending append: {self.pending.describe()}")
            lines.append(f"    fix: {self.pending.fix.replace('URL', self.url)}")
        for reader in READERS:
            found = self.for_reader(reader)
            note = "" if reader in self.readers else " (note: not judged)"
            if not found:
                lines.append(f"  {reader}: ok{note}")
                continue
            lines.append(f"  {reader}: {len(found)} problem(s){note}")
            for f in found:
                lines.append(f"    {f.severity}: {f.where}: {f.problem}")
                if f.fix:
                    lines.append(f"      fix: {f.fix.replace('URL', self.url)}")
        return "\n".join(lines)


#: Hidden from the crawl: consolidated metadata (every object is read as stored) and an
#: append journal (nczarr's readers would read its metadata instead of the stored).
_HIDDEN = frozenset({ZMETADATA, JOURNAL_KEY})


class _AsStored(ZMap):
    """A read-only view of a map for checking: metadata objects with stray bytes after
    their JSON document are served without them (and counted), and ``.zmetadata`` and
    an append journal are hidden so that the crawl reads every object as stored."""

    def __init__(self, source: ZMap) -> None:
        super().__init__("r")
        self._source = source
        self.trailing: dict[str, int] = {}
        #: Metadata objects that are not UTF-8 (read leniently, as netcdf-c does).
        self.not_utf8: set[str] = set()

    def _load(self, key: str) -> bytes:
        if key in _HIDDEN:
            raise KeyError(key)
        return self._trimmed(key, self._source[key])

    def declared_size(self, key: str) -> int | None:
        """The source's declared size (hidden ``.zmetadata`` and journal: None)."""
        return None if key in _HIDDEN else self._source.declared_size(key)

    def getitems_capped(self, keys: Iterable[str], cap: int) -> dict[str, bytes]:
        """The source's capped reads (the metadata size limit holds here too), trimmed."""
        raw = self._source.getitems_capped([k for k in keys if k not in _HIDDEN], cap)
        return {key: self._trimmed(key, data) for key, data in raw.items()}

    def _trimmed(self, key: str, data: bytes) -> bytes:
        if key.rpartition("/")[2] not in _METADATA_NAMES:
            return data
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            self.not_utf8.add(key)
        document, extra = _split_trailing(data)
        if extra:
            self.trailing[key] = extra
        return document

    def _store(self, key: str, value: bytes) -> None:
        raise ReadOnlyError(f"{self.url}: checking never writes")

    def _remove(self, key: str) -> None:
        raise ReadOnlyError(f"{self.url}: checking never writes")

    def _list(self, prefix: str) -> Iterator[str]:
        return (k for k in self._source.keys_below(prefix) if k not in _HIDDEN)

    def _search(self, prefix: str) -> Iterable[str]:
        return [n for n in self._source.search(prefix) if prefix or n not in _HIDDEN]

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return self._source.url, {}


def _split_trailing(data: bytes) -> tuple[bytes, int]:
    """``data`` up to the end of its first JSON document, and how many bytes followed
    it (0 when the object parses as it is, or does not parse at all)."""
    try:
        parse_json(data)
        return data, 0
    except MetadataError:
        pass
    try:
        text = data.decode("utf-8")
        _, end = json.JSONDecoder().raw_decode(text.lstrip())
    except (UnicodeDecodeError, ValueError, RecursionError):
        return data, 0  # not a document followed by bytes: parse_json names what is wrong
    end += len(text) - len(text.lstrip())
    rest = text[end:]
    if not rest.strip():
        return data, 0
    return text[:end].encode("utf-8"), len(rest.encode("utf-8"))


def select_readers(readers: Iterable[str] | None) -> tuple[str, ...]:
    """The readers a verdict follows: ``readers`` in report order (each one of
    :data:`~nczarr.translate.compat.READERS`, or a prefix naming one, such as
    ``"netcdf-c 4.9"``, ``netcdf-c-4.8`` or ``"gdal"``); ``()`` when None (then
    :func:`default_readers` decides, by the store's format)."""
    if readers is None:
        return ()
    if isinstance(readers, str):
        readers = [readers]
    chosen = set()
    for name in readers:
        key = _squeeze(name)
        matches = [r for r in READERS if _squeeze(r).startswith(key)]
        if not key or len(matches) != 1:
            raise InvalidModeError(f"unknown reader {name!r}: expected one of {', '.join(READERS)}")
        chosen.add(matches[0])
    return tuple(r for r in READERS if r in chosen)


def default_readers(info: FormatInfo) -> tuple[str, ...]:
    """The readers a verdict follows when none are selected: the current ones, but
    for Zarr v3 only those that read v3 at all (netcdf-c's refusal is a note)."""
    if info.zarr_format == 3:
        return tuple(r for r in CURRENT_READERS if r not in NETCDF_C)
    return CURRENT_READERS


def _squeeze(name: str) -> str:
    """A reader name compared without case, spaces or dashes (``netcdf-c-4.9``)."""
    return "".join(c for c in name.lower() if c not in " -_")


def _netcdf_file_findings() -> tuple[Finding, ...]:
    """A netCDF file is no Zarr store: what the Zarr readers do with it."""
    from .translate.compat import XARRAY, ZARR_PYTHON

    return (
        Finding(
            ZARR_PYTHON,
            "refuses",
            "/",
            "a netCDF file, not a Zarr store",
            "nczarr convert URL OUT --mode zarr",
        ),
        Finding(
            XARRAY,
            "refuses",
            "/",
            "a netCDF file: xarray's zarr engine does not open it (its netCDF engines do)",
            "nczarr convert URL OUT --mode zarr",
        ),
    )


def _pending(zmap: ZMap) -> PendingAppend | None:
    """The append ``zmap``'s journal says was interrupted, compared with the objects
    stored (None without an append journal: a convert's journal names no metadata)."""
    raw = zmap.getitems_capped([JOURNAL_KEY], MAX_METADATA_SIZE + 1).get(JOURNAL_KEY)
    decoded = None if raw is None else decode_append_journal(raw)
    if decoded is None:
        return None
    metadata, doc = decoded
    keys = {*(k for k, _ in metadata), *attrs_keys(metadata)}
    stored = zmap.getitems_capped(sorted(keys), MAX_METADATA_SIZE + 1)
    return pending_append(JOURNAL_KEY, metadata, doc, stored)


def check(
    src: str | os.PathLike[str] | ZMap,
    *,
    storage_options: dict[str, Any] | None = None,
    readers: Iterable[str] | None = None,
) -> CheckReport:
    """Tell, per reader, whether it opens ``src`` and what it would misread or refuse.

    Parameters
    ----------
    src
        A URL, path or open map (any layout nczarr reads).
    storage_options
        Passed to :func:`nczarr.open_map` when ``src`` is a URL (credentials,
        ``endpoint_url``, ``anon`` ...).
    readers
        The readers the verdict follows, among
        :data:`~nczarr.translate.compat.READERS` (default
        :func:`default_readers`: the current readers, v3 readers for Zarr v3); every
        reader's findings are reported either way.

    Returns
    -------
    CheckReport
        ``report.ok`` is True when every selected reader gets the store right;
        otherwise ``report.findings`` says who gets what wrong and how to fix it.

    Raises
    ------
    MetadataError
        ``src`` is not a Zarr store at all, or a root or group metadata object is not
        JSON (one array's malformed metadata is a finding for every reader).
    InvalidModeError
        ``readers`` names a reader nczarr does not know.
    """
    judged = select_readers(readers)
    if isinstance(src, ZMap):
        zmap, owned = src, False
    else:
        from .maps.open import open_map

        zmap, owned = open_map(os.fspath(src), mode="r", **(storage_options or {})), True
    try:
        own = zmap.file_format()
        if own is not None:  # a .nc file: netcdf-c reads it, Zarr readers do not
            return CheckReport(zmap.url, own, _netcdf_file_findings())
        stored = _AsStored(zmap)
        meta = load_metadata(stored, warnings=[])  # not UTF-8: a finding, not an error
        consolidated = None
        declared = zmap.declared_size(ZMETADATA)
        if declared is not None and declared > MAX_METADATA_SIZE:
            raise MetadataError(
                f"{zmap.url}: {ZMETADATA} declares {declared} bytes, more than {MAX_METADATA_SIZE}"
            )
        raw = zmap.getitems_capped([ZMETADATA], MAX_METADATA_SIZE + 1).get(ZMETADATA)
        if raw is not None and len(raw) > MAX_METADATA_SIZE:
            raise MetadataError(f"{zmap.url}: {ZMETADATA} is larger than {MAX_METADATA_SIZE} bytes")
        if raw is not None:
            document, extra = _split_trailing(raw)
            if extra:
                stored.trailing[ZMETADATA] = extra
            consolidated = parse_json(document, key=ZMETADATA)
        info = detect_format(meta)
        found = findings(
            meta,
            info,
            consolidated=consolidated,
            trailing=stored.trailing,
            not_utf8=stored.not_utf8,
        )
        pending = _pending(zmap)
        if pending is not None:
            found = [*superseded(found, pending), *pending_findings(pending)]
        readers = judged or default_readers(info)
        return CheckReport(zmap.url, info, tuple(found), readers, pending)
    finally:
        if owned:
            zmap.close()
