"""Copies of copies read as the producer wrote them.

``tests/test_producers.py`` checks one copy of each producer's store against what the
producer's own reader read. Here a copy is copied again: every reader must read the
second copy as it read the first, and both as the producer's record says (or a
warning on the hop that made a difference names the array).
"""

from __future__ import annotations

import json
import shutil
import warnings
import zipfile
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr

DATA = Path(__file__).parent / "data" / "producers"


def _record(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def _source(name: str) -> str:
    return str(DATA / f"{name}.zip")


def _pure_copy(src: str, dst: Path, zarr_format: int) -> list[str]:
    """A pure Zarr copy of ``src`` at ``dst``; the NCZarrWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(src, str(dst), "zarr", zarr_format=zarr_format)
    return [str(w.message) for w in caught if issubclass(w.category, nczarr.NCZarrWarning)]


def _engine(url: str) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(url, engine="nczarr").load()


def _open_zarr(path: Path) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(str(path), consolidated=False).load()


#: x2_cf_text's fixed-width bytes (xarray wrote ``S5`` and ``S1`` values as ``|S5``,
#: ``|S1``, without ``_Encoding``), as xarray's zarr engine read them
_BYTES = {"code": [b"ab", b"cdefg", b""], "letter": [b"x", b"y", b"z"]}

_CHAINS = [(2, 2), (2, 3), (3, 2), (3, 3)]


def test_the_record_holds_bytes() -> None:
    """What the tests below compare with: xarray read numpy bytes from the producer."""
    variables = _record("x2_cf_text")["xarray"]["variables"]
    assert variables["code"]["dtype"] == "|S5"
    assert variables["letter"]["dtype"] == "|S1"


@pytest.mark.parametrize(("first", "second"), _CHAINS)
def test_bytes_stay_bytes_in_a_pure_copy_of_a_pure_copy(
    first: int, second: int, tmp_path: Path
) -> None:
    """zarr-python's and xarray's ``|S<n>`` is bytes; nczarr's pure Zarr copies of it
    said ``_NCProperties``, by which nczarr read the copy's ``|S<n>`` as netCDF text
    (the engine showed ``str``), and a copy of that copy marked it ``_Encoding:
    "utf-8"`` (xarray itself then read ``str``). Every reader reads bytes on both."""
    one, two = tmp_path / "one", tmp_path / "two"
    _pure_copy(_source("x2_cf_text"), one, first)
    said = _pure_copy(str(one), two, second)
    assert not [m for m in said if "_Encoding" in m], said
    for copy in (one, two):
        engine, xarray_read = _engine(str(copy)), _open_zarr(copy)
        for name, values in _BYTES.items():
            assert engine[name].dtype.kind == "S", (copy.name, name, engine[name].dtype)
            assert engine[name].values.tolist() == values
            assert xarray_read[name].dtype.kind == "S", (copy.name, name)
            assert xarray_read[name].values.tolist() == values
        group = zarr.open_group(str(copy), mode="r")
        for name in _BYTES:
            assert "_Encoding" not in dict(group[name].attrs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = nczarr.read(str(copy))
        for name in _BYTES:
            assert model.find_variable(f"/{name}").logical == "bytes"
        # the producer's text stays text
        assert engine["name"].values.tolist() == ["alpha", "béta", ""]
        assert engine["label"].values.tolist() == ["one", "two", "three"]


def test_a_pure_copy_takes_an_append_of_its_zarr_python_source(tmp_path: Path) -> None:
    """Appending the store a pure Zarr copy was made of to that copy: the same arrays
    stored the same way, so nothing is refused (it was: "stores its values
    differently", the copy's ``|S5`` read as netCDF text)."""
    copy = tmp_path / "copy"
    _pure_copy(_source("x2_cf_text"), copy, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(_source("x2_cf_text"), str(copy), append_dim="n")
    said = [str(w.message) for w in caught if issubclass(w.category, nczarr.NCZarrWarning)]
    assert not said, said
    read = _open_zarr(copy)
    for name, values in _BYTES.items():
        assert read[name].values.tolist() == values + values
    assert _engine(str(copy))["code"].values.tolist() == _BYTES["code"] * 2


def test_netcdf_c_pure_zarr_still_says_netcdf_text(tmp_path: Path) -> None:
    """A copy of netcdf-c's pure Zarr keeps ``_NCProperties`` (netcdf-c's conventions:
    ``|S<n>`` is text), and a copy of that copy reads its strings as text too."""
    one, two = tmp_path / "one", tmp_path / "two"
    _pure_copy(_source("nc_pure_zarr"), one, 2)
    _pure_copy(str(one), two, 2)
    for copy in (one, two):
        assert "_NCProperties" in zarr.open_group(str(copy), mode="r").attrs
        assert _engine(str(copy))["s"].values.tolist() == ["alpha", "b", "", "delta"]


def test_an_xarray_store_copied_is_not_said_to_be_netcdf_cs(tmp_path: Path) -> None:
    """No ``_NCProperties`` in a pure Zarr copy of a store without one: the copy keeps
    its producer's conventions (bytes, and ``fill_value`` as the missing value)."""
    src = tmp_path / "src"
    with zipfile.ZipFile(_source("x2_cf_numeric")) as archive:
        archive.extractall(src)
    for zarr_format in (2, 3):
        copy = tmp_path / f"v{zarr_format}"
        _pure_copy(str(src), copy, zarr_format)
        assert "_NCProperties" not in zarr.open_group(str(copy), mode="r").attrs
        again = tmp_path / f"v{zarr_format}-again"
        _pure_copy(str(copy), again, zarr_format)
        first, second = _engine(str(copy)), _engine(str(again))
        for name in first.variables:
            assert first[name].dtype == second[name].dtype, name
            np.testing.assert_array_equal(first[name].values, second[name].values)
            assert first[name].attrs == second[name].attrs
        shutil.rmtree(again)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("via_nczarr", [False, True])
def test_float_packing_attributes_lost_to_json_are_named(
    zarr_format: int, via_nczarr: bool, tmp_path: Path
) -> None:
    """netcdf-c 4.8.0's packed short ``s`` has ``scale_factor``/``add_offset`` of type
    float, from which xarray decodes float32 (the engine too). Pure Zarr attributes are
    JSON numbers, read as double by every reader, so xarray decodes the copy's values
    as float64: no writer can keep the type, so the hop that loses it names the array
    (it said nothing: NCZarr -> NCZarr -> pure Zarr changed the dtype silently)."""
    src = _source("nc480_nczarr")
    assert _engine(src)["s"].dtype == np.float32
    if via_nczarr:
        first = tmp_path / "first"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nczarr.convert(src, f"file://{first}#mode=nczarr,file")
        src = f"file://{first}#mode=nczarr,file"
        assert _engine(src)["s"].dtype == np.float32
    copy = tmp_path / "copy"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what pytest.warns passes on: 4.8.0's list fills
        with pytest.warns(nczarr.NCZarrWarning, match=r"array '/s': packing attributes .* float64"):
            nczarr.convert(src, str(copy), "zarr", zarr_format=zarr_format)
    assert _open_zarr(copy)["s"].dtype == np.float64
    assert _engine(str(copy))["s"].dtype == np.float64
    # the values are the same numbers
    np.testing.assert_array_equal(
        _engine(str(copy))["s"].values, _engine(src)["s"].values.astype("f8")
    )
    # a copy of the copy has double attributes already: nothing more is lost, nor said
    again = tmp_path / "again"
    said = _pure_copy(str(copy), again, zarr_format)
    assert not [m for m in said if "packing" in m], said


def test_double_packing_attributes_are_not_named(tmp_path: Path) -> None:
    """netcdf-c's pure Zarr ``p`` (scale_factor 0.5, add_offset 10 as JSON): xarray
    decodes float64 from the source already, so its copies say nothing of packing."""
    said = _pure_copy(_source("nc_pure_zarr"), tmp_path / "copy", 2)
    assert not [m for m in said if "packing" in m], said


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_char_to_pure_zarr_is_named(zarr_format: int, tmp_path: Path) -> None:
    """netcdf-c 4.8.0's char ``c``: netCDF4 reads char from an NCZarr copy; pure Zarr has
    no char type, so its copy holds ``|S1`` (the same bytes), which netCDF4 (netcdf-c
    reads its own pure Zarr so) and nczarr read as strings of one character, and an
    NCZarr copy of that copy has ``string``. Kept (netcdf-c's reading), now said on the
    hop that does it; the copy of the copy, strings already, says nothing of char."""
    nczarr_copy = tmp_path / "nczarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nczarr.convert(_source("nc480_nczarr"), f"file://{nczarr_copy}#mode=nczarr,file")
    url = f"file://{nczarr_copy}#mode=nczarr,file"
    with netCDF4.Dataset(url) as nc:
        assert nc["c"].dtype == np.dtype("S1")
    pure = tmp_path / "pure"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what pytest.warns passes on
        with pytest.warns(nczarr.NCZarrWarning, match=r"array '/c': netCDF char is written"):
            nczarr.convert(url, str(pure), "zarr", zarr_format=zarr_format)
    if zarr_format == 2:  # netcdf-c reads no Zarr v3
        with netCDF4.Dataset(f"file://{pure}#mode=zarr,file") as nc:
            assert nc["c"].dtype is str
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert nczarr.read(str(pure)).find_variable("/c").type == "string"
    # xarray's zarr engine reads the bytes it read from the NCZarr copy
    assert _open_zarr(pure)["c"].values.tolist() == [b"abc", b"de", b"", b"fghij"]
    said = _pure_copy(str(pure), tmp_path / "again", zarr_format)
    assert not [m for m in said if "netCDF char" in m], said


def test_an_nczarr_copy_takes_an_append_of_its_bool_source(tmp_path: Path) -> None:
    """zarr-python's ``|b1`` is ``byte`` with ``dtype = "bool"`` in an NCZarr copy (as
    xarray's netcdf4 engine writes bool; its copy warned). Appending the source to that
    copy compared ``ubyte`` (bool) with ``byte`` and refused; the same bytes go in, and
    xarray reads bool on both sides of the seam."""
    src = _source("z2_codecs")
    url = f"file://{tmp_path / 'copy'}#mode=nczarr,file"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nczarr.convert(src, url)
        nczarr.convert(src, url, append_dim="x")
    source = _engine(src)
    with xr.open_dataset(url, engine="netcdf4") as grown:
        for name in ("bool_plain", "packbits"):
            assert grown[name].dtype == bool, name
            axis = source[name].dims.index("x")
            twice = np.concatenate([source[name].values] * 2, axis=axis)
            np.testing.assert_array_equal(grown[name].values, twice)
