"""Re-encoding chunks where a verbatim copy would be misread: which arrays, why, and how.

nczarr copies chunk objects byte for byte whenever the target's readers decode them
to the producer's values: that is the default and the fast path. For a few arrays
no target metadata describes the source's bytes; such an array used to be skipped.
Now its chunks are decoded and encoded again, on the same chunk grid (one target
chunk per source chunk; for a sharded array, per inner chunk):

* ``string`` variables stored as numpy unicode (``<U``, what xarray writes) or as
  variable-length UTF-8 (zarr-python 3's strings), when the target is NCZarr:
  netcdf-c reads a string variable only as fixed-width UTF-8 bytes (``|S<n>``).
  Pure Zarr keeps them as they are (a verbatim copy), which zarr-python and xarray read.
* zarr-python 2's categoricals (an object array encoded with numcodecs' ``categorize``,
  string labels), either target: no reader of the targets decodes ``categorize``
  (zarr-python 3 has no data type for it), so the codes become the strings they stand
  for, as variable-length UTF-8 (pure Zarr) or netCDF strings (NCZarr).
* sharded Zarr v3 arrays (either target): Zarr v2 has no shards, so each inner chunk
  becomes one chunk object, encoded with the inner codecs.
* codecs netcdf-c has no filter for (``gzip``, ``crc32c``, ``lz4`` ...), when the
  target is NCZarr: netcdf-c opens the dataset but cannot read the variable. Checksums
  are dropped and the data is compressed with ``zlib``, which every netcdf-c reads.
* arrays in Fortran order (``"order": "F"``), when the target is NCZarr: netcdf-c
  reads every chunk in C order and would return the values transposed.
* scalars compressed with ``blosc``, when the target is NCZarr: netcdf-c 4.10 then
  refuses the *whole dataset* ("Filter error: bad id or parameters"), although it
  reads blosc on any array of rank >= 1. A scalar is one value: it is written
  uncompressed.

:func:`plan_reencoding` is pure: it decides per variable and returns the dataset as
the target describes it (what the writers write). :class:`ChunkRecoder` makes the
target bytes of one chunk. Decoding uses numcodecs for Zarr v2 chunks and non-sharded
v3 chunks (whose codecs the v3 reader expressed as a byte-identical Zarr v2 pipeline)
and zarr-python for sharded arrays (it reads the shard index); encoding uses the
target's numcodecs pipeline. No codec is implemented here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import (
    CorruptChunkError,
    MetadataError,
    NCZarrError,
    UnsupportedError,
    UnsupportedTypeError,
)
from .inflate import DECODE_BUDGET, MAX_DECODED_BYTES, crc32c, decompress
from .keys import join_key
from .maps.base import ZMap
from .translate.attrs import parse_json
from .translate.codecs import is_known_codec
from .translate.conventions import DEFAULT_MAXSTRLEN, NETCDF_C_CODECS, ZARR_JSON
from .translate.dtypes import nc_to_zarr_dtype
from .translate.model import Dataset, Group, Variable
from .translate.read_zarr3 import ChunkKeys, ShardIndex, shard_index

__all__ = ["Reencoding", "plan_reencoding", "ChunkRecoder", "ZLIB"]

#: What replaces a compressor netcdf-c cannot decode (``level`` from gzip when given).
ZLIB: dict[str, Any] = {"id": "zlib", "level": 5}

#: Filters that only check or rearrange bytes; dropped where the target cannot use them.
_CHECKSUMS = frozenset({"crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"})


@dataclass(frozen=True)
class Reencoding:
    """One array whose chunks are re-encoded.

    Attributes
    ----------
    source : Variable
        The variable as the source stores it (codecs, dtype, shards).
    target : Variable
        The variable as the target describes it (what the writer writes).
    reason : str
        Why a verbatim copy would be misread (for the report and the warning).
    """

    source: Variable
    target: Variable
    reason: str

    @property
    def path(self) -> str:
        """The array's key prefix (``"g/v"``)."""
        return self.target.path.strip("/")

    @property
    def message(self) -> str:
        """The warning: array, reason, and that its chunks are re-encoded."""
        return f"array {self.target.path!r}: chunks re-encoded ({self.reason})"


