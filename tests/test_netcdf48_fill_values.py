"""Fill values netcdf-c 4.8 wrote in forms no JSON reader expects.

* netcdf-c 4.8.0 wrote ``"fill_value": [-1]``, a one-element list (netcdf-c issue
  2008, fixed in 4.8.1): it meant the element. The store is the real 4.8.0 fixture
  ``ref_oldformat_v1.zip`` with its ``lat`` fill value written as 4.8.0 wrote it.
* Builds of netcdf-c 4.8 printed NaN with C's printf: a bare ``Nan``/``nan`` (netcdf-c
  issue 2265), and ``-nan`` for a NaN with the sign bit set.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import netCDF4
import pytest

import nczarr

from .ncoracle import extract_fixture


def _as_480_wrote_it(tmp_path: Path) -> Path:
    path = extract_fixture("ref_oldformat_v1.zip", tmp_path)
    zarray = json.loads((path / "lat" / ".zarray").read_text())
    assert zarray["fill_value"] == -1
    zarray["fill_value"] = [-1]
    (path / "lat" / ".zarray").write_text(json.dumps(zarray))
    return path


def test_a_one_element_list_fill_value_is_read_as_its_element(tmp_path: Path) -> None:
    path = _as_480_wrote_it(tmp_path)
    with pytest.warns(nczarr.NCZarrWarning, match=r"one-element list.*issue 2008"):
        dataset = nczarr.read(str(path))
    assert dataset.root.variables["lat"].fill_value == -1


def test_convert_carries_the_fill_value_480_meant(tmp_path: Path) -> None:
    path = _as_480_wrote_it(tmp_path)
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning, match="one-element list"):
        nczarr.convert(str(path), str(out), mode="nczarr")
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
        assert ds["lat"]._FillValue == -1


def _nan_store(path: Path, fill: str, attr: str) -> Path:
    (path / "v").mkdir(parents=True)
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    (path / "v" / ".zarray").write_text(
        '{"zarr_format": 2, "shape": [2], "dtype": "<f8", "chunks": [2], '
        f'"fill_value": {fill}, "order": "C", "compressor": null, "filters": null}}'
    )
    (path / "v" / ".zattrs").write_text(f'{{"_ARRAY_DIMENSIONS": ["x"], "missing": {attr}}}')
    return path


@pytest.mark.parametrize(("fill", "attr"), [("Nan", "nan"), ("-nan", "-Nan"), ("NaN", "-nan")])
def test_printf_nans_are_nans(tmp_path: Path, fill: str, attr: str) -> None:
    path = _nan_store(tmp_path / "n.zarr", fill, attr)
    var = nczarr.read(str(path)).root.variables["v"]
    assert math.isnan(var.fill_value)
    assert math.isnan(var.attributes["missing"].value[0])
