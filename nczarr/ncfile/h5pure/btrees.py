"""The B-trees: version 1 (old-style groups, chunk indexes) and version 2 (dense storage).

Walks are depth-first, left to right, with the node levels checked to fall by one
at each step (so a damaged file cannot loop) and every address bounds-checked.
Chunk walks call back per chunk instead of building a list: a dataset may have
millions of chunks.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from .base import Cursor, Reader, Unsupported, limit_size, verify_checksum

__all__ = ["ChunkVisit", "V2Tree", "each_chunk", "group_entries"]

ChunkVisit = Callable[[tuple[int, ...], int, int, int], None]


def _v1_node(reader: Reader, address: int, kind: int, key_size: int) -> tuple[int, Cursor, int]:
    """``(level, cursor at key 0, entries)`` of a version 1 B-tree node."""
    head = Cursor(reader.signed(address, 24, b"TREE"), 4)
    if head.u8() != kind:
        raise Unsupported("B-tree node type")
    level, entries = head.u8(), head.u16()
    body = reader.read(address + 24, entries * (key_size + 8) + key_size)
    return level, Cursor(body), entries


def _visit_once(seen: set[int], address: int) -> None:
    """A node met twice is a damaged tree (a crafted one could fan out without end)."""
    if address in seen:
        raise Unsupported(f"B-tree node {address} reached twice")
    seen.add(address)


def group_entries(
    reader: Reader, address: int, level: int | None = None, seen: set[int] | None = None
) -> Iterator[int]:
    """Addresses of the symbol nodes ("SNOD") of a group's B-tree, left to right."""
    seen = set() if seen is None else seen
    _visit_once(seen, address)
    found, cur, entries = _v1_node(reader, address, 0, 8)
    if (level is not None and found != level) or found > 64:
        raise Unsupported("B-tree level")
    cur.skip(8)
    children = []
    for _ in range(entries):
        children.append(cur.u64())
        cur.skip(8)
    for child in children:
        if found == 0:
            yield child
        else:
            yield from group_entries(reader, child, found - 1, seen)


def each_chunk(
    reader: Reader,
    address: int,
    rank: int,
    visit: ChunkVisit,
    level: int | None = None,
    seen: set[int] | None = None,
) -> None:
    """Call ``visit(offset, filter_mask, address, size)`` for every chunk, in B-tree order.

    A node's keys and children are unpacked in one ``struct`` pass (a file may have
    millions of chunks: field-by-field decoding cost 7 us a chunk, three times h5py)."""
    seen = set() if seen is None else seen
    _visit_once(seen, address)
    key_size = 8 + 8 * (rank + 1)
    found, cur, entries = _v1_node(reader, address, 1, key_size)
    if (level is not None and found != level) or found > 64:
        raise Unsupported("B-tree level")
    rows = struct.iter_unpack(f"<II{rank + 1}QQ", cur.data[: entries * (key_size + 8)])
    for row in rows:
        child = row[-1]
        if found:
            each_chunk(reader, child, rank, visit, found - 1, seen)
            continue
        if row[-2] != 0:
            raise Unsupported("chunk key offset")
        visit(row[2:-2], row[1], child, row[0])


class V2Tree:
    """A version 2 B-tree's records, read node by node (checksums verified)."""

    def __init__(self, reader: Reader, address: int, record_type: int) -> None:
        self.reader = reader
        block = reader.signed(address, 38, b"BTHD")
        verify_checksum(block)
        cur = Cursor(block, 4)
        version, kind = cur.u8(), cur.u8()
        self.node_size, self.record_size, self.depth = cur.u32(), cur.u16(), cur.u16()
        cur.skip(2)
        self.root, self.root_records, self.total = cur.u64(), cur.u16(), cur.u64()
        if version != 0 or kind != record_type or self.depth > 16 or self.record_size == 0:
            raise Unsupported("v2 B-tree header")
        self.kind = kind
        self._sizes()

    def _sizes(self) -> None:
        """Widths of the child record counts in internal nodes (as HDF5 derives them)."""
        leaf_max = (self.node_size - 10) // self.record_size
        if leaf_max <= 0:
            raise Unsupported("v2 B-tree node size")
        self.nrec_size = limit_size(leaf_max)
        cumulative, self.cum_sizes = leaf_max, [0]
        for depth in range(1, self.depth + 1):
            pointer = 8 + self.nrec_size + (self.cum_sizes[depth - 1] if depth > 1 else 0)
            most = (self.node_size - 10 - pointer) // (self.record_size + pointer)
            if most <= 0:
                raise Unsupported("v2 B-tree node size")
            cumulative = (most + 1) * cumulative + most
            self.cum_sizes.append(limit_size(cumulative))

    def records(self) -> list[bytes]:
        """Every record, in key order (for small trees: a group's links, attributes)."""
        out: list[bytes] = []
        self.each_record(out.append)
        return out

    def each_record(self, visit: Callable[[bytes], None]) -> None:
        """``visit(record)`` in key order; the count must match the header's (else
        Unsupported, possibly after some visits)."""
        seen = self._node(self.root, self.root_records, self.depth, visit) if self.total else 0
        if seen != self.total:
            raise Unsupported("v2 B-tree record count")

    def _node(self, address: int, count: int, depth: int, visit: Callable[[bytes], None]) -> int:
        if count == 0 or count * self.record_size > self.node_size:
            raise Unsupported("v2 B-tree node record count")
        body = 6 + count * self.record_size
        if depth == 0:
            block = self.reader.signed(address, body + 4, b"BTLF")
        else:
            pointer = 8 + self.nrec_size + (self.cum_sizes[depth - 1] if depth > 1 else 0)
            block = self.reader.signed(address, body + (count + 1) * pointer + 4, b"BTIN")
        verify_checksum(block)
        if block[4] != 0 or block[5] != self.kind:
            raise Unsupported("v2 B-tree node header")
        size = self.record_size
        records = [block[6 + i * size : 6 + (i + 1) * size] for i in range(count)]
        if depth == 0:
            for record in records:
                visit(record)
            return count
        cur = Cursor(block, body)
        children = []
        for _ in range(count + 1):
            child, child_count = cur.u64(), cur.uint(self.nrec_size)
            if depth > 1:
                cur.skip(self.cum_sizes[depth - 1])
            children.append((child, child_count))
        seen = count
        for i, (child, child_count) in enumerate(children):
            seen += self._node(child, child_count, depth - 1, visit)
            if i < count:
                visit(records[i])
        return seen
