"""GDAL 3.12's own Zarr v3 stores (``tests/data/producers/gdal312_*.zip``): nodata and null fills.

GDAL keeps nodata as the v3 ``fill_value`` only and masks it; it writes
``"fill_value": null`` for an array without nodata. nczarr reads them as GDAL does.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import xarray as xr

import nczarr

DATA = Path(__file__).parent / "data" / "producers"


def test_gdal_v3_nodata_is_the_missing_value_on_read() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = nczarr.read(str(DATA / "gdal312_v3.zip"))
    var = next(v for v in dataset.root.all_variables() if v.name == "gdal312_v3")
    assert tuple(var.attributes["_FillValue"].value) == (-1,)
    assert not [w for w in caught if "fill_value" in str(w.message)]
    ds = xr.open_dataset(str(DATA / "gdal312_v3.zip"), engine="nczarr")
    assert np.isnan(ds["gdal312_v3"].values).tolist() == [
        [False, False, True, False],
        [True, False, False, False],
        [False, False, False, False],
    ]


def test_gdal_v3_null_fill_value_reads_without_a_fill_or_a_misleading_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = nczarr.read(str(DATA / "gdal312_v3_nonodata.zip"))
    var = next(iter(dataset.root.all_variables()))
    assert var.path == "/gdal312_v3_nonodata" and var.fill_value is None
    assert "_FillValue" not in var.attributes
    assert not [w for w in caught if "read as None" in str(w.message)]
    values = xr.open_dataset(str(DATA / "gdal312_v3_nonodata.zip"), engine="nczarr")
    assert values["gdal312_v3_nonodata"].values.ravel().tolist() == list(range(12))


def test_a_zarr_python_3_fill_value_warning_says_gdal_masks_it(tmp_path: Path) -> None:
    import zarr

    root = zarr.open_group(str(tmp_path / "z.zarr"), mode="w", zarr_format=3)
    root.create_array("a", shape=(2,), dtype="i2", fill_value=-1, dimension_names=["x"])[...] = [
        1,
        2,
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.read(str(tmp_path / "z.zarr"))
    assert any("GDAL reads it as nodata" in str(w.message) for w in caught)
