"""xarray's ``_Encoding: "utf-8"`` on fixed-width bytes (``|S<n>``, v3
``null_terminated_bytes``) survives every pure Zarr output, whatever the source.

xarray writes ``str`` data with ``encoding={"dtype": "S1"}`` to Zarr as UTF-8 bytes
marked ``_Encoding: "utf-8"`` and reads them back as ``str``. nczarr reads such an
array as a netCDF ``string`` (the type says it, the model holds no attribute); its
pure Zarr writers used to add the marker back only for NCZarr sources, so Zarr v2
and v3 copies, views and reference sets of an xarray store, and copies of copies,
read as ``bytes`` in xarray (``b'c\\xc3\\xa9'``). The NCZarr copy carries no marker
and netCDF4 reads its strings. Found by a review of session 15's changes.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.integrations.zarr_store import ZarrStore
from nczarr.translate.conventions import TEXT_ENCODING

VALUES = ["ab", "cé", "ĥéllo"]


def _quiet(func, *args, **kw):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nczarr's and zarr-python's (v3 bytes unstable)
        return func(*args, **kw)


def _attributes(store: Path, name: str, zarr_format: int) -> dict:
    if zarr_format == 2:
        return json.loads((store / name / ".zattrs").read_text())
    return json.loads((store / name / "zarr.json").read_text()).get("attributes", {})


def _xarray_values(store: Path | ZarrStore, zarr_format: int) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_zarr(store, consolidated=False, zarr_format=zarr_format) as ds:
            return ds["t"].values.tolist()


@pytest.fixture(params=[2, 3], ids=["xarray-v2", "xarray-v3"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, int]:
    """A store xarray writes: ``str`` data as UTF-8 ``|S<n>`` marked ``_Encoding``."""
    zarr_format = request.param
    path = tmp_path / f"xr{zarr_format}.zarr"
    ds = xr.Dataset({"t": ("y", np.array(VALUES, dtype=object))})
    _quiet(
        ds.to_zarr,
        path,
        zarr_format=zarr_format,
        consolidated=False,
        encoding={"t": {"dtype": "S1"}},
    )
    # the constant is xarray's name for the marker (its EncodedStringCoder writes it)
    assert _attributes(path, "t", zarr_format)[TEXT_ENCODING] == "utf-8"
    assert _xarray_values(path, zarr_format) == VALUES  # the oracle
    return path, zarr_format


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_copies_read_str(source: tuple[Path, int], tmp_path: Path, zarr_format: int) -> None:
    src, _ = source
    dst = tmp_path / "copy.zarr"
    report = _quiet(nczarr.convert, src, dst, mode="zarr", zarr_format=zarr_format)
    assert "/t" not in {p for p, _ in report.reencoded}  # the bytes stay verbatim
    assert _attributes(dst, "t", zarr_format)[TEXT_ENCODING] == "utf-8"
    assert _xarray_values(dst, zarr_format) == VALUES
    with xr.open_dataset(dst, engine="nczarr") as ours:
        assert ours["t"].values.tolist() == VALUES
        assert TEXT_ENCODING not in ours["t"].attrs


def test_nczarr_copy_reads_str_in_netcdf4(source: tuple[Path, int], tmp_path: Path) -> None:
    src, _ = source
    dst = tmp_path / "copy.file"
    _quiet(nczarr.convert, src, dst, mode="nczarr")
    with netCDF4.Dataset(f"file://{dst}#mode=nczarr,file") as nc:
        assert nc["t"].dtype is str
        assert nc["t"][:].tolist() == VALUES
        assert TEXT_ENCODING not in nc["t"].ncattrs()  # NCZarr outputs carry no marker


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_view_reads_str(source: tuple[Path, int], zarr_format: int) -> None:
    src, _ = source
    with _quiet(nczarr.view, src, "zarr", zarr_format=zarr_format) as view:
        assert _xarray_values(ZarrStore(view), zarr_format) == VALUES
        doc = view["t/.zattrs"] if zarr_format == 2 else view["t/zarr.json"]
        attrs = json.loads(doc) if zarr_format == 2 else json.loads(doc)["attributes"]
        assert attrs[TEXT_ENCODING] == "utf-8"


def test_references_read_str(source: tuple[Path, int], tmp_path: Path) -> None:
    src, _ = source
    refs = _quiet(nczarr.references, str(src), mode="zarr")
    fo = tmp_path / "refs.json"
    fo.write_text(json.dumps(refs))
    so = {"fo": str(fo), "remote_protocol": "file", "skip_instance_cache": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_dataset(
            "reference://", engine="zarr", backend_kwargs={"storage_options": so}
        ) as ds:
            assert ds["t"].values.tolist() == VALUES


def test_chained_copies_read_str(source: tuple[Path, int], tmp_path: Path) -> None:
    """xarray store -> NCZarr -> Zarr v2 -> Zarr v2 and Zarr v3: str at every pure step;
    netCDF4 reads the NCZarr copy's and the Zarr v2 copies' strings."""
    src, _ = source
    nc_copy, v2, v2b, v3 = (tmp_path / n for n in ("a.file", "b.zarr", "c.zarr", "d.zarr"))
    _quiet(nczarr.convert, src, nc_copy, mode="nczarr")
    _quiet(nczarr.convert, nc_copy, v2, mode="zarr")
    _quiet(nczarr.convert, v2, v2b, mode="zarr")
    _quiet(nczarr.convert, v2, v3, mode="zarr", zarr_format=3)
    for store, zarr_format in ((v2, 2), (v2b, 2), (v3, 3)):
        assert _xarray_values(store, zarr_format) == VALUES, store.name
    with netCDF4.Dataset(f"file://{nc_copy}#mode=nczarr,file") as nc:
        assert nc["t"][:].tolist() == VALUES
    for store in (v2, v2b):
        with netCDF4.Dataset(f"file://{store}#mode=zarr,file") as nc:
            assert nc["t"][:].tolist() == VALUES


def test_netcdf_c_pure_zarr_strings_read_str_in_the_copy(tmp_path: Path) -> None:
    """netcdf-c's pure Zarr (``#mode=zarr``) stores a ``string`` as ``|S128`` without
    the marker: netCDF4, its producer's reader, reads text, so the copy reads ``str``
    in xarray too (it read bytes, as xarray reads the source, before this change)."""
    src, dst = tmp_path / "nc.zarr", tmp_path / "copy.zarr"
    with netCDF4.Dataset(f"file://{src}#mode=zarr,file", "w") as nc:
        nc.createDimension("y", len(VALUES))
        nc.createVariable("t", str, ("y",))[:] = np.array(VALUES, dtype=object)
    with netCDF4.Dataset(f"file://{src}#mode=zarr,file") as nc:
        assert nc["t"][:].tolist() == VALUES  # the oracle
    _quiet(nczarr.convert, src, dst, mode="zarr")
    assert _xarray_values(dst, 2) == VALUES
    with netCDF4.Dataset(f"file://{dst}#mode=zarr,file") as nc:
        assert nc["t"][:].tolist() == VALUES


def test_noxarray_copies_carry_no_marker(source: tuple[Path, int], tmp_path: Path) -> None:
    src, _ = source
    dst = tmp_path / "copy.zarr"
    _quiet(nczarr.convert, src, dst, mode="zarr", noxarray=True)
    assert TEXT_ENCODING not in _attributes(dst, "t", 2)


def test_a_zarr_v2_copy_for_netcdf_c_has_no_marker(tmp_path: Path) -> None:
    """xarray's netcdf4 engine reads a marked string through netcdf-c and decodes the
    str netCDF4 gives it again: it fails. A copy says so; with netcdf_scalars=True (the
    copy is for netcdf-c) no marker is written and that engine reads the strings."""
    src = tmp_path / "src.file"
    with netCDF4.Dataset(f"file://{src}#mode=nczarr,file", "w") as nc:
        nc.createDimension("x", 2)
        nc.createVariable("s", str, ("x",))[:] = np.array(["ab", "c\u00e9"], dtype=object)
    marked, plain = tmp_path / "marked", tmp_path / "plain"
    with pytest.warns(nczarr.NCZarrWarning, match=r"array '/s': netCDF strings .*netcdf4"):
        nczarr.convert(src, marked, "zarr")
    assert xr.open_zarr(marked, consolidated=False)["s"].values.tolist() == ["ab", "c\u00e9"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", nczarr.NCZarrWarning)
        nczarr.convert(src, plain, "zarr", netcdf_scalars=True)
    assert "_Encoding" not in json.loads((plain / "s" / ".zattrs").read_text())
    with xr.open_dataset(f"file://{plain}#mode=zarr,file", engine="netcdf4") as ds:
        assert ds["s"].values.tolist() == ["ab", "c\u00e9"]


def test_a_combine_into_zarr_v2_says_so_too(tmp_path: Path) -> None:
    """A combine writes a copy as convert does: the same warning on marked strings."""
    sources = []
    for i in range(2):
        path = tmp_path / f"s{i}.file"
        with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as nc:
            nc.createDimension("t", None)
            nc.createVariable("t", "i4", ("t",))[:] = [2 * i, 2 * i + 1]
            nc.createVariable("s", str, ("t",))[:] = np.array(["ab", "c\u00e9"], dtype=object)
        sources.append(path)
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match=r"array '/s': netCDF strings .*netcdf4"):
        nczarr.convert(sources, out, "zarr", concat_dim="t")
    assert xr.open_zarr(out, consolidated=False)["s"].values.tolist() == ["ab", "c\u00e9"] * 2
