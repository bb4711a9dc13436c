"""ZipMap specifics: layouts, rewrite on overwrite/delete, append, Deflate64, unsafe
members, and interop with zarr-python's ZipStore, ``unzip`` and netcdf-c's archives."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import zipfile
from pathlib import Path

import numcodecs
import numpy as np
import pytest

from nczarr.errors import (
    InvalidModeError,
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
)
from nczarr.maps.zip import ZipMap

NETCDF_FIXTURES = [
    "ref_byte.zarr.zip",
    "ref_byte_fill_value_null.zarr.zip",
    "ref_noshape.file.zip",
    "ref_oldformat_v1.zip",
    "ref_oldformat_v2attrs.zip",
    "ref_oldkeys.file.zip",
    "ref_power_901_constants_orig.zip",
    "ref_quotes_orig.zip",
    "v2uc_ncgen490.zip",
    "current_netcdf4101.zip",
    "pure_netcdf4101_shuffle.zip",
]

UNZIP = shutil.which("unzip")
needs_unzip = pytest.mark.skipif(UNZIP is None, reason="the unzip tool is not installed")


def names(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return zf.namelist()


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}


def unzip_test(path: Path) -> None:
    done = subprocess.run([UNZIP, "-t", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No errors detected" in done.stdout


def unzip_listing(path: Path) -> list[str]:
    done = subprocess.run([UNZIP, "-Z1", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def make_zip(path: Path, entries: list[str]) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name in entries:
            zf.writestr(zipfile.ZipInfo(name), b"" if name.endswith("/") else b"{}")


# ------------------------------------------------------------------------- opening
@pytest.mark.parametrize("mode", ["r", "r+"])
def test_missing_archive_for_read_modes(tmp_path, mode):
    path = tmp_path / "none.zip"
    with pytest.raises(StorageNotFoundError) as info:
        ZipMap(path, mode=mode)
    assert str(path) in str(info.value) and not path.exists()


@pytest.mark.parametrize("mode", ["r", "a", "w-"])
def test_not_a_zip_names_the_path(tmp_path, mode):
    path = tmp_path / "text.zip"
    path.write_bytes(b"this is not a zip archive")
    with pytest.raises(StorageError, match="is not a zip archive") as info:
        ZipMap(path, mode=mode)
    assert str(path) in str(info.value)
    assert path.read_bytes() == b"this is not a zip archive"


def test_mode_w_replaces_anything_and_w_minus_refuses_keys(tmp_path):
    path = tmp_path / "x.zip"
    path.write_bytes(b"junk")
    with ZipMap(path, mode="w") as m:
        m["k"] = b"v"
    assert members(path) == {"k": b"v"}
    with pytest.raises(ObjectExistsError, match="holds 1 keys") as info:
        ZipMap(path, mode="w-")
    assert str(path) in str(info.value)
    make_zip(path, [])
    ZipMap(path, mode="w-").close()


def test_writable_modes_create_an_empty_archive(tmp_path):
    for mode in ["a", "w", "w-"]:
        path = tmp_path / f"{mode}.zip"
        ZipMap(path, mode=mode).close()
        assert names(path) == []
        assert len(ZipMap(path)) == 0


def test_bad_options(tmp_path):
    with pytest.raises(InvalidModeError, match="'flat'"):
        ZipMap(tmp_path / "x.zip", mode="w", layout="flat")
    with pytest.raises(InvalidModeError, match="Deflate64 is read but never written"):
        ZipMap(tmp_path / "x.zip", mode="w", compression=9)
    assert not (tmp_path / "x.zip").exists()


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ("../evil", "'..' segment"),
        ("a/../../evil", "'..' segment"),
        ("/etc/passwd", "absolute path"),
        ("C:/windows", "absolute path"),
        ("a\\b", "backslash"),
    ],
)
def test_unsafe_members_are_refused(tmp_path, member, why):
    path = tmp_path / "bad.zip"
    make_zip(path, [".zgroup", member])
    with pytest.raises(StorageError, match="unsafe") as info:
        ZipMap(path)
    assert repr(member) in str(info.value) and why in str(info.value)


def test_member_that_is_no_valid_key_is_refused(tmp_path):
    path = tmp_path / "bad.zip"
    make_zip(path, [".zgroup", "a//b"])
    with pytest.raises(StorageError, match=r"'a//b'.*not a valid key"):
        ZipMap(path)


# ------------------------------------------------------------------------- layouts
@pytest.mark.parametrize("name", NETCDF_FIXTURES)
def test_netcdf_c_archives_open_at_their_folder(copy_fixture, name):
    path = copy_fixture(name)
    all_names = names(path)
    folder = all_names[0].split("/")[0]
    m = ZipMap(path)
    assert m.layout == "netcdf" and m.root_folder == folder
    assert ".zgroup" in m.search("") or ".zattrs" in m.search("")
    expected = {
        n[len(folder) + 1 :]: data
        for n, data in members(path).items()
        if n.startswith(folder + "/")
    }
    assert dict(m) == expected
    assert m.search("") == sorted({k.split("/")[0] for k in expected})


def test_detection_rules(tmp_path):
    cases = {
        # all under a folder named after the stem, even without metadata
        "stem.zip": (["stem/", "stem/a/b"], "netcdf", "stem"),
        "s.zarr.zip": (["s.zarr/.zgroup"], "netcdf", "s.zarr"),
        # another folder name is fine when it holds Zarr metadata directly
        "other.zip": (["ds.file/", "ds.file/.zgroup", "ds.file/v/0"], "netcdf", "ds.file"),
        # ... but not when it does not
        "plain.zip": (["g/v/0", "g/v/1"], "root", ""),
        # zarr's ZipStore: metadata at the root, first entry at the root
        "zarrstore.zip": ([".zgroup", "g/.zgroup"], "root", ""),
        # netcdf-c's rule: entry 0 decides when both levels hold metadata
        "stray.zip": (["ds/", "ds/.zgroup", ".zgroup"], "netcdf", "ds"),
        "two.zip": (["a/.zgroup", "b/.zgroup"], "root", ""),
        "empty.zip": ([], "root", ""),
    }
    for archive, (entries, layout, folder) in cases.items():
        make_zip(tmp_path / archive, entries)
        m = ZipMap(tmp_path / archive)
        assert (archive, m.layout, m.root_folder) == (archive, layout, folder)
        forced = ZipMap(tmp_path / archive, layout="root")
        assert sorted(forced) == sorted(e for e in entries if not e.endswith("/"))


def test_root_layout_archives_written_here_keep_their_keys(tmp_path):
    # Without the layout note in the archive comment these would look like netcdf-c's.
    for path, key in [(tmp_path / "ds.zip", "ds/x"), (tmp_path / "y.zip", "g/.zgroup")]:
        with ZipMap(path, mode="w") as m:
            m[key] = b"1"
        assert ZipMap(path).layout == "root" and list(ZipMap(path)) == [key]


def test_new_netcdf_layout_archive(tmp_path):
    path = tmp_path / "foo.zarr.zip"
    with ZipMap(path, mode="w", layout="netcdf") as m:
        m[".zgroup"] = b'{"zarr_format": 2}'
        m["v/.zarray"] = b"{}"
        m["v/0.0"] = b"chunk"
        assert m.root_folder == "foo.zarr"
        assert m.url == path.as_uri() and m._describe()[1] == {"layout": "netcdf"}
    assert names(path) == [
        "foo.zarr/",
        "foo.zarr/.zgroup",
        "foo.zarr/v/",
        "foo.zarr/v/.zarray",
        "foo.zarr/v/0.0",
    ]
    again = ZipMap(path)
    assert again.layout == "netcdf" and dict(again) == {
        ".zgroup": b'{"zarr_format": 2}',
        "v/.zarray": b"{}",
        "v/0.0": b"chunk",
    }
    with ZipMap(path, mode="a") as m:  # append adds the directory entries too
        m["w/1"] = b"x"
    assert names(path)[-2:] == ["foo.zarr/w/", "foo.zarr/w/1"]
    if UNZIP:
        unzip_test(path)


# ----------------------------------------------------------- overwrite and delete
@needs_unzip
def test_overwrite_and_delete_rewrite_without_duplicates(copy_fixture):
    path = copy_fixture("current_netcdf4101.zip")
    folder = "current_netcdf4101.file"
    before = members(path)
    with ZipMap(path, mode="r+") as m:
        m[".zattrs"] = b'{"new": true}'
        m[".zattrs"] = b'{"newer": true}'
        del m["v/0.0"]
        m["extra/k"] = b"added"
        assert m["v/1.1"] == before[f"{folder}/v/1.1"]
        assert members(path) == before  # unchanged until flush
    listing = unzip_listing(path)
    assert len(listing) == len(set(listing))
    assert f"{folder}/v/0.0" not in listing and f"{folder}/extra/" in listing
    after = members(path)
    assert after[f"{folder}/.zattrs"] == b'{"newer": true}'
    assert after[f"{folder}/extra/k"] == b"added"
    unchanged = {
        k: v for k, v in before.items() if k not in (f"{folder}/.zattrs", f"{folder}/v/0.0")
    }
    assert {k: after[k] for k in unchanged} == unchanged
    unzip_test(path)
    assert ZipMap(path).layout == "netcdf"


def test_foreign_members_survive_a_rewrite(copy_fixture):
    path = copy_fixture("ref_power_901_constants_orig.zip")
    stray = members(path)[".zgroup"]
    with ZipMap(path, mode="a") as m:
        assert ".zgroup" in m and m.root_folder == "ref_power_901_constants"
        del m["FRLAKE/.zattrs"]
    assert members(path)[".zgroup"] == stray
    assert "ref_power_901_constants/FRLAKE/.zattrs" not in names(path)
    assert ZipMap(path).root_folder == "ref_power_901_constants"


def test_append_only_keeps_existing_members_in_place(tmp_path):
    path = tmp_path / "x.zip"
    with ZipMap(path, mode="w") as m:
        m["a"] = b"1" * 100
    with zipfile.ZipFile(path) as zf:
        offset = zf.getinfo("a").header_offset
    with ZipMap(path, mode="a") as m:
        m["b/c"] = b"2"
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == ["a", "b/c"] and zf.getinfo("a").header_offset == offset
        assert zf.comment == b"nczarr:layout=root"


def test_pending_changes_are_visible_before_flush(tmp_path):
    path = tmp_path / "x.zip"
    m = ZipMap(path, mode="w")
    m["a/b"] = b"1"
    m["a/c"] = b"2"
    del m["a/c"]
    assert dict(m) == {"a/b": b"1"} and m.search("a") == ["b"] and len(m) == 1
    assert names(path) == []  # nothing written yet
    m.flush()
    assert names(path) == ["a/b"]
    m["a/b"] = b"3"
    m.clear()
    m["z"] = b"4"
    m.close()
    assert members(path) == {"z": b"4"}


def test_pickle_flushes_so_the_copy_sees_the_writes(tmp_path):
    m = ZipMap(tmp_path / "x.zip", mode="w", compression=zipfile.ZIP_DEFLATED)
    m["k"] = b"v" * 50
    copy = pickle.loads(pickle.dumps(m))
    assert (
        copy.mode == "r+"
        and copy["k"] == b"v" * 50
        and copy == ZipMap(m.path, mode="r+", compression=zipfile.ZIP_DEFLATED)
    )
    with zipfile.ZipFile(m.path) as zf:
        assert zf.getinfo("k").compress_type == zipfile.ZIP_DEFLATED
    copy.close()
    m.close()


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
)
def test_every_write_method_round_trips_with_ranges(tmp_path, method):
    path = tmp_path / "x.zip"
    data = bytes(range(256)) * 64
    with ZipMap(path, mode="w", compression=method) as m:
        m["d/chunk"] = data
    r = ZipMap(path)
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo("d/chunk").compress_type == method
    assert r["d/chunk"] == data and r.getsize("d/chunk") == len(data)
    for start, length in [(0, 5), (1000, 300), (-7, None), (len(data) - 2, 10), (5, 0)]:
        want = data[start:] if length is None else data[start : start + length]
        assert r.getrange("d/chunk", start, length) == want


# ---------------------------------------------------------------------- interop
def zarr_v2_array_keys() -> tuple[dict[str, bytes], np.ndarray]:
    import zarr

    values = np.arange(60, dtype="<f8").reshape(6, 10) / 7
    store = zarr.storage.MemoryStore()
    group = zarr.open_group(store=store, mode="w", zarr_format=2)
    arr = group.create_array("g/a", shape=values.shape, chunks=(4, 4), dtype="<f8")
    arr[:] = values
    return {k: v.to_bytes() for k, v in store._store_dict.items()}, values


@pytest.mark.parametrize("layout", [None, "netcdf"])
def test_zarr_zipstore_reads_what_zipmap_wrote(tmp_path, layout):
    import zarr

    content, values = zarr_v2_array_keys()
    path = tmp_path / "w.zip"
    with ZipMap(path, mode="w", compression=zipfile.ZIP_DEFLATED) as m:
        m.setitems(content)
    if UNZIP:
        unzip_test(path)
    store = zarr.storage.ZipStore(path, mode="r")
    np.testing.assert_array_equal(zarr.open_array(store, path="g/a", mode="r")[:], values)
    store.close()
    if layout == "netcdf":
        with ZipMap(tmp_path / "n.zip", mode="w", layout="netcdf") as m:
            m.setitems(content)
        if UNZIP:
            unzip_test(tmp_path / "n.zip")
        assert dict(ZipMap(tmp_path / "n.zip")) == content


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zipmap_reads_what_zarr_zipstore_wrote(tmp_path, zarr_format):
    import zarr

    path = tmp_path / "z.zip"
    store = zarr.storage.ZipStore(path, mode="w")
    group = zarr.open_group(store=store, mode="w", zarr_format=zarr_format)
    arr = group.create_array("a", shape=(5, 5), chunks=(2, 5), dtype="u2")
    arr[:] = np.arange(25, dtype="u2").reshape(5, 5)
    store.close()
    m = ZipMap(path)
    assert m.layout == "root"
    written = members(path)
    assert dict(m) == written and sorted(m) == sorted(written)
    assert ("zarr.json" if zarr_format == 3 else ".zgroup") in m.search("")


def test_deflate64_members_decode_to_the_expected_array(copy_fixture):
    path = copy_fixture("deflate64_zarr.zip")
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo("a/0.0").compress_type == 9  # really Deflate64
    m = ZipMap(path)
    meta = json.loads(m["a/.zarray"])
    assert m.layout == "root" and m.search("a") == [
        ".zarray",
        ".zattrs",
        "0.0",
        "0.1",
        "1.0",
        "1.1",
    ]
    compressor = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
    filters = [numcodecs.get_codec(f) for f in meta["filters"] or []]
    dtype = np.dtype(meta["dtype"])
    out = np.empty(meta["shape"], dtype=dtype)
    ci, cj = meta["chunks"]
    for key in m.search("a"):
        if key.startswith("."):
            continue
        raw = m[f"a/{key}"]
        if compressor is not None:
            raw = compressor.decode(raw)
        for f in reversed(filters):
            raw = f.decode(raw)
        i, j = map(int, key.split("."))
        chunk = np.frombuffer(raw, dtype=dtype).reshape(meta["chunks"], order=meta["order"])
        out[i * ci : (i + 1) * ci, j * cj : (j + 1) * cj] = chunk
    expected = (np.arange(40000).reshape(200, 200) % 97).astype("int32")
    np.testing.assert_array_equal(out, expected)
    assert m.getrange("a/0.1", 4, 8) == m["a/0.1"][4:12]


def test_deflate64_archive_rewrite_recompresses_with_deflate(copy_fixture):
    path = copy_fixture("deflate64_zarr.zip")
    before = members(path)
    with ZipMap(path, mode="r+") as m:
        m[".zattrs"] = b"{}"
    with zipfile.ZipFile(path) as zf:
        assert {i.compress_type for i in zf.infolist() if i.filename.startswith("a/0")} == {
            zipfile.ZIP_DEFLATED
        }
    after = members(path)
    assert after == before | {".zattrs": b"{}"}
    if UNZIP:
        unzip_test(path)


def test_rewrite_through_a_symlink_updates_the_target(tmp_path):
    real = tmp_path / "real.zip"
    with ZipMap(real, mode="w") as m:
        m["a"] = b"1"
    link = tmp_path / "link.zip"
    link.symlink_to(real)
    with ZipMap(link, mode="r+") as m:
        m["a"] = b"2"
    assert link.is_symlink() and members(real) == {"a": b"2"}
