"""``nczarr check``'s notes on netcdf-c 4.9, measured with Debian's ncdump/ncgen 4.9.0.

Two stores check called fine (or "the scalar is missing") for netcdf-c 4.9 crash
Debian's ncdump 4.9.0 (found by a differential hunt): a 0-d pure Zarr array (the
header lists it as a scalar, reading its value dies) and a scalar in a store ncgen
4.9.0 wrote itself (``"storage": "scalar"``; even ``ncdump -h`` dies). The migrated
store opens.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import zarr

import nczarr
from nczarr.translate.compat import NC49, NC410, Finding

from .ncoracle import debian_490

CDL = """netcdf s {
dimensions:
  x = 3 ;
variables:
  int v(x) ;
%s
data:
  v = 1, 2, 3 ;
%s
}
"""


def _url(path: Path, mode: str) -> str:
    return f"file://{path}#mode={mode},file"


def _crashed(result: subprocess.CompletedProcess) -> bool:
    return result.returncode < 0 or result.returncode >= 128  # killed by SIGSEGV


def _findings(report: nczarr.CheckReport, reader: str, where: str) -> list[Finding]:
    return [f for f in report.for_reader(reader) if f.where == where]


def test_ncdump_490_crashes_reading_a_zero_d_array(tmp_path: Path) -> None:
    ncdump = debian_490("ncdump")
    path = tmp_path / "zero_d.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=2)  # zarr-python's scalar
    s = root.create_array("s", shape=(), dtype="f8", compressors=None)
    s[...] = 4.5
    s.attrs["_ARRAY_DIMENSIONS"] = []
    v = root.create_array("v", shape=(3,), dtype="i4", compressors=None)
    v[...] = np.arange(3, dtype="i4")
    v.attrs["_ARRAY_DIMENSIONS"] = ["x"]

    header = subprocess.run([ncdump, "-h", _url(path, "zarr")], capture_output=True, text=True)
    assert header.returncode == 0 and "double s ;" in header.stdout  # listed as a scalar
    assert _crashed(subprocess.run([ncdump, _url(path, "zarr")], capture_output=True))
    assert _crashed(subprocess.run([ncdump, "-v", "s", _url(path, "zarr")], capture_output=True))

    report = nczarr.check(str(path), readers=[NC49])
    (finding,) = _findings(report, NC49, "/s")
    assert finding.severity == "fails"
    assert "segmentation fault" in finding.problem and "4.9.0" in finding.problem
    assert finding.fix is not None and "--netcdf-scalars" in finding.fix
    assert not report.ok
    # netcdf-c 4.10 leaves it out (tests/test_zarr_scalars_netcdf_c.py): still "ignores"
    assert {f.severity for f in _findings(nczarr.check(str(path)), NC410, "/s")} == {"ignores"}

    fixed = tmp_path / "fixed.zarr"
    nczarr.convert(str(path), str(fixed), mode="zarr", netcdf_scalars=True)
    assert subprocess.run([ncdump, _url(fixed, "zarr")], capture_output=True).returncode == 0
    assert _findings(nczarr.check(str(fixed), readers=[NC49]), NC49, "/s") == []


def test_ncdump_490_crashes_on_a_scalar_ncgen_490_wrote(tmp_path: Path) -> None:
    ncgen, ncdump = debian_490("ncgen"), debian_490("ncdump")
    cdl = tmp_path / "s.cdl"
    cdl.write_text(CDL % ("  double s ;", "  s = 4.5 ;"))
    store = tmp_path / "s.file"
    subprocess.run([ncgen, "-k", "nc4", "-o", _url(store, "nczarr"), str(cdl)], check=True)
    assert nczarr.detect(str(store)).netcdf_version == "4.9.0"

    assert _crashed(subprocess.run([ncdump, "-h", _url(store, "nczarr")], capture_output=True))
    report = nczarr.check(str(store), readers=[NC49])
    (finding,) = _findings(report, NC49, "/s")
    assert finding.severity == "refuses" and "segmentation fault" in finding.problem
    assert finding.fix == "nczarr migrate URL"  # URL: the store, in the summary
    assert not report.ok

    # without the scalar, ncgen 4.9.0's store opens, and check says nothing of /s
    cdl.write_text(CDL % ("", ""))
    plain = tmp_path / "plain.file"
    subprocess.run([ncgen, "-k", "nc4", "-o", _url(plain, "nczarr"), str(cdl)], check=True)
    assert subprocess.run([ncdump, _url(plain, "nczarr")], capture_output=True).returncode == 0
    assert nczarr.check(str(plain), readers=[NC49]).ok

    # the fix check names: the migrated store opens, with the scalar's value
    with pytest.warns(nczarr.NCZarrWarning, match="'/s': the fill_value 9.96921e"):
        nczarr.migrate(str(store))
    dumped = subprocess.run([ncdump, _url(store, "nczarr")], capture_output=True, text=True)
    assert dumped.returncode == 0 and "s = 4.5 ;" in dumped.stdout
    assert not [f for f in nczarr.check(str(store)).for_reader(NC49) if f.severity == "refuses"]
