"""Regression tests of issue 15's defects 1-5, on the real producers' stores.

Each store and what its producer's own reader returned are in ``tests/data/producers``
(see ``tests/producers/README.md``). Every test here failed before the fix it names.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr import NCZarrWarning

DATA = Path(__file__).parent / "data" / "producers"


def _src(name: str) -> str:
    return str(DATA / f"{name}.zip")


def _record(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def _missing(name: str, var: str) -> list[bool]:
    """Where xarray's zarr engine read a missing value (NaN) for the producer."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "producer_record", Path(__file__).parent / "producers" / "record.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = module.decode_array(_record(name)["xarray"]["variables"][var]["values"])
    return np.isnan(values).reshape(-1).tolist()


def _engine(src: str, **kwargs) -> xr.Dataset:
    with pytest.warns(NCZarrWarning) if kwargs.pop("warns", False) else _nothing():
        return xr.open_dataset(src, engine="nczarr", **kwargs)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _to_nczarr(name: str, tmp_path: Path) -> tuple[str, list[str]]:
    url = f"file://{tmp_path / name}#mode=nczarr,file"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = nczarr.convert(_src(name), url)
    announced = {str(c.message) for c in caught if issubclass(c.category, NCZarrWarning)}
    assert all(w in announced for w in report.warnings)
    return url, list(report.warnings)


# ------------------------------------------------------------------ 1. missing values
def test_xarray_v2_packed_fill_value_is_masked_by_the_engine() -> None:
    """xarray 2024 wrote int16 packed with _FillValue -32767 as the v2 fill_value only;
    its zarr engine reads NaN there (nczarr read -54.52)."""
    ds = _engine(_src("x2_cf_numeric"))
    assert np.isnan(ds["t_packed"].values).reshape(-1).tolist() == _missing(
        "x2_cf_numeric", "t_packed"
    )
    assert np.isnan(ds["count"].values).reshape(-1).tolist() == _missing("x2_cf_numeric", "count")


def test_xarray_v2_fill_value_is_masked_by_netcdf_c_in_the_nczarr_copy(tmp_path: Path) -> None:
    url, _ = _to_nczarr("x2_cf_numeric", tmp_path)
    with netCDF4.Dataset(url) as ds:
        packed = ds["t_packed"]
        assert packed.getncattr("_FillValue") == -32767
        assert np.ma.getmaskarray(packed[...]).reshape(-1).tolist() == _missing(
            "x2_cf_numeric", "t_packed"
        )
        assert "_FillValue" not in ds["count_nofill"].ncattrs()  # xarray wrote fill null


def test_gdal_nodata_is_masked_as_gdal_masks_it(tmp_path: Path) -> None:
    """GDAL keeps nodata only as the fill_value (no _ARRAY_DIMENSIONS, no attribute)."""
    gdal = _record("gdal_nodata")["gdal"]["arrays"]
    ds = _engine(_src("gdal_nodata"))
    for name in ("temp", "count"):
        assert np.isnan(ds[name].values).reshape(-1).tolist() == gdal[name]["mask"], name
    assert not np.isnan(ds["plain"].values).any()
    url, _ = _to_nczarr("gdal_nodata", tmp_path)
    with netCDF4.Dataset(url) as nc:
        for name in ("temp", "count"):
            assert np.ma.getmaskarray(nc[name][...]).reshape(-1).tolist() == gdal[name]["mask"]


def test_xarray_v3_fill_value_attribute_is_masked(tmp_path: Path) -> None:
    ds = _engine(_src("x3_cf_numeric"))
    assert np.isnan(ds["count"].values).reshape(-1).tolist() == _missing("x3_cf_numeric", "count")
    assert np.isnan(ds["t_packed"].values).reshape(-1).tolist() == _missing(
        "x3_cf_numeric", "t_packed"
    )
    url, _ = _to_nczarr("x3_cf_numeric", tmp_path)
    with xr.open_dataset(url, engine="netcdf4") as nc:
        assert np.isnan(nc["count"].values).reshape(-1).tolist() == _missing(
            "x3_cf_numeric", "count"
        )


def test_zarr_python_v3_fill_value_is_not_a_missing_value_and_the_warning_says_who_masks() -> None:
    """zarr-python 3's fill_value -1 without _FillValue: zarr-python and xarray read -1."""
    with pytest.warns(NCZarrWarning, match="not a missing value for zarr-python and xarray") as w:
        ds = xr.open_dataset(_src("z3_defaults"), engine="nczarr")
    message = next(str(m.message) for m in w if "'/sharded'" in str(m.message))
    assert "xarray masks the fill_value of a Zarr v2 copy" in message
    assert "treat -1.0 as missing" not in message
    assert (ds["sharded"].values[2:] == -1.0).all()


