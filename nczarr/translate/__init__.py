"""Translation between every NCZarr/Zarr layout and one netCDF-4 model (pure, no I/O).

* :mod:`~nczarr.translate.model`: the data model (``Dataset``, ``Group``, ...).
* readers: :mod:`~nczarr.translate.detect`, :mod:`~nczarr.translate.read_nczarr`,
  :mod:`~nczarr.translate.read_zarr2` (the I/O side is :mod:`nczarr.load`).
* writers: :func:`write` (:mod:`~nczarr.translate.writer`), which emits current
  NCZarr, pure Zarr v2 or (``zarr_format=3``) pure Zarr v3 metadata objects; the
  pure-Zarr naming rules both Zarr writers share are in
  :mod:`~nczarr.translate.zarr_names`.

The names are imported when first used: a module importing one submodule (say
:mod:`~nczarr.translate.conventions`) does not import the model and every writer.
"""

from __future__ import annotations

from ..lazy import lazy_exports

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

_LAZY = {
    "Attribute": ".model",
    "Dataset": ".model",
    "Dimension": ".model",
    "Group": ".model",
    "Variable": ".model",
    "WriteResult": ".writer",
    "write": ".writer",
    "write_with_warnings": ".writer",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())
