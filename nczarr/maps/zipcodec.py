"""Bounded decoders for zip members: never more output than asked for.

``zipfile`` inflates whatever one read of compressed data holds (a few KB of bzip2
can become gigabytes) before cutting it to the member's size. These decoders take
the member's raw compressed bytes and a limit, and stop at the limit, so a member
that lies about its size (a zip bomb) costs no more memory than the size it claims.
The LZMA header is parsed here because ``zipfile`` keeps that parser private.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zipfile
import zlib
from collections.abc import Callable

__all__ = ["BOUNDED_DECODERS"]


def _inflate(raw: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(-15)
    return d.decompress(raw, limit)


def _bunzip(raw: bytes, limit: int) -> bytes:
    d = bz2.BZ2Decompressor()
    return d.decompress(raw, max_length=limit)


def _unlzma(raw: bytes, limit: int) -> bytes:
    """zip's LZMA method: a 4-byte header (version, properties size), the LZMA1
    properties (lc/lp/pb byte, dictionary size), then a raw LZMA1 stream."""
    if len(raw) < 9:
        raise EOFError("LZMA header truncated")
    (psize,) = struct.unpack("<H", raw[2:4])
    if psize != 5 or len(raw) < 4 + psize:
        raise ValueError(f"unexpected LZMA properties size {psize}")
    byte = raw[4]
    if byte >= 9 * 5 * 5:
        raise ValueError("invalid LZMA properties")
    pb, rest = divmod(byte, 45)
    lp, lc = divmod(rest, 9)
    (dict_size,) = struct.unpack("<I", raw[5:9])
    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": lp, "pb": pb}]
    d = lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=filters)
    return d.decompress(raw[4 + psize :], max_length=limit)


#: Bounded decoders by zip method (anything else is streamed through zipfile).
BOUNDED_DECODERS: dict[int, Callable[[bytes, int], bytes]] = {
    zipfile.ZIP_DEFLATED: _inflate,
    zipfile.ZIP_BZIP2: _bunzip,
    zipfile.ZIP_LZMA: _unlzma,
}
