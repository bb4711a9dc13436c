"""xarray's Zarr v3 integer arrays with a ``_FillValue``: chunks zarr-python did not
store read as zarr's ``fill_value`` (0), as the producer reads them, on every path.

zarr-python stores no chunk whose values all equal the array's ``fill_value``; xarray
keeps its missing value (-7) in a ``_FillValue`` attribute. A chunk of zeros is then
absent from the store, and used to read as -7 (missing) through nczarr. Found by a
differential hunt; the producer's reading (``xr.open_zarr``) is the oracle here.
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

VALUES = np.array([[0, 0, 0, 0], [1, 2, -7, 4], [0, 0, 0, 0]], dtype="int16")
ABSENT = "chunks the source does not store hold its Zarr fill_value 0, not the fill value -7"


def _xarray_v3(path: Path, values: np.ndarray = VALUES, start: int = 0) -> xr.Dataset:
    """An xarray-written Zarr v3 store: ``v`` in row chunks (rows of zeros not stored)
    and a scalar ``s`` holding 0 (not stored either), both with ``_FillValue`` -7."""
    t = np.arange(start, start + len(values))
    ds = xr.Dataset({"v": (("t", "x"), values), "s": ((), np.int32(0))}, coords={"t": t})
    ds["v"].encoding = {"_FillValue": -7, "chunks": (1, 4)}
    ds["s"].encoding = {"_FillValue": -7}
    ds.to_zarr(path, zarr_format=3, consolidated=False)
    return xr.open_zarr(path, consolidated=False).load()


def _v_chunks(path: Path) -> set[str]:
    return {p.name for p in (path / "v" / "c").iterdir()}


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, xr.Dataset]:
    path = tmp_path / "src.zarr"
    theirs = _xarray_v3(path)
    assert _v_chunks(path) == {"1"}  # rows 0 and 2 hold only zarr's fill_value
    assert not (path / "s" / "c").exists()
    return path, theirs


def test_the_engine_and_the_view_read_zeros(source: tuple[Path, xr.Dataset]) -> None:
    path, theirs = source
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        ours = xr.open_dataset(path, engine="nczarr").load()
    xr.testing.assert_equal(ours[["v", "s"]], theirs[["v", "s"]])
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        shown = nczarr.view(path)
    through = xr.open_zarr(nczarr.ZarrStore(shown), consolidated=False).load()
    xr.testing.assert_equal(through[["v", "s"]], theirs[["v", "s"]])
    assert sorted(k for k in shown if k.startswith("v/") and "/." not in k) == [
        "v/0.0",
        "v/1.0",
        "v/2.0",
    ]


@pytest.mark.parametrize("mode", ["nczarr", "zarr"])
def test_netcdf_and_zarr_v2_copies_write_the_chunks_out(
    source: tuple[Path, xr.Dataset], tmp_path: Path, mode: str
) -> None:
    path, theirs = source
    out = tmp_path / "out.file"
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        plan = nczarr.convert(path, f"file://{out}#mode={mode},file", mode=mode, dry_run=True)
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        report = nczarr.convert(path, f"file://{out}#mode={mode},file", mode=mode)
    assert plan.planned_bytes == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert {p for p, _ in report.reencoded} == {"/v", "/s"}
    assert sorted(p.name for p in (out / "v").iterdir() if not p.name.startswith(".")) == [
        "0.0",
        "1.0",
        "2.0",
    ]
    # the chunk the source stores is copied as it is, not decoded and encoded again
    assert (out / "v" / "1.0").read_bytes() == (path / "v" / "c" / "1" / "0").read_bytes()
    with netCDF4.Dataset(f"file://{out}#mode={mode},file") as nc:
        got = nc["v"][...]
        assert nc["v"].get_fill_value() == -7
        assert np.ma.getmaskarray(got).tolist() == (VALUES == -7).tolist()
        assert got.filled(-7).tolist() == VALUES.tolist()
        if mode == "nczarr":  # netcdf-c drops the 0-d arrays of pure Zarr
            assert int(nc["s"][...]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = xr.open_zarr(out, consolidated=False).load()
    xr.testing.assert_equal(back[["v"]], theirs[["v"]])
    assert back["s"].values.ravel().tolist() == [0]  # NCZarr's scalar: dimension _scalar_


def test_a_zarr_v3_copy_keeps_zarrs_fill_value(
    source: tuple[Path, xr.Dataset], tmp_path: Path
) -> None:
    path, theirs = source
    out = tmp_path / "out.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error", nczarr.NCZarrWarning)
        report = nczarr.convert(path, out, mode="zarr", zarr_format=3)
    assert report.reencoded == ()
    doc = json.loads((out / "v" / "zarr.json").read_text())
    assert (doc["fill_value"], doc["attributes"]["_FillValue"]) == (0, -7)
    back = xr.open_zarr(out, consolidated=False).load()
    xr.testing.assert_equal(back[["v", "s"]], theirs[["v", "s"]])


def test_references_point_at_stored_chunks_and_inline_the_others(
    source: tuple[Path, xr.Dataset], tmp_path: Path
) -> None:
    path, theirs = source
    refs = tmp_path / "refs.json"
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        nczarr.write_references(path, refs)
    entries = json.loads(refs.read_text())["refs"]
    assert entries["v/1.0"] == [str(path / "v" / "c" / "1" / "0")]
    assert entries["v/0.0"].startswith("base64:") and entries["v/2.0"] == entries["v/0.0"]
    back = xr.open_zarr("reference://", storage_options={"fo": str(refs)}, consolidated=False)
    xr.testing.assert_equal(back[["v", "s"]].load(), theirs[["v", "s"]])


@pytest.mark.parametrize("mode", ["nczarr", "zarr"])
def test_combine_and_append_hold_the_zeros(tmp_path: Path, mode: str) -> None:
    first = _xarray_v3(tmp_path / "a.zarr")
    second = _xarray_v3(tmp_path / "b.zarr", VALUES[::-1].copy(), start=3)
    expected = xr.concat([first[["v"]], second[["v"]]], dim="t")
    combined = tmp_path / "combined"
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        nczarr.convert([tmp_path / "a.zarr", tmp_path / "b.zarr"], combined, mode, concat_dim="t")
    appended = tmp_path / "appended"
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        nczarr.convert(tmp_path / "a.zarr", appended, mode)
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        nczarr.convert(tmp_path / "b.zarr", appended, append_dim="t")
    for out in (combined, appended):
        with netCDF4.Dataset(f"file://{out}#mode={mode},file") as nc:
            got = nc["v"][...]
        np.testing.assert_array_equal(got.filled(-7), expected["v"].fillna(-7).values)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = xr.open_zarr(out, consolidated=False).load()
        xr.testing.assert_equal(back[["v"]], expected)


def test_a_parquet_reference_set_points_at_the_stored_chunks(
    source: tuple[Path, xr.Dataset], tmp_path: Path
) -> None:
    """As the JSON set: the stored chunk is a path, the others inlined (the Parquet
    writer asked every chunk as "re-encoded by the view" and inlined them all, found
    by a review)."""
    import pandas as pd

    path, theirs = source
    refs = tmp_path / "refs.parq"
    with pytest.warns(nczarr.NCZarrWarning, match=ABSENT):
        nczarr.write_references(path, refs)
    (table,) = sorted((refs / "v").glob("refs.*.parq"))
    rows = pd.read_parquet(table).to_dict("records")[:3]  # the grid's 3 chunks, padded
    assert [row["path"] for row in rows] == [None, str(path / "v" / "c" / "1" / "0"), None]
    assert rows[0]["raw"] == rows[2]["raw"] and rows[0]["raw"]
    back = xr.open_zarr("reference://", storage_options={"fo": str(refs)}, consolidated=False)
    xr.testing.assert_equal(back[["v"]].load(), theirs[["v"]])
