"""Format detection: every fixture, every generation, not-Zarr inputs, consolidated, v3."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from ncoracle import fixture_path, map_from_dir, map_from_zip

from nczarr.errors import MetadataError, NCZarrWarning, StorageError
from nczarr.load import FormatInfo, detect, load_metadata, read
from nczarr.maps.memory import MemoryMap


def mem(objects: dict[str, object]) -> MemoryMap:
    """A read-only map holding each value as JSON (bytes are stored as given)."""
    return MemoryMap(
        {k: v if isinstance(v, bytes) else json.dumps(v).encode() for k, v in objects.items()},
        mode="r",
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "current_netcdf4101.zip",
            FormatInfo(
                "nczarr", "nczarr-v2", 2, True, False, "4.10.1", (".zattrs",), "netCDF 4.10.1"
            ),
        ),
        (
            "ref_oldformat_v2attrs.zip",
            FormatInfo(
                "nczarr",
                "nczarr-v2",
                2,
                True,
                False,
                "4.9.3-development",
                (".zattrs",),
                "netCDF 4.9.3-development",
            ),
        ),
        (
            "ref_oldkeys.file.zip",
            FormatInfo(
                "nczarr",
                "nczarr-v2-keys",
                2,
                True,
                False,
                "4.9.2",
                (".zgroup", "v/.zarray"),
                "netCDF 4.9.2",
            ),
        ),
        (
            "v2uc_ncgen490.zip",
            FormatInfo(
                "nczarr",
                "nczarr-v2-keys",
                2,
                True,
                False,
                "4.9.0",
                (".zgroup", "code/.zarray", "count/.zarray", "id/.zarray", "pressure/.zarray"),
                "netCDF 4.9.0",
            ),
        ),
        (
            "ref_oldformat_v1.zip",
            FormatInfo(
                "nczarr",
                "nczarr-v1",
                2,
                False,
                False,
                "4.8.1-development",
                (".nczarr",),
                "netCDF 4.8.1-development",
            ),
        ),
        (
            "pure_netcdf4101_shuffle.zip",
            FormatInfo(
                "zarr", "zarr", 2, True, False, "4.10.1", (".zgroup", ".zattrs"), "netCDF 4.10.1"
            ),
        ),
        ("ref_byte.zarr.zip", FormatInfo("zarr", "zarr", 2, False, False, None, (".zgroup",))),
        (
            "ref_power_901_constants_orig.zip",
            FormatInfo("zarr", "zarr", 2, True, False, None, (".zgroup",)),
        ),
        (
            "deflate64_zarr.zip",
            FormatInfo("zarr", "zarr", 2, False, False, None, (".zgroup", ".zattrs")),
        ),
    ],
)
def test_fixtures(name: str, expected: FormatInfo) -> None:
    assert detect(map_from_zip(fixture_path(name))) == expected


def test_detect_and_read_accept_paths_and_urls() -> None:
    path = fixture_path("current_netcdf4101.zip")
    assert detect(path).layout == "nczarr-v2"
    assert detect(str(path)).netcdf_version == "4.10.1"
    ds = read(f"file://{path}#mode=nczarr,zip")
    assert list(ds.root.variables) == ["v", "c", "s", "sc"]


@pytest.fixture(scope="module")
def notzarr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("notzarr")
    with tarfile.open(fixture_path("ref_notzarr.tar.gz")) as tar:
        tar.extractall(target, filter="data")
    return target


@pytest.mark.parametrize("name", ["empty.file", "notzarr.file", "empty.zip", "notzarr.zip"])
def test_not_zarr_is_a_metadata_error_naming_the_url(notzarr: Path, name: str) -> None:
    with pytest.raises(MetadataError, match=rf"file://{notzarr / name}: not a Zarr store"):
        detect(notzarr / name)
    with pytest.raises(MetadataError, match="not a Zarr store"):
        read(notzarr / name)


def test_a_text_file_is_a_storage_error(notzarr: Path) -> None:
    with pytest.raises(StorageError, match=r"empty\.txt"):
        detect(notzarr / "empty.txt")


def test_empty_map_is_not_zarr() -> None:
    with pytest.raises(MetadataError, match=r"memory://\w+: not a Zarr store"):
        detect(MemoryMap(mode="r"))


def test_bad_json_names_url_and_key() -> None:
    store = mem({".zgroup": {"zarr_format": 2}, ".zattrs": b'{"a": [1,'})
    with pytest.raises(MetadataError, match=r"memory://\w+: '.zattrs': invalid JSON"):
        read(store)
    # an array's own object is one odd array, not a broken store (README): skipped
    store = mem({".zgroup": {"zarr_format": 2}, "v/.zarray": b'{"shape": [1,'})
    odd = r"skipped array '/v': 'v/.zarray' must hold a JSON object, got invalid JSON"
    with pytest.warns(NCZarrWarning, match=odd):
        assert read(store).skipped == ("/v",)


def test_root_object_of_wrong_json_type() -> None:
    with pytest.raises(MetadataError, match=r"'.zattrs' must hold a JSON object, got list"):
        detect(mem({".zgroup": {"zarr_format": 2}, ".zattrs": [1, 2]}))


def test_root_without_metadata_is_not_a_store_and_names_the_stores_below() -> None:
    """No root object is not a dataset (as zarr-python and netcdf-c's format inference
    say); an interrupted convert, which writes the root last, must not read as one.
    The message points at stores one level below (the parent-directory mistake)."""
    store = mem({"g/.zgroup": {"zarr_format": 2}, "g/.zattrs": {"a": 1}, "h/x": {}})
    for call in (detect, read):
        with pytest.raises(MetadataError, match=r"not a Zarr store.*one level below it: 'g'$"):
            call(store)


def test_half_migrated_store_reports_the_old_layout_and_reads(tmp_path: Path) -> None:
    """Root migrated to .zattrs, the array still has its keys in .zarray."""
    meta = load_metadata(map_from_zip(fixture_path("ref_oldkeys.file.zip")))
    zgroup = dict(meta[".zgroup"])
    zattrs = dict(meta[".zattrs"])
    zattrs["_nczarr_superblock"] = zgroup.pop("_nczarr_superblock")
    group = zgroup.pop("_nczarr_group")
    zattrs["_nczarr_group"] = {"dimensions": group["dims"], "arrays": group["vars"], "groups": []}
    store = mem(
        {
            ".zgroup": zgroup,
            ".zattrs": zattrs,
            "v/.zarray": meta["v/.zarray"],
            "v/.zattrs": meta["v/.zattrs"],
        }
    )
    info = detect(store)
    assert (info.layout, info.evidence) == ("nczarr-v2-keys", (".zattrs", "v/.zarray"))
    old = read(map_from_zip(fixture_path("ref_oldkeys.file.zip")))
    assert read(store).root == old.root


def test_upper_case_superblock_in_zgroup() -> None:
    store = mem(
        {
            ".zgroup": {
                "zarr_format": 2,
                "_NCZARR_SUPERBLOCK": {"version": "2.0.0"},
                "_NCZARR_GROUP": {"dims": {}, "vars": [], "groups": []},
            }
        }
    )
    assert detect(store).layout == "nczarr-v2-keys"


def test_zarr_python_v3_is_detected_and_read(tmp_path: Path) -> None:
    import zarr

    group = zarr.open_group(tmp_path / "v3.zarr", mode="w", zarr_format=3)
    group.attrs["title"] = "v3"
    group.create_array("a", shape=(3,), dtype="i4", dimension_names=["x"])
    info = detect(tmp_path / "v3.zarr")
    assert (info.format, info.zarr_format, info.xarray, info.evidence) == (
        "zarr",
        3,
        True,
        ("zarr.json",),
    )
    meta = load_metadata(map_from_dir(tmp_path / "v3.zarr"))
    assert meta["a/zarr.json"]["dimension_names"] == ["x"]
    variable = read(tmp_path / "v3.zarr").find_variable("/a")
    assert (variable.type, variable.dimensions) == ("int", ("/x",))


def test_xarray_consolidated_and_not(tmp_path: Path) -> None:
    import numpy as np
    import xarray as xr

    ds = xr.Dataset(
        {"v": (("t", "x"), np.zeros((2, 3), "f4"))}, coords={"x": [1, 2, 3]}, attrs={"n": 5}
    )
    ds.to_zarr(tmp_path / "c.zarr", mode="w", zarr_format=2, consolidated=True)
    ds.to_zarr(tmp_path / "n.zarr", mode="w", zarr_format=2, consolidated=False)
    consolidated, plain = detect(tmp_path / "c.zarr"), detect(tmp_path / "n.zarr")
    assert (consolidated.consolidated, consolidated.xarray) == (True, True)
    assert consolidated.evidence == (".zmetadata", ".zgroup", ".zattrs")
    assert (plain.consolidated, plain.xarray) == (False, True)
    assert read(tmp_path / "c.zarr").root == read(tmp_path / "n.zarr").root


def test_bad_consolidated_metadata() -> None:
    store = mem({".zmetadata": {"metadata": [1]}, ".zgroup": {"zarr_format": 2}})
    with pytest.raises(MetadataError, match=r"'.zmetadata' must hold \{'metadata'"):
        load_metadata(store)
