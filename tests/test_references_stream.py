"""Parquet reference sets of netCDF-4 files written variable by variable from each
variable's HDF5 chunk B-tree (no whole-file chunk index), and reference sets that carry
consolidated metadata; read in a fresh process without nczarr."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import fsspec
import h5py
import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.errors import NCZarrWarning
from nczarr.ncfile.source import NetCDFFileMap
from nczarr.ncfile.streamed import StreamedNetCDFFileMap, open_streamed

from .refreaders import netcdf_values, read_saved, refs_job, tree_hash


def make_sparse_nc(path: Path) -> None:
    """A netCDF-4 file: a full deflated variable, one with chunks never written, one
    with a chunk stored with its deflate filter skipped (HDF5 filter mask), a
    contiguous variable and a scalar."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("y", 6)
        ds.createDimension("x", 9)
        v = ds.createVariable("v", "f4", ("y", "x"), chunksizes=(2, 3), zlib=True, shuffle=True)
        v[:] = np.arange(54, dtype="f4").reshape(6, 9)
        s = ds.createVariable("sparse", "i2", ("y", "x"), chunksizes=(2, 3), fill_value=-1)
        s[0:2, 0:3] = 1
        s[4:6, 6:9] = 2  # the seven other chunks are never written
        m = ds.createVariable(
            "masked", "i4", ("y", "x"), chunksizes=(2, 3), zlib=True, shuffle=False
        )
        values = np.arange(54, dtype="i4").reshape(6, 9)
        for rows, cols in ((slice(0, 2), slice(0, 9)), (slice(4, 6), slice(0, 9))):
            m[rows, cols] = values[rows, cols]
        m[2:4, 0:3] = values[2:4, 0:3]
        m[2:4, 6:9] = values[2:4, 6:9]  # chunk (1, 1) is written below, raw
        c = ds.createVariable("c", "f8", ("x",), contiguous=True)
        c[:] = np.linspace(0, 1, 9)
        t = ds.createVariable("t", "i4", ())
        t.assignValue(7)
    with h5py.File(path, "r+") as f:  # chunk (1, 1) stored raw, deflate skipped
        raw = np.full((2, 3), 99, dtype="<i4").tobytes()
        f["masked"].id.write_direct_chunk((2, 3), raw, filter_mask=1)


def test_streamed_map_serves_what_the_file_map_serves(tmp_path: Path) -> None:
    path = tmp_path / "src.nc"
    make_sparse_nc(path)
    with NetCDFFileMap(str(path)) as eager, StreamedNetCDFFileMap(str(path)) as streamed:
        keys = sorted(eager)
        assert sorted(streamed) == keys
        assert all(streamed[k] == eager[k] for k in keys)
        assert streamed.chunk_locations(keys) == eager.chunk_locations(keys)
        # the skipped filter is known once the index is read (above): the chunk is
        # re-encoded by both (the streamed map's open-time `reencoded` cannot name it)
        assert eager.reencodes("masked/1.1") and streamed.reencodes("masked/1.1")
        assert not streamed.reencodes("masked/0.0")


def test_walk_without_index(tmp_path: Path) -> None:
    """A deferred variable's stored chunks are visited from its B-tree, none read
    into an index; once its index is read, it is no longer walked."""
    path = tmp_path / "src.nc"
    make_sparse_nc(path)
    with StreamedNetCDFFileMap(str(path)) as m:
        seen: list[tuple] = []
        assert m.each_stored_chunk("sparse", lambda *a: seen.append(a))
        assert [coords for coords, *_ in seen] == [(0, 0), (2, 2)]
        assert {url for _, url, *_ in seen} == {str(path)}  # offsets into the file itself
        masks = {coords: mask for coords, _, _, _, mask in _walk(m, "masked")}
        assert masks[(1, 1)] == 1 and sum(masks.values()) == 1
        assert not m.each_stored_chunk("c", lambda *a: None)  # contiguous: cut at open
        assert m.chunk_locations(["v/0.0"])[0] is not None  # reads v's index
        assert not m.each_stored_chunk("v", lambda *a: None)


def _walk(m: StreamedNetCDFFileMap, prefix: str) -> list[tuple]:
    out: list[tuple] = []
    assert m.each_stored_chunk(prefix, lambda *a: out.append(a))
    return out


def test_nc_parquet_streamed_values_and_fill(tmp_path: Path) -> None:
    """The Parquet set of a netCDF-4 file, written from each variable's chunk walk:
    pointers where the JSON set points, the encoded fill chunk for chunks never
    written (announced), the filter-skipped chunk re-encoded (announced), the values
    netCDF4 reads; no variable's index is read but the one with a re-encoded chunk."""
    path = tmp_path / "src.nc"
    make_sparse_nc(path)
    before = tree_hash(path)
    out = tmp_path / "nc.parq"
    with StreamedNetCDFFileMap(str(path)) as m:
        with pytest.warns(NCZarrWarning) as caught:
            counts = nczarr.write_references(m, out)
        assert m.each_stored_chunk("v", lambda *a: None)  # never indexed
        assert m.each_stored_chunk("sparse", lambda *a: None)
        assert not m.each_stored_chunk("masked", lambda *a: None)
    said = " ".join(str(w.message) for w in caught if w.category is NCZarrWarning)
    assert "array /sparse: 7 chunk(s) missing from the source written" in said
    assert "array /masked cannot be referenced" in said and "1 chunk(s)" in said
    assert counts["inlined"] == 1
    with (
        pytest.warns(NCZarrWarning, match="re-encoded array '/masked'"),
        pytest.warns(NCZarrWarning, match="array /masked cannot be referenced"),
    ):
        refs = nczarr.references(str(path), max_inlined=1 << 20)
    fs = fsspec.filesystem("reference", fo=str(out), remote_protocol="file")
    for key, value in refs["refs"].items():
        if isinstance(value, list):
            assert list(fs.references[key]) == value, key
    by_zarr, by_xarray = read_saved(refs_job(out, "zarr"), refs_job(out, "xarray"))
    assert by_zarr == netcdf_values(str(path), masked=False)
    assert by_xarray == netcdf_values(str(path), masked=True)
    # the path route opens the file the same way
    out2 = tmp_path / "nc2.parq"
    with (
        pytest.warns(NCZarrWarning, match="missing from the source"),
        pytest.warns(NCZarrWarning, match="array /masked cannot be referenced"),
    ):
        nczarr.write_references(str(path), out2)
    (again,) = read_saved(refs_job(out2, "zarr"))
    assert again == by_zarr
    assert tree_hash(path) == before


