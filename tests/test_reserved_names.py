"""Groups and arrays named as the target's metadata objects are refused, not half-written.

netCDF4 writes a variable (or group) named ``zarr.json``; in a Zarr v3 copy its node
would be ``zarr.json/``, beside its group's ``zarr.json``. zarr-python 3 writes arrays
named ``.zarray``, ``.zattrs``, ``.zgroup`` and ``.zmetadata`` in Zarr v3, which a Zarr
v2 or NCZarr copy cannot hold beside the metadata objects of those names. ``convert``
refuses them before anything is written (naming each, suggesting ``exclude=``) and
converts the rest when they are excluded; a view leaves them out with a warning naming
each; targets that have no such object (``zarr.json`` in Zarr v2) keep them.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import zarr

import nczarr

RESERVED_V3 = r"array '/zarr.json' left out of the Zarr v3 output: it is named 'zarr.json'"


def _netcdf(path: Path, url: str) -> Path:
    """netCDF4 writes ``/zarr.json`` and ``/ok`` (a ``.nc`` file or an NCZarr store)."""
    with netCDF4.Dataset(url, "w") as nc:
        nc.createDimension("x", 3)
        nc.createVariable("zarr.json", "i4", ("x",))[:] = [1, 2, 3]
        nc.createVariable("ok", "i4", ("x",))[:] = [4, 5, 6]
    return path


@pytest.fixture(params=["nc", "nczarr"])
def source(request, tmp_path: Path) -> Path:
    if request.param == "nc":
        path = tmp_path / "src.nc"
        return _netcdf(path, str(path))
    path = tmp_path / "src.file"
    return _netcdf(path, f"file://{path}#mode=nczarr,file")


def test_convert_to_zarr_v3_refuses_before_writing_and_converts_the_rest(
    source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out3.zarr"
    with pytest.raises(nczarr.UnsupportedTypeError) as info:
        nczarr.convert(str(source), str(out), mode="zarr", zarr_format=3)
    message = str(info.value)
    assert "/zarr.json" in message and "exclude=['/zarr.json']" in message
    assert not out.exists()  # untouched: no journal, no chunk
    empty = tmp_path / "empty.zarr"
    empty.mkdir()
    with pytest.raises(nczarr.UnsupportedTypeError):
        nczarr.convert(str(source), str(empty), mode="zarr", zarr_format=3)
    assert list(empty.iterdir()) == []
    with pytest.warns(nczarr.NCZarrWarning, match=r"left out by include/exclude: /zarr.json"):
        nczarr.convert(str(source), str(out), mode="zarr", zarr_format=3, exclude=["zarr.json"])
    group = zarr.open_group(str(out), mode="r", zarr_format=3)
    assert sorted(group.array_keys()) == ["ok"]
    np.testing.assert_array_equal(group["ok"][...], [4, 5, 6])
    # Zarr v2 has no object named zarr.json: the variable is kept, netcdf-c reads it
    out2 = tmp_path / "out2.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error", nczarr.NCZarrWarning)
        nczarr.convert(str(source), str(out2), mode="zarr")
    with netCDF4.Dataset(f"file://{out2}#mode=zarr,file") as nc:
        np.testing.assert_array_equal(nc["zarr.json"][:], [1, 2, 3])


def test_the_zarr_v3_view_warns_and_does_not_show_a_broken_tree(source: Path) -> None:
    with pytest.warns(nczarr.NCZarrWarning, match=RESERVED_V3):
        view = nczarr.view(str(source), mode="zarr", zarr_format=3)
    keys = set(view.keys())
    assert not any(k.startswith("zarr.json/") for k in keys)
    assert {"zarr.json", "ok/zarr.json"} <= keys
    group = zarr.open_group(store=nczarr.ZarrStore(view), mode="r", zarr_format=3)
    assert sorted(group.array_keys()) == ["ok"]
    np.testing.assert_array_equal(group["ok"][...], [4, 5, 6])


def test_a_group_named_zarr_json_is_refused_with_its_arrays(tmp_path: Path) -> None:
    path = tmp_path / "g.nc"
    with netCDF4.Dataset(str(path), "w") as nc:
        nc.createDimension("x", 2)
        nc.createVariable("top", "f4", ("x",))[:] = [1.5, 2.5]
        g = nc.createGroup("zarr.json")
        g.createVariable("v", "i2", ("x",))[:] = [7, 8]
    out = tmp_path / "g3.zarr"
    with pytest.raises(nczarr.UnsupportedTypeError, match=r"/zarr.json/v.*its group"):
        nczarr.convert(str(path), str(out), mode="zarr", zarr_format=3)
    assert not out.exists()
    with pytest.warns(nczarr.NCZarrWarning, match=r"left out by include/exclude"):
        nczarr.convert(str(path), str(out), mode="zarr", zarr_format=3, exclude=["/zarr.json"])
    group = zarr.open_group(str(out), mode="r", zarr_format=3)
    assert (sorted(group.array_keys()), sorted(group.group_keys())) == (["top"], [])


def _zarr_python_v3(path: Path) -> Path:
    """zarr-python 3 writes arrays named as Zarr v2's metadata objects (consolidated)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    for i, name in enumerate([".zarray", ".zattrs", ".zgroup", ".zmetadata"]):
        root.create_array(name, shape=(2,), dtype="i4", dimension_names=["x"])[...] = [i, i]
    root.create_array("ok", shape=(2,), dtype="i4", dimension_names=["x"])[...] = [5, 6]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # consolidated metadata is not in the v3 spec yet
        zarr.consolidate_metadata(str(path))
    return path


