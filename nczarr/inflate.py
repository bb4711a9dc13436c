"""Decompressing a chunk no larger than its array declares.

A chunk object is small; what it inflates to is not bounded by its size: a gzip
stream of 1 MB inflates to 1 GB. numcodecs decodes a whole stream whatever its
length, so a store of tiny hostile chunks can exhaust the memory of whoever
re-encodes them. :func:`decompress` stops as soon as the output passes the size the
array's metadata declares for one chunk, for the compressors whose streams can be
decoded incrementally (``zlib``, ``gzip``, ``bz2``, ``lzma``) or that state their
decoded size up front (``blosc``, ``lz4``, ``zstd`` frames with a content size); for
any other codec the output is checked once decoded. :data:`MAX_DECODED_BYTES` caps
what one chunk may hold at all.

**libdeflate** (:func:`fast_inflate`, the ``fast`` extra). Why: with 4 MB chunks a
zlib read is the inflate itself (the same ``libz`` in every engine, and in convert's
re-encoding); libdeflate inflates the same stream about twice as fast (4 MB of
shuffled float32, one thread: ``zlib`` 8-9 ms, libdeflate 3.0-3.5 ms; ISA-L and
zlib-ng 4.4-4.8 ms).

Which binding: ``imagecodecs`` (``pip install nczarr[fast]``), the codec library of
scientific Python (tifffile's and zarr's image codecs), whose ``deflate_decode``
calls libdeflate's ``libdeflate_zlib_decompress`` with the GIL released and can
inflate into a caller's buffer (reused for 4 MB chunks instead of a new allocation
per chunk). The small ``deflate`` binding has no output-buffer argument.

The result is always what :func:`zlib.decompress` gives, or nothing:

* libdeflate is asked for at most ``size`` bytes (the chunk's declared size): a
  stream inflating past it stops there, never allocating more;
* whenever libdeflate refuses a stream (corrupt data, a bad Adler-32 checksum, a
  truncated stream, more output than ``size``) :func:`fast_inflate` returns ``None`` and
  the caller runs the standard library's zlib on it, which raises exactly the error
  it always raised (or, for a stream longer than ``size``, gives what it always
  gave), so refusals are the standard library's own;
* trailing bytes after the stream are ignored by both, as ``zlib.decompress`` does.

Without the extra (or with ``NCZARR_FAST_INFLATE=0`` in the environment) every
caller uses the standard library, as before.
"""

from __future__ import annotations

import bz2
import lzma
import os
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .environment import env_bytes
from .errors import CorruptChunkError

__all__ = [
    "MAX_DECODED_BYTES",
    "MemoryBudget",
    "DECODE_BUDGET",
    "crc32",
    "crc32c",
    "decompress",
    "fast_available",
    "fast_inflate",
    "FAST_CRC_AFTER",
]

#: The most bytes one chunk may decode to when re-encoded or dumped (1 GiB unless the
#: environment variable ``NCZARR_MAX_CHUNK_BYTES`` says otherwise).
MAX_DECODED_BYTES = env_bytes("NCZARR_MAX_CHUNK_BYTES", 0) or 2**30

_STREAMS = {"zlib": zlib.MAX_WBITS, "gzip": 16 + zlib.MAX_WBITS}


# ------------------------------------------------------------------ libdeflate
_decode: Any = None  # imagecodecs.deflate_decode once loaded; False: not installed
_error: type[BaseException] = Exception
_crc32: Any = None  # libdeflate's CRC-32 once loaded, else zlib's


def _load() -> Any:
    """imagecodecs' ``deflate_decode`` (imported on first use: it is not needed to open
    a store), or False when it is missing or turned off."""
    global _decode, _error, _crc32
    if _decode is None:
        try:
            if os.environ.get("NCZARR_FAST_INFLATE", "1") == "0":
                raise ImportError("turned off by NCZARR_FAST_INFLATE=0")
            from imagecodecs import DEFLATE, DeflateError, deflate_crc32, deflate_decode

            if not DEFLATE.available:
                raise ImportError("imagecodecs was built without libdeflate")
            _decode, _error, _crc32 = deflate_decode, DeflateError, deflate_crc32
        except ImportError:
            _decode, _crc32 = False, zlib.crc32
    return _decode


def fast_available() -> bool:
    """Whether :func:`fast_inflate` uses libdeflate (the ``fast`` extra is installed)."""
    return bool(_load())


def fast_inflate(data: bytes, size: int, out: Any = None) -> Any:
    """``zlib.decompress(data)`` when the result holds at most ``size`` bytes, by
    libdeflate; ``None`` when the standard library must decide (library missing, or
    libdeflate refused the stream: see the module docstring).

    ``out``: a writable ``uint8`` numpy array of at least ``size`` bytes to inflate
    into; the result is then the view of its first bytes, else new ``bytes``.
    """
    decode = _decode if _decode is not None else _load()
    if not decode or size <= 0 or not data:
        return None
    try:
        if out is None:
            return decode(data, out=size)
        return decode(data, out=out[:size])
    except _error:
        return None


#: Bytes a process checks with zlib's CRC-32 before it loads libdeflate for it (unless
#: an inflate loaded it already): importing imagecodecs costs ~0.2 s, which a CRC
#: ~4x faster pays back only after a few hundred MB; a command reading a small zip
#: does not pay it.
FAST_CRC_AFTER = 64 * 2**20
_crc_zlib_bytes = 0


