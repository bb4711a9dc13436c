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
* sharded Zarr v3 arrays (NCZarr and Zarr v2 targets): Zarr v2 has no shards, so each
  inner chunk becomes one chunk object, encoded with the inner codecs. A Zarr v3 target
  keeps the shards: their objects are copied verbatim.
* codecs netcdf-c has no filter for (``gzip``, ``crc32c``, ``lz4`` ...), when the
  target is NCZarr: netcdf-c opens the dataset but cannot read the variable. Checksums
  are dropped and the data is compressed with ``zlib``, which every netcdf-c reads.
* arrays in Fortran order (``"order": "F"``), when the target is NCZarr: netcdf-c
  reads every chunk in C order and would return the values transposed.
* scalars compressed with ``blosc``, when the target is NCZarr: netcdf-c 4.10 then
  refuses the *whole dataset* ("Filter error: bad id or parameters"), although it
  reads blosc on any array of rank >= 1. A scalar is one value: it is written
  uncompressed.

:func:`plan_reencoding` (:mod:`nczarr.translate.recode_plan`, re-exported here) is
pure: it decides per variable and returns the dataset as the target describes it
(what the writers write). :class:`ChunkRecoder` makes the
target bytes of one chunk. Decoding uses numcodecs for Zarr v2 chunks and non-sharded
v3 chunks (whose codecs the v3 reader expressed as a byte-identical Zarr v2 pipeline)
and zarr-python for sharded arrays (it reads the shard index); encoding uses the
target's numcodecs pipeline. No codec is implemented here.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
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
from .translate.chunk_layout import ChunkLayout
from .translate.conventions import ZARR_JSON
from .translate.dtypes import nc_to_zarr_dtype
from .translate.model import Variable
from .translate.read_zarr3 import ChunkKeys, ShardIndex, shard_index
from .translate.recode_plan import ZLIB, Reencoding, plan_reencoding, with_maxstrlen

