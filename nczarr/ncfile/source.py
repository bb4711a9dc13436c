"""``NetCDFFileMap``: a netCDF file (netCDF-4/HDF5 or netCDF-3) as a read-only zmap of chunks.

The map holds no metadata objects: it carries the file read into the netCDF-4 model
(:attr:`NetCDFFileMap.dataset`), which :mod:`nczarr.load` hands to the writers like
any other reader's model. Its keys are the Zarr chunk keys of every variable
(``"g/v/0.1"``), each served as the byte range of the file that holds that chunk
(:mod:`nczarr.ncfile.layout`), so a convert copies the file's compressed chunks
byte for byte. The few chunks that cannot be copied verbatim (see
:mod:`nczarr.ncfile.hdf5`) are encoded on the fly, and :attr:`reencoded` names
their variables.

Local files are read with ``os.pread``-style reads of one open file; any other URL
through fsspec (``s3://bucket/x.nc``): the header / HDF5 metadata through a
block-cached file object (a few ranged requests), each chunk with one ranged GET,
the many chunks of one :meth:`getitems` concurrently. The file is never downloaded
whole. Pickling reopens the file (a worker or dask task opens its own handle).
:meth:`NetCDFFileMap.park` closes the file between uses, keeping what was read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import MetadataError, ReadOnlyError, StorageError, StorageNotFoundError
from ..keys import normalize_key
from ..maps import kernelcopy
from ..maps.base import NOT_SUPPORTED, NotSupportedType, ZMap
from ..maps.open import probe_local
from ..maps.url import NCZarrURL
from ..translate.detect import FormatInfo
from ..translate.model import Dataset
from .handles import LocalFile, RemoteFile
from .layout import SourceArray

__all__ = [
    "CDF_MAGICS",
    "hdf5_at_start",
    "local_path",
    "HDF5_MAGIC",
    "NETCDF_SUFFIXES",
    "NetCDFFileMap",
    "is_netcdf_header",
    "has_netcdf_suffix",
    "open_file_source",
]

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
CDF_MAGICS = (b"CDF\x01", b"CDF\x02", b"CDF\x05")
#: Suffixes that make a remote URL a netCDF file rather than a store.
NETCDF_SUFFIXES = (".nc", ".nc3", ".nc4", ".netcdf", ".h5", ".hdf5", ".he5", ".cdf")
#: First read of a netCDF-3 header (grown until the header fits).
HEADER_GUESS = 32 * 1024


def is_netcdf_header(head: bytes) -> bool:
    """Whether the first 8 bytes of a file are netCDF-3 or HDF5 magic."""
    return head[:4] in CDF_MAGICS or head[:8] == HDF5_MAGIC


def has_netcdf_suffix(path: str) -> bool:
    """Whether a path or URL ends with a netCDF file suffix (before any ``#``)."""
    return path.split("#", 1)[0].lower().rstrip("/").endswith(NETCDF_SUFFIXES)


class NetCDFFileMap(ZMap):
    """A netCDF file as a read-only zmap of Zarr chunks, plus its model.

    Parameters
    ----------
    location
        A local path, a ``file://`` URL or any fsspec URL (``s3://bucket/x.nc``).
    mode
        ``"r"`` only.
    **storage_options
        Passed to the fsspec filesystem of a remote URL.

    Raises
    ------
    MetadataError
        Not a netCDF file, or a corrupt or truncated one (the message names the file
        and, where it can, the object).
    """

    def __init__(self, location: str, mode: str = "r", **storage_options: Any) -> None:
        super().__init__(mode)
        if mode != "r":
            raise ReadOnlyError(f"{location}: a netCDF file source opens read-only (mode 'r')")
        self._location = str(location)
        self._options = dict(storage_options)
        local = local_path(self._location)
        self._io: LocalFile | RemoteFile = (
            LocalFile(local) if local is not None else RemoteFile(self._location, self._options)
        )
        self._hdf5: Any = None
        try:
            self._read_model()
        except BaseException:
            self._io.close()
            raise
        self._prefixes = sorted(self._arrays)

    def _read_model(self) -> None:
        what = self.url
        head = self._io.head(8) if self._io.size else b""
        if head[:4] in CDF_MAGICS:
            from .cdf import HeaderTruncated, parse_header
            from .classic import read_classic

            size = min(HEADER_GUESS, self._io.size)
            while True:
                try:
                    header = parse_header(self._io.head(size), what)
                    break
                except HeaderTruncated as exc:
                    if size >= self._io.size:
                        raise MetadataError(
                            f"{what}: truncated netCDF-3 file: the header needs more than "
                            f"the file's {self._io.size} bytes"
                        ) from None
                    size = min(exc.needed, self._io.size)
            self._dataset, self._arrays = read_classic(header, self._io.size, what)
            self._reencoded: dict[str, str] = {}
            self._info_layout = self._dataset.layout
            return
        if not hdf5_at_start(head, self._io):
            raise MetadataError(
                f"{what}: not a netCDF file (neither CDF nor HDF5 magic in its first bytes)"
            )
        self._use_hdf5(self._hdf5_reader(what))

    def _hdf5_reader(self, what: str) -> Any:
        """The reader of this netCDF-4 file (a subclass may defer its chunk index)."""
        from .hdf5 import HDF5Reader

        io = self._io
        return HDF5Reader(io.fileobj(), what, io.read_metadata, io.size, io.fileobj)

    def _use_hdf5(self, reader: Any) -> None:
        """Take the model, arrays and re-encoding notes of ``reader``'s file."""
        self._hdf5 = reader
        self._dataset = reader.dataset
        self._arrays = reader.arrays
        self._reencoded = dict(reader.reencoded)
        if self._reencoded:
            from ..records import replace
            from ..translate.select import reencoded_note

            messages = tuple(reencoded_note("/" + p, r) for p, r in self._reencoded.items())

            self._dataset = replace(self._dataset, warnings=(*self._dataset.warnings, *messages))

    # ---------------------------------------------------------------- what it is
    @property
    def dataset(self) -> Dataset:
        """The file in the netCDF-4 model (``layout``: ``"netcdf4"``,
        ``"netcdf3-classic"``, ``"netcdf3-64bit-offset"`` or ``"netcdf3-cdf5"``)."""
        return self._dataset

    @property
    def reencoded(self) -> dict[str, str]:
        """Key prefixes of the variables some of whose chunks are re-encoded, and why."""
        return dict(self._reencoded)

    def reencodes(self, key: str) -> bool:
        """Whether chunk ``key`` is encoded from its values (its variable is in
        :attr:`reencoded` and its stored bytes cannot be carried), not a byte range of
        the file. Compact data, served from values but as the bytes HDF5 holds, is
        not."""
        found = self._split(normalize_key(key))
        if found is None:
            return False
        array, rest = found
        return array.reason is not None and array.chunks[rest].reencode

    @property
    def size(self) -> int:
        """The file's size in bytes."""
        return self._io.size

    def file_format(self) -> FormatInfo:
        """The file's format (see :meth:`ZMap.file_format`)."""
        return self.format_info()

    def format_info(self) -> FormatInfo:
        """What :func:`nczarr.detect` says of the file."""
        version = None
        if self._hdf5 is not None and self._hdf5.ncproperties:
            from ..translate.detect import netcdf_version

            version = netcdf_version({"_NCProperties": self._hdf5.ncproperties})
        return FormatInfo(
            format="netcdf",
            layout=self._dataset.layout,
            zarr_format=0,
            xarray=False,
            consolidated=False,
            netcdf_version=version,
            evidence=("HDF5 superblock",) if self._hdf5 is not None else ("CDF header",),
            written_by=f"netCDF {version}" if version else None,
        )

    # ---------------------------------------------------------------- chunks
    def _split(self, key: str) -> tuple[SourceArray, str] | None:
        prefix, _, rest = key.rpartition("/")
        array = self._arrays.get(prefix)
        if array is None or rest not in array.chunks:
            return None
        return array, rest

    def _read_chunk(self, array: SourceArray, rest: str) -> bytes:
        ref = array.chunks[rest]
        if ref.reencode:
            assert self._hdf5 is not None
            scalar = not self._dataset.find_variable("/" + array.path).shape
            coords = () if scalar else tuple(int(c) for c in rest.split("."))
            return self._hdf5.encode_chunk(array.path, coords)
        data = self._io.read(ref.offset, ref.length)
        return self._checked(data, ref, array, rest) + array.fill * (
            ref.pad // max(1, len(array.fill))
        )

    def _checked(self, data: bytes, ref: Any, array: SourceArray, rest: str) -> bytes:
        if len(data) != ref.length:
            raise StorageError(
                f"{self.url}: variable {'/' + array.path!r} chunk {rest!r}: the file ends "
                f"before byte {ref.offset + ref.length} (truncated?)"
            )
        return data

    def _load(self, key: str) -> bytes:
        found = self._split(key)
        if found is None:
            raise KeyError(key)
        return self._read_chunk(*found)

    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Many chunks: verbatim ones with one batch of ranged reads (concurrent on
        a remote file), re-encoded ones one by one."""
        wanted = list(keys)
        out: dict[str, bytes] = {}
        batch: list[tuple[str, SourceArray, str]] = []
        for key in wanted:
            found = self._split(normalize_key(key))
            if found is None:
                continue
            array, rest = found
            if array.chunks[rest].reencode:
                out[key] = self._read_chunk(array, rest)
            else:
                batch.append((key, array, rest))
        ranges = [(a.chunks[r].offset, a.chunks[r].length) for _, a, r in batch]
        for (key, array, rest), data in zip(batch, self._io.read_many(ranges), strict=True):
            ref = array.chunks[rest]
            out[key] = self._checked(data, ref, array, rest) + array.fill * (
                ref.pad // max(1, len(array.fill))
            )
        return {k: out[k] for k in wanted if k in out}

    def chunk_location(self, key: str) -> tuple[str, int, int] | None:
        """``(file, offset, length)`` of chunk ``key`` when it is a verbatim byte range
        of the file (a reader can range into it), else None: re-encoded chunks, and the
        last piece of a contiguous dataset (padded with fill to a whole chunk). See
        :func:`nczarr.conversion.references.chunk_location`.

        Raises KeyError when ``key`` is not a chunk.
        """
        found = self._split(normalize_key(key))
        if found is None:
            raise KeyError(key)
        array, rest = found
        ref = array.chunks[rest]
        if ref.reencode or ref.pad:
            return None
        local = local_path(self._location)
        return (local if local is not None else self._location), ref.offset, ref.length

    def chunk_locations(self, keys: Iterable[str]) -> list[tuple[str, int, int] | None]:
        """:meth:`chunk_location` of many listed (normalized) keys: one lookup of each
        key's array per run of keys of the same array, none of the per-key checks.

        Raises KeyError naming the first key that is not a chunk.
        """
        local = local_path(self._location)
        url = local if local is not None else self._location
        out: list[tuple[str, int, int] | None] = []
        append = out.append
        chunks: Mapping[str, Any] = {}
        current = None
        for key in keys:
            prefix, _, rest = key.rpartition("/")
            if prefix != current:
                array = self._arrays.get(prefix)
                chunks = array.chunks if array is not None else {}
                current = prefix
            ref = chunks.get(rest)
            if ref is None:
                raise KeyError(key)
            append(None if ref.reencode or ref.pad else (url, ref.offset, ref.length))
        return out

    def copy_threads(self, dst: ZMap, workers: int) -> int:
        """Threads for copying into ``dst`` (:meth:`ZMap.copy_threads`). A local file
        with no re-encoded chunk (those are encoded from their values, work threads can
        share) into a directory map whose writes are not customised
        (``dst.copy_support(dst) == "local"``: only such a map says so) is copied by the
        kernel, a byte range a chunk: in the calling thread if its chunks average under
        :data:`~nczarr.maps.kernelcopy.THREADED_COPY_BYTES`, else in at most one thread a
        core (:func:`~nczarr.maps.kernelcopy.copy_threads`). Anything else: ``workers``."""
        if not isinstance(self._io, LocalFile) or self._reencoded:
            return workers
        if dst.copy_support(dst) != "local":
            return workers
        chunks = sum(len(a.chunks) for a in self._arrays.values())
        return kernelcopy.threads_for(chunks, self._io.size, workers)

    def copy_chunk_to(self, dst: ZMap, key: str) -> int | NotSupportedType:
        """Write chunk ``key`` into ``dst`` and return its size: a kernel-side copy of
        its byte range of a local file (no Python ``bytes``) where ``dst`` can make one
        (:meth:`ZMap.copy_range`), else :data:`NOT_SUPPORTED` (the caller copies the
        bytes). Created in place, not atomically
        (see ``FileMap.copy_file``: a convert writes no metadata before every chunk).

        Raises
        ------
        StorageError
            The file ends inside the chunk (truncated since it was opened).
        """
        # A key as listed is found as it is; any other spelling is normalized (the
        # target normalizes and checks the key it writes, whichever it gets).
        prefix, _, rest = key.rpartition("/")
        array = self._arrays.get(prefix)
        ref = array.chunks.ref(rest) if array is not None else None
        if ref is None:
            found = self._split(normalize_key(key))
            if found is None:
                raise KeyError(key)
            array, rest = found
            ref = array.chunks[rest]
        if ref.reencode or not isinstance(self._io, LocalFile):
            return NOT_SUPPORTED  # bytes through Python: the caller copies
        tail = array.fill * (ref.pad // max(1, len(array.fill))) if ref.pad else b""
        written = dst.copy_range(self._io.fd, ref.offset, ref.length, key, tail=tail, atomic=False)
        if written is NOT_SUPPORTED:
            return NOT_SUPPORTED
        if written != ref.length + len(tail):
            raise StorageError(
                f"{self.url}: variable {'/' + array.path!r} chunk {rest!r}: the file ends "
                f"before byte {ref.offset + ref.length} (truncated?)"
            )
        return written

    def getsize(self, key: str) -> int:
        """A chunk's size without reading it (re-encoded chunks are encoded)."""
        found = self._split(normalize_key(key))
        if found is None:
            raise KeyError(key)
        array, rest = found
        ref = array.chunks[rest]
        return len(self._read_chunk(array, rest)) if ref.reencode else ref.size

    def _exists(self, key: str) -> bool:
        return self._split(key) is not None

    def _list(self, prefix: str) -> Iterator[str]:
        for path in self._prefixes:
            if prefix and not (path == prefix or path.startswith(prefix + "/")):
                if prefix.startswith(path + "/"):
                    rest = prefix[len(path) + 1 :]
                    if rest in self._arrays[path].chunks:
                        yield prefix
                continue
            for rest in self._arrays[path].chunks:
                yield f"{path}/{rest}"

    def _store(self, key: str, value: bytes) -> None:
        raise ReadOnlyError(
            f"cannot write {key!r} to {self.url}: a netCDF file source is read-only"
        )

    def _remove(self, key: str) -> None:
        raise ReadOnlyError(
            f"cannot delete {key!r} from {self.url}: a netCDF file source is read-only"
        )

    def _describe(self) -> tuple[str, dict[str, Any]]:
        from ..maps.credentials import public_options, redact

        return redact(self._location), public_options(self._options)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reopen, (self._location, self._options))

    def park(self) -> bool:
        """Close the file and the HDF5 library's handle on it, keeping what the open
        read (the model, every chunk index: a few KB); the next chunk read opens the file
        again (a plain open, no HDF5 metadata read) and refuses it, naming it, if it was
        replaced or rewritten meanwhile (:mod:`nczarr.ncfile.handles`). See
        :meth:`ZMap.park`: a combine of many files parks each one between its check and
        its copies."""
        if self._closed:
            return False
        if self._hdf5 is not None:
            self._hdf5.park(self._io.fileobj)
        self._io.park()
        return True

    def close(self) -> None:
        """Close the file (and the HDF5 library's handle on it)."""
        if not self._closed:
            if self._hdf5 is not None:
                self._hdf5.close()
            self._io.close()
        super().close()


