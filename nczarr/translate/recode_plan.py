"""Which arrays a verbatim copy would have misread, and how the target describes them (pure).

The decision half of :mod:`nczarr.reencode` (see its module doc for each case:
strings for NCZarr, categoricals, shards, codecs netcdf-c lacks, Fortran order, blosc
scalars): :func:`plan_reencoding` returns the dataset as the target describes it
(what the writers write) and one :class:`Reencoding` per array; no I/O.
:class:`nczarr.reencode.ChunkRecoder` makes the target's bytes of each chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from ..records import record, replace
from .codecs import is_known_codec
from .conventions import (
    DEFAULT_FILLS,
    DEFAULT_MAXSTRLEN,
    FILLVALUE,
    LAYOUT_NETCDF4,
    NETCDF_C_CODECS,
)
from .model import NUMERIC_TYPES, Dataset, Group, Variable, same_value

__all__ = ["ZLIB", "Reencoding", "plan_reencoding", "with_maxstrlen"]


#: What replaces a compressor netcdf-c cannot decode (``level`` from gzip when given).
ZLIB: dict[str, Any] = {"id": "zlib", "level": 5}

#: Filters that only check or rearrange bytes; dropped where the target cannot use them.
_CHECKSUMS = frozenset({"crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"})


@record
class Reencoding:
    """One array whose chunks are re-encoded.

    Attributes
    ----------
    source : Variable
        The variable as the source stores it (codecs, dtype, shards).
    target : Variable
        The variable as the target describes it (what the writer writes).
    reason : str
        Why a verbatim copy would be misread (for the report and the warning).
    """

    source: Variable
    target: Variable
    reason: str

    @property
    def path(self) -> str:
        """The array's key prefix (``"g/v"``)."""
        return self.target.path.strip("/")

    @property
    def absent_fill(self) -> Any:
        """What each chunk the source does not store is written as (None: left out)."""
        return self.source.absent_fill if self.target.absent_fill is None else None

    @cached_property
    def stored_verbatim(self) -> bool:
        """Whether the chunks the source stores are copied as they are: only the
        chunks it does not store are made (holding :attr:`absent_fill`). Asked for
        every chunk re-encoded or sized: worked out once."""
        return self.absent_fill is not None and self.target == replace(
            self.source, absent_fill=None
        )

    @property
    def message(self) -> str:
        """The warning: array, reason, and that its chunks are re-encoded (or, when only
        the chunks the source does not store are made, that the others are copied)."""
        if self.stored_verbatim:
            return (
                f"array {self.target.path!r}: stored chunks copied verbatim, the others "
                f"written ({self.reason})"
            )
        return f"array {self.target.path!r}: chunks re-encoded ({self.reason})"


def _for_netcdf_c(var: Variable) -> tuple[Variable, list[str]]:
    """``var`` with codecs netcdf-c decodes, and what changed."""
    reasons: list[str] = []
    codecs = [*var.filters, *([var.compressor] if var.compressor else [])]
    if any(not is_known_codec(str(c.get("id"))) for c in codecs):
        return var, []  # nothing here can decode it: copied verbatim (the writer warns)
    unknown = [c["id"] for c in codecs if c["id"] not in NETCDF_C_CODECS]
    filters = tuple(f for f in var.filters if f["id"] in NETCDF_C_CODECS)
    compressor = var.compressor
    if compressor is not None and compressor["id"] not in NETCDF_C_CODECS:
        level = compressor.get("level")
        if compressor["id"] == "gzip" and isinstance(level, int) and 0 <= level <= 9:
            compressor = {**ZLIB, "level": level}
        else:
            compressor = dict(ZLIB)
    elif compressor is None and any(u not in _CHECKSUMS for u in unknown):
        compressor = dict(ZLIB)  # an unknown compressing filter: still compressed
    if unknown:
        reasons.append(
            f"codec {', '.join(map(repr, unknown))} has no netcdf-c filter; written with "
            + (f"{compressor['id']!r}" if compressor else "no compression")
        )
    if var.scalar and any(c.get("id") == "blosc" for c in (*filters, compressor) if c):
        filters = tuple(f for f in filters if f["id"] != "blosc")
        compressor = None if compressor and compressor["id"] == "blosc" else compressor
        reasons.append("netcdf-c 4.10 refuses a blosc-compressed scalar, so it is uncompressed")
    order = var.order
    if order == "F" and len(var.shape) > 1:
        order = "C"
        reasons.append("netcdf-c reads every chunk in C order and ignores order 'F'")
    if not reasons:
        return var, []
    return (
        replace(var, filters=filters, compressor=compressor, order=order),
        reasons,
    )


def _hdf5_fill_for_xarray(var: Variable, layout: str) -> tuple[Variable, str | None]:
    """A Zarr v2 target's view of a netCDF-4 file's dataset whose HDF5 fill value is
    not netCDF's default for its type and has no ``_FillValue`` attribute (a file
    netcdf-c did not write: h5py's ``fillvalue=-9``), and why (None: unchanged).

    netCDF4 reads that fill value as data, also in the chunks never written, and masks
    the type's default fill instead; xarray masks a Zarr v2 ``fill_value``. So the Zarr
    v2 copy says the default fill (masked by both) and its chunks never written are
    written holding the HDF5 fill (``absent_fill``). NCZarr and Zarr v3 copies keep
    the fill value: netCDF4 and xarray read them as netCDF4 reads the file."""
    default = DEFAULT_FILLS.get(var.type)
    if (
        layout != LAYOUT_NETCDF4
        or var.type not in NUMERIC_TYPES
        or var.logical is not None
        or var.fill_value is None
        or var.absent_fill is not None
        or FILLVALUE in var.attributes
        or same_value(var.fill_value, default)
    ):
        return var, None
    return replace(var, fill_value=default, absent_fill=var.fill_value), (
        f"its fill value {var.fill_value!r} (HDF5's; no _FillValue attribute) is data for "
        f"netCDF4, which masks netCDF's default fill {default!r} instead, while xarray "
        f"masks a Zarr v2 fill_value: the fill_value is that default, and the chunks the "
        f"source does not store are written holding {var.fill_value!r}"
    )


