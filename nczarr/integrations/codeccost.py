"""Whether a selection's chunks are worth spreading over threads: how long one chunk's
decode (or encode) runs with the GIL released, estimated from its compressor and size.

Why: :mod:`nczarr.integrations.fastpipeline` decodes a selection's chunks in a few
parts on a thread pool, which pays when each chunk's codec call runs long without the
GIL (zlib: ~230 us for 40 KB of float32). Each chunk also costs ~10-20 us of Python
holding the GIL (the fetch, the bookkeeping, the copy into the output); when the codec
call is no longer than that (Blosc-LZ4: ~16 us for 40 KB), two threads only take
turns at the GIL, and the hand-offs (futex waits, context switches) cost CPU that
buys no time. Measured on a 2-core VM (``benchmarks/engine.py``'s stores: 4 float32
variables written by netcdf-c; best wall / CPU ms, two threads against one):

=====================================  ===============  ===============  ===========
store (900 chunks unless said)         two threads      one thread       codec call
=====================================  ===============  ===============  ===========
40 KB Blosc-LZ4, read                  52.2 / 75.5      44.2 / 44.2      ~16 us
40 KB zstd + shuffle, read             106.2 / 170.1    156.6 / 156.6    ~57-90 us
160 KB Blosc-LZ4, read (225 chunks)    31.2 / 53.1      35.0 / 35.0      ~63 us
40 KB zlib + shuffle, read             145.4 / 253.5    239.8 / 239.7    ~230 us
40 KB Blosc-LZ4, ``to_nczarr``         148.5 / 232.6    158.1 / 156.7    ~40 us
=====================================  ===============  ===============  ===========

So a selection goes to the pool when a chunk's codec call is estimated at
:data:`THREADED_CHUNK_MICROSECONDS` or more (where two threads saved a tenth of the
time or more above): the chunk's bytes over the codec's single-thread speed in
:data:`SPEEDS` (numcodecs' speeds on that float data in 40 KB chunks, rounded; a codec
not in the table is assumed slow, i.e. threaded, as before).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SPEEDS", "THREADED_CHUNK_MICROSECONDS", "codec_microseconds", "threads_pay"]

#: A chunk's codec call from this long on (estimated) is worth another thread.
THREADED_CHUNK_MICROSECONDS = 50.0

#: (decode, encode) MB/s of one thread by numcodecs codec id (Blosc: by ``cname``);
#: ``None``: no compressor (a copy). Measured speeds, rounded (module docstring).
SPEEDS: dict[str | None, tuple[float, float]] = {
    None: (4000.0, 4000.0),
    "blosc:lz4": (2500.0, 1000.0),
    "blosc:blosclz": (4500.0, 1400.0),
    "blosc:lz4hc": (2500.0, 80.0),
    "blosc:zstd": (550.0, 50.0),
    "blosc:zlib": (280.0, 30.0),
    "lz4": (2500.0, 1200.0),
    "zstd": (550.0, 500.0),
    "zlib": (170.0, 45.0),
    "gzip": (150.0, 35.0),
    "bz2": (20.0, 8.0),
    "lzma": (20.0, 1.0),
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
