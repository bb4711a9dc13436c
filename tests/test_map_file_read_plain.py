"""FileMap.getitems reads the plain case (a regular file, opened relative to its
verified directory without following a link) inline; everything else takes the
checked path. These show the inline read never changes an answer: a link to a file
inside the root is followed, a FIFO or a link out is refused, a directory is no key,
within one run of keys in one directory."""

from __future__ import annotations

import contextlib
import os

import pytest

from nczarr.errors import StorageError, StoragePermissionError
from nczarr.maps.file import FileMap


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_run_mixing_files_links_and_fifos_answers_as_single_reads(tmp_path) -> None:
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    for i in range(4):
        m[f"v/{i}"] = f"chunk {i}".encode()
    (root / "v" / "4").symlink_to(root / "v" / "0")  # inside: followed
    (root / "v" / "sub").mkdir()  # a directory: not a key
    keys = ["v/0", "v/4", "v/1", "v/sub", "v/9", "v/3"]
    got = m.getitems(keys)
    single = {}
    for key in keys:
        with contextlib.suppress(KeyError):
            single[key] = m[key]
    assert (
        got
        == single
        == {"v/0": b"chunk 0", "v/4": b"chunk 0", "v/1": b"chunk 1", "v/3": b"chunk 3"}
    )
    os.mkfifo(root / "v" / "5")
    with pytest.raises(StorageError, match="FIFO"):
        m.getitems(["v/0", "v/5"])
    (tmp_path / "secret").write_bytes(b"no")
    (root / "v" / "6").symlink_to(tmp_path / "secret")
    with pytest.raises(StoragePermissionError):
        m.getitems(["v/1", "v/6"])
    with m.session():  # held directories: the same answers
        assert m.getitems(keys) == single
        with pytest.raises(StoragePermissionError):
            m.getitems(["v/1", "v/6"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_capped_reads_of_a_run_answer_as_single_reads_cut_to_the_cap(tmp_path) -> None:
    root = tmp_path / "t.file"
    m = FileMap(root, mode="w")
    m[".zgroup"] = b'{"zarr_format": 2}'
    for i in range(3):
        m[f"v/{i}"] = f"chunk number {i}".encode()
    (root / "v" / "4").symlink_to(root / "v" / "0")  # inside: followed
    (root / "v" / "sub").mkdir()  # a directory: not a key
    keys = [".zgroup", ".zattrs", "v/0", "v/4", "v/sub", "v/9", "v/2", "w/0"]
    for cap in (0, 5, 1000):
        want = {k: m[k][:cap] for k in (".zgroup", "v/0", "v/4", "v/2")}
        assert m.getitems_capped(keys, cap) == want
        with m.session():
            assert m.getitems_capped(keys, cap) == want
    os.mkfifo(root / "v" / "5")
    with pytest.raises(StorageError, match="FIFO"):
        m.getitems_capped(["v/0", "v/5"], 10)
    (tmp_path / "secret").write_bytes(b"no")
    (root / "v" / "6").symlink_to(tmp_path / "secret")
    with pytest.raises(StoragePermissionError):
        m.getitems_capped(["v/1", "v/6"], 10)
