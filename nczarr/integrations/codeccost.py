"""Whether a selection's chunks are worth spreading over threads: how long one chunk's
decode (or encode) runs with the GIL released, estimated from its compressor and size.

Why: :mod:`nczarr.integrations.fastpipeline` decodes a selection's chunks in a few
parts on a thread pool, which pays when each chunk's codec call runs long without the
GIL (zlib: ~270 us for 40 KB). Each chunk also costs ~10-20 us of Python holding the
GIL (the fetch, the bookkeeping, the copy into the output); when the codec call is no
longer than that (Blosc-LZ4: a few us for 40 KB), two threads only take turns at the
GIL, and the hand-offs (futex waits, context switches) cost CPU that buys no time.
Measured on a 2-core VM (`benchmarks/engine.py`, 4 float32 variables written by
netcdf-c; wall / CPU ms, two threads against one):

=====================================  =================  =================
case                                   two threads        one thread
=====================================  =================  =================
40 KB Blosc-LZ4 chunks (3,600)         69.4 / 105.2       67.8 / 67.8
160 KB Blosc-LZ4 chunks                31.2 / 53.1        35.0 / 35.0
360 KB Blosc-LZ4 chunks                26.8 / 40.7        29.7 / 29.7
40 KB zlib chunks                      145.4 / 253.5      239.8 / 239.7
=====================================  =================  =================

So a selection goes to the pool only when a chunk's codec call is estimated at
:data:`THREADED_CHUNK_MICROSECONDS` or more: chunk bytes over the codec's speed in
:data:`SPEEDS` (single-thread MB/s, conservative: numcodecs' and libdeflate's speeds
on float data, rounded down; a codec not in the table is assumed slow, i.e. threaded,
as before).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SPEEDS", "THREADED_CHUNK_MICROSECONDS", "codec_microseconds", "threads_pay"]

#: A chunk's codec call from this long on (estimated) is worth another thread.
THREADED_CHUNK_MICROSECONDS = 100.0

#: (decode, encode) MB/s of one thread by numcodecs codec id (Blosc: by ``cname``);
#: ``None``: no compressor (a copy). Numbers conservative (rounded down).
SPEEDS: dict[str | None, tuple[float, float]] = {
    None: (4000.0, 4000.0),
    "blosc:lz4": (2000.0, 1000.0),
    "blosc:blosclz": (2000.0, 1000.0),
    "blosc:snappy": (1000.0, 500.0),
    "blosc:lz4hc": (1500.0, 30.0),
    "blosc:zstd": (500.0, 25.0),
    "blosc:zlib": (200.0, 20.0),
    "lz4": (2000.0, 800.0),
    "zstd": (1000.0, 300.0),
    "zlib": (150.0, 30.0),
    "gzip": (120.0, 30.0),
    "bz2": (30.0, 12.0),
    "lzma": (48.0, 1.0),
}


def _speed(compressor: Any, encode: bool) -> float | None:
    if compressor is None:
        key: str | None = None
    else:
        key = str(getattr(compressor, "codec_id", ""))
        if key == "blosc":
            key = f"blosc:{getattr(compressor, 'cname', '')}"
    speeds = SPEEDS.get(key)
    return None if speeds is None else speeds[1 if encode else 0]


def codec_microseconds(compressor: Any, nbytes: int, *, encode: bool = False) -> float:
    """Estimated microseconds one call of ``compressor`` (a numcodecs codec, or None)
    takes on a chunk of ``nbytes`` decoded bytes; infinite for a codec not in
    :data:`SPEEDS`."""
    speed = _speed(compressor, encode)
    return float("inf") if speed is None else nbytes / speed


def threads_pay(compressor: Any, nbytes: int, *, encode: bool = False) -> bool:
    """Whether chunks of ``nbytes`` through ``compressor`` are worth decoding (or
    encoding) on more than one thread (see the module docstring)."""
    return codec_microseconds(compressor, nbytes, encode=encode) >= THREADED_CHUNK_MICROSECONDS
