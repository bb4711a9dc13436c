"""The three heaps: local (old-style group link names), global (vlen data) and fractal.

A fractal heap holds a new-style group's links or an object's attributes once
there are too many for the object header ("dense storage"). Only managed and
tiny objects of unfiltered heaps are read; huge objects and filtered heaps raise
``Unsupported``. Blocks are read whole; a ``FractalHeap`` lives for one listing
and keeps its indirect blocks (small) and its last few direct blocks.
"""

from __future__ import annotations

from .base import UNDEFINED, Cursor, Reader, Unsupported, limit_size, lookup3, verify_checksum

__all__ = ["FractalHeap", "GlobalHeaps", "LocalHeap"]

#: Bytes of checked direct blocks a heap keeps: a dense listing visits its objects in
#: hash order, so a small cache read and checksummed a 64 KB block per object (2,000
#: attributes: 40 s); metadata heaps are rarely larger than this.
_CACHED_BYTES = 16 * 1024 * 1024


class LocalHeap:
    """A local heap's data segment: null-terminated names at offsets."""

    def __init__(self, reader: Reader, address: int) -> None:
        cur = Cursor(reader.signed(address, 32, b"HEAP"), 4)
        if cur.u8() != 0:
            raise Unsupported("local heap version")
        cur.skip(3)
        size, _free, data_address = cur.u64(), cur.u64(), cur.u64()
        self.data = reader.read(data_address, size)

    def name(self, offset: int) -> bytes:
        end = self.data.find(b"\0", offset)
        if offset >= len(self.data) or end < 0:
            raise Unsupported("local heap name offset")
        return self.data[offset:end]


