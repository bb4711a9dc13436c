"""A netCDF-3 file's header (:mod:`nczarr.ncfile.cdf`) as the netCDF-4 model plus chunk index.

Pure. Values are big-endian raw bytes, so every chunk is a byte range of the file:
a fixed-size variable is contiguous (cut along its first dimension,
:func:`~nczarr.ncfile.layout.cut_contiguous`); a record variable has one record per
chunk at ``begin + r * recsize``, or many records per chunk when it is the only
record variable (then its records are back to back in the file).
"""

from __future__ import annotations

import math

from ..errors import MetadataError
from ..translate.conventions import FILLVALUE
from ..translate.model import Attribute, Dataset, Dimension, Group, Variable
from .cdf import CDF_TYPES, CDFAttribute, CDFHeader, CDFVariable, type_size
from .layout import (
    DEFAULT_FILLS,
    ChunkIndex,
    ChunkRef,
    SourceArray,
    chunk_grid,
    chunk_key,
    contiguous_index,
    rows_per_chunk,
)
from .values import fill_misfit, pack_value, unpack_values

__all__ = ["LAYOUTS", "read_classic"]

#: Layout names, by CDF version.
LAYOUTS = {1: "netcdf3-classic", 2: "netcdf3-64bit-offset", 5: "netcdf3-cdf5"}


def _attribute(attr: CDFAttribute) -> Attribute:
    """One attribute in the model's form: a char attribute's every byte but trailing
    NULs (a C terminator: ncdump and netCDF4 leave them out, and a copy would carry
    them as JSON ``\\u0000``, which netcdf-c reads as ``"u0000"``), as the netCDF-4
    reader (:mod:`~nczarr.ncfile.h5attrs`) reads them. A ``_FillValue`` keeps its
    bytes: ``"\\0"`` is a fill value, not a terminator."""
    kind, _ = CDF_TYPES[attr.type_code]
    if kind == "char":
        raw = attr.raw if attr.name == FILLVALUE else attr.raw.rstrip(b"\x00")
        return Attribute(attr.name, "char", raw.decode("utf-8", "surrogateescape"))
    return Attribute(attr.name, kind, unpack_values(attr.raw, kind, big_endian=True))


def _fill(attrs: dict[str, Attribute], kind: str) -> object:
    fill = attrs.get("_FillValue")
    if fill is None or not fill.value:
        return DEFAULT_FILLS[kind]
    return fill.value[:1] if kind == "char" else fill.value[0]


def _check_vsize(header: CDFHeader, var: CDFVariable, what: str) -> int:
    """The bytes the variable takes (one record's worth for a record variable, padded
    to 4 bytes), which the header's ``vsize`` must say (a header that lies about it
    would shift every record of the file); CDF-1/2 write 2**32 - 1 for a variable
    bigger than that."""
    dims = [header.dimensions[d].size for d in var.dimids]
    if dims and dims[0] == 0:
        dims = dims[1:]
    need = type_size(var.type_code) * math.prod(dims)
    need += -need % 4
    if var.vsize != need and not (header.version != 5 and var.vsize == 0xFFFFFFFF):
        raise MetadataError(
            f"{what}: variable {var.name!r}: the header says it takes {var.vsize} bytes, "
            f"its shape and type take {need}: a header that lies about sizes"
        )
    return need


def _record_count(header: CDFHeader, file_size: int, recsize: int, what: str) -> int:
    """Records in the file: the header's count, checked against the file's size."""
    starts = [v.begin for v in header.variables if _is_record(header, v)]
    if header.numrecs is None:  # streaming: as many whole records as the file holds
        return (file_size - min(starts)) // recsize if starts and recsize else 0
    return header.numrecs


def _is_record(header: CDFHeader, var) -> bool:
    return bool(var.dimids) and header.dimensions[var.dimids[0]].size == 0


