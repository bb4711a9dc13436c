"""The xarray engine reads Zarr v3 sources as Zarr v3 (issue 17, "v3 read as v3").

The model (dimensions, typed attributes) still comes from the translated view, but the
values of a Zarr v3 source's sharded arrays are read by zarr-python from the source's
own ``zarr.json`` and shards (zarr-python's sharding codec), nothing is re-encoded (the
view used to re-encode every inner chunk into a Zarr v2 chunk, decoded again); the
view passes the other arrays' chunks through verbatim. Values are zarr-python's own
reading of the store; the fill value is the one the view shows (a ``_FillValue``
attribute replaces the Zarr ``fill_value``), so chunks never written read as before.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import CorruptChunkError, NCZarrWarning
from nczarr.integrations import shardread
from nczarr.integrations.xarray_backend import NCZarrDataStore
from nczarr.integrations.zarr_store import ZarrStore
from nczarr.readthrough import TranslatedView
from nczarr.reencode import ChunkRecoder

PRODUCERS = Path(__file__).parent / "data" / "producers"


def _sharded_store(path: Path, *, consolidated: bool = False) -> dict[str, np.ndarray]:
    """A zarr-python 3 group: a sharded array with partial shards, a plain one with
    ``c/`` keys, and a sharded array of a shard never written; their values."""
    group = zarr.open_group(path, mode="w", zarr_format=3)
    sh = group.create_array(
        "sh",
        shape=(10, 14),
        chunks=(2, 3),
        shards=(4, 6),
        dtype="<f8",
        fill_value=-1.0,
        dimension_names=("y", "x"),
    )
    sh[...] = np.arange(140, dtype="<f8").reshape(10, 14) / 4
    plain = group.create_array(
        "plain", shape=(10,), chunks=(3,), dtype="<i4", dimension_names=("y",)
    )
    plain[...] = np.arange(10, dtype="<i4") * 3
    holes = group.create_array(
        "holes", shape=(8,), chunks=(2,), shards=(4,), dtype="<i2", dimension_names=("z",)
    )
    holes[:4] = [1, 2, 3, 4]  # the second shard is never written
    if consolidated:
        with warnings.catch_warnings():  # zarr-python: not yet in the v3 specification
            warnings.simplefilter("ignore", UserWarning)
            zarr.consolidate_metadata(path)
    theirs = zarr.open_group(path, mode="r")
    return {name: np.asarray(theirs[name][...]) for name in ("sh", "plain", "holes")}


@pytest.fixture
def recodes(monkeypatch) -> list[tuple[int, ...]]:
    """Every chunk the re-encoder makes (a spy around ``ChunkRecoder.encode``)."""
    made: list[tuple[int, ...]] = []
    real = ChunkRecoder.encode

    def encode(self, coords):
        made.append(coords)
        return real(self, coords)

    monkeypatch.setattr(ChunkRecoder, "encode", encode)
    return made


def _open(src, said: list[str] | None = None, **kwargs) -> xr.Dataset:
    """``engine="nczarr"``; its warnings appended to ``said``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(src, engine="nczarr", **kwargs)
    if said is not None:
        said.extend(str(w.message) for w in caught if issubclass(w.category, NCZarrWarning))
    return ds


def _no_reencoding_announced(said: list[str]) -> None:
    assert not [m for m in said if "re-encoded" in m], said


@pytest.mark.parametrize("consolidated", [False, True])
@pytest.mark.parametrize("chunks", [None, {}])
def test_sharded_v3_is_read_without_reencoding(
    tmp_path: Path, recodes: list, consolidated: bool, chunks
) -> None:
    expected = _sharded_store(tmp_path / "s.zarr", consolidated=consolidated)
    said: list[str] = []
    with _open(tmp_path / "s.zarr", said, chunks=chunks, mask_and_scale=False) as ds:
        for name, values in expected.items():
            got = ds[name].values
            assert got.dtype == values.dtype
            np.testing.assert_array_equal(got, values)
        np.testing.assert_array_equal(ds["sh"][3:7, 5:9].values, expected["sh"][3:7, 5:9])
    assert recodes == []  # no chunk re-encoded (the view made one per inner chunk)
    _no_reencoding_announced(said)


def test_sharded_arrays_are_zarr_v3_arrays_over_the_source(tmp_path: Path) -> None:
    """Sharded arrays are zarr-python's v3 arrays over the source map; the others are
    read through the view, which passes their chunk objects verbatim."""
    _sharded_store(tmp_path / "s.zarr")
    store = NCZarrDataStore.open(tmp_path / "s.zarr")
    try:

        def array(name: str):
            return store.source.array(store.source.dataset.find_variable(f"/{name}"))._array

        for name in ("sh", "holes"):
            assert array(name).metadata.zarr_format == 3
            assert array(name).store.zmap is store.source.view.source  # not the view
        assert (array("sh").chunks, array("sh").shards) == ((2, 3), (4, 6))
        assert array("plain").store.zmap is store.source.view
        assert store.source.view.reencoded_array("plain/0") is None
    finally:
        store.close()


ALL_SHARDS = {f"sh/c/{i}/{j}" for i in range(3) for j in range(3)}


