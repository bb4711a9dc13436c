"""A zip behind a chained URL reads right when many threads read members at once
(issue 23: ``zip::s3://`` failed on Python 3.13 with "Overlapped entries").

Since Python 3.12 zipfile skips a member's local extra field with a seek relative to
the shared file object's current position; another thread's read in between made the
member start at a wrong offset. A slow file (each read sleeps, as a network read
does) makes the threads interleave every time, so these tests fail without
:class:`nczarr.maps.chained.ThreadPositionedFile` on Python 3.12 and later.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFile

import nczarr
from nczarr.maps.zip import ZipMap

ROOT = Path(__file__).resolve().parent.parent
# Every zip layout the tests know: netcdf-c's (one top-level folder), zarr-python's
# (members at the root), legacy and current NCZarr, pure Zarr, Deflate64 members.
ZIPS = sorted(
    [*(ROOT / "tests" / "data").glob("*.zip"), *(ROOT / "examples").glob("*.zip")],
    key=lambda p: p.name,
)


@pytest.fixture
def slow_memory_files(monkeypatch):
    """Every read of an fsspec memory file sleeps first, as a network read would."""
    plain = io.BytesIO.read

    def slow_read(self, size=-1):
        time.sleep(0.0005)
        return plain(self, size)

    monkeypatch.setattr(MemoryFile, "read", slow_read)


@pytest.mark.parametrize("archive", ZIPS, ids=[p.name for p in ZIPS])
def test_chained_zip_reads_every_member_from_many_threads(archive, slow_memory_files):
    fs = fsspec.filesystem("memory")
    fs.pipe(f"/nczarr-threads/{archive.name}", archive.read_bytes())
    try:
        with ZipMap(archive, mode="r") as local:
            want = {k: local[k] for k in local}
        assert want
        with nczarr.open_map(f"zip::memory://nczarr-threads/{archive.name}") as chained:
            for _ in range(3):
                assert chained.getitems(sorted(want)) == want
    finally:
        fs.rm("/nczarr-threads", recursive=True)


def test_thread_positioned_file_keeps_one_position_per_thread():
    from nczarr.maps.chained import ThreadPositionedFile

    data = bytes(range(256)) * 64
    f = ThreadPositionedFile(io.BytesIO(data))
    errors: list[str] = []
    start = threading.Barrier(8)

    def reader(offset: int) -> None:
        start.wait()
        for _ in range(200):
            f.seek(offset)
            head = f.read(3)
            f.seek(5, io.SEEK_CUR)  # what zipfile does to skip the extra field
            if f.tell() != offset + 8 or head != data[offset : offset + 3]:
                errors.append(f"thread at {offset}: tell {f.tell()}")
            if f.read(4) != data[offset + 8 : offset + 12]:
                errors.append(f"thread at {offset}: wrong bytes")

    threads = [threading.Thread(target=reader, args=(100 * i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    f.seek(0, io.SEEK_END)
    assert f.tell() == len(data)
    f.close()
    assert f.closed