def _for_netcdf_c(var: Variable) -> tuple[Variable, list[str]]:
    """``var`` with codecs netcdf-c decodes, and what changed."""
    reasons: list[str] = []
    codecs = [*var.filters, *([var.compressor] if var.compressor else [])]
    if any(not is_known_codec(str(c.get("id"))) for c in codecs):
        return var, []  # nothing here can decode it: copied verbatim (the writer warns)
    unknown = [c["id"] for c in codecs if c["id"] not in NETCDF_C_CODECS]
    filters = tuple(f for f in var.filters if f["id"] in NETCDF_C_CODECS)
    compressor = var.compressor
    if compressor is not None and compressor["id"] not in NETCDF_C_CODECS:
        level = compressor.get("level")
        if compressor["id"] == "gzip" and isinstance(level, int) and 0 <= level <= 9:
            compressor = {**ZLIB, "level": level}
        else:
            compressor = dict(ZLIB)
    elif compressor is None and any(u not in _CHECKSUMS for u in unknown):
        compressor = dict(ZLIB)  # an unknown compressing filter: still compressed
    if unknown:
        reasons.append(
            f"codec {', '.join(map(repr, unknown))} has no netcdf-c filter; written with "
            + (f"{compressor['id']!r}" if compressor else "no compression")
        )
    if var.scalar and any(c.get("id") == "blosc" for c in (*filters, compressor) if c):
        filters = tuple(f for f in filters if f["id"] != "blosc")
        compressor = None if compressor and compressor["id"] == "blosc" else compressor
        reasons.append("netcdf-c 4.10 refuses a blosc-compressed scalar, so it is uncompressed")
    order = var.order
    if order == "F" and len(var.shape) > 1:
        order = "C"
        reasons.append("netcdf-c reads every chunk in C order and ignores order 'F'")
    if not reasons:
        return var, []
    return (
        dataclasses.replace(var, filters=filters, compressor=compressor, order=order),
        reasons,
    )


def _target(var: Variable, format: str) -> tuple[Variable, list[str]]:
    """The variable as ``format`` stores it, and the reasons it is not a verbatim copy."""
    reasons: list[str] = []
    new = var
    if var.filters and var.filters[0].get("id") == "categorize":
        reasons.append("numcodecs 'categorize' codes become the strings they stand for")
        new = dataclasses.replace(new, filters=({"id": "vlen-utf8"}, *new.filters[1:]))
    if var.shards is not None:
        reasons.append(
            f"Zarr v3 shards {list(var.shards)} become chunks {list(var.chunks)}: "
            "Zarr v2 has no shards"
        )
        new = dataclasses.replace(new, shards=None)
    if format == "nczarr" and var.text_storage is not None:
        width = 4 * (var.maxstrlen or 1) if var.text_storage == "unicode" else var.maxstrlen
        width = width or DEFAULT_MAXSTRLEN
        what = (
            f"unicode strings (<U{var.maxstrlen})"
            if var.text_storage == "unicode"
            else "variable-length UTF-8 strings"
        )
        reasons.append(f"{what} become netCDF strings, fixed-width UTF-8 (|S{width})")
        new = dataclasses.replace(
            new,
            text_storage=None,
            maxstrlen=width,
            endian="little",
            filters=tuple(f for f in new.filters if f["id"] not in ("vlen-utf8", "shuffle")),
        )
    if format == "nczarr":
        new, more = _for_netcdf_c(new)
        reasons.extend(more)
    return new, reasons


def plan_reencoding(dataset: Dataset, format: str) -> tuple[Dataset, dict[str, Reencoding]]:
    """Which arrays of ``dataset`` are re-encoded for ``format``, and the target dataset.

    Pure. Returns the dataset as the target describes it (unchanged variables are
    the same objects) and, keyed by array key prefix, a :class:`Reencoding` per
    variable whose chunks cannot be copied verbatim.
    """
    found: dict[str, Reencoding] = {}

    def visit(group: Group) -> Group:
        variables = {}
        for name, var in group.variables.items():
            target, reasons = _target(var, format)
            if reasons:
                found[var.path.strip("/")] = Reencoding(var, target, "; ".join(reasons))
            variables[name] = target
        groups = {name: visit(child) for name, child in group.groups.items()}
        return dataclasses.replace(group, variables=variables, groups=groups)

    root = visit(dataset.root)
    if not found:
        return dataset, {}
    return dataclasses.replace(dataset, root=root), found


def with_maxstrlen(dataset: Dataset, widths: Mapping[str, int]) -> Dataset:
    """``dataset`` with the ``maxstrlen`` of the variables ``widths`` names (key prefixes)."""

    def visit(group: Group) -> Group:
        variables = {
            name: dataclasses.replace(var, maxstrlen=widths[var.path.strip("/")])
            if var.path.strip("/") in widths
            else var
            for name, var in group.variables.items()
        }
        groups = {name: visit(child) for name, child in group.groups.items()}
        return dataclasses.replace(group, variables=variables, groups=groups)

    return dataclasses.replace(dataset, root=visit(dataset.root))