def test_netcdf_c_pure_zarr_masks_its_fill_value_attribute_only() -> None:
    record = _record("nc_pure_zarr")["netcdf4"]["variables"]
    ds = _engine(_src("nc_pure_zarr"))
    assert np.isnan(ds["t"].values).tolist() == record["t"]["values"]["mask"]
    assert ds["n"].values.tolist() == [1, 2, 3, 4]


# ------------------------------------------------------------------ 2. bool
def test_bool_stays_bool_in_the_engine() -> None:
    ds = _engine(_src("z2_codecs"))
    assert ds["bool_plain"].dtype == bool and ds["packbits"].dtype == bool
    assert ds["packbits"].values[0].tolist() == [True, False, True, True, False, False]
    assert _engine(_src("z3_defaults"))["flags"].dtype == bool


def test_bool_stays_bool_in_zarr_copies(tmp_path: Path) -> None:
    import zarr

    nczarr.convert(_src("z2_codecs"), str(tmp_path / "v2"), "zarr")
    nczarr.convert(_src("z3_defaults"), str(tmp_path / "v3"), "zarr", zarr_format=3)
    assert json.loads((tmp_path / "v2" / "bool_plain" / ".zarray").read_text())["dtype"] == "|b1"
    flags = zarr.open_array(str(tmp_path / "v3" / "flags"), mode="r")
    assert flags.dtype == bool and flags[...].tolist() == [True, False, True]


def test_bool_in_nczarr_is_what_xarrays_netcdf4_engine_writes(tmp_path: Path) -> None:
    url, warnings = _to_nczarr("z3_defaults", tmp_path)
    assert any("'/flags'" in w and 'dtype = "bool"' in w for w in warnings)
    with xr.open_dataset(url, engine="netcdf4") as ds:
        assert ds["flags"].dtype == bool
        assert ds["flags"].values.tolist() == [True, False, True]


# ------------------------------------------------------------------ 3. fixed bytes
def test_fixed_bytes_stay_bytes_in_the_engine() -> None:
    ds = _engine(_src("x2_cf_text"))
    assert ds["code"].dtype == np.dtype("S5")
    assert ds["code"].values.tolist() == [b"ab", b"cdefg", b""]


def test_fixed_bytes_in_nczarr_are_char_with_a_string_dimension(tmp_path: Path) -> None:
    url, warnings = _to_nczarr("x2_cf_text", tmp_path)
    assert any("'/code'" in w and "'string5'" in w for w in warnings)
    with netCDF4.Dataset(url) as nc:
        assert nc["code"].dimensions == ("n", "string5")
        assert nc["code"].dtype == np.dtype("S1")
    with xr.open_dataset(url, engine="netcdf4") as ds:
        assert ds["code"].dtype == np.dtype("S5")
        assert ds["code"].values.tolist() == [b"ab", b"cdefg", b""]
    # and back: NCZarr -> engine is what the source gave
    assert _engine(url)["code"].values.tolist() == [b"ab", b"cdefg", b""]


def test_migrate_refuses_fixed_bytes_to_nczarr(tmp_path: Path) -> None:
    with zipfile.ZipFile(_src("x2_cf_text")) as archive:
        archive.extractall(tmp_path / "s")
    before = sorted(p.name for p in (tmp_path / "s").rglob("*"))
    with pytest.raises(nczarr.UnsupportedError, match="/code"):
        nczarr.migrate(str(tmp_path / "s"), "nczarr")
    assert sorted(p.name for p in (tmp_path / "s").rglob("*")) == before


# ------------------------------------------------------------------ 4. stale .zmetadata
def test_stale_zmetadata_read_and_engine_name_the_array() -> None:
    with pytest.warns(NCZarrWarning, match=r"stale \(not in it: '/late'\)"):
        dataset = nczarr.read(_src("x2_stale_zmetadata"))
    assert {v.path for v in dataset.root.all_variables()} == {"/a", "/late"}
    with pytest.warns(NCZarrWarning, match="'/late'"):
        ds = xr.open_dataset(_src("x2_stale_zmetadata"), engine="nczarr")
    assert ds["late"].values.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("target", ["nczarr", "zarr"])