def _reopen(location: str, options: dict[str, Any]) -> NetCDFFileMap:
    return NetCDFFileMap(location, "r", **options)


def local_path(location: str) -> str | None:
    """The local path a location names, or None for another fsspec protocol."""
    if location.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(location.split("#", 1)[0]).path)
    if "://" in location or "::" in location:
        return None
    return location.split("#", 1)[0] if "#" in location else location


def hdf5_at_start(head: bytes, io: Any) -> bool:
    """HDF5 magic at byte 0 or after a user block (512, 1024, 2048 ... bytes)."""
    if head[:8] == HDF5_MAGIC:
        return True
    offset = 512
    while offset + 8 <= min(io.size, 1 << 20):
        if io.read(offset, 8) == HDF5_MAGIC:
            return True
        offset *= 2
    return False


def _local_netcdf(path: str) -> bool:
    """Whether a local regular file has netCDF-3 magic, or HDF5 magic at its start or
    after a user block (as the HDF5 library looks for it)."""
    io = LocalFile(path)
    try:
        head = io.head(8)
        return is_netcdf_header(head) or hdf5_at_start(head, io)
    finally:
        io.close()


def open_file_source(
    url: NCZarrURL,
    mode: str,
    storage_options: dict[str, Any],
    map_class: type[NetCDFFileMap] | None = None,
) -> ZMap | None:
    """A netCDF file source when the URL names one, else None (:data:`nczarr.hooks.file_source`).
    ``map_class``: the map to open it as (:class:`NetCDFFileMap` by default).

    Local: a regular file with netCDF-3 or HDF5 magic. Remote: a key with a netCDF
    suffix (``.nc``, ``.nc4``, ``.h5`` ...), no NCZarr/Zarr mode words in the fragment,
    that exists as an object (a store named ``x.nc`` is still opened as a store).
    """
    if url.storage in ("file", "zip"):
        if url.storage == "zip" or mode != "r" or probe_local(url.path) != "other":
            return None
        if not _local_netcdf(url.path):
            return None
        return (map_class or NetCDFFileMap)(url.path, mode, **storage_options)
    if mode != "r" or not has_netcdf_suffix(url.path) or url.mode & {"nczarr", "zarr"}:
        return None
    options = dict(storage_options)
    if url.storage == "s3":
        location = f"s3://{url.bucket}/{url.path}"
        if url.endpoint is not None:
            options.setdefault("endpoint_url", url.endpoint)
        if url.profile is not None:
            options.setdefault("profile", url.profile)
        if url.region is not None:
            options.setdefault("client_kwargs", {"region_name": url.region})
    else:
        location = url.fsspec_url
    try:
        return (map_class or NetCDFFileMap)(location, mode, **options)
    except StorageNotFoundError:
        return None
