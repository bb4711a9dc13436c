"""The nodes of :mod:`~nczarr.ncfile.h5nodes` read by h5py, the HDF5 library itself.

Every HDF5 file h5py opens is read this way when the numpy-free reader
(:mod:`~nczarr.ncfile.h5pure_nodes`) declines it; re-encoded chunks are always decoded
by h5py. Values leave here as plain Python (``.item()``), as the other reader gives them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MetadataError
from .h5attrs import attributes, nc_type, ordered_links
from .h5nodes import ChunkVisit, FillInfo, TypeInfo
from .values import text

__all__ = ["H5pyNode", "root_node"]

#: What h5py raises on a damaged header (a MetadataError naming the variable).
_DAMAGE = (OSError, RuntimeError, KeyError, ValueError, TypeError)


def root_node(file: Any, h5py: Any, what: str) -> H5pyNode:
    """The root group of an open ``h5py.File`` (``what``: the file, for messages)."""
    return H5pyNode(file, h5py, what, {})


class H5pyNode:
    """A group or dataset read by h5py (see :class:`~nczarr.ncfile.h5nodes.DatasetNode`).

    ``names`` (one dict for every node of a file) holds the path of each dataset
    listed so far by its h5py object id (None: linked twice): a scale attached to an
    axis comes back from HDF5 without its path, and asking h5py for it (``.name``)
    searches the whole file, once per axis of every dataset (2,000 variables: 101 s).
    A scale linked twice, or reached by no listing, is still named by HDF5."""

    def __init__(self, obj: Any, h5py: Any, what: str, names: dict[Any, str | None]) -> None:
        self._obj = obj
        self._h5py = h5py
        self._what = what
        self._names = names
        self._children: list[tuple[str, H5pyNode]] | None = None
        self.name: str = obj.name
        self.is_group = isinstance(obj, h5py.Group)
        self.is_dataset = isinstance(obj, h5py.Dataset)
        if self.is_dataset:
            try:
                self._dataset(obj)
            except MetadataError:
                raise  # already says what is wrong (a null dataspace)
            except _DAMAGE as exc:
                raise MetadataError(
                    f"{what}: variable {self.name!r}: corrupt netCDF-4/HDF5 data (header): {exc}"
                ) from None

    def _dataset(self, ds: Any) -> None:
        h5py = self._h5py
        if ds.shape is None:
            raise MetadataError(
                f"{self._what}: dataset {ds.name!r} has a null dataspace: no netCDF variable"
            )
        self.shape: tuple[int, ...] = tuple(ds.shape)
        self.maxshape: tuple[int | None, ...] = tuple(ds.maxshape or ())
        self.type = _type_info(ds.dtype, h5py)
        dcpl = ds.id.get_create_plist()
        layout = dcpl.get_layout()
        self.layout = (
            "chunked"
            if layout == h5py.h5d.CHUNKED
            else "contiguous"
            if layout == h5py.h5d.CONTIGUOUS
            else "compact"
        )
        self.chunks: tuple[int, ...] | None = ds.chunks
        self.filters = [
            (code, tuple(int(v) for v in values), text(name))
            for code, _flags, values, name in (
                dcpl.get_filter(i) for i in range(dcpl.get_nfilters())
            )
        ]
        raw = np.zeros((), dtype=ds.dtype)
        user = dcpl.fill_value_defined() == h5py.h5d.FILL_VALUE_USER_DEFINED
        if user and self.type.kind not in (None, "string"):  # a string's: netcdf-c's ""
            dcpl.get_fill_value(raw)  # (HDF5 refuses an undefined one)
        self.fill = FillInfo(
            user=user, never=dcpl.get_fill_time() == h5py.h5d.FILL_TIME_NEVER, raw=raw.tobytes()
        )
        self.contiguous_offset: int | None = ds.id.get_offset()

    def children(self) -> list[tuple[str, H5pyNode]]:
        """Listed once (the netCDF reader walks the tree twice)."""
        if self._children is None:
            h5py = self._h5py
            self._children = []
            for name in ordered_links(self._obj, h5py):
                child = self._obj.get(name)
                if isinstance(child, h5py.Group | h5py.Dataset):
                    node = H5pyNode(child, h5py, self._what, self._names)
                    self._children.append((name, node))
                if isinstance(child, h5py.Dataset):
                    known = self._names.setdefault(child.id, node.name)
                    if known is not None and known != node.name:
                        self._names[child.id] = None  # linked twice: HDF5's path
        return self._children

    def attributes(self, what: str) -> dict[str, Any]:
        return attributes(self._obj, self._h5py, what)

    def text_attr(self, name: str) -> str | None:
        value = self._obj.attrs.get(name)
        return None if value is None else text(value)

    def ints_attr(self, name: str) -> tuple[int, ...] | None:
        value = self._obj.attrs.get(name)
        return None if value is None else tuple(int(v) for v in np.asarray(value).reshape(-1))

    def attached_scale(self, axis: int) -> str | None:
        attached = self._obj.dims[axis].values()
        if not attached:
            return None
        name = self._names.get(attached[0].id)
        return attached[0].name if name is None else name  # (a scale no listing reached)

    def each_chunk(self, visit: ChunkVisit) -> None:
        """One walk of the chunk B-tree; HDF5's lock is held while ``visit`` runs: it
        must not wait on another thread."""
        ds_id = self._obj.id
        if hasattr(ds_id, "chunk_iter"):
            ds_id.chunk_iter(
                lambda info: visit(info.chunk_offset, info.filter_mask, info.byte_offset, info.size)
            )
        else:  # pragma: no cover - HDF5 older than 1.12.3
            for i in range(ds_id.get_num_chunks()):
                info = ds_id.get_chunk_info(i)
                visit(info.chunk_offset, info.filter_mask, info.byte_offset, info.size)


def _type_info(dtype: np.dtype, h5py: Any) -> TypeInfo:
    kind = nc_type(dtype, h5py)
    info = h5py.check_string_dtype(dtype)
    fixed = kind is None and info is not None and info.length is not None and info.length > 1
    return TypeInfo(
        kind=kind,
        itemsize=dtype.itemsize,
        big_endian=dtype.byteorder == ">",
        fixed_text=fixed,
        label=str(dtype),
        enum=h5py.check_enum_dtype(dtype) is not None,
    )
