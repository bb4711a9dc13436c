"""The readers ``nczarr check`` speaks for, how bad a finding is, and one finding.

Shared by the rule modules (:mod:`~nczarr.translate.compat_rules` for arrays,
:mod:`~nczarr.translate.compat_store` for the store and its groups) and the facade
:mod:`~nczarr.translate.compat`.
"""

from __future__ import annotations

from ..records import record

__all__ = [
    "CURRENT_READERS",
    "GDAL",
    "NC48",
    "NC49",
    "NC410",
    "NETCDF_C",
    "READERS",
    "SEVERITIES",
    "XARRAY",
    "ZARR_PYTHON",
    "Finding",
    "node_path",
]

NC48 = "netcdf-c 4.8"
NC49 = "netcdf-c 4.9"
NC410 = "netcdf-c 4.10+"
ZARR_PYTHON = "zarr-python 3"
XARRAY = "xarray"
GDAL = "GDAL 3.12+"
NETCDF_C = (NC48, NC49, NC410)

#: Every reader the rules speak for, in report order.
READERS = (*NETCDF_C, ZARR_PYTHON, XARRAY, GDAL)

#: The readers people run today: ``check``'s verdict (and the CLI's exit status)
#: follows them; the findings of older netcdf-c releases are notes unless selected.
CURRENT_READERS = (NC410, ZARR_PYTHON, XARRAY, GDAL)

#: How bad a finding is, worst first: the reader cannot open the dataset (or the
#: group), cannot read one array, silently returns other values, types or shapes than
#: the producer wrote, silently leaves something out, or opens it read-only.
SEVERITIES = ("refuses", "fails", "misreads", "ignores", "read-only")


@record
class Finding:
    """One thing one reader would get wrong.

    Attributes
    ----------
    reader : str
        One of :data:`READERS`.
    severity : str
        One of :data:`SEVERITIES`.
    where : str
        The array or group path (``/g/v``), or the metadata key, concerned.
    problem : str
        What the reader does, in one sentence.
    fix : str or None
        The nczarr command (or step) that makes the store right for that reader;
        ``URL`` and ``OUT`` stand for the store and a new location.
    """

    reader: str
    severity: str
    where: str
    problem: str
    fix: str | None = None


def node_path(prefix: str) -> str:
    """The path of the node at key prefix ``prefix`` (``""`` is ``/``)."""
    return "/" + prefix
