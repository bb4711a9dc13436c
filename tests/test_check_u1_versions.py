"""Which netcdf-c releases read a ``"<U1"`` Zarr dtype, as ``nczarr check`` says it.

netcdf-c 4.8.0 to 4.9.0 read ``"<U1"`` as char, one byte per character
(``libnczarr/zutil.c``, ``ncz_dtype2typeinfo``: ``case 'U': nctype = NC_CHAR``);
4.9.1 rewrote that function (``ncz_dtype2nctype``) without the case, so 4.9.1, 4.9.2,
4.9.3 and 4.10 refuse the dataset (NCZarr error -137). Measured here: Debian's ncdump
4.9.0 reads netcdf-c 4.8.0's pure Zarr store (and misreads zarr-python's UTF-32
``"<U1"``), libnetcdf 4.10.1 (netCDF4) refuses both.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.translate.compat import NC48, NC49, NC410

from .ncoracle import FIXTURES
from .test_check_readers import _debian_ncdump_490


def _url(path: Path) -> str:
    return f"file://{path.resolve().as_posix()}#mode=zarr,file"


def _by(report: nczarr.CheckReport, reader: str, where: str) -> list:
    return [f for f in report.for_reader(reader) if f.where == where]


def _nc480_pure_zarr(tmp_path: Path) -> Path:
    where = tmp_path / "nc480.zarr"
    with zipfile.ZipFile(FIXTURES / "producers" / "nc480_pure_zarr.zip") as zf:
        zf.extractall(where)
    return where


def _zarr_python_u1(tmp_path: Path) -> Path:
    where = tmp_path / "u1.zarr"
    root = zarr.open_group(str(where), mode="w", zarr_format=2)
    c = root.create_array("c", shape=(4,), dtype="<U1", chunks=(4,), compressors=None)
    c[...] = np.array(["a", "b", "c", "d"])
    c.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    return where


def test_netcdf_c_48_char_u1_read_by_490_refused_by_491_and_later(tmp_path: Path) -> None:
    store = _nc480_pure_zarr(tmp_path)
    assert '"<U1"' in (store / "c" / ".zarray").read_text()
    report = nczarr.check(str(store))
    (nc49,) = _by(report, NC49, "/c")
    assert nc49.severity == "refuses"
    assert "4.9.1, 4.9.2 and 4.9.3 fail" in nc49.problem
    assert "4.9.0 (Debian's ncdump) reads it as char" in nc49.problem
    assert _by(report, NC48, "/c") == []  # 4.8's own char
    (nc410,) = _by(report, NC410, "/c")
    assert nc410.severity == "refuses" and "-137" in nc410.problem
    # the real 4.10.1 refuses the dataset; the real 4.9.0 reads the char array
    with pytest.raises(OSError, match="-137"):
        netCDF4.Dataset(_url(store))
    ncdump = _debian_ncdump_490()
    dumped = subprocess.run([ncdump, _url(store)], capture_output=True, text=True)
    assert dumped.returncode == 0, dumped.stderr
    assert "char c(" in dumped.stdout and '"abc"' in dumped.stdout


def test_zarr_python_utf32_u1_misread_by_480_and_490(tmp_path: Path) -> None:
    store = _zarr_python_u1(tmp_path)
    report = nczarr.check(str(store))
    (nc48,) = _by(report, NC48, "/c")
    assert nc48.severity == "misreads" and "UTF-32" in nc48.problem
    (nc49,) = _by(report, NC49, "/c")
    assert "4.9.1, 4.9.2 and 4.9.3 fail" in nc49.problem and "UTF-32" in nc49.problem
    with pytest.raises(OSError, match="-137"):
        netCDF4.Dataset(_url(store))
    ncdump = _debian_ncdump_490()
    dumped = subprocess.run([ncdump, _url(store)], capture_output=True, text=True)
    assert dumped.returncode == 0, dumped.stderr
    assert 'c = "a" ;' in dumped.stdout  # not "abcd"
