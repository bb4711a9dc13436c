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
same bytes (:mod:`nczarr.ncfile.h5filters`). Contiguous data is cut into byte ranges
along the first dimension; compact data (inside the object header) is re-encoded
from its values (:mod:`nczarr.ncfile.h5chunks`). Re-encoded, and said so:
variable-length strings, chunks whose filter mask says a filter was skipped,
filters without a Zarr codec (szip, n-bit, scale-offset, unknown), shuffle
after fletcher32 on an 8-byte type (numcodecs' shuffle refuses the 4 extra checksum
bytes; the re-encoded chain drops fletcher32), and the chunks of a dataset shorter
than its unlimited dimension that reach past its extent, where netcdf-c reads fill
but HDF5 padded with something else (:func:`nczarr.ncfile.h5chunks.index_past_extent`).

User-defined types (compound, variable-length, opaque, enum) are left out with a
``skipped array`` warning, so ``convert`` refuses them unless excluded. Enums are
refused rather than turned into their base type: the names of their values have no
place in Zarr that netcdf-c or xarray would read back.

Dimensions are named as netcdf-c names them (:mod:`nczarr.ncfile.h5dims`),
including the ``phony_dim_<n>`` of an HDF5 file without dimension scales.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import MetadataError, StorageError
from ..translate.conventions import LAYOUT_NETCDF4
from ..translate.model import Attribute, Dataset, Dimension, Group, Variable
from .h5attrs import HIDDEN_ATTRIBUTES, attributes, import_h5py, nc_type, ordered_links, text
from .h5chunks import (
    VLEN_REASON,
    bound_metadata_cache,
    encode_chunk,
    index_chunked,
    index_contiguous,
    index_past_extent,
    past_fill,
)
from .h5dims import DIM_ONLY, DimensionIndex, is_scale, join, variable_name
from .h5filters import codecs, reencoded_chain, split_codecs
from .layout import DEFAULT_FILLS, ChunkIndex, SourceArray, chunk_grid, rows_per_chunk

__all__ = ["HIDDEN_ATTRIBUTES", "HDF5Reader", "import_h5py"]

_CORRUPT = (OSError, RuntimeError, KeyError, ValueError)


