"""The translated view: zarr-python, xarray and netcdf-c read every generation through it."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import InvalidModeError, ReadOnlyError
from nczarr.maps.memory import MemoryMap
from nczarr.readthrough import TranslatedView, view

from .ncoracle import describe, diff, fixture_path, map_from_zip

V2UC_EXPECTED = {
    "pressure": np.array([1000, 900, 1010, 905, 990, 880, 1020, 910.0]).reshape(4, 2),
    "code": np.array([1, 2, 3, 1], "i2"),
    "count": np.array(123456789012, "i8"),
}


def unzip(name: str, tmp_path: Path) -> Path:
    """Extract a netcdf-c zip fixture; return the dataset directory."""
    with zipfile.ZipFile(fixture_path(name)) as zf:
        zf.extractall(tmp_path)
        top = zf.infolist()[0].filename.split("/", 1)[0]
    return tmp_path / top


def copy_out(v: TranslatedView, path: Path) -> Path:
    """Copy every key of a view into an empty directory."""
    for key in v:
        target = path / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(v[key])
    return path


def nc_values(path: Path) -> dict[str, np.ndarray]:
    """Every variable's data as netcdf-c reads it (unmasked)."""
    out: dict[str, np.ndarray] = {}
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file") as ds:

        def walk(grp: netCDF4.Group) -> None:
            for var in grp.variables.values():
                var.set_auto_mask(False)
                out[f"{grp.path.rstrip('/')}/{var.name}"] = np.asarray(var[...])
            for child in grp.groups.values():
                walk(child)

        walk(ds)
    return out


# ------------------------------------------------------------------ zarr-python, xarray
def test_netcdf_c_current_output_through_zarr_and_xarray(tmp_path: Path) -> None:
    truth = nc_values(unzip("current_netcdf4101.zip", tmp_path))
    v = view(map_from_zip(fixture_path("current_netcdf4101.zip")))
    grp = zarr.open_group(store=nczarr.ZarrStore(v), mode="r")
    np.testing.assert_array_equal(grp["v"][...], truth["/v"])
    np.testing.assert_array_equal(grp["g/gv"][...], truth["/g/gv"])
    assert grp["sc"].shape == () and grp["sc"][...] == truth["/sc"]
    assert grp["c"].dtype == np.dtype("S1")
    np.testing.assert_array_equal(grp["c"][...], truth["/c"])
    assert [s.decode() for s in grp["s"][...]] == list(truth["/s"])
    ds = xr.open_zarr(nczarr.ZarrStore(v), consolidated=False)
    assert ds["v"].dims == ("t", "x") and ds["sc"].dims == ()
    assert ds.attrs["summary"] == "written by netcdf-c 4.10.1 through netCDF4-python"
    gds = xr.open_zarr(nczarr.ZarrStore(v), group="g", consolidated=False)
    assert gds["gv"].dims == ("y", "x")


def test_shuffle_output_zarr_python_misreads_is_read_right() -> None:
    v = view(map_from_zip(fixture_path("pure_netcdf4101_shuffle.zip")))
    expected = np.arange(100, dtype="i4") * 1000 - 7
    grp = zarr.open_group(store=nczarr.ZarrStore(v), mode="r")
    np.testing.assert_array_equal(grp["ints"][...], expected)
    ds = xr.open_zarr(nczarr.ZarrStore(v), consolidated=False, mask_and_scale=False)
    np.testing.assert_array_equal(ds["ints"].values, expected)
    assert ds["ints"].dims == ("n",)


def test_legacy_uppercase_generation_through_zarr_and_xarray() -> None:
    """netcdf-c 4.9.0 output (netcdf-c 4.10 refuses it): values from its CDL."""
    v = view(map_from_zip(fixture_path("v2uc_ncgen490.zip")))
    grp = zarr.open_group(store=nczarr.ZarrStore(v), mode="r")
    for name, expected in V2UC_EXPECTED.items():
        np.testing.assert_array_equal(grp[name][...], expected)
    assert b"".join(grp["id"][...].tolist()) == b"ABCD"
    np.testing.assert_array_equal(grp["sub/t"][...], np.arange(1.5, 7.5, 1.0).reshape(3, 2))
    ds = xr.open_zarr(nczarr.ZarrStore(v), consolidated=False)
    assert ds["pressure"].dims == ("station", "level") and ds["count"].dims == ()
    assert ds.attrs["institution"] == "example"