def _no_shards(var: Variable, v3: bool, assembled: bool, recoded: bool) -> str | None:
    """Why the shards of ``var`` become chunks (None: they stay shards).

    Shards stay shards (their objects copied verbatim) when the target is Zarr v3,
    its chunks are not assembled, and nothing else is re-encoded: the v3 writer
    describes them with the source's index and the inner codecs (whose chunks the v3
    reader found a byte-identical form for)."""
    if var.shards is None:
        return None
    if not v3:
        return "Zarr v2 has no shards"
    if assembled:
        return "a combine or an append writes each inner chunk as a chunk"
    if var.shard_index is None:
        return "their index has no Zarr v3 form"
    return "each inner chunk is re-encoded" if recoded else None


def _target(
    var: Variable,
    format: str,
    zarr_format: int = 2,
    assembled: bool = False,
    absent_why: str | None = None,
) -> tuple[Variable, list[str]]:
    """The variable as ``format`` stores it, and the reasons it is not a verbatim copy
    (``assembled``: the target's chunks are assembled one by one, as a combine does;
    ``absent_why``: why the chunks the source does not store are written, if not for
    a Zarr v3 ``fill_value`` kept apart)."""
    reasons: list[str] = []
    new = var
    if var.filters and var.filters[0].get("id") == "categorize":
        reasons.append("numcodecs 'categorize' codes become the strings they stand for")
        new = replace(new, filters=({"id": "vlen-utf8"}, *new.filters[1:]))
    v3 = format == "zarr" and zarr_format == 3
    no_shards = _no_shards(var, v3, assembled, bool(reasons))
    if no_shards is not None:
        reasons.append(
            f"Zarr v3 shards {list(var.shards or ())} become chunks {list(var.chunks)}: {no_shards}"
        )
        new = replace(new, shards=None, shard_index=None)
    if var.absent_fill is not None and not (v3 and not assembled):
        # only a Zarr v3 array keeps a fill_value apart from its _FillValue attribute
        reasons.append(
            absent_why
            or f"chunks the source does not store hold its Zarr fill_value "
            f"{var.absent_fill!r}, not the fill value {var.fill_value!r}: they are written"
        )
        new = replace(new, absent_fill=None)
    if format == "nczarr" and var.text_storage is not None:
        width = 4 * (var.maxstrlen or 1) if var.text_storage == "unicode" else var.maxstrlen
        width = width or DEFAULT_MAXSTRLEN
        what = (
            f"unicode strings (<U{var.maxstrlen})"
            if var.text_storage == "unicode"
            else "variable-length UTF-8 strings"
        )
        reasons.append(f"{what} become netCDF strings, fixed-width UTF-8 (|S{width})")
        new = replace(
            new,
            text_storage=None,
            maxstrlen=width,
            endian="little",
            filters=tuple(f for f in new.filters if f["id"] not in ("vlen-utf8", "shuffle")),
        )
    if format == "nczarr":
        new, more = _for_netcdf_c(new)
        reasons.extend(more)
    return new, reasons


def plan_reencoding(
    dataset: Dataset, format: str, zarr_format: int = 2, *, assembled: bool = False
) -> tuple[Dataset, dict[str, Reencoding]]:
    """Which arrays of ``dataset`` are re-encoded for ``format`` (``zarr_format``: 2 or
    3 for pure Zarr; ``assembled``: the target's chunks are assembled one by one, as a
    combine or an append does), and the target dataset.

    Pure. Returns the dataset as the target describes it (unchanged variables are
    the same objects) and, keyed by array key prefix, a :class:`Reencoding` per
    variable whose chunks cannot be copied verbatim.
    """
    found: dict[str, Reencoding] = {}

    def visit(group: Group) -> Group:
        variables = {}
        for name, var in group.variables.items():
            why = None
            if format == "zarr" and zarr_format == 2:
                var, why = _hdf5_fill_for_xarray(var, dataset.layout)
            target, reasons = _target(var, format, zarr_format, assembled, why)
            if reasons:
                found[var.path.strip("/")] = Reencoding(var, target, "; ".join(reasons))
            variables[name] = target
        groups = {name: visit(child) for name, child in group.groups.items()}
        return replace(group, variables=variables, groups=groups)

    root = visit(dataset.root)
    if not found:
        return dataset, {}
    return replace(dataset, root=root), found


def with_maxstrlen(dataset: Dataset, widths: Mapping[str, int]) -> Dataset:
    """``dataset`` with the ``maxstrlen`` of the variables ``widths`` names (key prefixes)."""

    def visit(group: Group) -> Group:
        variables = {
            name: replace(var, maxstrlen=widths[var.path.strip("/")])
            if var.path.strip("/") in widths
            else var
            for name, var in group.variables.items()
        }
        groups = {name: visit(child) for name, child in group.groups.items()}
        return replace(group, variables=variables, groups=groups)

    return replace(dataset, root=visit(dataset.root))
