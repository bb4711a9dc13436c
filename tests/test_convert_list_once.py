"""A file -> file convert lists the source's chunk keys once, by the copy itself
(issue 17, copy floor): the journal's digest no longer walks them first, so a resume
into a target with this convert's journal checks the target's keys against the plan
instead (``journal.check_only_planned``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest
import zarr

import nczarr
from nczarr.conversion.journal import JOURNAL_KEY
from nczarr.errors import TargetExistsError
from nczarr.maps.file import FileMap


class CountingFileMap(FileMap):
    """A FileMap counting the listings of array ``a``'s directory started on it (the
    view lists a source's chunks array by array)."""

    listings = 0

    def keys_below(self, prefix: str = ""):
        type(self).listings += prefix == "a"
        return super().keys_below(prefix)

    def keys_below_streamed(self, prefix: str = ""):
        type(self).listings += prefix == "a"
        return super().keys_below_streamed(prefix)


def _source(path: Path, written: slice = slice(None)) -> Path:
    """A Zarr v2 store, one array ``a`` of 8 values in 4 chunks, ``written`` stored."""
    group = zarr.open_group(str(path), mode="w", zarr_format=2)
    arr = group.create_array(
        "a", shape=(8,), chunks=(2,), dtype="i4", fill_value=0, compressors=None,
        attributes={"_ARRAY_DIMENSIONS": ["x"]},
    )  # fmt: skip
    arr[written] = np.arange(8, dtype="i4")[written]
    return path


def _interrupted(src: Path, out: Path, after: int) -> None:
    """A convert stopped after ``after`` chunks (the journal stays in the target)."""

    def stop(done: int, total: int) -> None:
        if done == after:
            raise RuntimeError("killed")

    with contextlib.suppress(RuntimeError):
        nczarr.convert(str(src), str(out), "zarr", progress=stop)
    assert (out / JOURNAL_KEY).exists() and not (out / ".zgroup").exists()


def test_a_convert_lists_the_source_chunks_once(tmp_path):
    src = _source(tmp_path / "src.zarr")
    CountingFileMap.listings = 0
    with CountingFileMap(src) as source:
        report = nczarr.convert(source, str(tmp_path / "out"), "zarr")
    assert report.chunks_copied == 4
    assert CountingFileMap.listings == 1  # was 2: the journal's digest, then the copy
    assert zarr.open_array(str(tmp_path / "out" / "a"), mode="r")[:].tolist() == list(range(8))


def test_a_progress_report_still_gets_the_total_first(tmp_path):
    src = _source(tmp_path / "src.zarr")
    seen = []
    nczarr.convert(str(src), str(tmp_path / "out"), "zarr", progress=lambda d, t: seen.append(t))
    assert seen == [4, 4, 4, 4]


def test_resume_after_the_source_gained_chunks_copies_them(tmp_path):
    src = _source(tmp_path / "src.zarr", slice(0, 4))  # chunks 0 and 1 stored
    out = tmp_path / "out"
    _interrupted(src, out, 1)
    _source(tmp_path / "src.zarr")  # same metadata, every chunk stored now
    report = nczarr.convert(str(src), str(out), "zarr", resume=True)
    assert report.chunks_skipped == 1 and report.chunks_copied == 3
    assert zarr.open_array(str(out / "a"), mode="r")[:].tolist() == list(range(8))
    assert not (out / JOURNAL_KEY).exists()


def test_resume_after_the_source_lost_a_copied_chunk_refuses(tmp_path):
    src = _source(tmp_path / "src.zarr")
    out = tmp_path / "out"
    _interrupted(src, out, 2)
    copied = sorted(p.name for p in (out / "a").iterdir() if not p.name.startswith("."))
    assert len(copied) == 2
    (src / "a" / copied[0]).unlink()  # the target holds a chunk the source no longer has
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(TargetExistsError, match=f"holds 'a/{copied[0]}', which this convert"):
        nczarr.convert(str(src), str(out), "zarr", resume=True)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_resume_with_the_journal_refuses_a_foreign_object(tmp_path):
    src = _source(tmp_path / "src.zarr")
    out = tmp_path / "out"
    _interrupted(src, out, 1)
    (out / "junk").write_bytes(b"x")
    with pytest.raises(TargetExistsError, match="holds 'junk'"):
        nczarr.convert(str(src), str(out), "zarr", resume=True)
    (out / "junk").unlink()
    report = nczarr.convert(str(src), str(out), "zarr", resume=True)
    assert report.chunks_skipped == 1 and report.chunks_copied == 3