def test_the_shard_objects_read_are_the_stored_ones(tmp_path: Path, monkeypatch) -> None:
    """The stored shards (c/ keys) are read, whole or by byte ranges, and no chunk of
    the view's Zarr v2 keys; nothing goes through zarr's event loop (``ZarrStore.get``)."""
    from nczarr.maps.file import FileMap

    expected = _sharded_store(tmp_path / "s.zarr")
    asked: list[str] = []
    through_zarr: list[str] = []
    real_get, real_items, real_range = ZarrStore.get, FileMap.getitems, FileMap.getrange

    async def get(self, key, prototype, byte_range=None):
        through_zarr.append(key)
        return await real_get(self, key, prototype, byte_range)

    def getitems(self, keys):
        asked.extend(keys)
        return real_items(self, keys)

    def getrange(self, key, start, length=None):
        asked.append(key)
        return real_range(self, key, start, length)

    monkeypatch.setattr(ZarrStore, "get", get)
    with _open(tmp_path / "s.zarr", mask_and_scale=False) as ds:
        monkeypatch.setattr(FileMap, "getitems", getitems)
        monkeypatch.setattr(FileMap, "getrange", getrange)
        np.testing.assert_array_equal(ds["sh"].values, expected["sh"])
    shards = {k for k in asked if k.startswith("sh/")}
    assert set(asked) == shards
    assert shardread.supported()  # on every zarr-python the project declares
    assert shards == ALL_SHARDS
    assert through_zarr == []


def test_chunks_not_stored_read_as_zarrs_fill_value(tmp_path: Path) -> None:
    """A ``_FillValue`` attribute (-999) over zarr's fill_value 0: a chunk not stored
    reads as 0, as zarr-python and xarray read it (it used to read as -999, masked),
    and only -999 is masked when decoding."""
    group = zarr.open_group(tmp_path / "f.zarr", mode="w", zarr_format=3)
    a = group.create_array(
        "a",
        shape=(6,),
        chunks=(2,),
        shards=(2,),
        dtype="<i4",
        fill_value=0,
        dimension_names=("x",),
        attributes={"_FillValue": -999},
    )
    a[:2] = [5, -999]
    with pytest.warns(NCZarrWarning, match=r"'/a': chunks re-encoded .*fill_value 0, not"):
        raw = xr.open_dataset(tmp_path / "f.zarr", engine="nczarr", mask_and_scale=False)
    np.testing.assert_array_equal(raw["a"].values, [5, -999, 0, 0, 0, 0])
    with pytest.warns(NCZarrWarning, match=r"fill_value 0, not the fill value -999"):
        decoded = xr.open_dataset(tmp_path / "f.zarr", engine="nczarr")
    theirs = xr.open_dataset(tmp_path / "f.zarr", engine="zarr", consolidated=False)
    np.testing.assert_array_equal(decoded["a"].values, [5, np.nan, 0, 0, 0, 0])
    np.testing.assert_array_equal(decoded["a"].values, theirs["a"].values)


def test_producer_v3_store_reads_zarr_pythons_values_without_reencoding(recodes: list) -> None:
    """zarr-python 3's own store (``c/`` keys, sharding with a crc32c index, transpose,
    big-endian bytes + crc32c, vlen-utf8): values as zarr-python reads them."""
    path = PRODUCERS / "z3_defaults.zip"
    theirs = zarr.open_group(zarr.storage.ZipStore(path, mode="r"), mode="r")
    said: list[str] = []
    with _open(path, said, mask_and_scale=False, decode_times=False) as ds:
        for name in ("sharded", "transposed", "big", "plain", "flags", "anon"):
            np.testing.assert_array_equal(ds[name].values, theirs[name][...])
        assert list(ds["words"].values) == [str(s) for s in theirs["words"][...]]
    assert recodes == []
    _no_reencoding_announced(said)


def test_a_bare_v3_root_array_is_read_as_stored(tmp_path: Path, recodes: list) -> None:
    a = zarr.create_array(
        tmp_path / "bare.zarr", shape=(9,), chunks=(2,), shards=(4,), dtype="<u2", zarr_format=3
    )
    a[...] = np.arange(9, dtype="<u2")
    with pytest.warns(NCZarrWarning, match="bare Zarr array"):
        ds = xr.open_dataset(tmp_path / "bare.zarr", engine="nczarr")
    (name,) = ds.data_vars
    np.testing.assert_array_equal(ds[name].values, np.arange(9))
    assert recodes == []


def test_a_damaged_shard_is_an_error_naming_it(tmp_path: Path) -> None:
    _sharded_store(tmp_path / "s.zarr")
    shard = tmp_path / "s.zarr" / "sh" / "c" / "0" / "0"
    shard.write_bytes(shard.read_bytes()[:-3])  # the index loses its end
    with _open(tmp_path / "s.zarr") as ds, pytest.raises(CorruptChunkError, match="sh/c/0/0"):
        ds["sh"].load()


def test_open_zarr_reads_sharded_v3_as_stored(tmp_path: Path, recodes: list) -> None:
    """``open_zarr`` hands zarr-python's own v3 stores to zarr-python as stored."""
    expected = _sharded_store(tmp_path / "s.zarr")
    group = nczarr.open_zarr(str(tmp_path / "s.zarr"))
    sh = group["sh"]
    assert (sh.metadata.zarr_format, sh.shards) == (3, (4, 6))
    assert not isinstance(sh.store.zmap, TranslatedView)
    np.testing.assert_array_equal(sh[...], expected["sh"])
    assert recodes == []


def test_sharded_v3_in_a_zip_and_pickled(tmp_path: Path, recodes: list) -> None:
    """A zip archive (zarr-python's layout) reads the same; a lazily opened dataset
    pickles (dask's processes) and reads the same values after."""
    import pickle
    import zipfile

    expected = _sharded_store(tmp_path / "s.zarr")
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((tmp_path / "s.zarr").rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(tmp_path / "s.zarr").as_posix())
    with _open(archive, mask_and_scale=False) as ds:
        again = pickle.loads(pickle.dumps(ds))
        np.testing.assert_array_equal(again["sh"].values, expected["sh"])
        np.testing.assert_array_equal(ds["holes"].values, expected["holes"])
    assert recodes == []
