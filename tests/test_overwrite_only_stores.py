"""An overwrite replaces a store, never a folder of other files.

``convert(overwrite=True)`` (``--overwrite``), a combine's overwrite and
``to_nczarr(mode="w")`` empty their target. Named wrongly (a home directory, a bucket
prefix one level too high, an unrelated zip), that target held someone's files:
before, all of them were deleted. Now a target whose root holds no Zarr or NCZarr
root object (nor the journal of an interrupted nczarr write) is refused, naming what
it holds, and left byte for byte as it was. Stores, and what a killed nczarr write
left, are still replaced."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.errors import TargetExistsError
from nczarr.maps.memory import MemoryMap
from nczarr.maps.pending import JOURNAL_KEY

from .refreaders import make_nczarr, tree_hash

REFUSED = r"is not a Zarr store \(it holds 'notes.txt'.*nothing was changed"


def _folder(path: Path) -> Path:
    """A user's folder: a note and a sub-folder with a picture."""
    (path / "pics").mkdir(parents=True)
    (path / "notes.txt").write_text("mine")
    (path / "pics" / "a.jpg").write_bytes(b"\xff\xd8jpeg")
    return path


def _dataset() -> xr.Dataset:
    return xr.Dataset({"v": ("x", np.arange(4, dtype="f4"))}, attrs={"title": "new"})


@pytest.fixture
def source(tmp_path: Path) -> str:
    return make_nczarr(tmp_path / "src.file")


def test_convert_overwrite_refuses_a_folder_of_other_files(tmp_path: Path, source: str) -> None:
    folder = _folder(tmp_path / "home")
    before = tree_hash(folder)
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.convert(source, str(folder), overwrite=True)
    assert tree_hash(folder) == before