def crc32(data: Any) -> int:
    """``zlib.crc32(data)`` (the zip members' checksum), computed by libdeflate when the
    ``fast`` extra is installed and loaded (by an inflate, or once this process has
    checked :data:`FAST_CRC_AFTER` bytes): the same value, about four times faster (a
    4 MB zip read checks every member's CRC, which took a quarter of a 4 MB Blosc read)."""
    global _crc_zlib_bytes
    if _decode is None:
        if _crc_zlib_bytes < FAST_CRC_AFTER:
            _crc_zlib_bytes += memoryview(data).nbytes  # (a race only miscounts)
            return zlib.crc32(data)
        _load()
    return int(_crc32(data)) if _decode else zlib.crc32(data)


# ------------------------------------------------------------------ bounded
def _too_big(limit: int) -> CorruptChunkError:
    return CorruptChunkError(f"inflates past its declared size of {limit} bytes")


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """A zlib or gzip stream (gzip: every member), stopping past ``limit`` bytes.

    A zlib stream is first given to libdeflate when the ``fast`` extra is installed,
    which writes at most ``limit`` bytes; whatever it refuses (a stream inflating past
    ``limit`` included) is decoded below, so results and errors are the standard
    library's (:func:`fast_inflate`)."""
    if wbits == zlib.MAX_WBITS:
        fast = fast_inflate(data, limit)
        if fast is not None:
            return fast
    out = bytearray()
    rest = memoryview(data)
    while True:
        stream = zlib.decompressobj(wbits)
        out += stream.decompress(rest, limit + 1 - len(out))
        if len(out) > limit:
            raise _too_big(limit)
        if not stream.eof:
            raise CorruptChunkError("truncated: the compressed stream ends early")
        rest = memoryview(stream.unused_data)
        if wbits == zlib.MAX_WBITS or not rest.nbytes:
            return bytes(out)


def _incremental(decoder: Any, data: bytes, limit: int) -> bytes:
    out = decoder.decompress(data, max_length=limit + 1)
    if len(out) > limit:
        raise _too_big(limit)
    if not decoder.eof:
        raise CorruptChunkError("truncated: the compressed stream ends early")
    return out


def _zstd_content_size(data: bytes) -> int | None:
    """The decoded size a zstd frame header declares (None when it declares none)."""
    if len(data) < 6 or data[:4] != b"\x28\xb5\x2f\xfd":
        return None
    descriptor = data[4]
    fcs_flag, single = descriptor >> 6, (descriptor >> 5) & 1
    start = 5 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 3]
    width = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or len(data) < start + width:
        return None
    value = int.from_bytes(data[start : start + width], "little")
    return value + 256 if width == 2 else value


def _declared(codec_id: str, data: bytes) -> int | None:
    """The decoded size a compressed object states in its header, if it states one."""
    if codec_id == "blosc" and len(data) >= 8:
        return int.from_bytes(data[4:8], "little")
    if codec_id == "lz4" and len(data) >= 4:
        return int.from_bytes(data[:4], "little")
    if codec_id == "zstd":
        return _zstd_content_size(data)
    return None


def decompress(codec: Any, data: bytes, limit: int) -> bytes:
    """``codec.decode(data)`` (a numcodecs compressor), refusing more than ``limit`` bytes.

    Raises
    ------
    CorruptChunkError
        The output would pass ``limit``, or the stream is truncated.
    """
    codec_id = str(getattr(codec, "codec_id", ""))
    if codec_id in _STREAMS:
        return _inflate(bytes(data), _STREAMS[codec_id], limit)
    if codec_id == "bz2":
        return _incremental(bz2.BZ2Decompressor(), bytes(data), limit)
    if codec_id == "lzma":
        decoder = lzma.LZMADecompressor(format=codec.format, filters=codec.filters)
        return _incremental(decoder, bytes(data), limit)
    declared = _declared(codec_id, bytes(data[:18]))
    if declared is not None and declared > limit:
        raise _too_big(limit)
    out = codec.decode(data)
    if memoryview(out).nbytes > limit:
        raise _too_big(limit)
    return out


def crc32c(data: bytes) -> int:
    """The CRC-32C (Castagnoli) of ``data``, as the Zarr v3 ``crc32c`` codec computes it."""
    try:
        import google_crc32c  # what zarr-python's crc32c codec uses

        return int(google_crc32c.value(bytes(data)))
    except ImportError:  # pragma: no cover - older zarr-python: the crc32c package
        from crc32c import crc32c as compute

        return int(compute(data))


class MemoryBudget:
    """Bytes of decoded chunks a process holds at once, shared by its threads.

    A worker pool of ``n`` threads re-encoding chunks of ``s`` bytes would hold ``n * s``
    bytes (and as much again encoded); :meth:`reserve` makes a thread wait until the
    chunks in flight leave room for its own. One reservation is never larger than the
    whole budget, so a single chunk always gets through.
    """

    def __init__(self, total: int) -> None:
        self.total = total
        self._used = 0
        self._peak = 0
        self._free = threading.Condition()

    @property
    def peak(self) -> int:
        """The most bytes reserved at once so far."""
        return self._peak

    @contextmanager
    def reserve(self, nbytes: int) -> Iterator[None]:
        """Hold ``nbytes`` (at most the whole budget) for the duration of the block."""
        need = max(0, min(int(nbytes), self.total))
        with self._free:
            self._free.wait_for(lambda: self._used + need <= self.total)
            self._used += need
            self._peak = max(self._peak, self._used)
        try:
            yield
        finally:
            with self._free:
                self._used -= need
                self._free.notify_all()


#: The budget every re-encoding thread of this process shares: decoded chunk bytes
#: in flight (``NCZARR_DECODE_BUDGET``, default twice :data:`MAX_DECODED_BYTES`).
DECODE_BUDGET = MemoryBudget(env_bytes("NCZARR_DECODE_BUDGET", 0) or 2 * MAX_DECODED_BYTES)
