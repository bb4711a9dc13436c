"""The nodes of :mod:`~nczarr.ncfile.h5nodes` read by the numpy-free HDF5 reader.

:mod:`nczarr.ncfile.h5pure` reads the HDF5 structures; this module gives them the
netCDF-4 reader's view, as :mod:`~nczarr.ncfile.h5py_nodes` gives h5py's. Whatever
h5py would read or word differently is declined (:class:`Unsupported`), so that h5py
reads the file: user-defined types (h5py names them in the skip warning), filters
without a Zarr codec (h5py names them), attributes that are not netCDF's, a dimension
scale reached by no link.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import MetadataError
from ..translate.conventions import DTYPE_TO_NC
from ..translate.model import Attribute
from .h5dims import join
from .h5nodes import HIDDEN_ATTRIBUTES, ChunkVisit, FillInfo, TypeInfo
from .h5pure import H5File, Unsupported
from .values import text

__all__ = ["PureNode", "Unsupported", "pure_root"]

#: HDF5 filters with a Zarr codec (:mod:`~nczarr.ncfile.h5filters`); h5py names the others.
_KNOWN_FILTERS = frozenset({1, 2, 3, 307, 32001, 32015})
_FIXED_POINT, _FLOAT, _STRING, _VLEN = 0, 1, 3, 9
#: HDF5 string paddings h5py reads as stored up to the trailing NULs.
_NULL_TERM, _NULL_PAD = 0, 1
#: numpy's item size of a variable-length string (an object pointer), as h5py reports it.
_VLEN_ITEMSIZE = 8


def pure_root(read_at: Callable[[int, int], bytes], size: int | None, what: str) -> PureNode:
    """The root group of the file ``read_at`` reads (``size`` bytes long; ``what``
    names it in messages)."""
    if size is None:
        raise Unsupported("a file of unknown size")
    file = H5File(read_at, size)
    return PureNode(file, file.root, "/", {}, what)


def nc_kind(datatype: Any) -> str | None:
    """The netCDF type of an HDF5 datatype (``char``: a fixed-length string of one
    byte), or None."""
    if datatype.cls == _FIXED_POINT:
        return DTYPE_TO_NC.get(f"{'i' if datatype.signed else 'u'}{datatype.size}")
    if datatype.cls == _FLOAT:
        return DTYPE_TO_NC.get(f"f{datatype.size}")
    if datatype.cls == _STRING:
        return "char" if datatype.size == 1 else None
    if datatype.cls == _VLEN and datatype.vlen_string:
        return "string"
    return None


class PureNode:
    """A group or dataset read by :mod:`nczarr.ncfile.h5pure`."""

    def __init__(self, file: H5File, obj: Any, name: str, paths: dict[int, str], what: str) -> None:
        self._file = file
        self._what = what
        self._obj = obj
        self._paths = paths  # object address -> path, file-wide (scales are named by it)
        if paths.setdefault(obj.address, name) != name:  # HDF5 picks one of its names
            raise Unsupported(f"{name}: an object linked twice ({paths[obj.address]})")
        self.name = name
        self.is_group = bool(obj.is_group)
        self.is_dataset = bool(obj.is_dataset)  # (never both: H5Object refuses that)
        self._attrs: dict[str, Any] | None = None
        self._children: list[tuple[str, PureNode]] | None = None
        if self.is_dataset:
            self._dataset(obj)

    def _dataset(self, obj: Any) -> None:
        self.shape: tuple[int, ...] = tuple(obj.shape)
        self.maxshape: tuple[int | None, ...] = tuple(obj.maxshape)
        self.type = _type_info(obj.datatype)
        self.layout: str = obj.layout
        self.chunks: tuple[int, ...] | None = tuple(obj.chunks) if obj.chunks else None
        self.filters = [(f.code, tuple(f.values), f.name) for f in obj.filters]
        if any(code not in _KNOWN_FILTERS for code, _, _ in self.filters):
            raise Unsupported(f"{self.name}: a filter without a Zarr codec")
        fill = obj.fill
        user = fill.defined == "user" and fill.value is not None
        raw = fill.value if user else b"\x00" * self.type.itemsize
        if user and len(raw) != obj.datatype.size and self.type.kind != "string":
            raise Unsupported(f"{self.name}: a fill value of {len(raw)} bytes")
        self.fill = FillInfo(user=user, never=fill.time == "never", raw=raw)
        self.contiguous_offset: int | None = obj.contiguous_address

    def children(self) -> list[tuple[str, PureNode]]:
        """Listed once: the netCDF reader walks the tree twice (dimensions, then the
        model), and gets the same nodes, attributes read, the second time."""
        if self._children is None:
            self._children = []
            for link, address in self._obj.links():
                child = self._file.object(address)
                if child.is_group or child.is_dataset:
                    path = join(self.name, link)
                    node = PureNode(self._file, child, path, self._paths, self._what)
                    self._children.append((link, node))
        return self._children

    def _attributes(self) -> dict[str, Any]:
        if self._attrs is None:
            self._attrs = {a.name: a for a in self._obj.attributes()}
        return self._attrs

    def attributes(self, what: str) -> dict[str, Attribute]:
        return {
            name: _attribute(a, self._file)
            for name, a in self._attributes().items()
            if name not in HIDDEN_ATTRIBUTES
        }

    def text_attr(self, name: str) -> str | None:
        """One scalar string as h5py gives it, else declined: h5py shows an array as its
        repr, strips space padding and stops a null-terminated string at its first NUL."""
        attr = self._attributes().get(name)
        if attr is None:
            return None
        datatype = attr.datatype
        fixed = datatype.cls == _STRING and datatype.padding in (_NULL_TERM, _NULL_PAD)
        if attr.shape != () or not (fixed or nc_kind(datatype) == "string"):
            raise Unsupported(f"{self.name}: attribute {name!r} is not one plain string")
        (value,) = attr.values(self._file)
        value = value.rstrip(b"\x00") if fixed else value
        if b"\x00" in value:
            raise Unsupported(f"{self.name}: attribute {name!r} holds a NUL")
        return text(value)

    def ints_attr(self, name: str) -> tuple[int, ...] | None:
        attr = self._attributes().get(name)
        if attr is None:
            return None
        if attr.datatype.cls != _FIXED_POINT or attr.shape is None:
            raise Unsupported(f"{self.name}: attribute {name!r} is not integers")
        return tuple(attr.values(self._file))

    def attached_scale(self, axis: int) -> str | None:
        attr = self._attributes().get("DIMENSION_LIST")
        if attr is None:
            return None
        lists = attr.values(self._file)
        if attr.shape is None or len(lists) != len(self.shape):
            raise Unsupported(f"{self.name}: a DIMENSION_LIST not one list per axis")
        if not lists[axis]:
            return None
        path = self._paths.get(lists[axis][0])
        if path is None:
            raise Unsupported(f"{self.name}: a dimension scale no link reaches")
        return path

    def each_chunk(self, visit: ChunkVisit) -> None:
        """The walk of the chunk index; damage found on the way is a MetadataError (at
        the open, h5py then reads the file; a deferred walk reports it)."""
        try:
            self._obj.each_chunk(visit)
        except Unsupported as exc:
            raise MetadataError(
                f"{self._what}: variable {self.name!r}: corrupt HDF5 chunk index: {exc}"
            ) from None


def _type_info(datatype: Any) -> TypeInfo:
    kind = nc_kind(datatype)
    fixed = kind is None and datatype.cls == _STRING
    if kind is None and not fixed:
        raise Unsupported(f"a user-defined type ({datatype.label})")  # h5py names it
    return TypeInfo(
        kind=kind,
        itemsize=_VLEN_ITEMSIZE if kind == "string" else datatype.size,
        big_endian=datatype.big_endian and kind not in ("char", "byte", "ubyte"),
        fixed_text=fixed,
        label=datatype.label,
    )


def _attribute(attr: Any, file: H5File) -> Attribute:
    """One attribute in the model's form, as :mod:`~nczarr.ncfile.h5attrs` reads it
    with h5py: a fixed-length string of any length is ``char``, every stored byte but
    each element's trailing NULs."""
    kind = "char" if attr.datatype.cls == _STRING else nc_kind(attr.datatype)
    if kind is None:
        raise Unsupported(f"attribute {attr.name!r}: a user-defined type")  # h5py says so
    if attr.shape is None:
        return Attribute(attr.name, kind, "" if kind == "char" else ())
    values = attr.values(file)
    if kind == "char":
        return Attribute(attr.name, "char", "".join(text(v.rstrip(b"\x00")) for v in values))
    if kind == "string":
        if any(b"\x00" in v for v in values):  # h5py and netcdf-c stop at the NUL
            raise Unsupported(f"attribute {attr.name!r}: a string holding a NUL")
        return Attribute(attr.name, "string", tuple(text(v) for v in values))
    return Attribute(attr.name, kind, tuple(values))