@pytest.mark.parametrize("mode", ["zarr", "nczarr"])
def test_zarr_v2_metadata_names_are_refused_in_zarr_v2_and_nczarr(
    tmp_path: Path, mode: str
) -> None:
    src = _zarr_python_v3(tmp_path / "dots.zarr")
    names = ["/.zarray", "/.zattrs", "/.zgroup", "/.zmetadata"]
    out = tmp_path / f"out.{mode}"
    with pytest.raises(nczarr.UnsupportedTypeError) as info:
        nczarr.convert(str(src), str(out), mode=mode)
    assert f"exclude={names!r}" in str(info.value)
    assert not out.exists()
    label = "NCZarr" if mode == "nczarr" else "Zarr v2"
    with pytest.warns(nczarr.NCZarrWarning) as caught:
        view = nczarr.view(str(src), mode=mode)
    said = [str(w.message) for w in caught]
    for name in names:
        assert any(m.startswith(f"array {name!r} left out of the {label} output") for m in said)
    assert sorted(k for k in view if k.endswith(".zarray")) == ["ok/.zarray"]
    with pytest.warns(nczarr.NCZarrWarning, match=r"4 array\(s\) left out by include/exclude"):
        nczarr.convert(str(src), str(out), mode=mode, exclude=names)
    with netCDF4.Dataset(f"file://{out}#mode={mode},file") as nc:
        assert list(nc.variables) == ["ok"]
        np.testing.assert_array_equal(nc["ok"][:], [5, 6])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_arrays_named_with_a_leading_dot_are_found_and_refused_for_nczarr(
    tmp_path: Path, zarr_format: int
) -> None:
    """zarr-python writes an array named ``.hidden``; a store without consolidated
    metadata used to lose it silently (the walk skipped every name starting with "."):
    read finds it, a Zarr copy keeps it, and an NCZarr copy refuses it (netcdf-c
    refuses a whole dataset holding a name starting with ".") unless excluded."""
    src = tmp_path / "src.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=zarr_format)
    for name, values in ((".hidden", [1, 2, 3]), ("ok", [4, 5, 6])):
        array = group.create_array(name, shape=(3,), dtype="i4", fill_value=-1)
        array[:] = values
    assert sorted(zarr.open_group(src, mode="r").array_keys()) == [".hidden", "ok"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        ds = nczarr.read(src)
        assert sorted(v.path for v in ds.root.all_variables()) == ["/.hidden", "/ok"]
        nczarr.convert(src, tmp_path / "copy.zarr", mode="zarr", zarr_format=zarr_format)
        copy = zarr.open_group(tmp_path / "copy.zarr", mode="r")
        assert copy[".hidden"][...].tolist() == [1, 2, 3]
        out = tmp_path / "out.file"
        with pytest.raises(nczarr.NCZarrError, match=r"'/.hidden'.*does not start with '.'"):
            nczarr.convert(src, f"file://{out}#mode=nczarr,file", mode="nczarr")
        assert not out.exists() or not any(out.iterdir())
        nczarr.convert(src, f"file://{out}#mode=nczarr,file", mode="nczarr", exclude=["/.hidden"])
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        assert list(nc.variables) == ["ok"]