def read_classic(header: CDFHeader, file_size: int, what: str) -> tuple[Dataset, dict]:
    """The model and ``{key prefix: SourceArray}`` of a netCDF-3 file of ``file_size``
    bytes.

    Raises
    ------
    MetadataError
        The header names data beyond the end of the file (truncated, or a header
        lying about sizes), naming the file and the variable.
    """
    vsizes = {var.name: _check_vsize(header, var, what) for var in header.variables}
    record_vars = [v for v in header.variables if _is_record(header, v)]
    if len(record_vars) == 1:
        var = record_vars[0]
        recsize = type_size(var.type_code) * math.prod(
            header.dimensions[d].size for d in var.dimids[1:]
        )
    else:
        recsize = sum(vsizes[v.name] for v in record_vars)
    numrecs = _record_count(header, file_size, recsize, what)
    dims = {
        d.name: Dimension(d.name, numrecs if d.size == 0 else d.size, d.size == 0)
        for d in header.dimensions
    }
    variables: dict[str, Variable] = {}
    arrays: dict[str, SourceArray] = {}
    skipped: dict[str, str] = {}  # path -> why
    for var in header.variables:
        kind, _ = CDF_TYPES[var.type_code]
        itemsize = type_size(var.type_code)
        shape = tuple(dims[header.dimensions[d].name].size for d in var.dimids)
        attrs = {a.name: _attribute(a) for a in var.attributes}
        if misfit := fill_misfit(attrs.get(FILLVALUE), kind):
            skipped[f"/{var.name}"] = misfit
            continue
        fill = _fill(attrs, kind)
        record = _is_record(header, var)
        source = SourceArray(var.name, fill=pack_value(fill, kind, big_endian=True))
        inner = itemsize * math.prod(shape[1:]) if shape else itemsize
        if record:
            per = rows_per_chunk(shape, itemsize) if len(record_vars) == 1 else 1
            chunks = (per, *shape[1:])
            source.chunks = _records(
                chunk_grid(shape, chunks), var.begin, numrecs, per, recsize, inner
            )
            end = var.begin + (numrecs - 1) * recsize + inner if numrecs else 0
        else:
            chunks = (rows_per_chunk(shape, itemsize), *shape[1:]) if shape else ()
            source.chunks = contiguous_index(
                chunk_grid(shape, chunks), var.begin, shape, itemsize, chunks[0] if shape else 1
            )
            end = var.begin + itemsize * math.prod(shape)
        if end > file_size and math.prod(shape):
            raise MetadataError(
                f"{what}: variable {var.name!r} ends at byte {end}, beyond the end of the "
                f"file ({file_size} bytes): truncated, or a header that lies about sizes"
            )
        arrays[var.name] = source
        variables[var.name] = Variable(
            name=var.name,
            path=f"/{var.name}",
            type=kind,
            dimensions=tuple(f"/{header.dimensions[d].name}" for d in var.dimids),
            shape=shape,
            chunks=chunks,
            fill_value=fill,
            attributes=attrs,
            scalar=not shape,
            endian="big" if itemsize > 1 else "little",
        )
    root = Group(
        name="/",
        path="/",
        dimensions=dims,
        attributes={a.name: _attribute(a) for a in header.attributes},
        variables=variables,
    )
    warnings = tuple(f"skipped array {path!r}: {why}" for path, why in skipped.items())
    dataset = Dataset(root, LAYOUTS[header.version], warnings=warnings, skipped=tuple(skipped))
    return dataset, arrays


def _records(
    grid: tuple[int, ...], begin: int, numrecs: int, per: int, recsize: int, inner: int
) -> ChunkIndex:
    """The index of a record variable: ``per`` records a chunk, ``inner`` bytes of each
    record of ``recsize`` bytes from ``begin`` (nothing held per chunk where a chunk is
    one record, or the variable the only record variable)."""
    count = math.ceil(numrecs / per)
    last = (numrecs - (count - 1) * per) * inner if count else 0
    if inner and (per == 1 or recsize == inner) and all(n == 1 for n in grid[1:]):
        return ChunkIndex.strided(grid, count, begin, per * recsize, per * inner, last)
    index = ChunkIndex(grid)
    tail = (0,) * (len(grid) - 1)
    for i, start in enumerate(range(0, numrecs, per)):
        n = min(per, numrecs - start)
        index[chunk_key((i, *tail))] = ChunkRef(
            begin + start * recsize, n * inner, (per - n) * inner
        )
    return index
