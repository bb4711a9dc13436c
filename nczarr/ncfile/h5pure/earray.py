"""The extensible array chunk index (datasets with one unlimited dimension, HDF5 1.10+).

An extensible array holds one entry per chunk, in index order: the first few in
the index block, then data blocks of growing size, grouped in "super blocks"
(the first super blocks' data block addresses sit in the index block itself).
Large data blocks are paged: each page has its own checksum, and its super block
a bitmap of the pages ever written. Entries are visited in index order up to the
header's "max index set", as HDF5's iteration (and h5py's ``chunk_iter``) does.
An entry's index is the chunk's position in C order over the chunk grid of the
maximum dims with the unlimited dimension moved first ("swizzled").
"""

from __future__ import annotations

from .base import UNDEFINED, Cursor, Reader, Unsupported, verify_checksum
from .btrees import ChunkVisit
from .chunkindex import ChunkEntries, unfiltered_size
from .layout import Layout

__all__ = ["each_earray_chunk"]


class _Array:
    """The header's parameters and what HDF5 derives from them."""

    def __init__(self, reader: Reader, address: int, filtered: bool) -> None:
        head = reader.signed(address, 72, b"EAHD")
        verify_checksum(head)
        cur = Cursor(head, 4)
        version, client, self.entry = cur.u8(), cur.u8(), cur.u8()
        max_bits, self.index_entries, self.min_entries = cur.u8(), cur.u8(), cur.u8()
        min_pointers, page_bits = cur.u8(), cur.u8()
        cur.skip(32)  # super and data block statistics
        self.max_index, _realized, self.index_block = cur.u64(), cur.u64(), cur.u64()
        self.width = self.entry - 12 if filtered else 0
        if version != 0 or client != int(filtered) or not 0 < max_bits <= 64:
            raise Unsupported("extensible array header")
        if self.entry != (8 + self.width + 4 if filtered else 8) or (
            filtered and not 1 <= self.width <= 8
        ):
            raise Unsupported("extensible array entry size")
        for n in (self.min_entries, min_pointers):
            if n == 0 or n & (n - 1):
                raise Unsupported("extensible array parameters")
        self.address, self.filtered = address, filtered
        self.off_size = (max_bits + 7) // 8
        self.page = 1 << page_bits
        self.index_sblocks = 2 * (min_pointers.bit_length() - 1)
        self.index_dblocks = 2 * (min_pointers - 1)
        count = 1 + max_bits - (self.min_entries.bit_length() - 1)
        self.sblocks = []  # (data blocks, entries per data block, first index, first data block)
        start = first = 0
        for u in range(count):
            ndblocks, nentries = 1 << (u // 2), (1 << ((u + 1) // 2)) * self.min_entries
            self.sblocks.append((ndblocks, nentries, start, first))
            start, first = start + ndblocks * nentries, first + ndblocks
        if self.index_sblocks > count:
            raise Unsupported("extensible array parameters")

    def check(self, cur: Cursor, block_offset: int | None) -> None:
        """A block's version, client and header address (and offset in the array)."""
        if cur.u8() != 0 or cur.u8() != int(self.filtered) or cur.u64() != self.address:
            raise Unsupported("extensible array block header")
        if block_offset is not None and cur.uint(self.off_size) != block_offset:
            raise Unsupported("extensible array block offset")


def each_earray_chunk(
    reader: Reader,
    layout: Layout,
    maxshape: tuple[int | None, ...],
    item_size: int,
    filtered: bool,
    visit: ChunkVisit,
) -> None:
    """Every written chunk of an extensible array index, in index order."""
    array = _Array(reader, layout.address, filtered)
    entries = _entries(array, layout, maxshape, item_size, visit)
    if array.index_block == UNDEFINED or array.max_index == 0:
        return
    nsblocks = len(array.sblocks) - array.index_sblocks
    size = 14 + array.index_entries * array.entry + 8 * (array.index_dblocks + nsblocks) + 4
    block = reader.signed(array.index_block, size, b"EAIB")
    verify_checksum(block)
    cur = Cursor(block, 4)
    array.check(cur, None)
    entries.decode(cur.take(array.index_entries * array.entry), 0)
    dblocks = [cur.u64() for _ in range(array.index_dblocks)]
    sblocks = [cur.u64() for _ in range(nsblocks)]
    base = array.index_entries
    for number, (ndblocks, nentries, start, first) in enumerate(array.sblocks):
        if base + start >= array.max_index:
            return
        if number < array.index_sblocks:
            for k in range(ndblocks):  # (their stored block offsets are not checked)
                where = (start + k * nentries, None)
                _dblock(reader, array, entries, dblocks[first + k], where, nentries, None)
        else:
            _sblock(reader, array, entries, sblocks[number - array.index_sblocks], number)


def _sblock(
    reader: Reader, array: _Array, entries: ChunkEntries, address: int, number: int
) -> None:
    if address == UNDEFINED:
        return
    ndblocks, nentries, start, _ = array.sblocks[number]
    pages = nentries // array.page if nentries > array.page else 0
    init_size = (pages + 7) // 8
    size = 14 + array.off_size + ndblocks * (init_size + 8) + 4
    block = reader.signed(address, size, b"EASB")
    verify_checksum(block)
    cur = Cursor(block, 4)
    array.check(cur, start)
    bitmap = cur.take(ndblocks * init_size) if pages else None  # one bit per page, all blocks
    dblocks = [cur.u64() for _ in range(ndblocks)]
    for k, dblock in enumerate(dblocks):
        offset = start + k * nentries
        pages_of = (bitmap, k * pages) if bitmap is not None else None
        _dblock(reader, array, entries, dblock, (offset, offset), nentries, pages_of)


def _dblock(
    reader: Reader,
    array: _Array,
    entries: ChunkEntries,
    address: int,
    where: tuple[int, int | None],
    count: int,
    pages: tuple[bytes, int] | None,
) -> None:
    """A data block's entries: ``where`` is (its offset in the array, the offset it must
    store or None), ``pages`` (the super block's bitmap, this block's first bit) when paged."""
    if address == UNDEFINED:
        return
    offset, stored = where
    prefix = 14 + array.off_size
    first = array.index_entries + offset
    if pages is None:
        if count > array.page:
            raise Unsupported("paged extensible array data block without a bitmap")
        block = reader.signed(address, prefix + count * array.entry + 4, b"EADB")
        verify_checksum(block)
        array.check(Cursor(block, 4), stored)
        entries.decode(block[prefix:-4], first)
        return
    head = reader.signed(address, prefix + 4, b"EADB")
    verify_checksum(head)
    array.check(Cursor(head, 4), stored)
    bitmap, bit = pages
    page_size = array.page * array.entry + 4
    for page in range(count // array.page):
        if bitmap[(bit + page) // 8] & (0x80 >> ((bit + page) % 8)):
            data = reader.read(address + prefix + 4 + page * page_size, page_size)
            verify_checksum(data)
            entries.decode(data[:-4], first + page * array.page)


def _entries(
    array: _Array,
    layout: Layout,
    maxshape: tuple[int | None, ...],
    item_size: int,
    visit: ChunkVisit,
) -> ChunkEntries:
    """The decoder of the array's entries: positions along its one unlimited axis
    follow those of the others, and entries stop at the array's max index."""
    unlimited = [i for i, n in enumerate(maxshape) if n is None]
    if len(unlimited) != 1:
        raise Unsupported("extensible array index without one unlimited dimension")
    chunks = layout.chunks or ()
    grid = tuple(-(-n // c) for n, c in zip(maxshape, chunks, strict=True) if n is not None)
    full = unfiltered_size(layout, item_size)
    return ChunkEntries(chunks, grid, full, array.width, visit, unlimited[0], array.max_index)