def _numpy_dtype(var: Variable) -> np.dtype:
    return np.dtype(
        nc_to_zarr_dtype(
            var.type, var.endian, var.maxstrlen, nczarr=False, text_storage=var.text_storage
        )
    )


def _codecs(var: Variable) -> tuple[list[Any], Any]:
    from numcodecs import get_codec

    filters = [get_codec(dict(f)) for f in var.filters]
    compressor = get_codec(dict(var.compressor)) if var.compressor else None
    return filters, compressor


class ChunkRecoder:
    """Makes the target bytes of one chunk of a re-encoded array.

    Parameters
    ----------
    source : ZMap
        The map holding the source chunks.
    reencoding : Reencoding
        The array (source and target variable).
    source_prefix : str
        The array's key prefix in ``source`` (``""`` for a bare root array).
    keys : ChunkKeys or None
        Zarr v3 arrays: how chunk (or shard) coordinates become source keys.

    Thread-safe: the worker pool calls :meth:`encode` from several threads.
    """

    def __init__(
        self,
        source: ZMap,
        reencoding: Reencoding,
        source_prefix: str,
        keys: ChunkKeys | None,
    ) -> None:
        self._source = source
        self._re = reencoding
        self._prefix = source_prefix
        self._keys = keys
        src, dst = reencoding.source, reencoding.target
        self._chunk_shape = tuple(dst.chunks) if not dst.scalar else ()
        self._src_dtype = _numpy_dtype(src)
        self._dst_dtype = _numpy_dtype(dst)
        try:
            self._src_codecs = _codecs(src)
            self._dst_codecs = _codecs(dst)
        except (ValueError, KeyError, TypeError) as exc:
            raise UnsupportedError(f"array {src.path!r}: cannot re-encode: {exc}") from None
        self._lock = threading.Lock()
        self._checked: set[str] = set()  # shards whose index was found sound
        self._index: ShardIndex | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._array: Any = None
        self._closer: weakref.finalize | None = None

    @property
    def path(self) -> str:
        """The array's FQN."""
        return self._re.target.path

    # ------------------------------------------------------------------ decode
    def _source_key(self, coords: tuple[int, ...]) -> str:
        if self._keys is not None:
            return join_key(self._prefix, self._keys.source(coords))
        rest = self._re.source.dimension_separator.join(map(str, coords)) if coords else "0"
        return join_key(self._prefix, rest)

    def _read_sharded(self, region: tuple[slice, ...]) -> np.ndarray:
        """``region`` of a sharded array, read by zarr-python (which reads the shard index).

        zarr-python runs on an event loop of this recoder's own (one thread, started
        on first use, stopped by :meth:`close` or when the recoder is collected): the
        view may be read *by* zarr-python (xarray over the view), and a nested call
        into zarr-python's global loop from its executor threads would wait forever.
        """
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="nczarr-shards", daemon=True).start()
                try:
                    array = asyncio.run_coroutine_threadsafe(self._open(), loop).result()
                except BaseException as exc:
                    _stop(loop)  # a second read tries again (and fails the same way)
                    if not isinstance(exc, Exception) or isinstance(exc, NCZarrError):
                        raise
                    key = join_key(self._prefix, ZARR_JSON)
                    raise MetadataError(
                        f"{self._source.url}: {key!r}: zarr-python cannot open the sharded "
                        f"array: {type(exc).__name__}: {exc}"
                    ) from exc
                self._closer = weakref.finalize(self, _stop, loop)
                self._loop, self._array = loop, array
            loop, array = self._loop, self._array
        return np.asarray(asyncio.run_coroutine_threadsafe(array.getitem(region), loop).result())

    async def _open(self) -> Any:
        from zarr.api.asynchronous import open_array

        from .integrations.zarr_store import ZarrStore

        store = ZarrStore(self._source, read_only=True)
        return await open_array(store=store, path=self._prefix, mode="r", zarr_format=3)

    def close(self) -> None:
        """Stop the event loop of sharded reads, if one was started."""
        with self._lock:
            if self._closer is not None:
                self._closer()
            self._loop = self._array = self._closer = None

    def decode(self, coords: tuple[int, ...]) -> np.ndarray | None:
        """The values of chunk ``coords`` (chunk-shaped; None if it is not stored)."""
        src = self._re.source
        if src.shards is not None:
            region = tuple(
                slice(c * n, min((c + 1) * n, size))
                for c, n, size in zip(coords, src.chunks, src.shape, strict=True)
            )
            self._check_shard(coords)
            try:
                values = self._read_sharded(region)
            except NCZarrError:
                raise
            except Exception as exc:  # zarr-python's own errors on a corrupt shard
                raise self._corrupt(coords, f"{type(exc).__name__}: {exc}") from exc
            if values.shape == self._chunk_shape:
                return values
            full = np.empty(self._chunk_shape, dtype=values.dtype)
            full[...] = _fill_of(src, values.dtype)
            full[tuple(slice(0, n) for n in values.shape)] = values
            return full
        key = self._source_key(coords)
        try:
            data = self._source[key]
        except KeyError:
            return None
        filters, compressor = self._src_codecs
        shape = self._chunk_shape if not src.scalar else ()
        limit = self._decoded_limit(shape)
        if filters:  # a checksum adds bytes, a type cast (astype) up to 8 times as many
            limit = 8 * limit + 1024
        try:
            buf: Any = decompress(compressor, data, limit) if compressor is not None else data
            for codec in reversed(filters):
                buf = codec.decode(buf)
        except NCZarrError as exc:
            raise CorruptChunkError(f"{self._where(key)}: {exc}") from None
        except Exception as exc:  # truncated or damaged: zlib.error, ValueError, ...
            raise CorruptChunkError(
                f"{self._where(key)}: cannot decode: {type(exc).__name__}: {exc}"
            ) from None
        if self._src_dtype.kind == "O":
            values = np.asarray(buf, dtype=object)
        else:
            values = np.frombuffer(memoryview(buf).cast("B"), dtype=self._src_dtype)
        if values.size != int(np.prod(shape)):
            raise CorruptChunkError(
                f"{self._where(key)}: decodes to {values.size} values, "
                f"expected {int(np.prod(shape))}"
            )
        return values.reshape(shape, order=src.order)

    def _where(self, key: str) -> str:
        return f"{self._source.url}: array {self._re.source.path!r}: chunk {key!r}"

    def _decoded_limit(self, shape: tuple[int, ...]) -> int | None:
        """Most bytes a chunk of ``shape`` may decode to (None: variable-length values)."""
        if self._src_dtype.kind == "O":
            return MAX_DECODED_BYTES
        size = int(np.prod(shape, dtype=object)) * self._src_dtype.itemsize
        if size > MAX_DECODED_BYTES:
            raise CorruptChunkError(
                f"array {self._re.source.path!r}: a chunk of shape {list(shape)} holds "
                f"{size} bytes, more than the re-encoding budget of {MAX_DECODED_BYTES} bytes"
            )
        return size

    # ----------------------------------------------------------------- shards
    def _corrupt(self, coords: tuple[int, ...], what: str) -> CorruptChunkError:
        return CorruptChunkError(
            f"{self._source.url}: array {self._re.source.path!r}: chunk {list(coords)}: "
            f"corrupt shard: {what}"
        )

    def _check_shard(self, coords: tuple[int, ...]) -> None:
        """Refuse a shard whose index is damaged (bad checksum, an entry past its end)
        before zarr-python reads inner chunk ``coords`` from it: zarr-python would raise
        a bare error, or read such a chunk as missing (fill values) without a word."""
        src = self._re.source
        assert src.shards is not None and self._keys is not None
        shard = tuple(c * n // s for c, n, s in zip(coords, src.chunks, src.shards, strict=True))
        key = join_key(self._prefix, self._keys.source(shard))
        with self._lock:
            if key in self._checked:
                return
        index = self._shard_index()
        count = int(np.prod([s // n for s, n in zip(src.shards, src.chunks, strict=True)]))
        try:
            size = self._source.getsize(key)
        except KeyError:
            return  # not written: fill values
        need = index.size(count)
        where = f"shard {key!r}"
        if size < need:
            raise self._corrupt(coords, f"{where} has {size} bytes, its index alone {need}")
        start = 0 if index.location == "start" else size - need
        raw = self._source.getrange(key, start, need)
        if index.checksum:
            stored = int.from_bytes(raw[-4:], "little")
            if crc32c(raw[:-4]) != stored:
                raise self._corrupt(coords, f"{where}: the checksum of its index is wrong")
        pairs = np.frombuffer(raw[: 16 * count], dtype="<u8" if index.endian == "little" else ">u8")
        body = (need, size) if index.location == "start" else (0, size - need)
        per = tuple(s // n for s, n in zip(src.shards, src.chunks, strict=True))
        for i, (offset, nbytes) in enumerate(pairs.reshape(-1, 2).tolist()):
            if offset == nbytes == 2**64 - 1:
                continue  # an empty inner chunk
            if offset < body[0] or offset + nbytes > body[1]:
                inner = np.unravel_index(i, per)
                raise self._corrupt(
                    tuple(int(s * p + c) for s, p, c in zip(shard, per, inner, strict=True)),
                    f"{where}: index entry {i} points to bytes {offset}..{offset + nbytes}, "
                    f"outside the {body[1] - body[0]} bytes of chunk data",
                )
        with self._lock:
            self._checked.add(key)

    def _shard_index(self) -> ShardIndex:
        """The shard index layout, from the array's ``zarr.json`` (read once)."""
        if self._index is None:
            key = join_key(self._prefix, ZARR_JSON)
            try:
                raw = self._source[key]
            except KeyError:  # removed since it was read: not a missing chunk
                raise MetadataError(f"{self._source.url}: {key!r} is gone") from None
            doc = parse_json(raw, key=key)
            try:
                self._index = shard_index(doc["codecs"][0].get("configuration") or {})
            except (KeyError, IndexError, TypeError, AttributeError):
                raise MetadataError(f"{key!r}: not a sharded array") from None
        return self._index

    # ------------------------------------------------------------------ encode
    def _as_target(self, values: np.ndarray) -> np.ndarray:
        dst = self._re.target
        dtype = self._dst_dtype
        if dst.type == "string" and dtype.kind == "S":
            if values.dtype.kind != "S":
                text = np.asarray(values, dtype=object)
                text = np.where(text == None, "", text)  # noqa: E711 - elementwise
                values = np.char.encode(text.astype(str), "utf-8")
            if values.dtype.itemsize > dtype.itemsize:
                longest = max(len(v) for v in values.ravel())
                raise UnsupportedTypeError(
                    f"array {dst.path!r}: a string of {longest} UTF-8 bytes does not fit "
                    f"the netCDF string width {dtype.itemsize}"
                )
            return values.astype(dtype)
        if dtype.kind == "O":
            return np.asarray(values, dtype=object)
        return values.astype(dtype, copy=False)

    def encode(self, coords: tuple[int, ...]) -> bytes | None:
        """The target bytes of chunk ``coords`` (None if the source has no such chunk).

        Decoded values and their encoding (about twice the chunk's size) are held under
        the process's :data:`~nczarr.inflate.DECODE_BUDGET`: the worker threads wait
        rather than hold more decoded chunks at once than the budget allows.
        """
        with DECODE_BUDGET.reserve(2 * self._chunk_bytes()):
            values = self.decode(coords)
            if values is None:
                return None
            return self.encode_values(values)

    def _chunk_bytes(self) -> int:
        count = int(np.prod(self._chunk_shape, dtype=object)) if self._chunk_shape else 1
        return count * max(self._src_dtype.itemsize, self._dst_dtype.itemsize)

    def encode_values(self, values: np.ndarray) -> bytes:
        """Encode one chunk's values (chunk-shaped) with the target's codecs."""
        dst = self._re.target
        array = self._as_target(values)
        if dst.order == "F":
            flat = np.asfortranarray(array).reshape(-1, order="F")
        else:
            flat = np.ascontiguousarray(array).reshape(-1)
        filters, compressor = self._dst_codecs
        buf: Any = flat
        for codec in filters:
            buf = codec.encode(buf)
        if compressor is not None:
            buf = compressor.encode(buf)
        if isinstance(buf, np.ndarray):
            return buf.tobytes()
        return bytes(buf)

    def longest_string(self, coords: tuple[int, ...]) -> int:
        """The longest UTF-8 encoding of a value in chunk ``coords`` (0 if none)."""
        values = self.decode(coords)
        if values is None or values.size == 0:
            return 0
        return max(len(str(v).encode("utf-8")) for v in values.ravel() if v is not None)


def _stop(loop: asyncio.AbstractEventLoop) -> None:
    loop.call_soon_threadsafe(loop.stop)


def _fill_of(var: Variable, dtype: np.dtype) -> Any:
    if var.fill_value is not None:
        return var.fill_value
    return "" if dtype.kind in "OUST" else 0
