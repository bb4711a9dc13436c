"""Float attributes of NCZarr output keep their type for readers that ignore NCZarr's types.

netcdf-c 4.10 writes a double attribute 1.0 as ``1`` (its ``"%.6g"``) and reads it
back through the type it records in ``_nczarr_attr``; zarr-python, xarray and GDAL
ignore that record and read an integer. nczarr's NCZarr writer writes ``1.0``, which
netcdf-c reads as the same double, so every reader sees a float; netcdf-c's in-place
rewrite (it writes ``1`` again, 2 bytes shorter) must still leave valid JSON, so the
``.0`` is spent only within each attribute's share of that rewrite's slack, and where
it is not (three or more integral values), a warning says the other readers will see
integers.
"""

from __future__ import annotations

import json
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr

from .gdalreader import read_zarr
from .ncoracle import load_attributes, open_append

pytestmark = pytest.mark.usefixtures("scratch_cwd")

ATTRS = {
    "scalar": np.float64(1.0),
    "single": np.float32(2.0),
    "pair": np.array([0.0, 100.0]),
    "mixed": np.array([0.5, 3.0]),
    "many": np.array([1.0, 2.0, 3.0]),
    "negzero": np.float64(-0.0),  # netcdf-c writes "-0" and reads it back as 0.0
}


def _netcdf_c_store(path: Path) -> str:
    """An NCZarr store written by netcdf-c 4.10 (netCDF4): ``"scalar": 1`` and so on."""
    url = f"file://{path}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("x", 2)
        v = ds.createVariable("v", "f8", ("x",))
        for name, value in ATTRS.items():
            v.setncattr(name, value)
        ds.setncattr("gscalar", np.float64(5.0))
        v[:] = [1.0, 2.0]
    return url


def test_netcdf_c_writes_integral_doubles_as_integers(tmp_path: Path) -> None:
    _netcdf_c_store(tmp_path / "nc")
    attrs = json.loads((tmp_path / "nc" / "v" / ".zattrs").read_text())
    assert attrs["scalar"] == 1 and isinstance(attrs["scalar"], int)
    assert attrs["_nczarr_attr"]["types"]["scalar"] == "<f8"
    read = dict(zarr.open_group(str(tmp_path / "nc"), mode="r", zarr_format=2)["v"].attrs)
    assert isinstance(read["scalar"], int)  # what zarr-python shows of netcdf-c's own output


def test_nczarr_output_types_floats_for_every_reader(tmp_path: Path) -> None:
    src = _netcdf_c_store(tmp_path / "nc")
    out = tmp_path / "out"
    with pytest.warns(
        nczarr.NCZarrWarning, match="attribute 'many' of '/v'.*read them as integers"
    ):
        report = nczarr.convert(src, f"file://{out}#mode=nczarr,file")
    assert sum("integer text" in w for w in report.warnings) == 1
    stored = json.loads((out / "v" / ".zattrs").read_text())
    for name in ("scalar", "single", "pair", "mixed", "negzero"):
        values = stored[name] if isinstance(stored[name], list) else [stored[name]]
        assert all(isinstance(x, float) for x in values), name
    assert stored["many"] == [1, 2, 3]
    assert isinstance(json.loads((out / ".zattrs").read_text())["gscalar"], float)
    # zarr-python and xarray (the zarr engine) read floats, netcdf-c the same doubles
    read = dict(zarr.open_group(str(out), mode="r", zarr_format=2)["v"].attrs)
    assert isinstance(read["scalar"], float) and isinstance(read["pair"][1], float)
    ds = xr.open_zarr(str(out), consolidated=False)
    assert isinstance(ds["v"].attrs["scalar"], float)
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        for name, value in ATTRS.items():
            got = nc["v"].getncattr(name)
            assert np.asarray(got).dtype == np.asarray(value).dtype, name
            assert np.array_equal(got, value), name


def test_netcdf_c_rewrite_of_our_float_attributes_leaves_valid_json(tmp_path: Path) -> None:
    src = _netcdf_c_store(tmp_path / "nc")
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning):
        nczarr.convert(src, f"file://{out}#mode=nczarr,file")
    with open_append(out) as ds:
        load_attributes(ds)
    for key in (".zattrs", "v/.zattrs"):
        json.loads((out / key).read_text())  # no stale tail: still one JSON document
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as nc:
        assert nc["v"].getncattr("scalar") == 1.0
        assert list(nc["v"].getncattr("pair")) == [0.0, 100.0]


def _float_findings(report: nczarr.CheckReport) -> dict[tuple[str, str], str]:
    return {(f.reader, f.where): f.problem for f in report.findings if "float attr" in f.problem}


def test_check_says_which_readers_see_integers_as_the_readers_do(tmp_path: Path) -> None:
    _netcdf_c_store(tmp_path / "nc")
    found = _float_findings(nczarr.check(str(tmp_path / "nc")))
    read = dict(zarr.open_group(str(tmp_path / "nc"), mode="r", zarr_format=2)["v"].attrs)
    gdal = read_zarr(tmp_path / "nc").arrays["/v"].attr_types
    for name, value in read.items():
        if name.startswith("_") or name not in ATTRS:
            continue
        some_int = any(isinstance(v, int) for v in (value if isinstance(value, list) else [value]))
        assert (f"'{name}'" in found.get(("zarr-python 3", "/v"), "")) == some_int, name
        assert (f"'{name}'" in found.get(("xarray", "/v"), "")) == some_int, name
        assert (f"'{name}'" in found.get(("GDAL 3.12+", "/v"), "")) == (gdal[name] != "f8"), name
    assert "'gscalar'" in found[("zarr-python 3", "/")]


def test_check_finds_only_what_nczarr_could_not_type_in_its_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning, match="'many'"):
        nczarr.convert(_netcdf_c_store(tmp_path / "nc"), f"file://{out}#mode=nczarr,file")
    found = _float_findings(nczarr.check(str(out)))
    assert set(found) == {("zarr-python 3", "/v"), ("xarray", "/v"), ("GDAL 3.12+", "/v")}
    assert all("'many'" in problem and "'scalar'" not in problem for problem in found.values())
    assert read_zarr(out).arrays["/v"].attr_types["many"] == "i4"
    assert read_zarr(out).arrays["/v"].attr_types["scalar"] == "f8"


@pytest.mark.parametrize("code", [[], {}, None, 3])
def test_a_type_code_that_is_not_text_is_no_float_finding(tmp_path: Path, code) -> None:
    """Found by the surfaces fuzz: ``_nczarr_attr.types`` holding a list made check
    raise TypeError (unhashable) instead of reading the store as netcdf-c does."""
    _netcdf_c_store(tmp_path / "nc")
    zattrs = tmp_path / "nc" / "v" / ".zattrs"
    doc = json.loads(zattrs.read_text())
    doc["_nczarr_attr"]["types"]["scalar"] = code
    zattrs.write_text(json.dumps(doc))
    found = _float_findings(nczarr.check(str(tmp_path / "nc")))
    assert "'scalar'" not in found.get(("zarr-python 3", "/v"), "")
