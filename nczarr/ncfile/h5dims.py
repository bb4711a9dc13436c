"""Which netCDF dimensions the datasets of an HDF5 file have, as netcdf-c reads them.

Dimension scales are netCDF dimensions (named by their dataset); a dataset's axes
are the scales attached to them (``DIMENSION_LIST``) or the ids of netcdf-c's
``_Netcdf4Coordinates``. An unlimited dimension is as long as the longest dataset
along it, known before the first variable is read.

An axis with no scale (an HDF5 file not written by netcdf-c, or a plain dataset
added to one) gets a dimension as netcdf-c 4.10 gives it, the oracle for these
files: the first dimension *of the dataset's own group* with the axis's length
(a scale's own extent, not the longer length an unlimited dimension may have)
and the same unlimited-ness (HDF5 max size unlimited) that no earlier axis of the
dataset took, else a new ``phony_dim_<id>``. Ids continue after the dimension
scales' ids, file-wide; groups are matched children first, datasets in link order.
A new phony dimension is unlimited when the axis is, and also when it is 0 long
(netcdf-c reports such dimensions as unlimited).
"""

from __future__ import annotations

from typing import Any

from ..translate.model import Dimension

__all__ = ["DIM_ONLY", "DimensionIndex", "join", "variable_name", "is_scale"]

#: Start of the ``NAME`` of a scale that is a dimension but not a netCDF variable.
DIM_ONLY = "This is a netCDF dimension but not a netCDF variable"
#: netcdf-c's dataset name prefix for a variable named as a dimension that is not
#: its coordinate variable (``x(y, x)``): the dimension's scale holds the name.
NON_COORD = "_nc4_non_coord_"


def variable_name(link: str) -> str:
    """The netCDF variable name of a dataset's link name."""
    return link[len(NON_COORD) :] if link.startswith(NON_COORD) else link


def join(group: str, name: str) -> str:
    """The FQN of ``name`` in ``group``."""
    return f"{group.rstrip('/')}/{name}"


def is_scale(ds: Any) -> bool:
    """Whether an HDF5 dataset node is a dimension scale."""
    return ds.text_attr("CLASS") == "DIMENSION_SCALE"


def _dimid(ds: Any) -> int | None:
    value = ds.ints_attr("_Netcdf4Dimid")
    return value[0] if value else None


class DimensionIndex:
    """The dimensions of one HDF5 file: lengths by FQN, netcdf-c's dimension ids, and
    the dimension FQNs of each dataset (phony dimensions made as they are met)."""

    def __init__(self, root: Any) -> None:
        self.sizes: dict[str, int] = {}
        #: The length netcdf-c matches an unscaled axis against: a scale's own extent
        #: (an unlimited dimension may be longer), a phony dimension's length.
        self._match_len: dict[str, int] = {}
        self._by_id: dict[int, str] = {}
        self._plain: list[Any] = []
        self._scan(root, "/")
        self._grow_unlimited()
        ids = [*self._by_id, len(self.sizes) - 1]
        self._next_id = max(ids) + 1

    def _scan(self, node: Any, path: str) -> None:
        """Ids and lengths of every dimension scale (pass one)."""
        for name, child in node.children():
            fqn = join(path, name)
            if child.is_group:
                self._scan(child, fqn)
            elif child.is_dataset and not is_scale(child):
                self._plain.append(child)
            elif child.is_dataset:
                dimid = _dimid(child)
                if dimid is not None:
                    self._by_id[dimid] = fqn
                self.sizes[fqn] = child.shape[0] if child.shape else 0
                self._match_len[fqn] = self.sizes[fqn]

    def _grow_unlimited(self) -> None:
        """A dimension's length is the longest extent of any dataset along it (an
        unlimited dimension's scale may be shorter than the variables using it)."""
        for ds in self._plain:
            for axis in range(len(ds.shape)):
                name = ds.attached_scale(axis)
                if name is not None:
                    self.sizes[name] = max(self.sizes.get(name, 0), ds.shape[axis])
        self._plain.clear()

    def group_dimensions(self, path: str, datasets: list[tuple[str, Any]]) -> dict[str, Dimension]:
        """The dimensions the scales among a group's ``(name, dataset)`` define, in
        netcdf-c's dimension id order."""
        scales = [(n, d) for n, d in datasets if is_scale(d)]
        scales.sort(key=lambda item: _dimid(item[1]) or 0)
        dims = {}
        for name, ds in scales:
            unlimited = bool(ds.maxshape) and ds.maxshape[0] is None
            dims[name] = Dimension(name, self.sizes[join(path, name)], unlimited)
        return dims

    def of(self, ds: Any, fqn: str, group: str, dims: dict[str, Dimension]) -> tuple[str, ...]:
        """Dimension FQNs of a dataset of ``group`` (whose ``dims`` a phony dimension
        joins): its own scale, netcdf-c's dimension ids, attached scales, or matched
        and phony dimensions."""
        if is_scale(ds) and len(ds.shape) == 1:
            return (fqn,)
        ids = ds.ints_attr("_Netcdf4Coordinates")
        if ids is not None and all(i in self._by_id for i in ids):
            return tuple(self._by_id[i] for i in ids)
        out: list[str] = []
        for axis in range(len(ds.shape)):
            attached = ds.attached_scale(axis)
            if attached is not None:
                out.append(attached)
            else:
                unlimited = ds.maxshape[axis] is None
                out.append(self._unscaled(ds.shape[axis], unlimited, group, dims, out))
        return tuple(out)

    def _unscaled(
        self, size: int, unlimited: bool, group: str, dims: dict[str, Dimension], taken: list[str]
    ) -> str:
        """The dimension netcdf-c gives an axis without a scale (see the module)."""
        for name, dim in dims.items():
            fqn = join(group, name)
            length = self._match_len.get(fqn, dim.size)
            if length == size and dim.unlimited == unlimited and fqn not in taken:
                return fqn
        name = f"phony_dim_{self._next_id}"
        self._next_id += 1
        dims[name] = Dimension(name, size, unlimited or size == 0)
        fqn = join(group, name)
        self.sizes[fqn] = self._match_len[fqn] = size
        return fqn

    def grow(
        self, dim_fqns: tuple[str, ...], shape: tuple[int, ...], group: str, dims: dict
    ) -> tuple[int, ...]:
        """The variable's shape: each axis as long as its dimension (an unlimited one
        grows to the longest variable along it; ``dims`` of ``group`` follow)."""
        out = tuple(max(self.sizes.get(d, n), n) for d, n in zip(dim_fqns, shape, strict=True))
        for d, n in zip(dim_fqns, out, strict=True):
            self.sizes[d] = n
            parent, _, short = d.rpartition("/")
            if (parent or "/") == group and short in dims and dims[short].size < n:
                dims[short] = Dimension(short, n, dims[short].unlimited)
        return out