def test_oldkeys_generation_through_zarr() -> None:
    v = view(map_from_zip(fixture_path("ref_oldkeys.file.zip")))
    grp = zarr.open_group(store=nczarr.ZarrStore(v), mode="r")
    np.testing.assert_array_equal(grp["v"][...], np.arange(48).reshape(2, 4, 6))
    ds = xr.open_zarr(nczarr.ZarrStore(v), consolidated=False)
    assert ds["v"].dims == ("d0", "d1", "d2")


def test_v1_objects_are_hidden() -> None:
    v = view(map_from_zip(fixture_path("ref_oldformat_v1.zip")), "nczarr")
    keys = sorted(v)
    assert not [k for k in keys if ".ncz" in k]
    assert "g1/pos/.zarray" in keys and "lat/.zarray" in keys
    assert v.search("") == [".zattrs", ".zgroup", "g1", "lat"]


# --------------------------------------------------------------------- netcdf-c
@pytest.mark.parametrize("name", ["current_netcdf4101.zip", "pure_netcdf4101_shuffle.zip"])
def test_nczarr_copy_is_what_netcdf_c_saw(name: str, tmp_path: Path) -> None:
    src = unzip(name, tmp_path / "src")
    layout = "zarr" if name.startswith("pure") else "nczarr-v2"
    mode = "zarr" if name.startswith("pure") else "nczarr"
    before = describe(src, mode, layout)
    out = copy_out(view(map_from_zip(fixture_path(name)), "nczarr"), tmp_path / "out.file")
    after = describe(out, "nczarr", layout)
    assert diff(after, before, ignore=("compressor", "filters")) == []
    truth, seen = nc_values(src), nc_values(out)
    assert seen.keys() == truth.keys()
    for key in truth:
        np.testing.assert_array_equal(seen[key], truth[key])


@pytest.mark.parametrize("name", ["v2uc_ncgen490.zip", "ref_oldkeys.file.zip"])
def test_nczarr_copy_of_legacy_generations_opens_in_netcdf_c(name: str, tmp_path: Path) -> None:
    out = copy_out(view(map_from_zip(fixture_path(name)), "nczarr"), tmp_path / "out.file")
    values = nc_values(out)
    if name.startswith("v2uc"):
        for var, expected in V2UC_EXPECTED.items():
            np.testing.assert_array_equal(values["/" + var], expected)
        assert b"".join(values["/id"].tolist()) == b"ABCD"
        np.testing.assert_array_equal(values["/sub/t"], np.arange(1.5, 7.5, 1.0).reshape(3, 2))
    else:
        np.testing.assert_array_equal(values["/v"], np.arange(48).reshape(2, 4, 6))
    # netcdf-c opens the result read-write (the legacy input is read-only for it)
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file", "a") as ds:
        ds.setncattr("touched", "yes")


# ----------------------------------------------------------------------- the map
def small_source() -> MemoryMap:
    src = MemoryMap(mode="w")
    src[".zgroup"] = b'{"zarr_format": 2}'
    src[".zattrs"] = b'{"title": "t"}'
    src["a/.zarray"] = (
        b'{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", "fill_value": 0,'
        b' "order": "C", "compressor": null, "filters": null}'
    )
    src["a/.zattrs"] = b'{"_ARRAY_DIMENSIONS": ["x"]}'
    src["a/0"] = np.arange(2, dtype="<i4").tobytes()
    src["a/1"] = np.arange(2, 4, dtype="<i4").tobytes()
    src["a/.stray"] = b"not a chunk"
    src["notes/readme.txt"] = b"not part of the dataset"
    return src


