"""Char attributes netcdf-c stores as raw, non-UTF-8 bytes (``b"a\\x80b"``).

netcdf-c writes such an attribute's bytes into ``.zattrs`` as they are and reads them
back the same. Python sees them as lone surrogates (``"a\\udc80b"``, the
``surrogateescape`` form nczarr's reader and xarray's nczarr engine give). NCZarr
targets (``to_nczarr``, ``convert`` to NCZarr) must give netcdf-c the very bytes it
wrote; pure Zarr targets (UTF-8 JSON only) cannot, and say so.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import pytest
import xarray as xr

import nczarr

RAW = b"a\x80b"


def _url(path: Path, mode: str = "nczarr") -> str:
    return f"file://{path}#mode={mode},file"


def _raw(path: Path) -> bytes:
    """The bytes netcdf-c reads for attribute ``raw`` of ``v``."""
    with netCDF4.Dataset(_url(path)) as ds:
        ds.set_auto_chartostring(False)
        return ds["v"].getncattr("raw").encode("utf-8", "surrogateescape")


def _netcdf_c_store(path: Path) -> Path:
    with netCDF4.Dataset(_url(path), "w") as ds:
        ds.createDimension("x", 2)
        v = ds.createVariable("v", "i4", ("x",))
        v[:] = [1, 2]
        v.setncattr("raw", RAW)
    assert RAW in (path / "v" / ".zattrs").read_bytes()  # netcdf-c stores the raw byte
    return path


def test_convert_to_nczarr_gives_netcdf_c_its_bytes_back(tmp_path: Path) -> None:
    src = _netcdf_c_store(tmp_path / "src.file")
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning, match="not UTF-8"):
        nczarr.convert(str(src), str(out), mode="nczarr")
    assert RAW in (out / "v" / ".zattrs").read_bytes()
    assert _raw(out) == _raw(src)


def test_to_nczarr_writes_the_bytes_a_lone_surrogate_stands_for(tmp_path: Path) -> None:
    src = _netcdf_c_store(tmp_path / "src.file")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        ds = xr.open_dataset(str(src), engine="nczarr")
    assert ds["v"].attrs["raw"] == "a\udc80b"
    out = tmp_path / "out.file"
    nczarr.to_nczarr(ds, str(out))
    assert RAW in (out / "v" / ".zattrs").read_bytes()
    assert _raw(out) == _raw(src)


def test_pure_zarr_cannot_carry_the_bytes_and_says_so(tmp_path: Path) -> None:
    src = _netcdf_c_store(tmp_path / "src.file")
    out = tmp_path / "out.zarr"
    with (
        pytest.warns(nczarr.NCZarrWarning, match="not UTF-8.*Latin-1"),
        pytest.warns(nczarr.NCZarrWarning, match="keeping the undecodable bytes"),
    ):
        nczarr.convert(str(src), str(out), mode="zarr")
    (out / "v" / ".zattrs").read_bytes().decode("utf-8")  # valid UTF-8 JSON
