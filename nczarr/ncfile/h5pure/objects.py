"""Groups and datasets: an object header's messages given meaning.

``H5Object`` lists a group's hard links (compact link messages, dense storage in
a fractal heap indexed by a v2 B-tree, or an old-style symbol table) and any
object's attributes (compact or dense), and describes a dataset's shape, type,
layout, filters and fill value. Orders follow HDF5's: creation order when the
object tracks it, else name order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .attributes import H5Attribute, decode_attribute
from .base import UNDEFINED, Cursor, Reader, Unsupported
from .btrees import V2Tree, each_chunk, group_entries
from .chunkindex import each_btree2_chunk, each_fixed_array_chunk, single_chunk
from .datatypes import (
    H5Fill,
    H5Filter,
    H5Type,
    decode_dataspace,
    decode_datatype,
    decode_fill,
    decode_filters,
)
from .earray import each_earray_chunk
from .headers import Message, read_header
from .heaps import FractalHeap, LocalHeap
from .layout import BTREE_V1, BTREE_V2, EXTENSIBLE_ARRAY, SINGLE_CHUNK, Layout, decode_layout

__all__ = ["H5Object", "decode_link", "decode_name", "ordered"]

T = TypeVar("T")
LINK_INFO, LINK, ATTRIBUTE, ATTRIBUTE_INFO, SYMBOL_TABLE = 2, 6, 12, 21, 17
_SINGLE = (1, 2, 3, 4, 5, 8, 10, 11, 17, 21)


def decode_link(data: bytes) -> tuple[str, int, int | None]:
    """A hard link message: ``(name, address, creation order or None)``."""
    cur = Cursor(data)
    version, flags = cur.u8(), cur.u8()
    if version != 1 or flags & 0xE0:
        raise Unsupported("link message version or flags")
    if flags & 0x08 and cur.u8() != 0:
        raise Unsupported("soft or external link")
    order = cur.u64() if flags & 0x04 else None
    if flags & 0x10 and cur.u8() > 1:
        raise Unsupported("link name encoding")
    length = cur.uint(1 << (flags & 3))
    name, address = decode_name(cur.take(length)), cur.u64()
    return name, address, order


def decode_name(raw: bytes) -> str:
    """A link or attribute name: non-empty UTF-8 without NUL."""
    if not raw or b"\0" in raw:
        raise Unsupported("empty or NUL name")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unsupported("name not UTF-8") from exc


def ordered(items: list[tuple[str, int | None, T]], tracked: bool) -> list[tuple[str, T]]:
    """``(name, value)`` by creation order when tracked, else by name bytes (as strcmp)."""
    names = [name for name, _, _ in items]
    if len(set(names)) != len(names):
        raise Unsupported("a name twice")
    if not tracked:
        chosen = sorted(items, key=lambda item: item[0].encode("utf-8"))
    else:
        orders = [order for _, order, _ in items]
        if None in orders or len(set(orders)) != len(orders):
            raise Unsupported("creation order missing or repeated")
        chosen = sorted(items, key=lambda item: item[1] or 0)
    return [(name, value) for name, _, value in chosen]


class H5Object:
    """A group, dataset or named datatype, by its object header address."""

    def __init__(self, reader: Reader, address: int, root: bool = False) -> None:
        self.reader = reader
        self.address = address
        header = read_header(reader, address)
        self.tracks_order = header.tracks_order
        self.messages: dict[int, list[Message]] = {}
        for message in header.messages:
            self.messages.setdefault(message.type, []).append(message)
        if any(len(self.messages.get(kind, ())) > 1 for kind in _SINGLE):
            raise Unsupported("a message that must be single appears twice")
        has = self.messages.__contains__
        self.is_group = root or has(SYMBOL_TABLE) or has(LINK_INFO) or has(LINK)
        self.is_dataset = has(1) and has(3) and has(8)
        if self.is_group and self.is_dataset:
            raise Unsupported("both a group and a dataset")
        if self.is_dataset:
            self._dataset()

    def _one(self, kind: int) -> bytes | None:
        found = self.messages.get(kind)
        return found[0].data if found else None

    # ----- groups

    def links(self) -> list[tuple[str, int]]:
        """Hard links as ``(name, address)``, in creation order when tracked, else name order."""
        if not self.is_group:
            raise Unsupported("not a group")
        table = self._one(SYMBOL_TABLE)
        if table is not None:
            if LINK_INFO in self.messages or LINK in self.messages:
                raise Unsupported("symbol table and link messages")
            return self._symbol_table(table)
        info = self._one(LINK_INFO)
        if info is None:
            if LINK in self.messages:
                raise Unsupported("link messages without link info")
            return []
        cur = Cursor(info)
        version, flags = cur.u8(), cur.u8()
        if version != 0 or flags & ~3:
            raise Unsupported("link info message")
        if flags & 1:
            cur.skip(8)
        heap, name_index = cur.u64(), cur.u64()
        items = [decode_link(m.data) for m in self.messages.get(LINK, [])]
        if heap != UNDEFINED:
            if items:
                raise Unsupported("compact and dense links together")
            tree = V2Tree(self.reader, name_index, 5)
            fheap = FractalHeap(self.reader, heap)
            items = [decode_link(fheap.get(record[4:])) for record in tree.records()]
        return ordered([(name, order, address) for name, address, order in items], bool(flags & 1))

    def _symbol_table(self, table: bytes) -> list[tuple[str, int]]:
        cur = Cursor(table)
        tree, heap_address = cur.u64(), cur.u64()
        heap = LocalHeap(self.reader, heap_address)
        links: list[tuple[str, int]] = []
        for node in group_entries(self.reader, tree):
            head = Cursor(self.reader.signed(node, 8, b"SNOD"), 4)
            if head.u8() != 1:
                raise Unsupported("symbol node version")
            head.skip(1)
            count = head.u16()
            body = Cursor(self.reader.read(node + 8, 40 * count))
            for _ in range(count):
                name_offset, address, cache = body.u64(), body.u64(), body.u32()
                body.skip(20)
                if cache > 1:
                    raise Unsupported("soft link in a symbol table")
                links.append((decode_name(heap.name(name_offset)), address))
        keys = [name.encode("utf-8") for name, _ in links]
        if keys != sorted(keys) or len(set(keys)) != len(keys):
            raise Unsupported("symbol table out of order")
        return links

    # ----- attributes

    def attributes(self) -> list[H5Attribute]:
        """Every attribute, in creation order when tracked (2+ untracked: Unsupported)."""
        compact = [(decode_attribute(m.data), m.order) for m in self.messages.get(ATTRIBUTE, [])]
        tracked = False
        info = self._one(ATTRIBUTE_INFO)
        if info is not None:
            cur = Cursor(info)
            version, flags = cur.u8(), cur.u8()
            if version != 0 or flags & ~3:
                raise Unsupported("attribute info message")
            tracked = bool(flags & 1)
            if tracked:
                cur.skip(2)
            heap, name_index = cur.u64(), cur.u64()
            if tracked != self.tracks_order:
                raise Unsupported("attribute creation order flags disagree")
            if heap != UNDEFINED:
                if compact:
                    raise Unsupported("compact and dense attributes together")
                compact = self._dense_attributes(heap, name_index)
        if not tracked and len(compact) > 1:
            raise Unsupported("attribute order not tracked")
        return [a for _, a in ordered([(a.name, order, a) for a, order in compact], tracked)]

    def _dense_attributes(
        self, heap_address: int, name_index: int
    ) -> list[tuple[H5Attribute, int | None]]:
        tree = V2Tree(self.reader, name_index, 8)
        heap = FractalHeap(self.reader, heap_address)
        out = []
        for record in tree.records():
            if len(record) != 17 or record[8] & 0x02:
                raise Unsupported("dense attribute record")
            order = int.from_bytes(record[9:13], "little")
            out.append((decode_attribute(heap.get(record[:8])), order))
        return out

    # ----- datasets

    def _dataset(self) -> None:
        space = decode_dataspace(self._one(1) or b"")
        if space is None:
            raise Unsupported("dataset with a null dataspace")
        self.shape, self.maxshape = space
        self.datatype: H5Type = decode_datatype(Cursor(self._one(3) or b""))
        self.storage: Layout = decode_layout(self._one(8) or b"", self.shape, self.datatype.size)
        pipeline = self._one(11)
        self.filters: list[H5Filter] = decode_filters(pipeline) if pipeline is not None else []
        fill = self._one(5)
        if fill is None:
            raise Unsupported("dataset without a fill value message")
        self.fill: H5Fill = decode_fill(fill)

    @property
    def layout(self) -> str:
        return self.storage.kind

    @property
    def chunks(self) -> tuple[int, ...] | None:
        return self.storage.chunks

    @property
    def contiguous_address(self) -> int | None:
        return self.storage.address if self.storage.kind == "contiguous" else None

    @property
    def compact_data(self) -> bytes | None:
        return self.storage.data

    def each_chunk(self, visit: Callable[[tuple[int, ...], int, int, int], None]) -> None:
        """``visit(offset, filter_mask, address, size)`` for every stored chunk, in B-tree order."""
        if self.storage.kind != "chunked":
            raise Unsupported("not a chunked dataset")
        layout, item = self.storage, self.datatype.size
        if layout.address is None:
            return
        dims, end = layout.chunks or (), self.reader.end  # (their rank: decode_layout's)

        def checked(offset: tuple[int, ...], mask: int, address: int, size: int) -> None:
            if address + size > end:
                raise Unsupported("chunk past the end of the file")
            visit(offset, mask, address, size)

        def on_grid(offset: tuple[int, ...], mask: int, address: int, size: int) -> None:
            """A v1 B-tree stores chunk offsets in elements (the other indexes' are grid
            positions, on the grid by construction)."""
            for o, d in zip(offset, dims, strict=True):  # a loop: the cheapest test
                if o % d:
                    raise Unsupported("chunk offset not on the chunk grid")
            checked(offset, mask, address, size)

        if layout.index == BTREE_V1:
            each_chunk(self.reader, layout.address, len(self.shape), on_grid)
        elif layout.index == SINGLE_CHUNK:
            single_chunk(layout, item, bool(self.filters), checked)
        elif layout.index == BTREE_V2:
            each_btree2_chunk(self.reader, layout, item, bool(self.filters), checked)
        elif layout.index == EXTENSIBLE_ARRAY:
            each_earray_chunk(self.reader, layout, self.maxshape, item, bool(self.filters), checked)
        else:
            each_fixed_array_chunk(
                self.reader, layout, self.maxshape, item, bool(self.filters), checked
            )
