"""Read a netCDF-4 (HDF5) file into the netCDF-4 model plus each variable's chunk index.

Two readers, one model: the HDF5 objects come as nodes (:mod:`nczarr.ncfile.h5nodes`)
from a numpy-free reader of the metadata netcdf-c writes (:mod:`nczarr.ncfile.h5pure`,
tried first when the caller gives ``read_at``), or from h5py, the HDF5 library itself
(:mod:`nczarr.ncfile.h5py_nodes`), whenever the first declines the file: anything
outside the subset it reads (the implicit chunk index, soft links, user-defined types,
shared messages...) or anything inconsistent, so a corrupt file gets the library's
own verdict. Why two: ``import h5py`` with numpy costs ~0.22 s, as much as copying
300 MB of chunks, and the copy is the whole job (docs/performance.md); h5py stays the
reference (it reads every B-tree version and superblock, and decodes every chunk that
is re-encoded). The pure-Python HDF5 readers on PyPI (pyfive and the like) import
numpy, so they would not save that time. On S3 both read the metadata through an
fsspec file with a block cache (a few ranged reads) while chunks are then read by us,
one ranged GET each.

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

from ..errors import MetadataError, StorageError
from ..translate.conventions import FILLVALUE, LAYOUT_NETCDF4
from ..translate.model import Attribute, Dataset, Dimension, Group, Variable
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
from .h5nodes import HIDDEN_ATTRIBUTES, import_h5py
from .h5pure_nodes import pure_root
from .layout import DEFAULT_FILLS, ChunkIndex, SourceArray, chunk_grid, rows_per_chunk
from .values import fill_misfit, pack_value, unpack_value

__all__ = ["HIDDEN_ATTRIBUTES", "HDF5Reader", "import_h5py"]

_CORRUPT = (OSError, RuntimeError, KeyError, ValueError)


class HDF5Reader:
    """The model and chunk index of one netCDF-4 file, and re-encoding of the chunks
    that cannot be copied verbatim. ``fileobj`` is a path or a binary file object for
    h5py; ``read_at(offset, length)`` and ``size``, when given, let the numpy-free
    reader try the file first (h5py reads it when that reader declines, and opens
    ``reopen()`` when it first decodes a chunk)."""

    def __init__(
        self,
        fileobj: Any,
        what: str,
        read_at: Callable[[int, int], bytes] | None = None,
        size: int | None = None,
        reopen: Callable[[], Any] | None = None,
    ) -> None:
        self.what = what
        self._h5py: Any = None
        self._reopening = threading.Lock()
        #: What h5py opens when it first needs the file (``fileobj`` itself unless the
        #: caller checks the file is still the one read); reset by :meth:`park`.
        self._reopen: Callable[[], Any] | None = reopen or (lambda: fileobj)
        self.file: Any = None
        #: Which reader read the metadata: "pure" or "h5py".
        self.backend = "h5py"
        dataset = self._read_pure(read_at, size) if read_at is not None else None
        if dataset is None:
            dataset = self._read_h5py(fileobj)
        self.dataset = dataset

    def _reset(self) -> None:
        self.arrays: dict[str, SourceArray] = {}
        self.warnings: list[str] = []
        self.skipped: list[str] = []
        self.reencoded: dict[str, str] = {}
        self._datasets: dict[str, tuple[str, Variable]] = {}
        self._decodes = False  # some chunk is served from h5py's decoding (compact data)

    def _read_pure(self, read_at: Callable[[int, int], bytes], size: Any) -> Dataset | None:
        """The model by the numpy-free reader, or None when it declines the file."""
        self._reset()
        try:
            dataset = self._read(pure_root(read_at, size, self.what))
        except StorageError:
            raise  # the file could not be read: h5py would not do better
        except Exception:  # declined (Unsupported), damaged, or a slip of this reader:
            return None  # h5py reads it, or says what is wrong (the tests pin "pure")
        if self.reencoded or self._decodes:
            import_h5py()  # h5py decodes what is re-encoded: refused now if missing
        self.backend = "pure"
        return dataset

    def _read_h5py(self, fileobj: Any) -> Dataset:
        h5py = self._h5py = import_h5py()
        try:
            self.file = h5py.File(fileobj, "r")
        except OSError as exc:
            raise MetadataError(
                f"{self.what}: not a readable netCDF-4/HDF5 file (corrupt or truncated): {exc}"
            ) from None
        bound_metadata_cache(self.file.id)  # memory flat in the number of chunks
        from .h5py_nodes import root_node

        self._reset()
        try:
            return self._read(root_node(self.file, h5py, self.what))
        except MetadataError:
            raise
        except _CORRUPT as exc:
            raise MetadataError(f"{self.what}: corrupt netCDF-4/HDF5 file: {exc}") from None

    def close(self) -> None:
        self.park(None)  # not opened again

    def park(self, reopen: Callable[[], Any] | None) -> None:
        """Close the HDF5 file (if h5py has it open) and drop the library's objects; the
        model, the chunk index and the re-encoding notes stay. :meth:`encode_chunk` (the
        one use of the open file after the open) opens it with h5py from ``reopen()``, a
        path or file object checked to be the file read first: no metadata is read
        again (``None``: never opened again)."""
        with self._reopening:
            if self.file is not None:
                self.file.close()
                self.file = None
            self._reopen = reopen

    def _open_file(self) -> Any:
        """The file open in h5py (opened again after :meth:`park`, or first opened for a
        file the numpy-free reader read)."""
        file = self.file
        if file is not None:
            return file
        with self._reopening:
            if self.file is None:
                if self._reopen is None:
                    raise StorageError(f"{self.what}: the netCDF file source is closed")
                fileobj = self._reopen()  # refuses a file changed since it was read
                h5py = self._h5py = self._h5py or import_h5py()
                try:
                    file = h5py.File(fileobj, "r")
                except OSError as exc:
                    raise MetadataError(f"{self.what}: cannot open the file again: {exc}") from None
                bound_metadata_cache(file.id)
                self.file = file
            return self.file

    # ---------------------------------------------------------------- model
    def _read(self, root_node: Any) -> Dataset:
        self._dims = DimensionIndex(root_node)
        #: netcdf-c's provenance attribute (``version=2,netcdf=4.9.2,hdf5=1.14.3``).
        self.ncproperties = root_node.text_attr("_NCProperties") or None
        root = self._group(root_node, "/", "/")
        self._dims = None  # no node kept past the open
        return Dataset(
            root=root,
            layout=LAYOUT_NETCDF4,
            warnings=tuple(self.warnings),
            skipped=tuple(self.skipped),
        )

    def _group(self, node: Any, path: str, name: str) -> Group:
        """A group, its children first (netcdf-c names their phony dimensions first)."""
        variables: dict[str, Variable] = {}
        groups: dict[str, Group] = {}
        datasets = []
        for child_name, child in node.children():
            if child.is_group:
                groups[child_name] = self._group(child, join(path, child_name), child_name)
            elif child.is_dataset:
                datasets.append((child_name, child))
        dims = self._dims.group_dimensions(path, datasets)
        for child_name, ds in datasets:
            if is_scale(ds) and (ds.text_attr("NAME") or "").startswith(DIM_ONLY):
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
            attributes=node.attributes(f"{self.what}: group {path!r}"),
            variables=variables,
            groups=groups,
        )

    def _skip(self, fqn: str, reason: str) -> None:
        """Leave variable ``fqn`` out, saying why (a convert then refuses unless it is
        excluded)."""
        self.skipped.append(fqn)
        self.warnings.append(f"skipped array {fqn!r}: {reason}")

    def _skip_type(self, ds: Any, fqn: str) -> None:
        what = "an enum" if ds.type.enum else "a user-defined"
        self._skip(
            fqn,
            f"{what} type ({ds.type.label}) has no netCDF-4 atomic form in Zarr (compound, "
            "variable-length, opaque and enum types are not converted)",
        )

    def _variable(
        self, ds: Any, group: str, name: str, dims: dict[str, Dimension]
    ) -> Variable | None:
        fqn = join(group, name)
        kind = ds.type.kind
        fixed = ds.type.fixed_text
        if fixed:
            kind = "string"  # as libnetcdf reads it: re-encoded as variable-length text
        if kind is None:
            self._skip_type(ds, fqn)
            return None
        dim_fqns = self._dims.of(ds, fqn, group, dims)
        shape = self._dims.grow(dim_fqns, ds.shape, group, dims)
        attrs = ds.attributes(f"{self.what}: variable {fqn!r}")
        if misfit := fill_misfit(attrs.get(FILLVALUE), kind):
            self._skip(fqn, misfit)
            return None
        fill = self._fill(attrs, kind, ds)
        source = SourceArray(fqn.strip("/"), fill=_fill_bytes(fill, ds, kind))
        chunks, filters, compressor, reason = self._storage(ds, source, kind, shape)
        if fixed and reason in (None, VLEN_REASON):
            reason = FIXED_TEXT_REASON
        endian = "big" if ds.type.big_endian else "little"
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
        padded = (
            var.fill_value is not None
            and var.type != "string"  # heap references: every chunk is re-encoded
            and ds.fill.user
            and not ds.fill.never
            and ds.fill.raw == source.fill
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
        itemsize = ds.type.itemsize
        is_text = kind == "string"
        if ds.layout == "chunked":
            source.chunks = ChunkIndex(chunk_grid(shape, ds.chunks))
            configs, problem = codecs(ds.filters, itemsize)
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
        self._decodes |= ds.layout == "compact"  # values in the header: h5py serves them
        filters = ({"id": "vlen-utf8"},) if is_text else ()
        # a 0-long axis gets chunks of 1 (Zarr readers refuse a 0 chunk length)
        chunks = (rows_per_chunk(shape, itemsize), *(max(1, n) for n in shape[1:])) if shape else ()
        contiguous = ds.layout == "contiguous"
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
        if not ds.fill.user:
            return None
        if ds.fill.never:
            return None  # netcdf-c's no-fill mode
        return unpack_value(ds.fill.raw, kind, ds.type.big_endian)

    # ---------------------------------------------------------------- re-encoding
    def encode_chunk(self, path: str, coords: tuple[int, ...]) -> bytes:
        """The bytes of chunk ``coords`` of ``path`` in the variable's declared codecs,
        from its values as HDF5 decodes them (padded with fill to a whole chunk)."""
        h5name, var = self._datasets[path]
        return encode_chunk(self._open_file()[h5name], var, coords)


#: Why a fixed-length string dataset's chunks are re-encoded.
FIXED_TEXT_REASON = "fixed-length strings are written as netCDF strings (variable-length)"


def _fill_bytes(fill: Any, ds: Any, kind: str) -> bytes:
    """One fill value's bytes as stored (pads the ragged end of cut contiguous data)."""
    if fill is None:
        return b"\x00" * ds.type.itemsize
    if kind == "string":
        return b""
    return pack_value(fill, kind, ds.type.big_endian)
