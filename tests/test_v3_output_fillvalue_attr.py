"""Zarr v3 copies of a netcdf-c 4.8/4.9 NCZarr array whose ``.zarray`` says
``"fill_value": null`` and whose ``_FillValue`` attribute says -1
(``examples/legacy_oldkeys.file``).

netCDF4 (the oracle for an NCZarr store) masks -1 by the attribute and reads chunks
never written as 0 (netcdf-c takes a null ``fill_value`` as "no fill"). The Zarr v3
copy used to drop the attribute (the model's fill value is None), so xarray showed
-1 as data where the engine and a Zarr v2 copy mask it. Found by a differential hunt.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "legacy_oldkeys.file"


def _source(tmp_path: Path, *, chunk: bool = True) -> Path:
    """The example with its first value set to -1 (the ``_FillValue``), or with its
    one chunk removed (never written)."""
    src = tmp_path / "old.file"
    shutil.copytree(EXAMPLE, src)
    chunk_path = src / "v" / "0.0.0"
    if chunk:
        raw = np.frombuffer(chunk_path.read_bytes(), "<i4").copy()
        raw[0] = -1
        chunk_path.write_bytes(raw.tobytes())
    else:
        chunk_path.unlink()
    return src


def _netcdf4(src: Path) -> np.ma.MaskedArray:
    with netCDF4.Dataset(f"file://{src}#mode=nczarr,file") as ds:
        return ds["v"][:]


def _xarray_v3(path: Path) -> np.ndarray:
    with xr.open_zarr(path, consolidated=False, zarr_format=3) as ds:
        return ds["v"].values


def _convert_v3(src: Path, dst: Path) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(src, dst, mode="zarr", zarr_format=3)
    return [str(w.message) for w in caught if issubclass(w.category, nczarr.NCZarrWarning)]


def test_the_v3_copy_masks_what_netcdf4_masks(tmp_path: Path) -> None:
    src = _source(tmp_path)
    oracle = _netcdf4(src)
    assert np.ma.getmaskarray(oracle).ravel().tolist() == [True] + [False] * 47
    dst = tmp_path / "v3.zarr"
    assert _convert_v3(src, dst) == []  # a verbatim copy: nothing to warn about
    doc = json.loads((dst / "v" / "zarr.json").read_text())
    assert doc["attributes"]["_FillValue"] == -1
    assert doc["fill_value"] == 0  # what netCDF4 reads for chunks never written
    got = _xarray_v3(dst)
    assert np.isnan(got).ravel().tolist() == np.ma.getmaskarray(oracle).ravel().tolist()
    np.testing.assert_array_equal(got.ravel()[1:], oracle.ravel()[1:])


def test_chunks_never_written_read_as_netcdf4_reads_them(tmp_path: Path) -> None:
    src = _source(tmp_path, chunk=False)
    oracle = _netcdf4(src)
    assert not np.ma.getmaskarray(oracle).any() and (oracle == 0).all()
    dst = tmp_path / "v3.zarr"
    _convert_v3(src, dst)
    got = _xarray_v3(dst)
    assert got.dtype.kind == "f" and not np.isnan(got).any()
    np.testing.assert_array_equal(got, oracle.data)


@pytest.mark.parametrize("how", ["references", "view"])
def test_v3_references_and_view_keep_the_attribute(tmp_path: Path, how: str) -> None:
    src = _source(tmp_path)
    if how == "references":
        docs = nczarr.references(str(src), mode="zarr", zarr_format=3)["refs"]
        doc = docs["v/zarr.json"]
        doc = json.loads(doc) if isinstance(doc, str) else doc
    else:
        view = nczarr.view(str(src), mode="zarr", zarr_format=3)
        doc = json.loads(view["v/zarr.json"])
    assert doc["attributes"]["_FillValue"] == -1
    assert doc["fill_value"] == 0
