"""Chunks the source never wrote, in Parquet reference sets (which cannot leave a chunk
out): the encoded chunk written in their place must read, through fsspec's reference
filesystem and zarr 3 (or xarray), exactly as zarr-python reads a chunk never written
of that array, which is how the JSON set (which leaves it out) reads too. For
``"fill_value": null`` that is zarr-python's default of the dtype (0, ``b""``, ``""``),
not ``None`` written as a value (the text ``"None"``, ``b"N"`` or NaN)."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr


def reference_group(fo: Path) -> zarr.Group:
    """zarr 3 on the reference set ``fo`` (JSON or Parquet), through fsspec."""
    fs = fsspec.filesystem(
        "reference",
        fo=str(fo),
        remote_protocol="file",
        asynchronous=True,
        skip_instance_cache=True,
    )
    store = zarr.storage.FsspecStore(fs, read_only=True, path="")
    return zarr.open_group(store=store, mode="r", zarr_format=2)


def both_sets(src: str, tmp_path: Path) -> tuple[zarr.Group, zarr.Group, str]:
    """The Parquet and JSON reference sets of ``src``, opened by zarr; the warnings
    the Parquet write gave (asserted: one per array with chunks left unwritten)."""
    parq, js = tmp_path / "r.parq", tmp_path / "r.json"
    with pytest.warns(nczarr.NCZarrWarning) as caught:
        nczarr.write_references(src, parq)
    js.write_text(json.dumps(nczarr.references(src, "zarr")))
    said = " | ".join(str(w.message) for w in caught if w.category is nczarr.NCZarrWarning)
    return reference_group(parq), reference_group(js), said


def as_list(values: np.ndarray) -> list:
    return np.asarray(values).tolist()


def test_null_fill_numbers_read_as_zarrs_default(tmp_path: Path) -> None:
    """Zarr v2 arrays with ``fill_value: null`` (zarr-python, xarray): zarr reads an
    unwritten chunk as 0 (False); the Parquet set's chunk did read NaN."""
    src = tmp_path / "z2.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=2)
    for name, dtype in (("f", "f4"), ("d", "f8"), ("i", "i2"), ("b", "?")):
        a = g.create_array(name, shape=(4,), chunks=(2,), dtype=dtype, fill_value=None)
        a[0:2] = [1, 1]
        a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    parq, js, said = both_sets(str(src), tmp_path)
    producer = zarr.open_group(src, mode="r")
    for name in ("f", "d", "i", "b"):
        expected = as_list(producer[name][...])
        assert as_list(parq[name][...]) == expected == as_list(js[name][...]), name
        assert f"array /{name}: 1 chunk(s) missing from the source" in said
    assert as_list(parq["f"][...]) == [1.0, 1.0, 0.0, 0.0]
    assert "reading as 0.0 (fill_value null: zarr-python's default for the dtype)" in said
    assert "None" not in said
    with (
        xr.open_dataset(
            "reference://",
            engine="zarr",
            backend_kwargs={
                "consolidated": False,
                "storage_options": {"fo": str(tmp_path / "r.parq"), "remote_protocol": "file"},
            },
        ) as ds,
        xr.open_zarr(src, consolidated=False) as oracle,
    ):
        assert ds["d"].values.tolist() == oracle["d"].values.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_null_fill_text_reads_empty(tmp_path: Path) -> None:
    """zarr-python's Zarr v2 text with ``fill_value: null`` (``<U3``, variable-length
    str): unwritten chunks read as ``""``, not ``"Non"``/``"None"``."""
    src = tmp_path / "z2.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=2)
    for name, dtype in (("u", "<U3"), ("v", str)):
        a = g.create_array(name, shape=(4,), chunks=(2,), dtype=dtype, fill_value=None)
        a[0:2] = ["é", "b"]
        a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    parq, js, said = both_sets(str(src), tmp_path)
    producer = zarr.open_group(src, mode="r")
    for name in ("u", "v"):
        assert as_list(producer[name][...]) == ["é", "b", "", ""]
        assert as_list(parq[name][...]) == as_list(js[name][...]) == ["é", "b", "", ""]
        assert f"array /{name}: 1 chunk(s) missing from the source" in said
    assert "reading as ''" in said


def test_netcdf_char_and_string_read_empty(tmp_path: Path) -> None:
    """A netCDF char variable without ``_FillValue`` (a ``.nc`` file) and a netCDF
    string variable of an NCZarr store: their views say ``fill_value: null``; the
    Parquet set read ``b'N'`` and ``b'None'`` where netCDF4 reads nothing written."""
    nc = tmp_path / "c.nc"
    with netCDF4.Dataset(nc, "w") as ds:
        ds.createDimension("x", 4)
        ds.createDimension("n", 3)
        c = ds.createVariable("c", "S1", ("x", "n"), chunksizes=(2, 3))
        c[0:2] = netCDF4.stringtochar(np.array(["ab", "cde"], "S3"))
    (tmp_path / "nc").mkdir()
    parq, js, said = both_sets(str(nc), tmp_path / "nc")
    written = [[b"a", b"b", b""], [b"c", b"d", b"e"]]
    assert as_list(parq["c"][...]) == as_list(js["c"][...]) == written + [[b""] * 3] * 2
    assert "array /c: 1 chunk(s) missing from the source" in said and "b''" in said
    with netCDF4.Dataset(nc) as ds:  # the producer: nothing (masked) where not written
        ds.set_auto_chartostring(False)
        assert ds["c"][2:].mask.all()

    store = tmp_path / "s.file"
    url = f"file://{store}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("x", 4)
        s = ds.createVariable("s", str, ("x",), chunksizes=(2,))
        s[0:2] = np.array(["ab", "é"], dtype=object)
    (tmp_path / "nczarr").mkdir()
    parq, js, said = both_sets(url, tmp_path / "nczarr")
    with netCDF4.Dataset(url) as ds:
        producer = ds["s"][:].tolist()
    assert producer == ["ab", "é", "", ""]
    got = [v.decode() for v in as_list(parq["s"][...])]
    assert got == [v.decode() for v in as_list(js["s"][...])] == producer
    assert "array /s: 1 chunk(s) missing from the source" in said


def test_set_fill_value_still_written(tmp_path: Path) -> None:
    """An array with a fill value: its unwritten chunks still read as it."""
    src = tmp_path / "z2.zarr"
    g = zarr.open_group(src, mode="w", zarr_format=2)
    a = g.create_array("m", shape=(4,), chunks=(2,), dtype="i4", fill_value=-7)
    a[0:2] = [1, 2]
    a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    parq, js, said = both_sets(str(src), tmp_path)
    assert as_list(parq["m"][...]) == as_list(js["m"][...]) == [1, 2, -7, -7]
    assert "reading as -7 (the fill value)" in said