def test_the_command_says_so_and_exits_1(tmp_path: Path, source: str) -> None:
    folder = _folder(tmp_path / "home")
    before = tree_hash(folder)
    run = subprocess.run(
        [sys.executable, "-m", "nczarr", "convert", source, str(folder), "--overwrite"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert "is not a Zarr store (it holds 'notes.txt', 'pics')" in run.stderr
    assert tree_hash(folder) == before


def test_combine_overwrite_refuses_a_folder_of_other_files(tmp_path: Path) -> None:
    parts = []
    for day in range(2):
        path = tmp_path / f"d{day}.nc"
        xr.Dataset({"v": ("t", np.arange(2, dtype="f4") + day)}).to_netcdf(path)
        parts.append(str(path))
    folder = _folder(tmp_path / "home")
    before = tree_hash(folder)
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.convert(parts, str(folder), concat_dim="t", overwrite=True)
    assert tree_hash(folder) == before


def test_an_unrelated_zip_archive_is_not_replaced(tmp_path: Path, source: str) -> None:
    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("notes.txt", "mine")
    before = archive.read_bytes()
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.convert(source, str(archive), overwrite=True)
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.to_nczarr(_dataset(), str(archive), mode="w")
    assert archive.read_bytes() == before


def test_to_nczarr_mode_w_refuses_a_folder_and_an_open_map(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "home")
    before = tree_hash(folder)
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.to_nczarr(_dataset(), str(folder), mode="w")
    assert tree_hash(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]  # no stage left
    held = MemoryMap({"notes.txt": b"mine"})
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.to_nczarr(_dataset(), held, mode="w")
    assert dict(held.items()) == {"notes.txt": b"mine"}


def test_an_s3_prefix_of_other_objects_is_not_replaced(
    tmp_path: Path, source: str, s3_endpoint: str, s3_bucket: str, s3_client
) -> None:
    s3_client.put_object(Bucket=s3_bucket, Key="data/notes.txt", Body=b"mine")
    options = {"endpoint_url": s3_endpoint}
    url = f"s3://{s3_bucket}/data"
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.convert(source, url, overwrite=True, target_options=options)
    with pytest.raises(TargetExistsError, match=REFUSED):
        nczarr.to_nczarr(_dataset(), url, mode="w", storage_options=options)
    listed = s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["data/notes.txt"]


def test_stores_and_what_killed_writes_left_are_replaced(tmp_path: Path, source: str) -> None:
    store = tmp_path / "old.zarr"
    nczarr.convert(source, str(store), mode="zarr")
    nczarr.convert(source, str(store), overwrite=True)  # a store: replaced
    assert nczarr.detect(str(store)).layout == "nczarr-v2"
    killed = tmp_path / "killed"  # a convert killed among its chunks: journal, no root
    (killed / "v").mkdir(parents=True)
    (killed / "v" / "0.0").write_bytes(b"\0" * 8)
    (killed / JOURNAL_KEY).write_bytes(b'{"kind": "nczarr-write"}')
    nczarr.convert(source, str(killed), overwrite=True)
    assert not (killed / JOURNAL_KEY).exists()
    assert nczarr.read(str(killed)).root.variables


def test_to_nczarr_leaves_no_mark_and_marks_while_writing(tmp_path: Path) -> None:
    """The mark a killed to_nczarr leaves (its root metadata is written last) is gone
    from a finished store, on a directory and an open map alike."""
    target = tmp_path / "out.file"
    nczarr.to_nczarr(_dataset(), str(target))
    assert not (target / JOURNAL_KEY).exists()
    held = MemoryMap()
    seen: list[bool] = []
    original = held._store  # every write of the map goes through it

    def spy(key: str, value: bytes) -> None:
        if key.endswith("/0"):  # a chunk: the mark is there already
            seen.append(JOURNAL_KEY in held)
        original(key, value)

    held._store = spy  # type: ignore[method-assign]
    nczarr.to_nczarr(_dataset(), held)
    assert seen and all(seen)
    assert JOURNAL_KEY not in held
    with xr.open_dataset(held, engine="nczarr") as ds:
        assert ds.attrs["title"] == "new"


def test_a_resume_into_what_a_killed_to_nczarr_left_says_so(tmp_path: Path, source: str) -> None:
    killed = tmp_path / "killed"
    (killed / "v").mkdir(parents=True)
    (killed / "v" / "0").write_bytes(b"\0" * 4)
    (killed / JOURNAL_KEY).write_bytes(b'{"kind": "nczarr-write"}')
    before = tree_hash(killed)
    with pytest.raises(TargetExistsError, match="it holds an unfinished to_nczarr write"):
        nczarr.convert(source, str(killed), resume=True)
    assert tree_hash(killed) == before


def test_an_append_to_what_a_killed_to_nczarr_left_says_what_to_do(
    tmp_path: Path, source: str
) -> None:
    store = tmp_path / "s.file"
    nczarr.to_nczarr(xr.Dataset({"v": ("t", np.arange(2.0))}), str(store), unlimited_dims=["t"])
    (store / JOURNAL_KEY).write_bytes(b'{"kind": "nczarr-write"}')
    before = tree_hash(store)
    more = xr.Dataset({"v": ("t", np.arange(2.0, 4.0))})
    with pytest.raises(TargetExistsError, match=r"unfinished to_nczarr write.*mode='w'"):
        nczarr.to_nczarr(more, str(store), mode="a", append_dim="t")
    assert tree_hash(store) == before


def test_only_writes_in_place_are_marked(tmp_path: Path, monkeypatch) -> None:
    """A staged directory and a zip archive (written whole on commit) leave the old
    target as it was when killed: no mark (in a zip it would cost a rewrite)."""
    from nczarr.integrations import xarray_writer

    marked: list[str] = []
    monkeypatch.setattr(xarray_writer, "mark_writing", lambda m: marked.append(m.kind))
    nczarr.to_nczarr(_dataset(), str(tmp_path / "d.file"))
    nczarr.to_nczarr(_dataset(), str(tmp_path / "z.zip"))
    assert marked == []
    nczarr.to_nczarr(_dataset(), MemoryMap())
    assert marked == ["an in-memory map"]


def test_a_failed_s3_replacement_leaves_a_target_the_next_one_replaces(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client, monkeypatch
) -> None:
    """``mode="w"`` on S3 copies a staged store into the target; a failure after the
    target was emptied leaves the mark there, so the rerun replaces it."""
    from nczarr.integrations import staging

    options = {"endpoint_url": s3_endpoint}
    url = f"s3://{s3_bucket}/out"
    nczarr.to_nczarr(_dataset(), url, storage_options=options)
    mark = staging.mark_writing

    def marked_then_killed(zmap):
        mark(zmap)
        raise RuntimeError("killed while copying the staged store in")

    with monkeypatch.context() as patched:
        patched.setattr(staging, "mark_writing", marked_then_killed)
        with pytest.raises(RuntimeError, match="killed"):
            nczarr.to_nczarr(_dataset(), url, mode="w", storage_options=options)
    keys = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert f"out/{JOURNAL_KEY}" in keys and "out/.zgroup" not in keys
    nczarr.to_nczarr(_dataset(), url, mode="w", storage_options=options)
    keys = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert f"out/{JOURNAL_KEY}" not in keys and "out/.zgroup" in keys


def test_a_tree_left_without_root_or_journal_is_refused(tmp_path: Path, source: str) -> None:
    """The documented window (maps/replace.py): a kill while an overwrite empties its
    target, before the journal is written again, leaves chunks and array metadata
    without a root; the next overwrite refuses that tree, naming it, for the user to
    remove."""
    left = tmp_path / "left"
    (left / "v").mkdir(parents=True)
    (left / "v" / ".zarray").write_text("{}")
    (left / "v" / "0.0").write_bytes(b"\0" * 8)
    before = tree_hash(left)
    with pytest.raises(TargetExistsError, match=r"is not a Zarr store \(it holds 'v'\)"):
        nczarr.convert(source, str(left), overwrite=True)
    assert tree_hash(left) == before
