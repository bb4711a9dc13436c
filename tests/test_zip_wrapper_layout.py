"""A zipped store and its wrapper folder: the root is where the root metadata is.

``zip -r x.zip x`` (and GDAL's and netcdf-c's archives) put a whole store below one
folder named after the archive; zarr-python's ``ZipStore`` puts the root group's
``.zgroup`` at the archive root. A root group whose only child group happens to be
named like the archive looks like the first kind at a glance, and with the child's
members first in the archive it was unwrapped: its root attributes vanished and every
path lost a level. Each archive here is built with Python's ``zipfile`` in both
member orders, and read through every opener that detects a zip's layout (the zip
map, ``open_map``, the chained ``zip::`` map, ``read`` and ``convert``); zarr-python,
which wrote the root layout, is the oracle for it.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import fsspec
import pytest
import zarr

import nczarr
from nczarr.maps.zip import ZipMap

GROUP = json.dumps({"zarr_format": 2}).encode()
ARRAY = json.dumps(
    {
        "zarr_format": 2,
        "shape": [3],
        "chunks": [3],
        "dtype": "<i4",
        "compressor": None,
        "fill_value": 0,
        "filters": None,
        "order": "C",
    }
).encode()
CHUNK = b"\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00"
ROOT_ATTRS = json.dumps({"title": "the real root"}).encode()

#: The store below the wrapper folder (or below the root group's child ``x``).
STORE = {".zgroup": GROUP, "a/.zarray": ARRAY, "a/0": CHUNK}


def build(path: Path, members: dict[str, bytes], *, reverse: bool) -> None:
    """A zip of ``members`` in their order, or in the reverse order."""
    items = list(members.items())
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in reversed(items) if reverse else items:
            if name.endswith("/"):
                zf.mkdir(name.rstrip("/"))
            else:
                zf.writestr(name, data)


def wrapped(folder: str, *, dirs: bool = False) -> dict[str, bytes]:
    """The store below ``folder/`` (with ``zip -r``'s directory entries if ``dirs``)."""
    out: dict[str, bytes] = {f"{folder}/": b""} if dirs else {}
    for key, data in STORE.items():
        if dirs and "/" in key:
            out[f"{folder}/{key.rsplit('/', 1)[0]}/"] = b""
        out[f"{folder}/{key}"] = data
    return out


def real_root(child: str) -> dict[str, bytes]:
    """A root group (with attributes) whose only child group is ``child``: child first."""
    return {**wrapped(child), ".zgroup": GROUP, ".zattrs": ROOT_ATTRS}


def keys_of(path: Path) -> dict[str, bytes]:
    with ZipMap(path) as m:
        return dict(m)


ORDERS = pytest.mark.parametrize("reverse", [False, True], ids=["as-listed", "reversed"])


# ------------------------------------------------------------- the wrapper folder
@ORDERS
@pytest.mark.parametrize("dirs", [False, True], ids=["files-only", "zip-r-dir-entries"])
def test_a_store_wrapped_in_a_folder_named_after_the_archive_is_unwrapped(
    tmp_path: Path, reverse: bool, dirs: bool
) -> None:
    path = tmp_path / "x.zip"
    build(path, wrapped("x", dirs=dirs), reverse=reverse)
    with ZipMap(path) as m:
        assert (m.layout, m.root_folder) == ("netcdf", "x")
    assert keys_of(path) == STORE
    dataset = nczarr.read(str(path))
    assert list(dataset.root.variables) == ["a"] and dataset.root.groups == {}


@ORDERS
def test_a_store_without_a_wrapper_is_read_at_the_archive_root(
    tmp_path: Path, reverse: bool
) -> None:
    path = tmp_path / "x.zip"
    build(path, STORE, reverse=reverse)
    with ZipMap(path) as m:
        assert (m.layout, m.root_folder) == ("root", "")
    assert keys_of(path) == STORE


# ------------------------------------ a real root whose one child is named like it
@ORDERS
@pytest.mark.parametrize("child", ["x", "g"], ids=["child-named-like-the-zip", "other-child"])
def test_a_real_root_with_one_child_group_is_not_unwrapped(
    tmp_path: Path, reverse: bool, child: str
) -> None:
    path = tmp_path / "x.zip"
    build(path, real_root(child), reverse=reverse)
    with ZipMap(path) as m:
        assert (m.layout, m.root_folder) == ("root", "")
    assert keys_of(path) == {k: v for k, v in real_root(child).items() if not k.endswith("/")}
    # The producer's reader: zarr-python opens the archive root as the root group.
    with zarr.storage.ZipStore(path, mode="r") as store:
        root = zarr.open_group(store, mode="r")
        assert dict(root.attrs) == {"title": "the real root"}
        assert [name for name, _ in root.groups()] == [child]
        assert root[f"{child}/a"][:].tolist() == [1, 2, 3]
    dataset = nczarr.read(str(path))
    assert dataset.root.attributes["title"].value == "the real root"
    assert list(dataset.root.groups) == [child] and dataset.root.variables == {}
    assert list(dataset.root.groups[child].variables) == ["a"]


@ORDERS
def test_open_map_and_the_chained_zip_map_find_the_same_root(tmp_path: Path, reverse: bool) -> None:
    path = tmp_path / "x.zip"
    build(path, real_root("x"), reverse=reverse)
    with nczarr.open_map(str(path)) as m:
        assert m["x/a/0"] == CHUNK and m[".zattrs"] == ROOT_ATTRS
    fs = fsspec.filesystem("memory")
    fs.pipe("/nczarr-wrapper/x.zip", path.read_bytes())
    try:
        with nczarr.open_map("zip::memory://nczarr-wrapper/x.zip") as chained:
            assert chained[".zattrs"] == ROOT_ATTRS and chained.search("") == [
                ".zattrs",
                ".zgroup",
                "x",
            ]
    finally:
        fs.rm("/nczarr-wrapper", recursive=True)


@ORDERS
def test_convert_keeps_the_real_root_and_its_child(tmp_path: Path, reverse: bool) -> None:
    path = tmp_path / "x.zip"
    build(path, real_root("x"), reverse=reverse)
    out = tmp_path / "out.zarr"
    nczarr.convert(str(path), str(out), mode="zarr")
    group = zarr.open_group(str(out), mode="r")
    assert group.attrs["title"] == "the real root"
    assert group["x/a"][:].tolist() == [1, 2, 3]


def test_netcdf_c_archive_with_a_stray_root_copy_still_opens_at_its_folder(
    tmp_path: Path,
) -> None:
    # netcdf-c writes the folder's directory entry first; a copy of the group's
    # metadata beside the folder does not make the archive root the store.
    path = tmp_path / "x.zip"
    build(path, {**wrapped("x", dirs=True), ".zgroup": GROUP}, reverse=False)
    with ZipMap(path) as m:
        assert (m.layout, m.root_folder) == ("netcdf", "x")
    assert keys_of(path) == STORE