class HDF5Reader:
    """The model and chunk index of one netCDF-4 file, and re-encoding of the chunks
    that cannot be copied verbatim. ``fileobj`` is a path or a binary file object."""

    def __init__(self, fileobj: Any, what: str) -> None:
        h5py = import_h5py()
        self._h5py = h5py
        self.what = what
        self._reopening = threading.Lock()
        self._reopen: Callable[[], Any] | None = None  # set by park()
        try:
            self.file: Any = h5py.File(fileobj, "r")
        except OSError as exc:
            raise MetadataError(
                f"{what}: not a readable netCDF-4/HDF5 file (corrupt or truncated): {exc}"
            ) from None
        bound_metadata_cache(self.file.id)  # memory flat in the number of chunks
        self.arrays: dict[str, SourceArray] = {}
        self.warnings: list[str] = []
        self.skipped: list[str] = []
        self.reencoded: dict[str, str] = {}
        self._datasets: dict[str, tuple[str, Variable]] = {}
        try:
            self.dataset = self._read()
        except MetadataError:
            raise
        except _CORRUPT as exc:
            raise MetadataError(f"{what}: corrupt netCDF-4/HDF5 file: {exc}") from None

    def close(self) -> None:
        self.park(None)  # not opened again

    def park(self, reopen: Callable[[], Any] | None) -> None:
        """Close the HDF5 file and drop the library's objects; the model, the chunk
        index and the re-encoding notes stay. :meth:`encode_chunk` (the one use of the
        open file after the open) opens it again from ``reopen()``, a path or file
        object checked to be the file read first: no metadata is read again (``None``:
        never opened again)."""
        with self._reopening:
            if self.file is not None:
                self.file.close()
                self.file = None
            self._reopen = reopen
            self._dims = None

    def _open_file(self) -> Any:
        """The open HDF5 file (opened again after :meth:`park`)."""
        file = self.file
        if file is not None:
            return file
        with self._reopening:
            if self.file is None:
                if self._reopen is None:
                    raise StorageError(f"{self.what}: the netCDF file source is closed")
                fileobj = self._reopen()  # refuses a file changed since it was read
                try:
                    file = self._h5py.File(fileobj, "r")
                except OSError as exc:
                    raise MetadataError(f"{self.what}: cannot open the file again: {exc}") from None
                bound_metadata_cache(file.id)
                self.file = file
            return self.file

    # ---------------------------------------------------------------- model
    def _read(self) -> Dataset:
        self._dims = DimensionIndex(self.file, self._h5py)
        #: netcdf-c's provenance attribute (``version=2,netcdf=4.9.2,hdf5=1.14.3``).
        self.ncproperties = text(self.file.attrs.get("_NCProperties", b"")) or None
        root = self._group(self.file, "/", "/")
        return Dataset(
            root=root,
            layout=LAYOUT_NETCDF4,
            warnings=tuple(self.warnings),
            skipped=tuple(self.skipped),
        )

    def _group(self, node: Any, path: str, name: str) -> Group:
        """A group, its children first (netcdf-c names their phony dimensions first)."""
        h5py = self._h5py
        variables: dict[str, Variable] = {}
        groups: dict[str, Group] = {}
        datasets = []
        for child_name in ordered_links(node, h5py):
            child = node.get(child_name)
            if isinstance(child, h5py.Group):
                groups[child_name] = self._group(child, join(path, child_name), child_name)
            elif isinstance(child, h5py.Dataset):
                datasets.append((child_name, child))
        dims = self._dims.group_dimensions(path, datasets)
        for child_name, ds in datasets:
            if is_scale(ds) and text(ds.attrs.get("NAME", b"")).startswith(DIM_ONLY):
                continue
            var_name = variable_name(child_name)
            try:
                var = self._variable(ds, path, var_name, dims)
            except _CORRUPT as exc:
                raise MetadataError(
                    f"{self.what}: variable {join(path, var_name)!r}: corrupt "
                    f"netCDF-4/HDF5 data (chunk index or header): {exc}"
                ) from None
            if var is not None:
                variables[var_name] = var
        return Group(
            name=name if path != "/" else "/",
            path=path,
            dimensions=dims,
            attributes=attributes(node, h5py, f"{self.what}: group {path!r}"),
            variables=variables,
            groups=groups,
        )

    def _skip(self, ds: Any, fqn: str) -> None:
        what = "an enum" if self._h5py.check_enum_dtype(ds.dtype) is not None else "a user-defined"
        self.skipped.append(fqn)
        self.warnings.append(
            f"skipped array {fqn!r}: {what} type ({ds.dtype}) has no netCDF-4 atomic "
            "form in Zarr (compound, variable-length, opaque and enum types are not "
            "converted)"
        )

    def _variable(
        self, ds: Any, group: str, name: str, dims: dict[str, Dimension]
    ) -> Variable | None:
        h5py = self._h5py
        fqn = join(group, name)
        kind = nc_type(ds.dtype, h5py)
        fixed = kind is None and _fixed_length_text(ds.dtype, h5py)
        if fixed:
            kind = "string"  # as libnetcdf reads it: re-encoded as variable-length text
        if kind is None:
            self._skip(ds, fqn)
            return None
        dim_fqns = self._dims.of(ds, fqn, group, dims)
        shape = self._dims.grow(dim_fqns, ds.shape, group, dims)
        attrs = attributes(ds, h5py, f"{self.what}: variable {fqn!r}")
        fill = self._fill(attrs, kind, ds)
        source = SourceArray(fqn.strip("/"), fill=_fill_bytes(fill, ds.dtype, kind))
        chunks, filters, compressor, reason = self._storage(ds, source, kind, shape)
        if fixed and reason in (None, VLEN_REASON):
            reason = FIXED_TEXT_REASON
        endian = "big" if ds.dtype.byteorder == ">" else "little"
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
            text_storage="vlen-utf8" if kind == "string" else None,
        )
        past = self._past_extent(ds, source, variable)
        if past is not None:
            reason = past if reason is None else f"{reason}; {past}"
        if reason is not None:
            source.reason = reason
            self.reencoded[source.path] = reason
        self.arrays[source.path] = source
        self._datasets[source.path] = (ds.name, variable)
        return variable

    def _past_extent(self, ds: Any, source: SourceArray, var: Variable) -> str | None:
        """Chunks of a dataset shorter than its (unlimited) dimension: netcdf-c reads
        past the dataset's own extent as :func:`past_fill`, so the chunks reaching
        there are re-encoded unless HDF5 padded them with that value, and written
        when absent would read otherwise (a plain dataset or a no-fill variable has
        no fill value in the target). Returns why, or None."""
        extent = tuple(ds.shape)
        if not var.shape or extent == var.shape:
            return None
        dcpl = ds.id.get_create_plist()
        h5d = self._h5py.h5d
        padded = (
            var.fill_value is not None
            and var.type != "string"  # heap references: every chunk is re-encoded
            and dcpl.fill_value_defined() == h5d.FILL_VALUE_USER_DEFINED
            and dcpl.get_fill_time() != h5d.FILL_TIME_NEVER
            and _hdf5_fill(dcpl, ds.dtype) == source.fill
        )
        marked = index_past_extent(
            source,
            extent,
            var.shape,
            var.chunks,
            padded=padded,
            absent_reads_fill=var.fill_value is not None,
        )
        if not marked:
            return None
        return (
            f"{marked} chunk(s) reach past the dataset's stored extent {extent} along a "
            f"longer unlimited dimension, read there as netCDF's fill "
            f"{past_fill(var)!r}"
        )

    def _storage(
        self, ds: Any, source: SourceArray, kind: str, shape: tuple[int, ...]
    ) -> tuple[tuple[int, ...], tuple[dict[str, Any], ...], dict[str, Any] | None, str | None]:
        """``(chunks, filters, compressor, reason)`` of a dataset, its chunks indexed
        into ``source``; ``reason`` says why some chunks are re-encoded (or None)."""
        h5py = self._h5py
        dcpl = ds.id.get_create_plist()
        layout = dcpl.get_layout()
        itemsize = ds.dtype.itemsize
        is_text = kind == "string"
        if layout == h5py.h5d.CHUNKED:
            source.chunks = ChunkIndex(chunk_grid(shape, ds.chunks))
            configs, problem = codecs(dcpl, itemsize)
            if problem is None and not is_text:
                filters, compressor = split_codecs(configs)
                return (
                    ds.chunks,
                    filters,
                    compressor,
                    index_chunked(ds, source, ds.chunks, reencode_all=False),
                )
            filters, compressor = reencoded_chain(configs, itemsize, is_text)
            index_chunked(ds, source, ds.chunks, reencode_all=True)
            return ds.chunks, filters, compressor, problem or VLEN_REASON
        filters = ({"id": "vlen-utf8"},) if is_text else ()
        # a 0-long axis gets chunks of 1 (Zarr readers refuse a 0 chunk length)
        chunks = (rows_per_chunk(shape, itemsize), *(max(1, n) for n in shape[1:])) if shape else ()
        contiguous = layout == h5py.h5d.CONTIGUOUS
        source.chunks = ChunkIndex(chunk_grid(shape, chunks))
        return chunks, filters, None, index_contiguous(ds, source, chunks, contiguous, is_text)

    def _fill(self, attrs: dict[str, Attribute], kind: str, ds: Any) -> Any:
        """The fill value netcdf-c reports: ``_FillValue``, else the HDF5 fill value
        when the file defines one (netcdf-c defines its default fill for every
        variable it fills), else None (a plain HDF5 dataset, or netcdf-c's no-fill)."""
        fill = attrs.get("_FillValue")
        if fill is not None:
            value = fill.value
            if kind == "string":  # a fixed-length string's is a char attribute: text
                return value if isinstance(value, str) else (value[0] if value else "")
            if kind == "char":
                return value[:1]
            return value[0] if value else DEFAULT_FILLS[kind]
        if kind == "string":
            return ""  # netcdf-c's empty string; HDF5 stores a null heap reference
        dcpl = ds.id.get_create_plist()
        if dcpl.fill_value_defined() != self._h5py.h5d.FILL_VALUE_USER_DEFINED:
            return None
        if dcpl.get_fill_time() == self._h5py.h5d.FILL_TIME_NEVER:
            return None  # netcdf-c's no-fill mode
        value = np.zeros((), dtype=ds.dtype)
        dcpl.get_fill_value(value)
        return text(value.item()).rstrip("\x00") if kind == "char" else value.item()

    # ---------------------------------------------------------------- re-encoding
    def encode_chunk(self, path: str, coords: tuple[int, ...]) -> bytes:
        """The bytes of chunk ``coords`` of ``path`` in the variable's declared codecs,
        from its values as HDF5 decodes them (padded with fill to a whole chunk)."""
        h5name, var = self._datasets[path]
        return encode_chunk(self._open_file()[h5name], var, coords)