__all__ = [
    "Reencoding",
    "plan_reencoding",
    "with_maxstrlen",
    "ChunkRecoder",
    "ZLIB",
    "longest_strings",
]


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
        #: Shards whose index was found sound: the inner chunks they do not hold (flat
        #: indices within the shard; None: the shard itself was never written).
        self._checked: dict[str, frozenset[int] | None] = {}
        self._index: ShardIndex | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._array: Any = None
        self._closer: weakref.finalize | None = None
        self._absent_bytes: bytes | None = None

    @property
    def path(self) -> str:
        """The array's FQN."""
        return self._re.target.path

    # ------------------------------------------------------------------ decode
    def source_key(self, coords: tuple[int, ...]) -> str:
        """The source's key of chunk ``coords`` (what :meth:`decode` reads)."""
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
                thread = threading.Thread(target=_run, args=(loop,), name="nczarr-shards")
                thread.daemon = True
                thread.start()
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
        from . import hooks  # the reader is lent from above (nczarr.integrations)

        if hooks.shard_opener is None:  # pragma: no cover - nczarr/__init__ installs it
            raise RuntimeError("no shard reader installed (nczarr.hooks.shard_opener)")
        return await hooks.shard_opener(self._source, self._prefix)

    def close(self) -> None:
        """Stop the event loop of sharded reads, if one was started."""
        with self._lock:
            if self._closer is not None:
                self._closer()
            self._loop = self._array = self._closer = None

    def decode(
        self, coords: tuple[int, ...], read: Mapping[str, bytes] | None = None
    ) -> np.ndarray | None:
        """The values of chunk ``coords`` (chunk-shaped; None if it is not stored).
        ``read``: chunk bytes by source key read already (a caller reading many chunks
        in one ``getitems``); a chunk not there is read here."""
        src = self._re.source
        if src.shards is not None:
            region = tuple(
                slice(c * n, min((c + 1) * n, size))
                for c, n, size in zip(coords, src.chunks, src.shape, strict=True)
            )
            if self._never_written(coords):  # read as the view's fill, as whole chunks are
                return self._filled() if self._shard_written(coords) else self._absent()
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
        key = self.source_key(coords)
        data = None if read is None else read.get(key)
        if data is None:
            try:
                data = self._source[key]
            except KeyError:
                return self._absent()
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

    def _absent(self) -> np.ndarray | None:
        """A chunk the source does not store: None (the target leaves it out too), or
        the values zarr-python reads there when the target must hold them."""
        if self._re.absent_fill is None:
            return None
        return np.full(self._chunk_shape, self._re.absent_fill, dtype=self._src_dtype)

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

    def _filled(self) -> np.ndarray:
        """One chunk as zarr-python reads an inner chunk a written shard does not hold:
        the Zarr ``fill_value`` (``absent_fill`` where a ``_FillValue`` attribute is the
        netCDF fill value; the fill value otherwise)."""
        src = self._re.source
        full = np.empty(self._chunk_shape, dtype=self._src_dtype)
        full[...] = _fill_of(src, self._src_dtype) if src.absent_fill is None else src.absent_fill
        return full

    def _shard_key(self, coords: tuple[int, ...]) -> str:
        """The source key of the shard holding inner chunk ``coords``."""
        src = self._re.source
        assert src.shards is not None and self._keys is not None
        shard = tuple(c * n // s for c, n, s in zip(coords, src.chunks, src.shards, strict=True))
        return join_key(self._prefix, self._keys.source(shard))

    def _shard_written(self, coords: tuple[int, ...]) -> bool:
        return self._checked[self._shard_key(coords)] is not None

    def _never_written(self, coords: tuple[int, ...]) -> bool:
        """Whether inner chunk ``coords`` was never written (its shard's index, checked
        first, has no entry for it, or the shard itself is missing)."""
        empty = self._check_shard(coords)
        if empty is None:
            return True
        src = self._re.source
        assert src.shards is not None
        per = tuple(s // n for s, n in zip(src.shards, src.chunks, strict=True))
        inner = tuple(c % p for c, p in zip(coords, per, strict=True))
        return int(np.ravel_multi_index(inner, per)) in empty

    def _check_shard(self, coords: tuple[int, ...]) -> frozenset[int] | None:
        """Refuse a shard whose index is damaged (bad checksum, an entry past its end)
        before zarr-python reads inner chunk ``coords`` from it: zarr-python would raise
        a bare error, or read such a chunk as missing (fill values) without a word.
        Returns the inner chunks (flat indices) the shard does not hold, None if the
        shard is not written."""
        src = self._re.source
        assert src.shards is not None and self._keys is not None
        shard = tuple(c * n // s for c, n, s in zip(coords, src.chunks, src.shards, strict=True))
        key = self._shard_key(coords)
        with self._lock:
            if key in self._checked:
                return self._checked[key]
        index = self._shard_index()
        count = int(np.prod([s // n for s, n in zip(src.shards, src.chunks, strict=True)]))
        try:
            size = self._source.getsize(key)
        except KeyError:
            with self._lock:
                self._checked[key] = None
            return None  # not written: fill values
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
        empty = set()
        for i, (offset, nbytes) in enumerate(pairs.reshape(-1, 2).tolist()):
            if offset == nbytes == 2**64 - 1:
                empty.add(i)
                continue  # an empty inner chunk
            if offset < body[0] or offset + nbytes > body[1]:
                inner = np.unravel_index(i, per)
                raise self._corrupt(
                    tuple(int(s * p + c) for s, p, c in zip(shard, per, inner, strict=True)),
                    f"{where}: index entry {i} points to bytes {offset}..{offset + nbytes}, "
                    f"outside the {body[1] - body[0]} bytes of chunk data",
                )
        with self._lock:
            self._checked[key] = frozenset(empty)
        return self._checked[key]

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
        if self._re.stored_verbatim:  # only the chunks the source does not store are made
            try:
                return self._source[self.source_key(coords)]
            except KeyError:
                if self._absent_bytes is None:  # the same bytes for each of them
                    self._absent_bytes = self.encode_values(self._absent())  # type: ignore[arg-type]
                return self._absent_bytes
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


def _run(loop: asyncio.AbstractEventLoop) -> None:
    """The shard reader's thread: the loop until :func:`_stop`, then closed (a loop
    left open is a ResourceWarning when it is collected)."""
    try:
        loop.run_forever()
    finally:
        loop.close()


def _stop(loop: asyncio.AbstractEventLoop) -> None:
    loop.call_soon_threadsafe(loop.stop)


def _fill_of(var: Variable, dtype: np.dtype) -> Any:
    if var.fill_value is not None:
        return var.fill_value
    return "" if dtype.kind in "OUST" else 0


def longest_strings(
    source: ZMap,
    layout: ChunkLayout,
    reencoded: Mapping[str, Reencoding],
    paths: Sequence[str],
    on_stray: Callable[[str, str], None],
) -> dict[str, int]:
    """The longest string (at least 1) in the chunks of each of ``paths`` (arrays of
    variable-length strings shown as fixed-width NCZarr strings, which need a width):
    every chunk is read once, here. ``on_stray(key, array)``: as
    :meth:`~nczarr.translate.chunk_layout.ChunkLayout.shown_below`."""
    widths = {}
    for path in paths:
        prefix = layout.source_prefix.get(path, path)
        recoder = ChunkRecoder(source, reencoded[path], prefix, layout.keys.get(path))
        try:
            shown = layout.shown_below(path, path, source.keys_below, on_stray)
            longest = max(
                (recoder.longest_string(layout.coords(path, key)) for key in shown), default=0
            )
        finally:
            recoder.close()
        widths[path] = max(longest, 1)
    return widths
