"""The HDF5 objects of a netCDF-4 file as the netCDF-4 reader sees them, whoever read them.

Two readers give these nodes: h5py, the HDF5 library itself (:mod:`~nczarr.ncfile.h5py_nodes`),
and a numpy-free reader of the metadata netcdf-c writes (:mod:`~nczarr.ncfile.h5pure_nodes`),
tried first because ``import h5py`` with numpy costs more than copying a few hundred MB
of chunks. :mod:`~nczarr.ncfile.hdf5` turns nodes into the netCDF-4 model without
asking which reader made them. The values here are plain Python (no numpy); a
number's bytes are packed and unpacked by its netCDF type in :mod:`~nczarr.ncfile.values`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..errors import MissingDependencyError
from ..records import record
from ..translate.conventions import NETCDF4_BOOKKEEPING

__all__ = [
    "HIDDEN_ATTRIBUTES",
    "ChunkVisit",
    "DatasetNode",
    "FillInfo",
    "Node",
    "TypeInfo",
    "import_h5py",
]

#: Attributes netcdf-c writes into an HDF5 file for its own bookkeeping; not user
#: attributes.
HIDDEN_ATTRIBUTES = NETCDF4_BOOKKEEPING

#: ``visit(element offset, filter mask, byte offset or None, stored size)``.
ChunkVisit = Callable[[tuple[int, ...], int, Any, int], None]


def import_h5py() -> Any:
    """h5py, or a MissingDependencyError saying how to install it."""
    try:
        import h5py
    except ImportError:
        raise MissingDependencyError(
            "reading netCDF-4 (HDF5) files needs h5py: pip install 'nczarr[netcdf]'"
        ) from None
    return h5py


@record
class TypeInfo:
    """A dataset's type: ``kind`` is its netCDF type (None: user-defined), ``fixed_text``
    a fixed-length string longer than one byte (libnetcdf reads it as ``string``)."""

    kind: str | None
    itemsize: int
    big_endian: bool
    fixed_text: bool = False
    label: str = ""
    enum: bool = False


@record
class FillInfo:
    """A dataset's HDF5 fill value: ``user`` when the file defines one, ``never`` for
    netcdf-c's no-fill mode, ``raw`` the bytes HDF5 pads chunks with."""

    user: bool
    never: bool
    raw: bytes


class Node(Protocol):
    """A group or dataset of the file."""

    name: str  # the HDF5 path, "/g/x"
    is_group: bool
    is_dataset: bool

    def children(self) -> list[tuple[str, Node]]:
        """The groups and datasets linked from a group, in creation order (else by name)."""
        ...

    def attributes(self, what: str) -> dict[str, Any]:
        """The user attributes (``Attribute`` of the model), in creation order."""
        ...

    def text_attr(self, name: str) -> str | None:
        """A text attribute (``CLASS``, ``NAME``, ``_NCProperties``), or None."""
        ...

    def ints_attr(self, name: str) -> tuple[int, ...] | None:
        """An integer attribute's values (``_Netcdf4Dimid``...), or None."""
        ...


class DatasetNode(Node, Protocol):
    """A dataset: its shape, type, storage and chunk index."""

    shape: tuple[int, ...]
    maxshape: tuple[int | None, ...]
    type: TypeInfo
    layout: str  # "chunked", "contiguous" or "compact"
    chunks: tuple[int, ...] | None
    filters: list[tuple[int, tuple[int, ...], str]]
    fill: FillInfo
    contiguous_offset: int | None

    def attached_scale(self, axis: int) -> str | None:
        """The HDF5 path of the first dimension scale attached to ``axis``, or None."""
        ...

    def each_chunk(self, visit: ChunkVisit) -> None:
        """``visit`` every stored chunk, in one walk of the chunk index (no list)."""
        ...
