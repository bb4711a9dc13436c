"""The text of ``nczarr info``: what a store is and what it holds, for people.

:func:`format_info` takes what :func:`nczarr.detect` and :func:`nczarr.read`
return and lays it out as aligned plain text: a summary (format, NCZarr
generation, the netCDF library that wrote it, consolidated metadata, xarray
dimension names), then every dimension, every array (type, shape with dimension
names, chunks, codecs in the order they are applied on write) and the warnings of
the reader.
"""

from __future__ import annotations

from typing import Any

from ..translate.conventions import LAYOUT_V1, LAYOUT_V2, LAYOUT_V2_KEYS, LAYOUT_ZARR
from ..translate.detect import FormatInfo
from ..translate.model import Dataset, Variable

__all__ = ["format_info", "describe_layout", "format_codec"]

_LAYOUTS = {
    LAYOUT_V1: "NCZarr 1.0 (separate .nczarr/.nczgroup/.nczvar objects; netcdf-c 4.8.0, "
    "2021 builds)",
    LAYOUT_V2_KEYS: "NCZarr 2.0.0, keys in .zgroup/.zarray (netcdf-c 4.8.1-4.9.2; netcdf-c "
    "4.10 opens 4.9.1/4.9.2's lower-case keys read-only and misreads or refuses 4.8.1/4.9.0's "
    "upper-case ones: nczarr check tells which, nczarr migrate mends it)",
    LAYOUT_V2: "NCZarr 2.0.0, metadata in .zattrs (netcdf-c 4.9.3+, current)",
    LAYOUT_ZARR: "pure Zarr",
    "netcdf4": "netCDF-4 file (HDF5)",
    "netcdf3-classic": "netCDF-3 classic file (CDF-1)",
    "netcdf3-64bit-offset": "netCDF-3 64-bit offset file (CDF-2)",
    "netcdf3-cdf5": "netCDF-3 64-bit data file (CDF-5)",
}


def describe_layout(layout: str) -> str:
    """A one-line description of a layout name (``"nczarr-v2"`` ...)."""
    return _LAYOUTS.get(layout, layout)


def format_codec(config: dict[str, Any]) -> str:
    """``id(param=value, ...)`` for one codec config (``zlib(level=4)``)."""
    params = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}"
                       for k, v in config.items() if k != "id")  # fmt: skip
    return f"{config.get('id', '?')}({params})"


def _codecs(var: Variable) -> str:
    chain = [*var.filters, *([var.compressor] if var.compressor else [])]
    return ", ".join(format_codec(c) for c in chain) if chain else "-"


def _shape(dataset: Dataset, var: Variable) -> str:
    if var.scalar:
        return "scalar"
    names = [d.rsplit("/", 1)[-1] for d in var.dimensions]
    if len(names) != len(var.shape):
        return "(" + ", ".join(map(str, var.shape)) + ")"
    return "(" + ", ".join(f"{n}={s}" for n, s in zip(names, var.shape, strict=True)) + ")"


def _chunks(var: Variable) -> str:
    if var.scalar or not var.chunks:
        return "-"
    return "(" + ", ".join(map(str, var.chunks)) + ")"


def _table(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def format_info(info: FormatInfo, dataset: Dataset) -> str:
    """The ``nczarr info`` text for one store.

    Parameters
    ----------
    info : FormatInfo
        What :func:`nczarr.detect` found (``format``, ``layout``, ``zarr_format``,
        ``netcdf_version``, ``consolidated``, ``xarray``).
    dataset : Dataset
        What :func:`nczarr.read` made of it.

    Returns
    -------
    str
        Plain text ending in a newline.
    """
    groups = list(dataset.root.walk())
    dims = [(g.path.rstrip("/") + "/" + d.name, d) for g in groups for d in g.dimensions.values()]
    variables = list(dataset.root.all_variables())
    fmt = "NCZarr" if info.format == "nczarr" else "Zarr"
    v3 = info.zarr_format == 3
    consolidated_in = "zarr.json consolidated_metadata" if v3 else ".zmetadata"
    dims_in = "dimension_names" if v3 else "_ARRAY_DIMENSIONS"
    summary = [
        (
            "format",
            "netCDF file (a source, read by nczarr.ncfile)"
            if info.format == "netcdf"
            else f"{fmt} (Zarr v{info.zarr_format})",
        ),
        ("layout", f"{info.layout}: {describe_layout(info.layout)}"),
        ("written by", info.written_by or "unknown"),
        (
            "consolidated",
            f"yes ({consolidated_in})" if info.consolidated else "no",
        ),
        ("xarray dims", f"yes ({dims_in})" if info.xarray else "no"),
        ("groups", str(len(groups))),
        ("dimensions", str(len(dims))),
        ("arrays", str(len(variables))),
    ]
    lines = _table(summary, indent="")
    if dims:
        lines += ["", "dimensions:"]
        lines += _table(
            [(fqn, str(d.size) + (" (unlimited)" if d.unlimited else "")) for fqn, d in dims]
        )
    if variables:
        lines += ["", "arrays:"]
        rows = [("path", "type", "shape", "chunks", "codecs")]
        rows += [(v.path, v.type, _shape(dataset, v), _chunks(v), _codecs(v)) for v in variables]
        lines += _table(rows)
    if dataset.warnings:
        lines += ["", "warnings:"]
        lines += [f"  - {w}" for w in dataset.warnings]
    return "\n".join(lines) + "\n"