def test_open_streamed_only_netcdf_files(tmp_path: Path) -> None:
    path = tmp_path / "src.nc"
    make_sparse_nc(path)
    m = open_streamed(str(path))
    assert isinstance(m, StreamedNetCDFFileMap)
    m.close()
    store = tmp_path / "s.zarr"
    # the file's own note on /masked, given at open, is dropped with the array
    with pytest.warns(NCZarrWarning, match="left out by include/exclude: /masked") as caught:
        nczarr.convert(str(path), str(store), exclude=["/masked"])
    assert not [w for w in caught if "re-encoded array" in str(w.message)]
    assert open_streamed(str(store)) is None


def test_grid_order_not_assumed(tmp_path: Path) -> None:
    """Records written out of order along an unlimited dimension, two never: a
    many-record set with a small record size reads as netCDF4 reads the file (the
    chunk walk comes in grid order here; a late chunk would replace its fill)."""
    path = tmp_path / "src.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 8)
        v = ds.createVariable("v", "i4", ("t", "x"), chunksizes=(1, 2), fill_value=-5)
        for t in (5, 0, 3, 1):  # written out of order, 2 and 4 never
            v[t, :] = np.arange(8) + 10 * t
    out = tmp_path / "t.parq"
    with pytest.warns(NCZarrWarning, match="8 chunk\\(s\\) missing"):
        nczarr.write_references(str(path), out, record_size=3)
    (got,) = read_saved(refs_job(out, "zarr"))
    assert got == netcdf_values(str(path), masked=False)


# ---------------------------------------------------------------- consolidated
OPEN_DEFAULT = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.simplefilter("error", RuntimeWarning)  # xarray: no consolidated metadata
    import numpy as np, xarray as xr
    ds = xr.open_dataset("reference://", engine="zarr",
                         backend_kwargs={"storage_options": {"fo": sys.argv[1],
                                                             "remote_protocol": "file"}})
    assert "nczarr" not in sys.modules
    print(json.dumps({k: np.asarray(v.values, dtype=float).ravel().tolist()
                      for k, v in ds.variables.items()}))
    """
)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_json_set_consolidated_by_default(tmp_path: Path, zarr_format: int) -> None:
    """The set carries consolidated metadata (what ``view(..., consolidated=True)``
    shows), so xarray's default open reads it without listing the set or warning."""
    path = tmp_path / "src.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 6)
        v = ds.createVariable("v", "f4", ("x",), chunksizes=(2,), zlib=True)
        v[:] = np.arange(6, dtype="f4")
        w = ds.createVariable("w", "i2", ("x",))
        w[:] = np.arange(6)
    refs = nczarr.references(str(path), zarr_format=zarr_format)
    with nczarr.view(str(path), zarr_format=zarr_format, consolidated=True) as shown:
        for key, value in shown.metadata.items():
            assert refs["refs"][key].encode() == value
    if zarr_format == 2:
        assert set(json.loads(refs["refs"][".zmetadata"])["metadata"]) == {
            k for k in refs["refs"] if k.rsplit("/", 1)[-1].startswith(".z") and k != ".zmetadata"
        }
        with pytest.warns(NCZarrWarning, match="left out by include/exclude: /w"):
            excluded = nczarr.references(str(path), exclude=["/w"])
        assert "w/.zarray" not in json.loads(excluded["refs"][".zmetadata"])["metadata"]
    else:
        assert "consolidated_metadata" in json.loads(refs["refs"]["zarr.json"])
    plain = nczarr.references(str(path), consolidated=None)  # as the source: none
    assert ".zmetadata" not in plain["refs"]
    fo = tmp_path / "refs.json"
    fo.write_text(json.dumps(refs))
    run = subprocess.run(
        [sys.executable, "-c", OPEN_DEFAULT, str(fo)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout)
    assert got["v"] == list(range(6)) and got["w"] == list(range(6))


def test_fill_chunk_is_encoded_outside_hdf5s_walk(tmp_path: Path, monkeypatch) -> None:
    """zarr-python encodes the fill-value chunk in its own event-loop thread; inside
    HDF5's chunk walk h5py's global lock is held, and a garbage collection in zarr's
    thread that frees an h5py object then waits for it while the walk waits for zarr
    (a deadlock CI hit). So the chunk is encoded before the walk, with the lock free."""
    from h5py._objects import phil

    from nczarr.conversion import reference_files

    held: list[bool] = []
    encode = reference_files.encoded_fill_chunk

    def encoded(zarray: bytes, array: str) -> object:
        held.append(phil._is_owned())
        return encode(zarray, array)

    monkeypatch.setattr(reference_files, "encoded_fill_chunk", encoded)
    path = tmp_path / "src.nc"
    make_sparse_nc(path)
    with StreamedNetCDFFileMap(str(path)) as m, pytest.warns(NCZarrWarning, match="missing"):
        nczarr.write_references(m, tmp_path / "nc.parq")
    assert held and not any(held)
