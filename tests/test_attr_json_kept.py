"""Untyped JSON attributes netCDF reads otherwise: kept as JSON in pure Zarr copies,
warned about where a netCDF reading is shown or written.

Found by a differential hunt: an integer beyond 64 bits became a double in every
copy, and a one-element list of strings (``["x"]``) became ``"x"`` in Zarr -> Zarr
copies, both silently; the xarray engine showed ``true``, objects, ``null`` and mixed
lists as netCDF reads them without a word. zarr-python's reading of the source is
the oracle for the pure Zarr copies, netCDF4's for the NCZarr copy.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import pytest
import xarray as xr
import zarr

import nczarr

HUGE = 2**70 + 1
KEPT = {"huge": HUGE, "huge_list": [1, HUGE], "one": ["x"]}
PLAIN = {"units": "m", "pair": [1.0, 2.5], "names": ["a", "b"], "n": 3}


def _source(path: Path, attrs: dict[str, object], zarr_format: int = 2) -> Path:
    root = zarr.open_group(path, mode="w", zarr_format=zarr_format)
    kw = {"dimension_names": ["x"]} if zarr_format == 3 else {}
    array = root.create_array("v", shape=(2,), chunks=(2,), dtype="i4", fill_value=0, **kw)
    array[...] = [1, 2]
    if zarr_format == 2:
        array.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    array.attrs.update(attrs)
    return path


def _messages(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, nczarr.NCZarrWarning)]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_pure_zarr_copies_keep_the_json(tmp_path: Path, zarr_format: int) -> None:
    src = _source(tmp_path / "src.zarr", {**KEPT, **PLAIN})
    theirs = dict(zarr.open_array(src / "v", mode="r").attrs)
    dst = tmp_path / "out.zarr"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(src, dst, mode="zarr", zarr_format=zarr_format)
    assert not [m for m in _messages(caught) if any(f"'{k}'" in m for k in (*KEPT, *PLAIN))]
    ours = dict(zarr.open_array(dst / "v", mode="r").attrs)
    for name in (*KEPT, *PLAIN):
        assert ours[name] == theirs[name] and type(ours[name]) is type(theirs[name]), name


def test_nczarr_copy_warns_for_what_netcdf_cannot_hold(tmp_path: Path) -> None:
    src = _source(tmp_path / "src.zarr", {**KEPT, **PLAIN})
    dst = tmp_path / "out.file"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(src, dst, mode="nczarr")
    found = _messages(caught)
    for name in KEPT:
        assert any(f"attribute {name!r}" in m for m in found), (name, found)
    assert not [m for m in found if any(f"attribute {k!r}" in m for k in PLAIN)]
    with netCDF4.Dataset(f"file://{dst}#mode=nczarr,file") as ds:
        v = ds["v"]
        assert float(v.getncattr("huge")) == float(HUGE)  # a double: the warned reading
        assert v.getncattr("one") == "x"


def test_engine_warns_for_json_it_shows_as_netcdf_reads_it(tmp_path: Path) -> None:
    json_attrs = {"flag": True, "cfg": {"k": 1}, "none": None, "mixed": [1, "a"], "huge": HUGE}
    src = _source(tmp_path / "src.zarr", {**json_attrs, **PLAIN}, zarr_format=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = xr.open_dataset(src, engine="nczarr")
    found = _messages(caught)
    for name in json_attrs:
        assert any(
            f"attribute {name!r} of '/v'" in m and "shown as netCDF reads it" in m for m in found
        ), (name, found)
    assert not [m for m in found if any(f"attribute {k!r}" in m for k in PLAIN)]
    # one value is said as the engine shows it, a scalar (it said "ubyte [1]")
    assert any("the JSON value true is shown as netCDF reads it, ubyte 1 (" in m for m in found)
    # the netCDF readings (README: the engine shows netCDF's view, as engine="netcdf4")
    assert int(ours["v"].attrs["flag"]) == 1 and ours["v"].attrs["none"] == "null"
    assert ours["v"].attrs["units"] == "m"