def test_view_is_read_only() -> None:
    v = view(small_source(), "nczarr")
    with pytest.raises(ReadOnlyError, match="cannot write 'a/0' to"):
        v["a/0"] = b"x"
    with pytest.raises(ReadOnlyError, match="cannot write 'a/0' to"):
        del v["a/0"]
    assert v.read_only and v.mode == "r"


def test_view_keys_and_passthrough() -> None:
    src = small_source()
    v = view(src, "zarr")
    assert sorted(v) == [".zattrs", ".zgroup", "a/.zarray", "a/.zattrs", "a/0", "a/1"]
    assert sorted(v.chunk_keys()) == ["a/0", "a/1"]
    assert v["a/1"] == src["a/1"]
    with pytest.raises(KeyError):
        v["a/.stray"]
    with pytest.raises(KeyError):
        v["notes/readme.txt"]
    assert "a/0" in v and "a/.stray" not in v and "notes/readme.txt" not in v
    assert v.search("") == [".zattrs", ".zgroup", "a"]
    assert v.search("a") == [".zarray", ".zattrs", "0", "1"]
    assert v.search("notes") == []
    assert v.getitems(["a/0", "/a/1", ".zgroup", "missing", "a/.stray"]) == {
        "a/0": src["a/0"],
        "/a/1": src["a/1"],
        ".zgroup": b'{"zarr_format": 2}',
    }
    assert v.getrange("a/1", 4) == src["a/1"][4:]
    assert v.getsize("a/0") == 8 and v.getsize(".zgroup") == len(v[".zgroup"])
    with pytest.raises(KeyError):
        v.getsize("a/.stray")
    assert sorted(v.metadata) == [".zattrs", ".zgroup", "a/.zarray", "a/.zattrs"]
    assert v.source is src and v.format == "zarr" and v.dataset == nczarr.read(src)
    assert list(v.keys_below("a")) == ["a/.zarray", "a/.zattrs", "a/0", "a/1"]


def test_consolidated_follows_the_source_unless_told() -> None:
    src = small_source()
    assert ".zmetadata" not in view(src)
    assert ".zmetadata" in view(src, consolidated=True)
    src[".zmetadata"] = b'{"metadata": {}, "zarr_consolidated_format": 1}'
    # the source's consolidated metadata is stale (empty): the reader follows it
    v = view(src)
    assert v.consolidated and ".zmetadata" in v
    assert ".zmetadata" not in view(src, consolidated=False)


def test_noxarray_and_bad_mode() -> None:
    v = view(small_source(), "zarr", noxarray=True)
    assert b"_ARRAY_DIMENSIONS" not in v["a/.zattrs"]
    with pytest.raises(InvalidModeError, match="invalid view mode 'hdf5'"):
        view(small_source(), "hdf5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a URL, a path or a ZMap"):
        view(42)  # type: ignore[arg-type]


def test_view_from_a_url_pickles_and_closes(tmp_path: Path) -> None:
    src = unzip("ref_oldkeys.file.zip", tmp_path)
    v = view(str(src), "zarr")
    again = pickle.loads(pickle.dumps(v))
    assert isinstance(again, TranslatedView) and again == v
    assert dict(again.items()) == dict(v.items())
    v.close()
    assert v.closed and v.source.closed


def test_scalar_chunk_is_the_0d_chunk() -> None:
    v = view(map_from_zip(fixture_path("current_netcdf4101.zip")), "zarr")
    assert b'"shape": []' in v["sc/.zarray"]
    assert v["sc/0"] == v.source["sc/0"]


def test_public_functions_survive_submodule_imports() -> None:
    """``nczarr.view``, ``nczarr.convert`` and ``nczarr.translate.write`` stay functions
    even after every module of the package has been imported."""
    import nczarr.conversion
    import nczarr.readthrough
    import nczarr.translate.writer

    v = nczarr.view(small_source(), "zarr")
    assert isinstance(v, TranslatedView)
    assert nczarr.translate.write(v.dataset, "zarr") == v.metadata
    assert callable(nczarr.convert) and nczarr.convert.__name__ == "convert"
