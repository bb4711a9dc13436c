"""Zarr v3 fill values the producer does not mask, and one invalid ``_FillValue``.

zarr-python 3 and xarray mask nothing in a Zarr v3 array but a ``_FillValue``
attribute (their reading is the oracle). Found by a differential hunt (session 15):

* finding 15: one array's invalid ``_FillValue`` attribute failed the whole dataset;
  it is skipped (convert refuses it unless excluded);
* finding 3: arrays without ``dimension_names`` kept zarr's default fill 0 (xarray
  then masked the zeros of a Zarr v2 copy) and other fills without a warning;
* finding 5: netCDF4 masks the type's default fill in an NCZarr copy of an array
  without ``_FillValue``, and no NCZarr metadata stops it: a warning names the array
  and the values (the old warning said netCDF readers did not mask);
* finding 7: zarr-python's string arrays with a non-empty fill: xarray masks that
  text in a Zarr v2 copy, said nowhere.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr


def _messages(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, nczarr.NCZarrWarning)]


def _quiet_zarr(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module="zarr")
        warnings.filterwarnings("ignore", category=FutureWarning)
        return call(*args, **kwargs)


# ------------------------------------------------------------------ finding 15


def _bad_fill_store(path: Path) -> None:
    group = zarr.open_group(path, mode="w", zarr_format=3)
    f = group.create_array("f", shape=(3,), chunks=(3,), dtype="f8", dimension_names=["x"])
    f[:] = [1, 2, 3]
    f.attrs["_FillValue"] = "abc"  # zarr-python ignores it
    ok = group.create_array("ok", shape=(3,), chunks=(3,), dtype="i2", dimension_names=["x"])
    ok[:] = [4, 5, 6]


SKIPPED = "skipped array '/f': invalid _FillValue attribute \"abc\": 'abc' is not a number"


def test_an_invalid_fill_value_attribute_skips_that_array_only(tmp_path: Path) -> None:
    src = tmp_path / "bad.zarr"
    _bad_fill_store(src)
    with pytest.warns(nczarr.NCZarrWarning) as record:
        ds = nczarr.read(src)
    assert SKIPPED in _messages(record) and SKIPPED in ds.warnings
    assert ds.skipped == ("/f",) and sorted(ds.root.variables) == ["ok"]
    with pytest.warns(nczarr.NCZarrWarning, match="skipped array '/f'"):
        engine = xr.open_dataset(src, engine="nczarr")
    np.testing.assert_array_equal(engine["ok"].values, zarr.open_group(src)["ok"][...])


def test_convert_refuses_it_unless_excluded(tmp_path: Path) -> None:
    src = tmp_path / "bad.zarr"
    _bad_fill_store(src)
    with pytest.raises(nczarr.UnsupportedTypeError) as exc:
        nczarr.convert(src, tmp_path / "refused.zarr", mode="zarr")
    assert "'/f'" in str(exc.value) and "exclude=['/f']" in str(exc.value)
    assert not (tmp_path / "refused.zarr").exists()
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match="skipped array '/f'"):
        nczarr.convert(src, out, mode="zarr", exclude=["f"])
    copy = zarr.open_group(out, mode="r", zarr_format=2)
    assert sorted(copy.array_keys()) == ["ok"]
    np.testing.assert_array_equal(copy["ok"][...], [4, 5, 6])


def test_zarr_v2_skips_such_an_array_too(tmp_path: Path) -> None:
    """The Zarr v2 reader failed the whole dataset on the same attribute."""
    src = tmp_path / "bad2.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=2)
    f = group.create_array("f", shape=(3,), chunks=(3,), dtype="f8", fill_value=None)
    f[:] = [1, 2, 3]
    f.attrs.update({"_FillValue": "abc", "_ARRAY_DIMENSIONS": ["x"]})
    ok = group.create_array("ok", shape=(3,), chunks=(3,), dtype="i2", fill_value=None)
    ok[:] = [4, 5, 6]
    ok.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    with pytest.warns(nczarr.NCZarrWarning) as record:
        ds = nczarr.read(src)
    assert (
        "skipped array '/f': 'f/.zattrs': attribute '_FillValue': cannot read \"abc\" as "
        "double: 'abc' is not a number"
    ) in _messages(record)
    assert ds.skipped == ("/f",) and sorted(ds.root.variables) == ["ok"]
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning, match="skipped array '/f'"):
        nczarr.convert(src, f"file://{out}#mode=nczarr,file", mode="nczarr", exclude=["f"])
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        assert list(nc.variables) == ["ok"] and nc["ok"][...].tolist() == [4, 5, 6]


# ------------------------------------------------------------------ finding 3


def _no_dimension_names(path: Path) -> None:
    group = zarr.open_group(path, mode="w", zarr_format=3)
    zero = group.create_array("zero", shape=(4,), chunks=(2,), dtype="i4")  # fill 0
    zero[0:2] = [0, 5]  # chunk 1 never written: 0
    minus = group.create_array("minus", shape=(4,), chunks=(2,), dtype="i4", fill_value=-1)
    minus[0:2] = [-1, 5]
    group.create_array("scalar", shape=(), dtype="f4", fill_value=1.5)  # never written
    _quiet_zarr(zarr.consolidate_metadata, path)


def test_zero_fill_without_dimension_names_is_no_fill_value(tmp_path: Path) -> None:
    """xarray reads the zeros of the Zarr v2 copy as zeros, as zarr-python reads the
    source (the v2 fill_value 0 was kept and masked them)."""
    src = tmp_path / "src.zarr"
    _no_dimension_names(src)
    assert nczarr.read(src).root.variables["zero"].fill_value is None
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning):  # for '/minus' and '/scalar', below
        nczarr.convert(src, out, mode="zarr")
    assert json.loads((out / "zero/.zarray").read_text())["fill_value"] is None
    copy = xr.open_zarr(out, consolidated=False)["zero"].values
    np.testing.assert_array_equal(copy, zarr.open_group(src)["zero"][...])
    assert copy.dtype == np.dtype("i4")


def test_other_fills_without_dimension_names_are_named(tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    _no_dimension_names(src)
    with pytest.warns(nczarr.NCZarrWarning) as record:
        refs = nczarr.references(src, "zarr", zarr_format=2)
    said = {m.split(":")[0]: m for m in _messages(record)}
    for name, fill in (("minus", -1), ("scalar", 1.5)):
        message = said[f"array '/{name}'"]
        assert message.startswith(f"array '/{name}': its Zarr v3 fill_value {fill!r} (no ")
        assert "xarray masks the fill_value of a Zarr v2 copy or reference set" in message
    # what the warning says: xarray masks them in the reference set, zarr-python does not
    path = tmp_path / "refs.json"
    path.write_text(json.dumps(refs))
    opened = xr.open_dataset(
        "reference://",
        engine="zarr",
        backend_kwargs={"storage_options": {"fo": str(path)}, "consolidated": False},
    )
    assert np.isnan(opened["scalar"].values) and zarr.open_group(src)["scalar"][()] == 1.5
    assert np.isnan(opened["minus"].values[0])


# ------------------------------------------------------------------ finding 5


def _default_fills(path: Path) -> None:
    group = zarr.open_group(path, mode="w", zarr_format=3)
    for name, dtype, first in (("s", "i2", -32767), ("f", "f4", 9.96921e36), ("u", "u1", 255)):
        array = group.create_array(
            name, shape=(3,), chunks=(3,), dtype=dtype, dimension_names=["x"]
        )
        array[:] = [first, 1, 2]
    kept = group.create_array(
        "k", shape=(4,), chunks=(2,), dtype="i2", fill_value=-32767, dimension_names=["y"]
    )
    kept[0:2] = [1, 2]


def test_netcdf4_masks_the_default_fills_of_an_nczarr_copy_and_says_so(tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    _default_fills(src)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        nczarr.read(src)  # reading shows the producer's values: nothing to say of s, f, u
    assert [m.split(":")[0] for m in _messages(record)] == ["array '/k'"]
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning) as record:
        nczarr.convert(src, f"file://{out}#mode=nczarr,file", mode="nczarr")
    said = _messages(record)
    # one warning naming each array (the no-fill ubyte '/u' is not masked: not named)
    assert (
        "arrays '/f' (9.969209968386869e+36, netCDF's default float fill), '/s' (-32767, "
        "netCDF's default short fill) have no _FillValue attribute (their producer, "
        "zarr-python or xarray, masks nothing), so netCDF4 reading this NCZarr copy masks "
        "those values, which zarr-python and xarray show as data (no NCZarr metadata stops "
        "that: only a _FillValue attribute would, masking its own value instead)"
    ) in said
    # the kept fill's warning no longer says netCDF readers do not mask it
    (kept,) = [m for m in said if m.startswith("array '/k'")]
    assert "netCDF4 reading an NCZarr copy masks it too (netCDF's default fill)" in kept
    assert "do not mask it either" not in kept
    group = zarr.open_group(src, mode="r")
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        for name in ("s", "f"):  # what the warnings say netCDF4 does
            assert nc[name][...].mask.tolist() == [True, False, False]
            nc[name].set_auto_mask(False)
            np.testing.assert_array_equal(nc[name][...], group[name][...])
        assert not np.ma.is_masked(nc["u"][...])
        assert nc["k"][...].mask.tolist() == [False, False, True, True]
    engine = xr.open_dataset(src, engine="nczarr")
    for name in ("s", "f", "u", "k"):  # the engine reads the producer's values
        np.testing.assert_array_equal(engine[name].values, group[name][...])


def test_xarray_integers_without_fill_value_are_named_for_nczarr(tmp_path: Path) -> None:
    src = tmp_path / "x.zarr"
    _quiet_zarr(
        xr.Dataset({"xi": ("x", np.array([-2147483647, 1, 2], "i4"))}).to_zarr,
        src,
        zarr_format=3,
        mode="w",
    )
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning) as record:
        nczarr.convert(src, f"file://{out}#mode=nczarr,file", mode="nczarr")
    assert any(
        m.startswith("array '/xi' (-2147483647, netCDF's default int fill) has no _FillValue")
        for m in _messages(record)
    )
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        assert nc["xi"][...].mask.tolist() == [True, False, False]


# ------------------------------------------------------------------ finding 7


def test_string_fill_values_masked_in_a_zarr_v2_copy_are_named(tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=3)
    vs = group.create_array(
        "vs", shape=(4,), chunks=(2,), dtype=str, fill_value="zz", dimension_names=["x"]
    )
    vs[0:2] = ["a", "zz"]
    us = _quiet_zarr(
        group.create_array,
        "us", shape=(4,), chunks=(2,), dtype="<U3", fill_value="q", dimension_names=["x"],
    )  # fmt: skip
    us[0:2] = ["é", "q"]
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning) as record:
        nczarr.convert(src, out, mode="zarr")
    said = {m.split(":")[0]: m for m in _messages(record)}
    for name, fill in (("vs", "zz"), ("us", "q")):
        assert said[f"array '/{name}'"].endswith(
            f"xarray masks the text {fill!r} as missing (NaN) in a Zarr v2 copy or reference "
            f"set, also where it was written as data; zarr-python, netCDF4 on an NCZarr copy "
            f"and xarray on a Zarr v3 copy read it as text"
        )
    copy = xr.open_zarr(out, consolidated=False)  # what the warning says
    producer = zarr.open_group(src, mode="r")
    assert producer["vs"][...].tolist() == ["a", "zz", "zz", "zz"]
    assert copy["vs"].values.tolist()[0] == "a" and pd_isna(copy["vs"].values[1:])
    assert zarr.open_group(out, mode="r")["vs"][...].tolist() == ["a", "zz", "zz", "zz"]


def pd_isna(values: np.ndarray) -> bool:
    import pandas as pd

    return bool(pd.isna(values).all())
