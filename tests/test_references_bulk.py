"""Reference sets made in bulk: locations asked of a map a batch of keys at a time
(``ZMap.chunk_locations``), chunk keys listed as they are read
(``ZMap.keys_below_streamed``), an array's chunks located by the view
(``TranslatedView.chunk_locations``), and Parquet sets written by walking each
array's chunk grid. The bulk answers must be the per-key answers."""

from __future__ import annotations

import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.readthrough import view

from .refreaders import floats, make_nc, make_nczarr, read_saved, refs_job, tree_hash


def chunk_keys(m: nczarr.ZMap) -> list[str]:
    return [k for k in m.keys_below("") if not k.rsplit("/", 1)[-1].startswith(".")]


def per_key(m: nczarr.ZMap, keys: list[str]) -> list:
    return [m.chunk_location(k) for k in keys]


def test_directory_store_locations_in_bulk(tmp_path: Path) -> None:
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    with nczarr.open_map(str(store), mode="r") as m:
        keys = chunk_keys(m)
        assert len(keys) == 4 + 3 + 1
        got = m.chunk_locations(keys)
        assert got == per_key(m, keys)
        assert all(Path(loc[0]).read_bytes() == m[k] for k, loc in zip(keys, got, strict=True))


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT_OFFSET"])
def test_netcdf_file_locations_in_bulk(tmp_path: Path, fmt: str) -> None:
    """Byte ranges of a ``.nc`` file, asked in one call, across arrays: the same as
    asked one by one; the padded last piece of cut contiguous data has none."""
    path = make_nc(tmp_path / "src.nc", fmt)
    with nczarr.open_map(path, mode="r") as m:
        keys = chunk_keys(m)
        assert {k.split("/")[0] for k in keys} == {"t", "c"}
        got = m.chunk_locations(keys)
        assert got == per_key(m, keys)
        raw = Path(path).read_bytes()
        for key, loc in zip(keys, got, strict=True):
            if loc is not None:
                assert raw[loc[1] : loc[1] + loc[2]] == m[key]
        with pytest.raises(KeyError, match=r"t/9\.9"):
            m.chunk_locations([keys[0], "t/9.9"])


def test_zip_locations_in_bulk(tmp_path: Path) -> None:
    """A zip's members (stored) by the default per-key answer, and deflated ones None."""
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i, path in enumerate(sorted(p for p in store.rglob("*") if p.is_file())):
            method = zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED
            z.write(path, path.relative_to(store).as_posix(), compress_type=method)
    with nczarr.open_map(f"file://{archive}#mode=nczarr,zip", mode="r") as m:
        keys = chunk_keys(m)
        got = m.chunk_locations(keys)
        assert got == per_key(m, keys)
        assert None in got and any(loc is not None for loc in got)


def test_streamed_listing_lists_what_keys_below_lists(tmp_path: Path) -> None:
    """Nested directories, hidden and temporary files: the streamed listing (each
    directory read as it is consumed) and the usual one list the same keys."""
    store = tmp_path / "src.zarr"
    make_nczarr(store)
    (store / "g" / "deep" / "er").mkdir(parents=True)
    (store / "g" / "deep" / "er" / "0").write_bytes(b"x")
    (store / ".hidden_thing").write_bytes(b"x")
    with nczarr.open_map(str(store), mode="r") as m:
        for prefix in ("", "g", "t", "g/deep", "missing"):
            assert sorted(m.keys_below_streamed(prefix)) == sorted(m.keys_below(prefix))
        assert "g/deep/er/0" in set(m.keys_below_streamed("g"))
    memory = nczarr.MemoryMap(mode="w")
    memory["a/0"] = b"1"
    assert list(memory.keys_below_streamed("a")) == ["a/0"]


@pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")  # its <U3 array
def test_view_locates_v3_keys_and_reencoded_arrays(tmp_path: Path) -> None:
    """A Zarr v3 source's chunks are shown under v2 keys and located at their v3
    keys; an array the view re-encodes has no location."""
    store = tmp_path / "v3.zarr"
    root = zarr.open_group(store, mode="w", zarr_format=3)
    a = root.create_array("a", shape=(4, 4), chunks=(2, 2), dtype="i4")
    a[:] = np.arange(16).reshape(4, 4)
    s = root.create_array("s", shape=(4,), chunks=(2,), dtype="<U3")
    s[:] = ["a", "bb", "ccc", "d"]
    with view(str(store), "nczarr") as shown:
        located = dict(shown.chunk_locations("a", batch=3))
        assert sorted(located) == ["a/0.0", "a/0.1", "a/1.0", "a/1.1"]
        assert located["a/1.0"] == (str(store / "a" / "c" / "1" / "0"),)
        assert "s" in shown.reencoded
        assert all(loc is None for _, loc in shown.chunk_locations("s"))
        assert shown.locate("a", ["a/0.1"]) == [located["a/0.1"]]


def test_parquet_grid_walk_sparse_3d_and_scalar(tmp_path: Path) -> None:
    """Parquet sets walk each array's chunk grid one record at a time: a 3-D array
    with chunks missing in several records (given the fill-value chunk, announced),
    a scalar, and a grid not a multiple of the record size read back as netCDF4
    reads the source."""
    url = f"file://{tmp_path / 'src.zarr'}#mode=nczarr,file"
    values = np.arange(5 * 4 * 3, dtype="i4").reshape(5, 4, 3)
    with netCDF4.Dataset(url, "w") as ds:
        for name, n in zip("zyx", values.shape, strict=True):
            ds.createDimension(name, n)
        v = ds.createVariable("v", "i4", ("z", "y", "x"), chunksizes=(1, 2, 1), fill_value=-9)
        for z in (0, 2, 4):  # planes 1 and 3 never written: their chunks are missing
            v[z] = values[z]
        s = ds.createVariable("s", "f8", ())
        s.assignValue(2.5)
    store = tmp_path / "src.zarr"
    before = tree_hash(store)
    out = tmp_path / "refs.parq"
    with pytest.warns(nczarr.NCZarrWarning, match=r"array /v: 12 chunk\(s\) missing"):
        counts = nczarr.write_references(str(store), out, record_size=7)
    assert counts == {"metadata": counts["metadata"], "pointers": 18 + 1, "inlined": 0}
    assert len(list((out / "v").iterdir())) == 5  # 30 grid cells, 7 per record
    want = values.copy()
    want[[1, 3]] = -9
    (got,) = read_saved(refs_job(out, "zarr"))
    assert got["v"] == floats(want)
    assert got["s"] == floats(np.float64(2.5))
    assert tree_hash(store) == before
