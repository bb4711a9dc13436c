"""Read a netCDF-4 (HDF5) file into the netCDF-4 model plus each variable's chunk index.

Why h5py and not a pure-Python HDF5 reader: h5py is the HDF5 library itself, so the
chunk index (``DatasetID.chunk_iter``: every stored chunk's offset, size and filter
mask in one B-tree walk), the filter pipeline as stored and the dimension-scale
references are read exactly as netcdf-c wrote them, for every B-tree version and
superblock the library knows, with the library's own checks (a corrupt superblock
or B-tree is an error, not a wrong answer). It reads a remote file through any
Python file object (h5py's ``fileobj`` driver), so on S3 the metadata costs a few
ranged reads of an fsspec file with a block cache while chunks are then read by us,
one ranged GET each. The pure-Python readers (pyfive and the like) read the same
structures but cover fewer HDF5 features, are slower on big B-trees and are less
maintained; nothing in this job needs their one advantage (no compiled dependency),
since h5py wheels exist for every platform nczarr supports.

What is verbatim: chunks whose stored filters have a Zarr codec that decodes the
same bytes (deflate -> ``zlib``, shuffle, fletcher32, zstd, bzip2, blosc, none), in
HDF5's order (the pipeline runs fletcher32 -> shuffle -> deflate, so the Zarr
filters list fletcher32 first). Contiguous data is cut into byte ranges along the
first dimension; compact data (inside the object header) is served as its raw
bytes. Re-encoded, and said so: variable-length strings, chunks whose filter mask
says a filter was skipped, filters without a Zarr codec (szip, n-bit,
scale-offset, unknown), and shuffle after fletcher32 on an 8-byte type (numcodecs'
shuffle refuses the 4 extra checksum bytes; the re-encoded chain drops fletcher32).

User-defined types (compound, variable-length, opaque, enum) are left out with a
``skipped array`` warning, so ``convert`` refuses them unless excluded. Enums are
refused rather than turned into their base type: the names of their values have no
place in Zarr that netcdf-c or xarray would read back.

An HDF5 file without dimension scales (not written by netcdf-c) is read as netcdf-c
reads it: each group's datasets get ``phony_dim_<n>`` dimensions, shared within the
group by length.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import MetadataError, MissingDependencyError
from ..translate.model import Attribute, Dataset, Dimension, Group, Variable
from .layout import (
    DEFAULT_FILLS,
    ChunkRef,
    SourceArray,
    chunk_key,
    cut_contiguous,
    rows_per_chunk,
)

__all__ = ["HIDDEN_ATTRIBUTES", "HDF5Reader", "import_h5py"]

#: Attributes netcdf-c writes for its own bookkeeping; not user attributes.
HIDDEN_ATTRIBUTES = frozenset(
    {
        "_Netcdf4Dimid",
        "_Netcdf4Coordinates",
        "DIMENSION_LIST",
        "REFERENCE_LIST",
        "CLASS",
        "NAME",
        "_NCProperties",
        "_nc3_strict",
        "_IsNetcdf4",
        "_SuperblockVersion",
    }
)
_DIM_ONLY = "This is a netCDF dimension but not a netCDF variable"
_NC_TYPES = {
    ("i", 1): "byte",
    ("u", 1): "ubyte",
    ("i", 2): "short",
    ("u", 2): "ushort",
    ("i", 4): "int",
    ("u", 4): "uint",
    ("i", 8): "int64",
    ("u", 8): "uint64",
    ("f", 4): "float",
    ("f", 8): "double",
}
_DEFLATE, _SHUFFLE, _FLETCHER32 = 1, 2, 3
_ZSTD, _BZIP2, _BLOSC = 32015, 307, 32001
_BLOSC_NAMES = ("blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd")


def import_h5py() -> Any:
    """h5py, or a MissingDependencyError saying how to install it."""
    try:
        import h5py
    except ImportError:
        raise MissingDependencyError(
            "reading netCDF-4 (HDF5) files needs h5py: pip install 'nczarr[netcdf]'"
        ) from None
    return h5py


def _ordered(node: Any, h5py: Any) -> list[str]:
    """Link names of a group in creation order (netcdf-c tracks it), else by name."""
    names: list[str] = []
    try:
        node.id.links.iterate(
            lambda n: names.append(n.decode("utf-8")), idx_type=h5py.h5.INDEX_CRT_ORDER
        )
    except Exception:  # creation order not tracked: name order
        return list(node.keys())
    return names


def _attr_names(obj: Any, h5py: Any) -> list[str]:
    names: list[str] = []
    try:
        h5py.h5a.iterate(
            obj.id, lambda n: names.append(n.decode("utf-8")), index_type=h5py.h5.INDEX_CRT_ORDER
        )
    except Exception:
        return list(obj.attrs.keys())
    return names


def _text(value: Any) -> str:
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).decode("utf-8", "surrogateescape")
    return str(value)


def nc_type(dtype: np.dtype, h5py: Any) -> str | None:
    """The netCDF type of an HDF5 dtype, or None for a user-defined type."""
    info = h5py.check_string_dtype(dtype)
    if info is not None:
        return "string" if info.length is None else ("char" if info.length == 1 else None)
    if h5py.check_enum_dtype(dtype) is not None or dtype.names or dtype.kind in "OV":
        return None
    return _NC_TYPES.get((dtype.kind, dtype.itemsize))


def _attribute(obj: Any, name: str, h5py: Any, what: str) -> Attribute | None:
    """One attribute in the model's form; None (with a reason) for a user-defined type."""
    attr_id = obj.attrs.get_id(name)
    dtype = attr_id.dtype
    kind = nc_type(dtype, h5py)
    if kind is None and h5py.check_string_dtype(dtype) is not None:
        kind = "char"  # netcdf-c writes a char attribute as one fixed-length string
    if kind is None:
        raise MetadataError(f"{what}: attribute {name!r} has a user-defined type ({dtype})")
    value = obj.attrs[name]
    if isinstance(value, h5py.Empty):
        return Attribute(name, kind, "" if kind == "char" else ())
    if kind == "char":
        arr = np.asarray(value).reshape(-1)
        return Attribute(name, "char", "".join(_text(v) for v in arr))
    if kind == "string":
        arr = np.asarray(value, dtype=object).reshape(-1)
        return Attribute(name, "string", tuple(_text(v) for v in arr))
    arr = np.asarray(value).reshape(-1)
    return Attribute(name, kind, tuple(v.item() for v in arr))