def test_stale_zmetadata_convert_keeps_every_array(tmp_path: Path, target: str) -> None:
    out = tmp_path / "out"
    dst = f"file://{out}#mode=nczarr,file" if target == "nczarr" else str(out)
    with pytest.warns(NCZarrWarning, match="'/late'"):
        report = nczarr.convert(_src("x2_stale_zmetadata"), dst, target)
    assert any("'/late'" in w for w in report.warnings)
    if target == "nczarr":
        with netCDF4.Dataset(dst) as nc:
            assert nc["late"][...].tolist() == [0, 1, 2, 3]
    else:
        assert xr.open_zarr(str(out))["late"].values.tolist() == [0, 1, 2, 3]


def test_stale_zmetadata_migrate_keeps_every_array(tmp_path: Path) -> None:
    with zipfile.ZipFile(_src("x2_stale_zmetadata")) as archive:
        archive.extractall(tmp_path / "s")
    with pytest.warns(NCZarrWarning, match="'/late'"):
        nczarr.migrate(str(tmp_path / "s"), "nczarr")
    with netCDF4.Dataset(f"file://{tmp_path / 's'}#mode=nczarr,file") as nc:
        assert nc["late"][...].tolist() == [0, 1, 2, 3]


# ------------------------------------------------------------------ 5. attribute types
ROOT_ATTRS = {
    "is_ok": True,
    "missing": None,
    "meta": {"a": 1, "b": [1, 2]},
    "grid": [[1, 2], [3, 4]],
}


@pytest.mark.parametrize(("name", "zarr_format"), [("z2_objects", 2), ("z3_defaults", 3)])
def test_zarr_copies_keep_json_attribute_types(tmp_path: Path, name: str, zarr_format: int) -> None:
    import zarr

    src = "z2_plain" if zarr_format == 2 else name
    out = tmp_path / "out"
    exclude = ["/stamps", "/structured"] if src == "z2_plain" else None
    with pytest.warns(NCZarrWarning):
        nczarr.convert(_src(src), str(out), "zarr", zarr_format=zarr_format, exclude=exclude)
    attrs = dict(zarr.open_group(str(out), mode="r").attrs)
    assert {k: attrs[k] for k in ROOT_ATTRS} == ROOT_ATTRS


def test_gdal_crs_object_survives_a_zarr_copy(tmp_path: Path) -> None:
    with zipfile.ZipFile(_src("gdal_nodata")) as archive:
        crs = json.loads(archive.read("temp/.zattrs"))["_CRS"]
    nczarr.convert(_src("gdal_nodata"), str(tmp_path / "out"), "zarr")
    written = json.loads((tmp_path / "out" / "temp" / ".zattrs").read_text())
    assert written["_CRS"] == crs and isinstance(written["_CRS"], dict)


def test_nczarr_copy_says_how_it_types_json_attributes(tmp_path: Path) -> None:
    url, warnings = _to_nczarr("z3_defaults", tmp_path)
    for name in ROOT_ATTRS:
        assert any(f"attribute {name!r} of '/'" in w for w in warnings), name
    with netCDF4.Dataset(url) as nc:
        assert nc.getncattr("is_ok") == 1
        assert json.loads(nc.getncattr("meta")) == ROOT_ATTRS["meta"]


def test_fixed_bytes_whose_chunks_are_re_encoded_stay_text_with_a_warning(tmp_path: Path) -> None:
    """gzip has no netcdf-c filter: the chunks are re-encoded on their own grid, so the
    char form (one more chunk coordinate) is not used, and the warning says so."""
    import numcodecs
    import zarr

    group = zarr.open_group(tmp_path / "src", mode="w", zarr_format=2)
    array = group.create_array(
        "b", shape=(4,), chunks=(2,), dtype="S3", compressors=numcodecs.GZip(), fill_value=None
    )
    array[...] = np.array([b"ab", b"cde", b"", b"x"])
    array.attrs["_ARRAY_DIMENSIONS"] = ["n"]
    url = f"file://{tmp_path / 'out'}#mode=nczarr,file"
    with pytest.warns(NCZarrWarning, match=r"'/b': fixed-width bytes \|S3 are written as a netCDF"):
        nczarr.convert(str(tmp_path / "src"), url)
    with netCDF4.Dataset(url) as nc:
        assert nc["b"][...].tolist() == ["ab", "cde", "", "x"]
