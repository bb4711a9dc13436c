"""A pure-Python, numpy-free reader of the HDF5 metadata netCDF-4 files hold.

Why hand-written: nczarr reads a netCDF-4 file's metadata with h5py, but
``import h5py`` brings numpy, and the two cost about 0.22 s of process start,
against about 0.3 s for copying a few-hundred-MB file: most of the run. No
maintained pure-Python HDF5 reader is numpy-free (pyfive imports numpy). So this
package reads exactly the subset netcdf-c and h5py (default settings) write, as a
fast path, and raises :class:`Unsupported` on anything else, or on any
inconsistency in the bytes; the caller then falls back to h5py, which gives the
authoritative answer (or error). A wrong answer would be a disaster, an
``Unsupported`` costs 0.2 s: strictness over coverage.

Read: superblocks 0-3 (8-byte offsets and lengths, base address 0, no user
block, no driver info); object headers v1 and v2 (continuations, checksums);
groups with link messages (compact or dense: fractal heap + v2 B-tree name
index) or symbol tables (v1 B-tree + local heap + symbol nodes); attributes
(compact or dense, creation order when tracked); dataspaces (scalar, simple,
null); datatypes (integers, IEEE floats, strings, vlen strings and sequences,
object references; enum, opaque, bitfield, array, compound described only);
layout messages v3 (compact, contiguous, chunked with a v1 B-tree) and v4/v5
(chunked with a single-chunk, fixed array, extensible array or v2 B-tree
index); filter pipelines v1/v2; fill value messages v2/v3 (with the old fill
value message beside them). Not read (``Unsupported``): soft and external
links, shared messages (committed datatypes used by reference, a shared message
table), external data files, layout v1/v2, the implicit chunk index, huge or
filtered fractal heap objects, a fill value message v1 or an old one alone,
float16 and non-IEEE or bit-offset numbers, attribute values of compound, enum,
opaque, bitfield, array and region reference types; and any damaged structure
(bad signature, version, checksum, size, address past the end, a loop).

Only the standard library is imported (a test checks numpy and h5py stay out).
"""

from __future__ import annotations

from collections.abc import Callable

from .attributes import H5Attribute
from .base import Reader, Unsupported
from .datatypes import H5Fill, H5Filter, H5Type
from .heaps import GlobalHeaps
from .objects import H5Object
from .superblock import read_superblock

__all__ = ["H5Attribute", "H5File", "H5Fill", "H5Filter", "H5Object", "H5Type", "Unsupported"]

_CACHED = 4096


class H5File:
    """An HDF5 file's metadata, read through ``read_at(offset, length)``."""

    def __init__(self, read_at: Callable[[int, int], bytes], size: int) -> None:
        self.reader = Reader(read_at, size)
        root, end = read_superblock(self.reader)
        self.reader.end = end
        self._objects: dict[int, H5Object] = {}
        self.global_heaps = GlobalHeaps(self.reader)
        self.root = H5Object(self.reader, root, root=True)
        self._objects[root] = self.root

    def object(self, address: int) -> H5Object:
        """The object whose header is at ``address`` (cached by address)."""
        found = self._objects.get(address)
        if found is None:
            found = H5Object(self.reader, address)
            if len(self._objects) < _CACHED:
                self._objects[address] = found
        return found
