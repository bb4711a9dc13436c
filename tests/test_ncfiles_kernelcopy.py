"""A ``.nc`` file's chunks are copied as byte ranges by the kernel where it can
(``copy_file_range``, else ``sendfile`` with an offset: a file on disk into a store
on tmpfs, which ``copy_file_range`` refuses across file systems), else by ``pread``
and ``write``: every way gives the file's stored chunk bytes, and none moves the
source's file position (threads share it)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.maps import kernelcopy

from .ncfiles import stored_chunks

#: Kernel ways a test refuses -> the way ``copy_range`` must end up using.
REFUSALS = {
    (): "copy_file_range",
    ("copy_file_range",): "sendfile",
    ("copy_file_range", "sendfile"): "pread",
}


def _force(monkeypatch: pytest.MonkeyPatch, refused: tuple[str, ...]) -> list[str]:
    """Make the refused kernel ways fail as an unsupported pair of files would, and
    record which way each call used."""
    used: list[str] = []
    real = {"copy_file_range": kernelcopy._copy_file_range_at, "sendfile": kernelcopy._sendfile_at}
    for name, fn in real.items():

        def way(*args: int, _name: str = name, _fn=fn) -> int:
            if _name in refused:
                raise OSError(errno.EXDEV if _name == "copy_file_range" else errno.EINVAL, _name)
            used.append(_name)
            return _fn(*args)

        monkeypatch.setattr(kernelcopy, f"_{name}_at", way)
    real_pread = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        used.append("pread")
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", pread)
    return used


@pytest.mark.skipif(not hasattr(os, "pread"), reason="pread: POSIX (Windows: lseek+read)")
@pytest.mark.parametrize("refused", list(REFUSALS))
def test_copy_range_by_each_way(tmp_path: Path, monkeypatch, refused) -> None:
    data = os.urandom(3 * 2**20 + 11)  # more than one pread block
    (tmp_path / "src").write_bytes(data)
    used = _force(monkeypatch, refused)
    fd_in = os.open(tmp_path / "src", os.O_RDONLY)
    fd_out = os.open(tmp_path / "dst", os.O_WRONLY | os.O_CREAT)
    try:
        os.lseek(fd_in, 5, os.SEEK_SET)
        assert kernelcopy.copy_range(fd_in, fd_out, 1000, 2**21 + 3) == 2**21 + 3
        assert kernelcopy.copy_range(fd_in, fd_out, len(data) - 10, 100) == 10  # ends sooner
        assert os.lseek(fd_in, 0, os.SEEK_CUR) == 5  # the source's position untouched
    finally:
        os.close(fd_in)
        os.close(fd_out)
    assert (tmp_path / "dst").read_bytes() == data[1000 : 1000 + 2**21 + 3] + data[-10:]
    expected = REFUSALS[refused]
    if expected != "pread" and not hasattr(os, expected):
        pytest.skip(f"no os.{expected} on this platform")
    assert set(used) == {expected}


def test_an_error_that_is_not_unsupported_is_raised(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "src").write_bytes(b"x" * 100)

    def full(*args: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kernelcopy, "_copy_file_range_at", full)
    monkeypatch.setattr(kernelcopy, "_sendfile_at", full)
    fd_in = os.open(tmp_path / "src", os.O_RDONLY)
    fd_out = os.open(tmp_path / "dst", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="No space left"):
            kernelcopy.copy_range(fd_in, fd_out, 0, 100)
    finally:
        os.close(fd_in)
        os.close(fd_out)


@pytest.mark.parametrize("refused", list(REFUSALS))
def test_a_convert_copies_the_stored_chunks_by_each_way(
    tmp_path: Path, monkeypatch, refused
) -> None:
    src = tmp_path / "x.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 300)
        v = ds.createVariable("v", "f4", ("t", "x"), zlib=True, shuffle=True, chunksizes=(2, 100))
        v[:] = np.random.default_rng(0).normal(size=(5, 300)).astype("f4")
    used = _force(monkeypatch, refused)
    out = tmp_path / "out"
    nczarr.convert(str(src), str(out), "zarr")
    stored = stored_chunks(src, "v")
    assert len(stored) == 9
    assert {k: (out / "v" / k).read_bytes() for k in stored} == stored
    expected = REFUSALS[refused]
    if expected == "pread" or hasattr(os, expected):
        assert expected in used and not set(used) - {expected, "pread"}
