"""Object headers (versions 1 and 2) split into their messages.

A header is read chunk by chunk: the first chunk, then each continuation block
its messages point to (each read whole, each at most once). Version 2 chunks'
checksums are verified. Message types outside the list below, and shared
messages, raise ``Unsupported``.
"""

from __future__ import annotations

from ...records import record
from .base import Cursor, Reader, Unsupported, verify_checksum

__all__ = ["CONTINUATION", "KNOWN", "Header", "Message", "read_header"]

CONTINUATION = 16
KNOWN = frozenset(range(24)) - {7, 15}
"""Message types read or safely ignored (external files 7 and shared table 15 are not)."""


@record
class Message:
    """One header message: type, flags, body and (version 2) creation order."""

    type: int
    flags: int
    data: bytes
    order: int | None


@record
class Header:
    """An object header's messages, and whether attribute creation order is stored."""

    messages: list[Message]
    tracks_order: bool


def read_header(reader: Reader, address: int) -> Header:
    """The messages of the object header at ``address``."""
    first = reader.read(address, min(16, reader.end - address))
    if first[:4] == b"OHDR":
        return _read_v2(reader, address)
    if first[0] != 1:
        raise Unsupported(f"object header version {first[0]}")
    cur = Cursor(first, 2)
    count, _refs, size = cur.u16(), cur.u32(), cur.u32()
    messages: list[Message] = []
    chunks, seen = [(address + 16, size)], set()
    while chunks:
        where, length = chunks.pop(0)
        if where in seen or len(seen) > 1000:
            raise Unsupported("object header continuation loop")
        seen.add(where)
        _v1_chunk(reader.read(where, length), messages, chunks)
    if len(messages) != count:
        raise Unsupported("object header message count")
    return Header(messages, False)


def _v1_chunk(data: bytes, messages: list[Message], chunks: list[tuple[int, int]]) -> None:
    cur = Cursor(data)
    while cur.remaining() >= 8:
        kind, size, flags = cur.u16(), cur.u16(), cur.u8()
        cur.skip(3)
        body = cur.take(size)
        _append(Message(kind, flags, body, None), messages, chunks)
    if cur.remaining():
        raise Unsupported("object header chunk tail")


def _read_v2(reader: Reader, address: int) -> Header:
    head = reader.read(address, min(34, reader.end - address))
    cur = Cursor(head, 4)
    version, flags = cur.u8(), cur.u8()
    if version != 2 or flags & 0xC0:
        raise Unsupported("object header v2 flags")
    if flags & 0x20:
        cur.skip(16)
    if flags & 0x10:
        cur.skip(4)
    size = cur.uint(1 << (flags & 3))
    prefix = cur.pos
    tracks = bool(flags & 0x04)
    block = reader.read(address, prefix + size + 4)
    messages: list[Message] = []
    chunks: list[tuple[int, int]] = []
    verify_checksum(block)
    _v2_chunk(block[prefix:-4], tracks, messages, chunks)
    seen = {address}
    while chunks:
        where, length = chunks.pop(0)
        if where in seen or len(seen) > 1000:
            raise Unsupported("object header continuation loop")
        seen.add(where)
        block = reader.signed(where, length, b"OCHK")
        verify_checksum(block)
        _v2_chunk(block[4:-4], tracks, messages, chunks)
    return Header(messages, tracks)


def _v2_chunk(
    data: bytes, tracks: bool, messages: list[Message], chunks: list[tuple[int, int]]
) -> None:
    cur = Cursor(data)
    head = 6 if tracks else 4
    while cur.remaining() >= head:
        kind, size, flags = cur.u8(), cur.u16(), cur.u8()
        order = cur.u16() if tracks else None
        _append(Message(kind, flags, cur.take(size), order), messages, chunks)
    if any(cur.take(cur.remaining())):
        raise Unsupported("object header gap is not zero")


def _append(message: Message, messages: list[Message], chunks: list[tuple[int, int]]) -> None:
    if message.type not in KNOWN:
        raise Unsupported(f"header message type {message.type}")
    if message.flags & 0x02:
        raise Unsupported("shared header message")
    if message.type == CONTINUATION:
        cur = Cursor(message.data)
        chunks.append((cur.u64(), cur.u64()))
    messages.append(message)
