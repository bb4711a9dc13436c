"""One odd array never fails a whole store (README, "Read any layout").

An array whose own metadata is malformed (its ``.zarray`` or ``zarr.json`` fields, its
``.zattrs`` not an object, its ``_nczarr_attr`` types, a ``zarr.json`` that is no Zarr
v3 node) is skipped by ``read``, ``view``, ``nczarr info`` and the xarray engine with
a warning naming it and what is wrong; the other arrays read exactly as in the store
without it. ``convert`` refuses such an array, naming it, unless it is excluded, as it
does an invalid ``_FillValue``. Found by a hunt over every layout the readers accept
(Zarr v2 and v3 as xarray writes them, NCZarr as netcdf-c writes it, NCZarr V1):
each of these failed every entry point for the whole store before.
"""

from __future__ import annotations

import json
import shutil
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr

FIXTURES = Path(__file__).parent / "data"


def _dataset() -> xr.Dataset:
    return xr.Dataset(
        {
            "a": ("x", np.arange(3, dtype="i4")),
            "b": (("x", "y"), np.arange(12, dtype="f8").reshape(3, 4)),
            "c": ("y", np.arange(4, dtype="i2")),
        }
    )


def _zarr2(path: Path) -> Path:
    _dataset().to_zarr(path, zarr_format=2, consolidated=False)
    return path


def _zarr3(path: Path) -> Path:
    _dataset().to_zarr(path, zarr_format=3, consolidated=False)
    return path


def _nczarr(path: Path) -> Path:
    """netcdf-c's NCZarr (``_nczarr_*`` in ``.zattrs``): a(x), b(x, y), c(y)."""
    nc = netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w")
    nc.createDimension("x", 3)
    nc.createDimension("y", 4)
    nc.createVariable("a", "i4", ("x",))[:] = [0, 1, 2]
    nc.createVariable("b", "f8", ("x", "y"))[:] = np.arange(12).reshape(3, 4)
    nc.createVariable("c", "i2", ("y",))[:] = [0, 1, 2, 3]
    nc.close()
    return path


def _nczarr_v1(path: Path) -> Path:
    """netcdf-c 4.8.0's NCZarr V1 (``.nczarray``): /lat and /g1/pos."""
    with zipfile.ZipFile(FIXTURES / "ref_oldformat_v1.zip") as archive:
        archive.extractall(path.parent / "unzipped")
    shutil.move(path.parent / "unzipped" / "oldformat.file", path)
    return path


MAKERS: dict[str, Callable[[Path], Path]] = {
    "zarr2": _zarr2,
    "zarr3": _zarr3,
    "nczarr": _nczarr,
    "nczarr-v1": _nczarr_v1,
}


def _edit(store: Path, key: str, field: str | None, value: Any) -> None:
    """Set ``field`` (dotted) of the JSON object at ``key`` to ``value``; with no
    ``field``, the whole object becomes ``value``."""
    path = store / key
    if field is None:
        path.write_text(json.dumps(value))
        return
    doc = json.loads(path.read_text())
    *parents, last = field.split(".")
    target = doc
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    path.write_text(json.dumps(doc))


def _variables(store: Path) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        return {v.path: v for v in nczarr.read(str(store)).root.all_variables()}


def _dimensions(store: Path) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        root = nczarr.read(str(store)).root
    out = {}
    for group in [root, *root.groups.values()]:
        out.update({f"{group.path}:{n}": d for n, d in group.dimensions.items()})
    return out


@pytest.mark.parametrize(
    ("layout", "key", "field", "value", "dimensions"),
    [
        (
            "nczarr",
            "b/.zattrs",
            "_nczarr_array.dimension_references",
            ["/y", "/x"],
            ("/x", "/y"),  # from _ARRAY_DIMENSIONS, which netcdf-c writes too
        ),
        ("nczarr", "b/.zattrs", "_nczarr_array", [1], ("/x", "/y")),
        (
            "nczarr-v1",
            "g1/pos/.nczarray",
            "dimrefs",
            ["/lat"],
            ("/_Anonymous_Dimension_8", "/_Anonymous_Dimension_10"),  # V1: no names
        ),
    ],
)
def test_malformed_dimension_references_are_read_as_without_them(
    tmp_path: Path, layout: str, key: str, field: str, value: Any, dimensions: tuple[str, ...]
) -> None:
    """netcdf-c refuses the whole store; the array's dimensions come from
    ``_ARRAY_DIMENSIONS`` or are anonymous, as for an array without NCZarr array
    metadata, with a warning naming it."""
    store = MAKERS[layout](tmp_path / "store")
    fqn = "/" + key.rpartition("/")[0]
    group, _, name = fqn.rpartition("/")
    clean = _variables(store)
    with xr.open_dataset(str(store), engine="nczarr", group=group or None) as opened:
        values = opened[name].values
    _edit(store, key, field, value)
    pattern = rf"array '{fqn}': .*: dimensions taken from _ARRAY_DIMENSIONS or made anonymous"
    with pytest.warns(nczarr.NCZarrWarning, match=pattern):
        ds = nczarr.read(str(store))
    read = {v.path: v for v in ds.root.all_variables()}
    assert read[fqn].dimensions == dimensions
    assert read[fqn].shape == clean[fqn].shape
    assert {p: v for p, v in read.items() if p != fqn} == {
        p: v for p, v in clean.items() if p != fqn
    }
    with (
        pytest.warns(nczarr.NCZarrWarning, match=pattern),
        xr.open_dataset(str(store), engine="nczarr", group=group or None) as opened,
    ):
        np.testing.assert_array_equal(opened[name].values, values)