class GlobalHeaps:
    """Objects of global heap collections, each collection read once."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.collections: dict[int, dict[int, bytes]] = {}

    def get(self, address: int, index: int) -> bytes:
        objects = self.collections.get(address)
        if objects is None:
            objects = self.collections[address] = self._read(address)
        if index not in objects:
            raise Unsupported("global heap object missing")
        return objects[index]

    def _read(self, address: int) -> dict[int, bytes]:
        head = Cursor(self.reader.signed(address, 16, b"GCOL"), 4)
        if head.u8() != 1:
            raise Unsupported("global heap version")
        head.skip(3)
        size = head.u64()
        if size < 16:
            raise Unsupported("global heap size")
        cur = Cursor(self.reader.read(address, size), 16)
        objects: dict[int, bytes] = {}
        while cur.remaining() >= 16:
            index, _refs = cur.u16(), cur.u16()
            cur.skip(4)
            length = cur.u64()
            if index == 0:  # the free space: the rest of the collection
                break
            if index in objects:
                raise Unsupported("global heap object twice")
            objects[index] = cur.take(length)
            cur.skip(min((-length) % 8, cur.remaining()))
        return objects


def _log2(n: int) -> int:
    if n <= 0 or n & (n - 1):
        raise Unsupported(f"{n} is not a power of two")
    return n.bit_length() - 1


class FractalHeap:
    """Managed and tiny objects of an unfiltered fractal heap, by heap ID."""

    def __init__(self, reader: Reader, address: int) -> None:
        self.reader = reader
        self.address = address
        block = reader.signed(address, 146, b"FRHP")
        verify_checksum(block)
        cur = Cursor(block, 4)
        if cur.u8() != 0:
            raise Unsupported("fractal heap version")
        self.id_len, filter_len, flags = cur.u16(), cur.u16(), cur.u8()
        self.max_managed = cur.u32()
        cur.skip(8 * 12)  # huge-object and free-space bookkeeping
        self.width, self.start = cur.u16(), cur.u64()
        self.max_direct, max_bits = cur.u64(), cur.u16()
        _start_rows, self.root, self.root_rows = cur.u16(), cur.u64(), cur.u16()
        if filter_len or flags & ~3 or max_bits > 64 or not 1 <= self.id_len <= 64:
            raise Unsupported("filtered or odd fractal heap")
        self.checksummed = bool(flags & 2)
        self.off_size = (max_bits + 7) // 8
        direct_bits = _log2(self.max_direct)
        self.len_size = min((direct_bits + 7) // 8, limit_size(self.max_managed))
        self.max_direct_rows = direct_bits - _log2(self.start) + 2
        self.first_row_bits = _log2(self.start) + _log2(self.width)
        if 1 + self.off_size + self.len_size > self.id_len or self.max_direct_rows < 2:
            raise Unsupported("fractal heap ID layout")
        # blocks by (address, heap offset, size or rows): each is checked for that place
        self.blocks: dict[tuple[int, int, int], bytes] = {}
        self._cached = 0
        self.indirect: dict[tuple[int, int, int], list[int]] = {}

    def get(self, heap_id: bytes) -> bytes:
        """The object a heap ID names."""
        if len(heap_id) != self.id_len:
            raise Unsupported("heap ID length")
        kind = heap_id[0]
        if kind >> 6:
            raise Unsupported("heap ID version")
        if kind & 0x30 == 0x20:
            return self._tiny(heap_id)
        if kind != 0:
            raise Unsupported("huge fractal heap object")
        cur = Cursor(heap_id, 1)
        offset, length = cur.uint(self.off_size), cur.uint(self.len_size)
        if length == 0 or length > self.max_managed:
            raise Unsupported("heap object length")
        block_offset, data = self._find(offset)
        start = offset - block_offset
        if start < self._dblock_header() or start + length > len(data):
            raise Unsupported("heap object outside its block")
        return data[start : start + length]

    def _tiny(self, heap_id: bytes) -> bytes:
        if self.id_len <= 18:
            length, start = (heap_id[0] & 0x0F) + 1, 1
        else:
            length, start = ((heap_id[0] & 0x0F) << 8 | heap_id[1]) + 1, 2
        if start + length > len(heap_id):
            raise Unsupported("tiny heap object length")
        return heap_id[start : start + length]

    def _row_size(self, row: int) -> int:
        return self.start if row == 0 else self.start << (row - 1)

    def _dblock_header(self) -> int:
        return 5 + 8 + self.off_size + (4 if self.checksummed else 0)

    def _find(self, offset: int) -> tuple[int, bytes]:
        """``(block offset, block bytes)`` of the direct block holding ``offset``."""
        if self.root_rows == 0:
            return 0, self._direct(self.root, 0, self.start)
        address, block_offset, rows = self.root, 0, self.root_rows
        for _ in range(64):
            entries = self._indirect(address, block_offset, rows)
            rel = offset - block_offset
            for row in range(rows):
                size = self._row_size(row)
                if rel < size * self.width:
                    break
                rel -= size * self.width
            else:
                raise Unsupported("heap offset past the indirect block")
            col = rel // size
            child = entries[row * self.width + col]
            block_offset = offset - rel + col * size
            if row < self.max_direct_rows:
                return block_offset, self._direct(child, block_offset, size)
            address, rows = child, _log2(size) - self.first_row_bits + 1
            if rows <= 0:
                raise Unsupported("fractal heap indirect rows")
        raise Unsupported("fractal heap too deep")

    def _indirect(self, address: int, block_offset: int, rows: int) -> list[int]:
        key = (address, block_offset, rows)
        found = self.indirect.get(key)
        if found is None:
            found = self.indirect[key] = self._read_indirect(address, block_offset, rows)
        return found

    def _read_indirect(self, address: int, block_offset: int, rows: int) -> list[int]:
        count = rows * self.width
        size = 5 + 8 + self.off_size + 8 * count + 4
        block = self.reader.signed(address, size, b"FHIB")
        verify_checksum(block)
        cur = Cursor(block, 4)
        if cur.u8() != 0 or cur.u64() != self.address or cur.uint(self.off_size) != block_offset:
            raise Unsupported("fractal heap indirect block header")
        return [cur.u64() for _ in range(count)]

    def _direct(self, address: int, block_offset: int, size: int) -> bytes:
        if address == UNDEFINED:
            raise Unsupported("heap object in an unallocated block")
        key = (address, block_offset, size)
        data = self.blocks.get(key)
        if data is not None:
            return data
        data = self.reader.signed(address, size, b"FHDB")
        cur = Cursor(data, 4)
        if cur.u8() != 0 or cur.u64() != self.address or cur.uint(self.off_size) != block_offset:
            raise Unsupported("fractal heap direct block header")
        if self.checksummed:
            stored, at = cur.u32(), cur.pos - 4
            if lookup3(data[:at] + b"\0\0\0\0" + data[at + 4 :]) != stored:
                raise Unsupported("fractal heap direct block checksum")
        while self.blocks and self._cached + len(data) > _CACHED_BYTES:
            self._cached -= len(self.blocks.pop(next(iter(self.blocks))))
        self.blocks[key] = data
        self._cached += len(data)
        return data
