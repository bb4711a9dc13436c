"""``report.chunks_reencoded`` of a ``.nc`` convert: exactly the chunks whose stored
encoding cannot be carried verbatim.

Re-encoded (and counted there, not in ``chunks_copied``): every chunk of a
variable-length string variable, of a variable whose HDF5 filters have no Zarr codec
(lzf) or whose shuffle follows fletcher32 on an 8-byte type, and only the chunks an
HDF5 filter mask marks. Copied verbatim (``chunks_copied``): filtered chunks with a
Zarr codec, contiguous datasets cut into byte ranges, compact data (its bytes as
HDF5 holds them), and every netCDF-3 chunk (raw big-endian bytes of the file).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import h5py
import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.errors import NCZarrWarning
from nczarr.ncfile.source import NetCDFFileMap

from .ncfiles import assert_same_values, nc_values

TARGETS = [
    ("nczarr", {}),
    ("zarr", {}),
    ("zarr", {"zarr_format": 3}),
    ("zarr", {"workers": 3}),
]


def _netcdf4(path: Path) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", 6)
        ds.createDimension("x", 8)
        ds.createDimension("n", 5)
        ds.createDimension("r", 4)
        ds.createDimension("c", 3)
        ds.createDimension("rows", 10)
        zl = ds.createVariable("zl", "f4", ("t", "x"), compression="zlib", chunksizes=(2, 4))
        zl[:] = np.arange(48, dtype="f4").reshape(6, 8)  # 6 chunks, verbatim
        fl8 = ds.createVariable(
            "fl8", "f8", ("t", "x"), zlib=True, shuffle=True, fletcher32=True, chunksizes=(3, 8)
        )
        fl8[:] = np.arange(48.0).reshape(6, 8)  # 2 chunks, re-encoded
        s = ds.createVariable("s", str, ("n",), chunksizes=(2,))
        for i, word in enumerate(["a", "bb", "", "dddd", "é"]):
            s[i] = word  # 3 chunks, re-encoded
        cont = ds.createVariable("cont", "f8", ("rows", "c"), contiguous=True)
        cont[:] = np.arange(30.0).reshape(10, 3)  # one byte range, verbatim
        part = ds.createVariable("part", "i4", ("r",), chunksizes=(1,))
        part[2] = 7  # one chunk written of four, verbatim
    return path


def _hdf5(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        values = np.arange(600, dtype="f4").reshape(20, 30)
        f.create_dataset("lzf", data=values, chunks=(8, 30), compression="lzf")  # no Zarr codec
        ds = f.create_dataset("mask", shape=(2, 4), chunks=(1, 4), dtype="i4", compression="gzip")
        ds[0] = np.arange(4, dtype="i4")  # stored deflated: verbatim
        ds.id.write_direct_chunk((1, 0), np.arange(4, 8, dtype="i4").tobytes(), filter_mask=1)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((4,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16BE, space, dcpl=dcpl)
        f["compact"][:] = np.arange(4, dtype=">i2")
    return path


def _netcdf3(path: Path) -> Path:
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 5)
        ds.createVariable("a", "f4", ("time", "x"))[:] = np.ones((4, 5))
        ds.createVariable("b", "i2", ("time",))[:] = np.arange(4)
        ds.createVariable("f", "f8", ("x",))[:] = np.arange(5.0)
    return path


def _convert(path: Path, out: Path, target: str, extra: dict[str, Any]) -> nczarr.ConvertReport:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # asserted in test_reencoded_arrays_are_announced
        return nczarr.convert(str(path), str(out), target, **extra)


def _written_chunks(out: Path) -> int:
    """Chunk objects in a directory target (not metadata)."""
    names = (".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json")
    return sum(1 for p in out.rglob("*") if p.is_file() and p.name not in names)


def _values(out: Path, target: str) -> dict[str, Any]:
    if target == "nczarr":
        return nc_values(f"file://{out}#mode=nczarr,file")
    group = zarr.open_group(str(out), mode="r")
    return {f"/{name}": array[...] for name, array in group.arrays()}


@pytest.mark.parametrize(("target", "extra"), TARGETS)
def test_netcdf4_counts(tmp_path: Path, target: str, extra: dict[str, Any]) -> None:
    path = _netcdf4(tmp_path / "four.nc")
    out = tmp_path / "out"
    report = _convert(path, out, target, extra)
    assert (report.chunks_reencoded, report.chunks_copied) == (2 + 3, 6 + 1 + 1)
    assert dict(report.reencoded).keys() == {"/fl8", "/s"}
    assert _written_chunks(out) == 2 + 3 + 6 + 1 + 1
    assert "5 re-encoded" in report.summary()
    assert_same_values(nc_values(str(path)), _values(out, target))


@pytest.mark.parametrize(("target", "extra"), TARGETS)
def test_hdf5_filter_counts(tmp_path: Path, target: str, extra: dict[str, Any]) -> None:
    path = _hdf5(tmp_path / "filters.h5")
    out = tmp_path / "out"
    report = _convert(path, out, target, extra)
    # lzf: all 3 chunks; mask: only the chunk stored with deflate skipped; compact: none
    assert (report.chunks_reencoded, report.chunks_copied) == (3 + 1, 1 + 1)
    assert dict(report.reencoded).keys() == {"/lzf", "/mask"}
    with h5py.File(path) as f:  # netCDF4's HDF5 has no lzf filter
        expected = {f"/{name}": f[name][...] for name in f}
    assert_same_values(expected, _values(out, target))


@pytest.mark.parametrize(("target", "extra"), TARGETS)
def test_netcdf3_chunks_are_all_copied(tmp_path: Path, target: str, extra: dict[str, Any]) -> None:
    path = _netcdf3(tmp_path / "three.nc")
    out = tmp_path / "out"
    report = _convert(path, out, target, extra)
    assert (report.chunks_reencoded, report.chunks_copied) == (0, 4 + 4 + 1)  # one per record
    assert report.reencoded == ()
    assert_same_values(nc_values(str(path)), _values(out, target))


def test_resume_counts_only_what_it_writes(tmp_path: Path) -> None:
    path = _netcdf4(tmp_path / "four.nc")
    out = tmp_path / "out"
    _convert(path, out, "nczarr", {})
    (out / "fl8" / "1.0").unlink()  # a re-encoded chunk, as if killed before it
    (out / "zl" / "0.0").unlink()  # a verbatim one
    (out / ".zattrs").unlink()
    again = _convert(path, out, "nczarr", {"resume": True})
    assert (again.chunks_reencoded, again.chunks_copied, again.chunks_skipped) == (1, 1, 11)
    assert_same_values(nc_values(str(path)), nc_values(f"file://{out}#mode=nczarr,file"))


def test_reencoded_arrays_are_announced(tmp_path: Path) -> None:
    path = _hdf5(tmp_path / "filters.h5")
    with pytest.warns(NCZarrWarning) as caught:
        nczarr.convert(str(path), str(tmp_path / "out"), "zarr")
    messages = sorted(str(w.message).split(":")[0] for w in caught)
    assert messages == ["re-encoded array '/lzf'", "re-encoded array '/mask'"]


def test_source_map_says_which_chunks_it_reencodes(tmp_path: Path) -> None:
    with NetCDFFileMap(str(_hdf5(tmp_path / "filters.h5"))) as source:
        assert [k for k in sorted(source) if source.reencodes(k)] == [
            "lzf/0.0",
            "lzf/1.0",
            "lzf/2.0",
            "mask/1.0",
        ]
        assert not source.reencodes("compact/0") and not source.reencodes("nothing/0")


@pytest.mark.parametrize("how", ["convert", "view"])
def test_empty_strings_of_a_netcdf4_file_stay_text_in_a_zarr_v2_copy(
    tmp_path: Path, how: str
) -> None:
    """A netCDF-4 string variable without ``_FillValue`` (netCDF's fill: empty text,
    which netCDF4 never masks) gets ``fill_value`` null in a Zarr v2 copy or view, as
    netcdf-c's own text does: on 254285e it kept ``""``, which xarray's zarr engine takes
    for a missing value, so every empty string read as NaN (found by a differential
    hunt)."""
    import xarray as xr

    path = tmp_path / "s.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 4)
        s = ds.createVariable("s", str, ("x",))
        for i, text in enumerate(["a", "", "c", ""]):
            s[i] = text
    expected = xr.open_dataset(path, engine="netcdf4")["s"].values.tolist()
    assert expected == ["a", "", "c", ""]
    if how == "convert":
        out = tmp_path / "s.zarr"
        with pytest.warns(NCZarrWarning, match="re-encoded"):  # vlen: from heap references
            nczarr.convert(path, out, mode="zarr")
        got = xr.open_zarr(out, consolidated=False)["s"].values.tolist()
    else:
        with pytest.warns(NCZarrWarning, match="re-encoded"):
            store = nczarr.ZarrStore(nczarr.view(path, mode="zarr"))
        got = xr.open_zarr(store, consolidated=False)["s"].values.tolist()
    assert got == expected


def test_fixed_length_strings_of_an_hdf5_file_are_netcdf_strings(tmp_path: Path) -> None:
    """An HDF5 fixed-length string dataset (``|S3``, contiguous or chunked and
    compressed: how HDF5 products that netcdf-c did not write store text) is a netCDF
    ``string`` variable, as libnetcdf reads it: re-encoded, announced, and read back by
    netCDF4 and xarray as netCDF4 reads the file (refused as a user-defined type on
    254285e, found by a differential hunt). Attributes of that type stay ``char``."""
    import xarray as xr

    path = tmp_path / "fs.h5"
    with h5py.File(path, "w") as f:
        f["names"] = np.array([b"ab", b"cde", b""], dtype="S3")
        f["names"].attrs["note"] = np.bytes_(b"abc")
        labels = np.array([b"a", b"bcdef", b"xy"] * 3, dtype="S5")
        f.create_dataset("labels", data=labels, chunks=(4,), compression="gzip")
        f["coded"] = np.array([b"ab", b"N/A"], dtype="S3")
        f["coded"].attrs["_FillValue"] = np.bytes_(b"N/A")  # a fixed-length string too
    with netCDF4.Dataset(path) as ds:
        expected = {k: ds[k][:].tolist() for k in ("names", "labels")}
        note = ds["names"].getncattr("note")
    assert expected["names"] == ["ab", "cde", ""]
    with pytest.warns(NCZarrWarning):
        coded = nczarr.read(path).root.variables["coded"]
    assert coded.fill_value == "N/A"  # the whole text (a review found "N")
    with pytest.warns(NCZarrWarning, match="fixed-length strings are written as netCDF"):
        nczarr.convert(path, tmp_path / "out")
    with netCDF4.Dataset(f"file://{tmp_path / 'out'}#mode=nczarr,file") as ds:
        assert {k: ds[k][:].tolist() for k in ("names", "labels")} == expected
        assert ds["names"].getncattr("note") == note
    with pytest.warns(NCZarrWarning, match="fixed-length strings"):
        nczarr.convert(path, tmp_path / "out.zarr", mode="zarr")
    z = xr.open_zarr(tmp_path / "out.zarr", consolidated=False)
    assert {k: z[k].values.tolist() for k in ("names", "labels")} == expected


def test_a_zarr_v2_copy_of_int64_without_fill_value_says_xarray_reads_floats(
    tmp_path: Path,
) -> None:
    """netCDF's default int64 fill kept as the Zarr v2 ``fill_value`` (it is what
    netCDF4 masks) makes xarray read the variable as float64: integers beyond 2**53
    lose precision, which a warning now says, naming the variable (found by a
    differential hunt: nothing said so)."""
    import xarray as xr

    path = tmp_path / "i.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 2)
        ds.createVariable("v", "i8", ("x",))[:] = [4611686018427387905, 1]
    with pytest.warns(NCZarrWarning, match=r"'/v'.*reads the variable as float64"):
        nczarr.convert(path, tmp_path / "o.zarr", mode="zarr")
    got = xr.open_zarr(tmp_path / "o.zarr", consolidated=False)["v"]
    assert got.dtype == np.float64  # what the warning says: xarray's reading, unchanged