#: Why a fixed-length string dataset's chunks are re-encoded.
FIXED_TEXT_REASON = "fixed-length strings are written as netCDF strings (variable-length)"


def _fixed_length_text(dtype: np.dtype, h5py: Any) -> bool:
    """A fixed-length string dataset longer than one byte (``|S3``: the usual text of
    HDF5 products netcdf-c did not write, which libnetcdf reads as ``string``; netcdf-c
    itself writes ``char`` one byte a value and ``string`` variable-length). Attributes
    of this type stay ``char`` (netcdf-c writes a char attribute so)."""
    info = h5py.check_string_dtype(dtype)
    return info is not None and info.length is not None and info.length > 1


def _hdf5_fill(dcpl: Any, dtype: np.dtype) -> bytes:
    """The bytes of the fill value HDF5 pads a dataset's chunks with."""
    value = np.zeros((), dtype=dtype)
    dcpl.get_fill_value(value)
    return value.tobytes()


def _fill_bytes(fill: Any, dtype: np.dtype, kind: str) -> bytes:
    """One fill value's bytes as stored (pads the ragged end of cut contiguous data)."""
    if fill is None:
        return b"\x00" * dtype.itemsize
    if kind == "string":
        return b""
    if kind == "char":
        return str(fill).encode("latin-1", "replace")[:1].ljust(1, b"\x00")
    return np.array(fill, dtype=dtype).tobytes()
