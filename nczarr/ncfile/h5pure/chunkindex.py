"""Version 4/5 layouts' chunk indexes: a single chunk, a fixed array, a v2 B-tree.

HDF5 1.10+ with the "latest" format writes these for datasets without unlimited
dimensions (h5py ``libver="latest"``). A fixed array holds one entry per chunk
of the grid over the maximum dims, in C order; entries whose address is undefined
are chunks never written. Its data block may be paged (pages of
``2**page_bits`` entries, each with a checksum, an initialisation bitmap in the
block), as HDF5 does for large arrays. Chunks are visited in entry order, as
HDF5's own iteration (and h5py's ``chunk_iter``) does. A v2 B-tree (datasets
with several unlimited dimensions) holds records of chunk address, (filtered size
and mask,) and chunk coordinates in chunk units, visited in key order.
"""

from __future__ import annotations

from .base import UNDEFINED, Cursor, Reader, Unsupported, verify_checksum
from .btrees import ChunkVisit, V2Tree
from .layout import Layout

__all__ = [
    "ChunkEntries",
    "each_btree2_chunk",
    "each_fixed_array_chunk",
    "single_chunk",
    "unfiltered_size",
]


def unfiltered_size(layout: Layout, item_size: int) -> int:
    size = item_size
    for n in layout.chunks or ():
        size *= n
    return size


def single_chunk(layout: Layout, item_size: int, filtered: bool, visit: ChunkVisit) -> None:
    """The one chunk of a single-chunk index (nothing when never written)."""
    if filtered != (layout.filtered_size is not None):
        raise Unsupported("single chunk filter flag disagrees with the pipeline")
    size = layout.filtered_size if filtered else unfiltered_size(layout, item_size)
    visit(tuple(0 for _ in layout.chunks or ()), layout.filter_mask, layout.address, size)


def _grid(layout: Layout, maxshape: tuple[int | None, ...]) -> tuple[int, ...]:
    grid = []
    for dim, chunk in zip(maxshape, layout.chunks or (), strict=True):
        if dim is None:
            raise Unsupported("fixed array over an unlimited dimension")
        grid.append(-(-dim // chunk))
    return tuple(grid)


def each_fixed_array_chunk(
    reader: Reader,
    layout: Layout,
    maxshape: tuple[int | None, ...],
    item_size: int,
    filtered: bool,
    visit: ChunkVisit,
) -> None:
    """Every written chunk of a fixed array index, in entry (C grid) order."""
    head = reader.signed(layout.address, 28, b"FAHD")
    verify_checksum(head)
    cur = Cursor(head, 4)
    version, client, entry, page_bits = cur.u8(), cur.u8(), cur.u8(), cur.u8()
    count, block = cur.u64(), cur.u64()
    grid = _grid(layout, maxshape)
    cells = 1
    for n in grid:
        cells *= n
    size_width = entry - 12
    if version != 0 or client != int(filtered) or page_bits != layout.page_bits or count != cells:
        raise Unsupported("fixed array header")
    if entry != (8 + size_width + 4 if filtered else 8) or (filtered and not 1 <= size_width <= 8):
        raise Unsupported("fixed array entry size")
    if block == UNDEFINED:
        return
    full = unfiltered_size(layout, item_size)
    state = ChunkEntries(layout.chunks or (), grid, full, size_width if filtered else 0, visit)
    page = 1 << page_bits
    if count <= page:
        data = reader.read(block, 14 + count * entry + 4)
        _check_block(data, client, layout.address)
        state.decode(data[14:-4], 0)
        return
    pages = -(-count // page)
    prefix = reader.read(block, 14 + (pages + 7) // 8 + 4)
    _check_block(prefix, client, layout.address)
    bitmap, where = prefix[14:-4], block + len(prefix)
    for number in range(pages):
        entries = min(page, count - number * page)
        if bitmap[number // 8] & (0x80 >> (number % 8)):
            data = reader.read(where, entries * entry + 4)
            verify_checksum(data)
            state.decode(data[:-4], number * page)
        where += page * entry + 4


def _check_block(data: bytes, client: int, header: int) -> None:
    if data[:4] != b"FADB":
        raise Unsupported("no fixed array data block signature")
    verify_checksum(data)
    cur = Cursor(data, 4)
    if cur.u8() != 0 or cur.u8() != client or cur.u64() != header:
        raise Unsupported("fixed array data block header")


class ChunkEntries:
    """Decodes the entries of an array chunk index (fixed or extensible array) into
    chunk visits: each entry an address, then for filtered chunks a ``size_width``-byte
    size and a filter mask (0: every chunk ``full`` bytes, mask 0). Entry ``i`` is the
    chunk at position ``i`` of ``grid`` in C order; with ``unlimited``, ``grid`` leaves
    that axis out and the position along it is what is left (an extensible array's
    order). Entries from ``limit`` on are not read."""

    def __init__(
        self,
        chunks: tuple[int, ...],
        grid: tuple[int, ...],
        full: int,
        size_width: int,
        visit: ChunkVisit,
        unlimited: int | None = None,
        limit: int | None = None,
    ) -> None:
        self.chunks, self.grid, self.full, self.size_width = chunks, grid, full, size_width
        self.visit, self.unlimited, self.limit = visit, unlimited, limit

    def decode(self, data: bytes, first: int) -> None:
        """Visit the written chunks of ``data``, entries numbered from ``first``."""
        cur = Cursor(data)
        index, width = first, self.size_width
        while cur.remaining() and (self.limit is None or index < self.limit):
            address = cur.u64()
            size, mask = (cur.uint(width), cur.u32()) if width else (self.full, 0)
            if address != UNDEFINED:
                self.visit(self._offset(index), mask, address, size)
            index += 1

    def _offset(self, index: int) -> tuple[int, ...]:
        scaled = []
        for n in reversed(self.grid):
            index, rest = divmod(index, n)
            scaled.append(rest)
        scaled.reverse()
        if self.unlimited is not None:
            scaled.insert(self.unlimited, index)
        return tuple(s * c for s, c in zip(scaled, self.chunks, strict=True))


def each_btree2_chunk(
    reader: Reader, layout: Layout, item_size: int, filtered: bool, visit: ChunkVisit
) -> None:
    """Every chunk of a v2 B-tree index (record type 10, or 11 when filtered), in key order."""
    tree = V2Tree(reader, layout.address, 11 if filtered else 10)
    chunks = layout.chunks or ()
    width = tree.record_size - 8 - 8 * len(chunks) - (4 if filtered else 0)
    if (filtered and not 1 <= width <= 8) or (not filtered and width != 0):
        raise Unsupported("v2 B-tree chunk record size")
    full = unfiltered_size(layout, item_size)

    def record(data: bytes) -> None:
        cur = Cursor(data)
        address = cur.u64()
        size, mask = (cur.uint(width), cur.u32()) if filtered else (full, 0)
        offset = tuple(cur.u64() * n for n in chunks)
        if address == UNDEFINED:
            raise Unsupported("v2 B-tree chunk record without an address")
        visit(offset, mask, address, size)

    tree.each_record(record)
