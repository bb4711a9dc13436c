"""Translation between every NCZarr/Zarr layout and one netCDF-4 model (pure, no I/O).

* :mod:`~nczarr.translate.model`: the data model (``Dataset``, ``Group``, ...).
* readers: :mod:`~nczarr.translate.detect`, :mod:`~nczarr.translate.read_nczarr`,
  :mod:`~nczarr.translate.read_zarr2` (the I/O side is :mod:`nczarr.load`).
* writers: :func:`write` (:mod:`~nczarr.translate.writer`), which emits current
  NCZarr, pure Zarr v2 or (``zarr_format=3``) pure Zarr v3 metadata objects; the
  pure-Zarr naming rules both Zarr writers share are in
  :mod:`~nczarr.translate.zarr_names`.
"""

from __future__ import annotations

from .model import Attribute, Dataset, Dimension, Group, Variable
from .writer import WriteResult, write, write_with_warnings

__all__ = [
    "Attribute",
    "Dataset",
    "Dimension",
    "Group",
    "Variable",
    "WriteResult",
    "write",
    "write_with_warnings",
]