def _attributes(obj: Any, h5py: Any, what: str) -> dict[str, Attribute]:
    out = {}
    for name in _attr_names(obj, h5py):
        if name in HIDDEN_ATTRIBUTES:
            continue
        attr = _attribute(obj, name, h5py, what)
        if attr is not None:
            out[name] = attr
    return out


def _codecs(dcpl: Any, itemsize: int, h5py: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The stored filter pipeline as numcodecs configs in HDF5's order, or a reason
    it has no byte-identical Zarr form."""
    out: list[dict[str, Any]] = []
    for i in range(dcpl.get_nfilters()):
        code, _flags, values, name = dcpl.get_filter(i)
        if code == _DEFLATE:
            out.append({"id": "zlib", "level": int(values[0]) if values else 6})
        elif code == _SHUFFLE:
            out.append({"id": "shuffle", "elementsize": itemsize})
        elif code == _FLETCHER32:
            out.append({"id": "fletcher32"})
        elif code == _ZSTD:
            out.append({"id": "zstd", "level": int(values[0]) if values else 3})
        elif code == _BZIP2:
            out.append({"id": "bz2", "level": int(values[0]) if values else 9})
        elif code == _BLOSC and len(values) >= 7:
            out.append(
                {
                    "id": "blosc",
                    "cname": _BLOSC_NAMES[values[6]] if values[6] < 6 else "lz4",
                    "clevel": int(values[4]),
                    "shuffle": int(values[5]),
                    "blocksize": 0,
                }
            )
        else:
            label = _text(name) or str(code)
            return out, f"HDF5 filter {label!r} (id {code}) has no Zarr codec"
    ids = [c["id"] for c in out]
    if 4 % itemsize and "fletcher32" in ids and "shuffle" in ids[ids.index("fletcher32") :]:
        return out, (
            f"shuffle after fletcher32 on a {itemsize}-byte type leaves a buffer "
            "numcodecs' shuffle refuses"
        )
    return out, None


def _split(codecs: list[dict[str, Any]]) -> tuple[tuple[dict[str, Any], ...], dict | None]:
    """``(filters, compressor)``: the last codec is the compressor when it compresses."""
    if codecs and codecs[-1]["id"] in ("zlib", "zstd", "bz2", "blosc"):
        return tuple(codecs[:-1]), codecs[-1]
    return tuple(codecs), None


def _reencoded_chain(
    codecs: list[dict[str, Any]], itemsize: int, text: bool
) -> tuple[tuple[dict[str, Any], ...], dict | None]:
    """The codecs re-encoded chunks get: the stored ones a Zarr reader decodes (less
    fletcher32 when it made shuffle impossible), zlib when none compresses."""
    if text:
        return ({"id": "vlen-utf8"},), {"id": "zlib", "level": 1}
    kept = [c for c in codecs if c["id"] in ("zlib", "shuffle", "zstd", "bz2", "blosc")]
    if not kept or kept[-1]["id"] == "shuffle":
        kept = [{"id": "shuffle", "elementsize": itemsize}, {"id": "zlib", "level": 1}]
    return _split(kept)


class HDF5Reader:
    """The model and chunk index of one netCDF-4 file, and re-encoding of the chunks
    that cannot be copied verbatim. ``fileobj`` is a path or a binary file object."""

    def __init__(self, fileobj: Any, what: str) -> None:
        h5py = import_h5py()
        self._h5py = h5py
        self.what = what
        try:
            self.file = h5py.File(fileobj, "r")
        except OSError as exc:
            raise MetadataError(
                f"{what}: not a readable netCDF-4/HDF5 file (corrupt or truncated): {exc}"
            ) from None
        self.arrays: dict[str, SourceArray] = {}
        self.warnings: list[str] = []
        self.skipped: list[str] = []
        self.reencoded: dict[str, str] = {}
        self._datasets: dict[str, tuple[str, Variable]] = {}
        self._dim_by_id: dict[int, str] = {}
        self._dim_sizes: dict[str, int] = {}
        self._plain: list[Any] = []  # datasets that are not dimension scales (pass one)
        self._phony = 0
        try:
            self.dataset = self._read()
        except MetadataError:
            raise
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            raise MetadataError(f"{what}: corrupt netCDF-4/HDF5 file: {exc}") from None

    def close(self) -> None:
        self.file.close()

    # ---------------------------------------------------------------- model
    def _read(self) -> Dataset:
        self._scan_scales(self.file, "/")
        self._grow_unlimited()
        #: Written by netcdf-c (else plain HDF5: no default fill values, phony dims).
        self._netcdf = "_NCProperties" in self.file.attrs or bool(self._dim_sizes)
        #: netcdf-c's provenance attribute (``version=2,netcdf=4.9.2,hdf5=1.14.3``).
        self.ncproperties = _text(self.file.attrs.get("_NCProperties", b"")) or None
        root = self._group(self.file, "/", "/")
        return Dataset(
            root=root,
            layout="netcdf4",
            warnings=tuple(self.warnings),
            skipped=tuple(self.skipped),
        )

    def _is_scale(self, ds: Any) -> bool:
        return _text(ds.attrs.get("CLASS", b"")) == "DIMENSION_SCALE"

    def _scan_scales(self, node: Any, path: str) -> None:
        """Dimension ids and lengths of every dimension scale (pass one)."""
        h5py = self._h5py
        for name in _ordered(node, h5py):
            child = node.get(name)
            fqn = _join(path, name)
            if isinstance(child, h5py.Group):
                self._scan_scales(child, fqn)
            elif isinstance(child, h5py.Dataset) and not self._is_scale(child):
                self._plain.append(child)
            elif isinstance(child, h5py.Dataset):
                dimid = child.attrs.get("_Netcdf4Dimid")
                if dimid is not None:
                    self._dim_by_id[int(np.asarray(dimid).reshape(-1)[0])] = fqn
                self._dim_sizes[fqn] = child.shape[0] if child.shape else 0

    def _grow_unlimited(self) -> None:
        """A dimension's length is the longest extent of any variable along it (an
        unlimited dimension's scale may be shorter than the variables using it),
        known before the first variable is read (pass two)."""
        for ds in self._plain:
            for axis in range(ds.ndim):
                attached = ds.dims[axis].values()
                if attached:
                    name = attached[0].name
                    self._dim_sizes[name] = max(self._dim_sizes.get(name, 0), ds.shape[axis])
        self._plain.clear()

    def _group(self, node: Any, path: str, name: str) -> Group:
        h5py = self._h5py
        dims: dict[str, Dimension] = {}
        variables: dict[str, Variable] = {}
        groups: dict[str, Group] = {}
        phony: list[tuple[int, str]] = []
        datasets = []
        for child_name in _ordered(node, h5py):
            child = node.get(child_name)
            if isinstance(child, h5py.Group):
                groups[child_name] = self._group(child, _join(path, child_name), child_name)
            elif isinstance(child, h5py.Dataset):
                datasets.append((child_name, child))
        scales = [(n, d) for n, d in datasets if self._is_scale(d)]
        scales.sort(key=lambda item: int(np.asarray(item[1].attrs.get("_Netcdf4Dimid", 0))))
        for child_name, ds in scales:
            fqn = _join(path, child_name)
            unlimited = bool(ds.maxshape) and ds.maxshape[0] is None
            dims[child_name] = Dimension(child_name, self._dim_sizes[fqn], unlimited)
        for child_name, ds in datasets:
            if self._is_scale(ds) and _text(ds.attrs.get("NAME", b"")).startswith(_DIM_ONLY):
                continue
            try:
                var = self._variable(ds, path, child_name, dims, phony)
            except (OSError, RuntimeError, KeyError, ValueError) as exc:
                raise MetadataError(
                    f"{self.what}: variable {_join(path, child_name)!r}: corrupt "
                    f"netCDF-4/HDF5 data (chunk index or header): {exc}"
                ) from None
            if var is not None:
                variables[child_name] = var
        return Group(
            name=name if path != "/" else "/",
            path=path,
            dimensions=dims,
            attributes=_attributes(node, h5py, f"{self.what}: group {path!r}"),
            variables=variables,
            groups=groups,
        )

    def _dimensions(
        self,
        ds: Any,
        fqn: str,
        group: str,
        dims: dict[str, Dimension],
        phony: list[tuple[int, str]],
    ) -> tuple[str, ...]:
        """Dimension FQNs of a dataset: attached scales, netcdf-c's dimension ids, or
        phony dimensions for a plain HDF5 dataset."""
        if self._is_scale(ds) and ds.ndim == 1:
            return (fqn,)
        coords = ds.attrs.get("_Netcdf4Coordinates")
        if coords is not None:
            ids = [int(i) for i in np.asarray(coords).reshape(-1)]
            if all(i in self._dim_by_id for i in ids):
                return tuple(self._dim_by_id[i] for i in ids)
        out = []
        for axis in range(ds.ndim):
            attached = ds.dims[axis].values()
            if attached:
                out.append(attached[0].name)
            else:
                out.append(self._phony_dim(ds.shape[axis], group, dims, phony, out))
        return tuple(out)

    def _phony_dim(
        self,
        size: int,
        group: str,
        dims: dict[str, Dimension],
        phony: list[tuple[int, str]],
        taken: list[str],
    ) -> str:
        for length, name in phony:
            fqn = _join(group, name)
            if length == size and fqn not in taken:
                return fqn
        name = f"phony_dim_{self._phony}"
        self._phony += 1
        phony.append((size, name))
        dims[name] = Dimension(name, size)
        fqn = _join(group, name)
        self._dim_sizes[fqn] = size
        return fqn

    def _variable(
        self,
        ds: Any,
        group: str,
        name: str,
        dims: dict[str, Dimension],
        phony: list[tuple[int, str]],
    ) -> Variable | None:
        h5py = self._h5py
        fqn = _join(group, name)
        kind = nc_type(ds.dtype, h5py)
        if kind is None:
            what = "an enum" if h5py.check_enum_dtype(ds.dtype) is not None else "a user-defined"
            self.skipped.append(fqn)
            self.warnings.append(
                f"skipped array {fqn!r}: {what} type ({ds.dtype}) has no netCDF-4 atomic "
                "form in Zarr (compound, variable-length, opaque and enum types are not "
                "converted)"
            )
            return None
        where = f"{self.what}: variable {fqn!r}"
        dim_fqns = self._dimensions(ds, fqn, group, dims, phony)
        shape = tuple(
            max(self._dim_sizes.get(d, n), n) for d, n in zip(dim_fqns, ds.shape, strict=True)
        )
        for d, n in zip(dim_fqns, shape, strict=True):  # an unlimited dimension grows
            self._dim_sizes[d] = n
            parent, _, short = d.rpartition("/")
            if (parent or "/") == group and short in dims and dims[short].size < n:
                dims[short] = Dimension(short, n, dims[short].unlimited)
        attrs = _attributes(ds, h5py, where)
        fill = self._fill(attrs, kind, ds)
        dcpl = ds.id.get_create_plist()
        layout = dcpl.get_layout()
        itemsize = ds.dtype.itemsize
        codecs, problem = _codecs(dcpl, itemsize, h5py)
        text = kind == "string"
        endian = "big" if ds.dtype.byteorder == ">" else "little"
        source = SourceArray(fqn.strip("/"), fill=self._fill_bytes(fill, ds.dtype, kind))
        if layout == h5py.h5d.CHUNKED:
            chunks = ds.chunks
            if problem is None and not text:
                filters, compressor = _split(codecs)
                reason = self._index_chunks(ds, source, chunks)
            else:
                filters, compressor = _reencoded_chain(codecs, itemsize, text)
                reason = problem or "variable-length strings are stored as heap references"
                self._index_all(ds, source, chunks, shape)
        else:
            filters, compressor = (({"id": "vlen-utf8"},), None) if text else ((), None)
            chunks = (rows_per_chunk(shape, itemsize), *shape[1:]) if shape else ()
            reason = self._index_contiguous(ds, source, chunks, shape, layout, text)
        if reason is not None:
            source.reason = reason
            self.reencoded[source.path] = reason
        self.arrays[source.path] = source
        variable = Variable(
            name=name,
            path=fqn,
            type=kind,
            dimensions=dim_fqns,
            shape=shape,
            chunks=tuple(chunks) if shape else (),
            fill_value=fill,
            compressor=compressor,
            filters=filters,
            attributes=attrs,
            scalar=not shape,
            endian=endian if kind not in ("char", "string", "byte", "ubyte") else "little",
            text_storage="vlen-utf8" if text else None,
        )
        self._datasets[source.path] = (ds.name, variable)
        return variable

    def _fill(self, attrs: dict[str, Attribute], kind: str, ds: Any) -> Any:
        fill = attrs.get("_FillValue")
        if fill is not None:
            value = fill.value
            if kind == "string":
                return value[0] if value else ""
            if kind == "char":
                return value[:1]
            return value[0] if value else DEFAULT_FILLS[kind]
        if self._netcdf:
            return DEFAULT_FILLS[kind]
        # plain HDF5: netcdf-c reports a fill only when the file defines one
        dcpl = ds.id.get_create_plist()
        if dcpl.fill_value_defined() != self._h5py.h5d.FILL_VALUE_USER_DEFINED:
            return None
        value = np.zeros((), dtype=ds.dtype)
        dcpl.get_fill_value(value)
        return value.item() if kind not in ("char", "string") else _text(value.item())

    def _fill_bytes(self, fill: Any, dtype: np.dtype, kind: str) -> bytes:
        if fill is None:
            return b"\x00" * dtype.itemsize
        if kind == "string":
            return b""
        if kind == "char":
            return str(fill).encode("latin-1", "replace")[:1].ljust(1, b"\x00")
        return np.array(fill, dtype=dtype).tobytes()

    # ---------------------------------------------------------------- chunk index
    def _stored_chunks(self, ds: Any) -> Iterator[tuple[tuple[int, ...], int, int, int]]:
        """``(element offset, filter mask, byte offset, size)`` of every stored chunk."""
        found: list[tuple[tuple[int, ...], int, int, int]] = []
        if hasattr(ds.id, "chunk_iter"):
            ds.id.chunk_iter(
                lambda info: found.append(
                    (info.chunk_offset, info.filter_mask, info.byte_offset, info.size)
                )
            )
        else:  # pragma: no cover - HDF5 older than 1.12.3
            for i in range(ds.id.get_num_chunks()):
                info = ds.id.get_chunk_info(i)
                found.append((info.chunk_offset, info.filter_mask, info.byte_offset, info.size))
        return iter(found)

    def _index_chunks(self, ds: Any, source: SourceArray, chunks: tuple[int, ...]) -> str | None:
        skipped = 0
        for offset, mask, byte_offset, size in self._stored_chunks(ds):
            if byte_offset is None:
                continue
            coords = tuple(o // c for o, c in zip(offset, chunks, strict=True))
            source.chunks[chunk_key(coords)] = ChunkRef(byte_offset, size, reencode=mask != 0)
            skipped += mask != 0
        if skipped:
            return f"{skipped} chunk(s) stored with a filter skipped (HDF5 filter mask)"
        return None

    def _index_all(
        self, ds: Any, source: SourceArray, chunks: tuple[int, ...], shape: tuple[int, ...]
    ) -> None:
        for offset, _mask, byte_offset, size in self._stored_chunks(ds):
            if byte_offset is None:
                continue
            coords = tuple(o // c for o, c in zip(offset, chunks, strict=True))
            source.chunks[chunk_key(coords)] = ChunkRef(byte_offset, size, reencode=True)

    def _index_contiguous(
        self,
        ds: Any,
        source: SourceArray,
        chunks: tuple[int, ...],
        shape: tuple[int, ...],
        layout: int,
        text: bool,
    ) -> str | None:
        offset = ds.id.get_offset()
        stored = tuple(ds.shape)
        if text or offset is None or layout != self._h5py.h5d.CONTIGUOUS:
            # strings (heap references), compact data, or a dataset never written
            if offset is None and layout == self._h5py.h5d.CONTIGUOUS:
                return None
            rows = chunks[0] if chunks else 1
            count = math.ceil(stored[0] / rows) if stored else 1
            tail = (0,) * (len(stored) - 1)
            for i in range(count if not stored or stored[0] else 0):
                key = chunk_key((i, *tail)) if stored else "0"
                source.chunks[key] = ChunkRef(-1, 0, reencode=True)
            return "variable-length strings are stored as heap references" if text else None
        cut = cut_contiguous(offset, stored, ds.dtype.itemsize, chunks[0] if chunks else 1)
        source.chunks.update(cut)
        return None

    # ---------------------------------------------------------------- re-encoding
    def encode_chunk(self, path: str, coords: tuple[int, ...]) -> bytes:
        """The bytes of chunk ``coords`` of ``path`` in the variable's declared codecs,
        from its values as HDF5 decodes them (padded with fill to a whole chunk)."""
        import numcodecs

        h5name, var = self._datasets[path]
        ds = self.file[h5name]
        if not var.shape:
            values = np.asarray(ds[()])
            block = values.reshape(())
        else:
            sel = tuple(
                slice(c * n, min((c + 1) * n, s))
                for c, n, s in zip(coords, var.chunks, ds.shape, strict=True)
            )
            values = ds[sel]
            dtype = object if var.type == "string" else ds.dtype
            fill = var.fill_value if var.fill_value is not None else 0
            block = np.full(var.chunks, fill, dtype=dtype)
            block[tuple(slice(0, n) for n in values.shape)] = values
        if var.type == "string":
            block = np.vectorize(_text, otypes=[object])(block) if block.size else block
        data: Any = block
        for config in var.filters:
            data = numcodecs.get_codec(dict(config)).encode(data)
        if var.compressor is not None:
            data = numcodecs.get_codec(dict(var.compressor)).encode(data)
        return bytes(data) if not isinstance(data, np.ndarray) else data.tobytes()


def _join(group: str, name: str) -> str:
    return f"{group.rstrip('/')}/{name}"
