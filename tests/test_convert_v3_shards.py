"""Converting a sharded Zarr v3 source (issue 17).

To Zarr v3 the shards stay shards: each shard object is copied byte for byte (only its
key is renamed, ``c/0/1`` to ``0.1``), the output's ``sharding_indexed`` codec has the
source's inner codecs and index, and nothing is re-encoded. NCZarr and Zarr v2 have no
shards: there every inner chunk is still re-encoded into a chunk object.
"""

from __future__ import annotations

import gc
import json
import warnings
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr

PRODUCERS = Path(__file__).parent / "data" / "producers"


def _sharded(path: Path) -> dict[str, np.ndarray]:
    """A zarr-python 3 group: full and partly written shards (``index_location``
    "start" on one array), and a shard never written; zarr-python's values."""
    group = zarr.open_group(path, mode="w", zarr_format=3)
    full = group.create_array(
        "full", shape=(8, 12), chunks=(2, 3), shards=(4, 6), dtype="<f4", fill_value=-1.0
    )
    full[...] = np.arange(96, dtype="<f4").reshape(8, 12)
    part = group.create_array(
        "part", shape=(10, 12), chunks=(2, 3), shards=(4, 6), dtype="<i2", fill_value=7
    )
    part[4:6, 6:9] = 3  # one inner chunk of shard (1, 1); the shards around it: never
    start = zarr.create(
        store=group.store,
        path="start",
        shape=(9,),
        chunk_shape=(4,),
        codecs=[zarr.codecs.ShardingCodec(chunk_shape=(2,), index_location="start")],
        dtype="<u2",
        zarr_format=3,
    )
    start[:5] = [1, 2, 3, 4, 5]  # the last shard is never written, the second half full
    theirs = zarr.open_group(path, mode="r")
    return {name: np.asarray(theirs[name][...]) for name in ("full", "part", "start")}


def _objects(root: Path, array: str) -> dict[str, bytes]:
    """Chunk objects of ``array`` under ``root``: relative key (``/``) -> bytes."""
    base = root / array
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in base.rglob("*")
        if p.is_file() and p.name != "zarr.json"
    }


def _convert(src, dst: Path, *args, **kwargs) -> nczarr.ConvertReport:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fill value notes; re-encoding asserted below
        return nczarr.convert(src, str(dst), *args, **kwargs)


def test_to_zarr_v3_copies_every_shard_verbatim(tmp_path: Path) -> None:
    values = _sharded(tmp_path / "s.zarr")
    report = _convert(tmp_path / "s.zarr", tmp_path / "o.zarr", "zarr", zarr_format=3)
    assert report.chunks_reencoded == 0 and report.reencoded == ()
    for name in values:
        source = _objects(tmp_path / "s.zarr", name)
        copied = _objects(tmp_path / "o.zarr", name)
        # only the key changes: c/1/1 -> 1.1
        assert copied == {k.removeprefix("c/").replace("/", "."): v for k, v in source.items()}
    assert report.chunks_copied == sum(len(_objects(tmp_path / "s.zarr", n)) for n in values)
    out = zarr.open_group(tmp_path / "o.zarr", mode="r")
    for name, expected in values.items():
        np.testing.assert_array_equal(out[name][...], expected)
        assert out[name].shards == zarr.open_group(tmp_path / "s.zarr")[name].shards
    doc = json.loads((tmp_path / "o.zarr" / "start" / "zarr.json").read_text())
    (codec,) = doc["codecs"]
    src_doc = json.loads((tmp_path / "s.zarr" / "start" / "zarr.json").read_text())
    assert (
        codec["configuration"]["index_location"]
        == (src_doc["codecs"][0]["configuration"]["index_location"])
    )
    assert (
        codec["configuration"]["index_codecs"]
        == (src_doc["codecs"][0]["configuration"]["index_codecs"])
    )


def test_producer_v3_store_to_zarr_v3_keeps_its_shard(tmp_path: Path) -> None:
    """zarr-python's own store (a sharded array with a crc32c index): its shard object
    is copied as is, and zarr-python reads the copy as it reads the source."""
    path = PRODUCERS / "z3_defaults.zip"
    report = _convert(path, tmp_path / "o.zarr", "zarr", zarr_format=3)
    assert report.reencoded == () and report.chunks_reencoded == 0
    with zipfile.ZipFile(path) as zf:
        shard = zf.read("sharded/c/0/0")
    assert (tmp_path / "o.zarr" / "sharded" / "0.0").read_bytes() == shard
    theirs = zarr.open_group(zarr.storage.ZipStore(path, mode="r"), mode="r")
    ours = zarr.open_group(tmp_path / "o.zarr", mode="r")
    np.testing.assert_array_equal(ours["sharded"][...], theirs["sharded"][...])


@pytest.mark.parametrize(
    ("mode", "zarr_format"), [("zarr", 2), ("nczarr", None)], ids=["zarr2", "nczarr"]
)
def test_targets_without_shards_still_reencode_inner_chunks(
    tmp_path: Path, mode: str, zarr_format: int | None
) -> None:
    values = _sharded(tmp_path / "s.zarr")
    kwargs = {"zarr_format": zarr_format} if zarr_format else {}
    with pytest.warns(nczarr.NCZarrWarning, match="Zarr v2 has no shards"):
        report = nczarr.convert(tmp_path / "s.zarr", str(tmp_path / "o"), mode, **kwargs)
    assert {path for path, _ in report.reencoded} == {"/full", "/part", "/start"}
    assert report.chunks_reencoded > 0
    shard = (tmp_path / "s.zarr" / "full" / "c" / "0" / "0").read_bytes()
    assert (tmp_path / "o" / "full" / "0.0").read_bytes() != shard  # one inner chunk
    out = zarr.open_group(tmp_path / "o", mode="r")
    np.testing.assert_array_equal(out["full"][...], values["full"])


def _holes(path: Path) -> None:
    """xarray's form (``_FillValue`` attribute -9999) over zarr's fill_value 0: shard 0
    holds its first inner chunk only, shard 1 is never written."""
    group = zarr.open_group(path, mode="w", zarr_format=3)
    v = group.create_array(
        "v",
        shape=(8,),
        chunks=(2,),
        shards=(4,),
        dtype="<i2",
        fill_value=0,
        dimension_names=["x"],
        attributes={"_FillValue": -9999},
    )
    v[0:2] = [1, 2]


@pytest.mark.parametrize(
    ("mode", "zarr_format"), [("zarr", 2), ("nczarr", None), ("zarr", 3)], ids=str
)
def test_inner_chunks_never_written_read_as_zarrs_fill_value(
    tmp_path: Path, mode: str, zarr_format: int | None
) -> None:
    """An inner chunk a written shard does not hold, and a shard never written, read
    as zarr's fill_value 0 (zarr-python and xarray read them so; the _FillValue -9999
    is xarray's missing value, masked where stored), in the engine and in every copy.
    They used to read as -9999: missing."""
    _holes(tmp_path / "s.zarr")
    with xr.open_dataset(tmp_path / "s.zarr", engine="zarr", consolidated=False) as ds:
        theirs = ds["v"].values
    np.testing.assert_array_equal(theirs, [1, 2] + [0] * 6)
    with (
        pytest.warns(nczarr.NCZarrWarning, match="chunks the source does not store hold"),
        xr.open_dataset(tmp_path / "s.zarr", engine="nczarr") as ds,
    ):
        np.testing.assert_array_equal(ds["v"].values, theirs)
    kwargs = {"zarr_format": zarr_format} if zarr_format else {}
    if zarr_format == 3:  # shards and zarr's fill_value kept: a verbatim copy
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            report = nczarr.convert(tmp_path / "s.zarr", str(tmp_path / "o"), mode, **kwargs)
        assert report.reencoded == () and report.chunks_copied == 1
    else:
        with pytest.warns(nczarr.NCZarrWarning, match="fill_value 0, not the fill value -9999"):
            nczarr.convert(tmp_path / "s.zarr", str(tmp_path / "o"), mode, **kwargs)
    if mode == "nczarr":
        with netCDF4.Dataset(f"file://{tmp_path / 'o'}#mode=nczarr,file") as nc:
            got = nc["v"][:]
        assert np.ma.getmaskarray(got).tolist() == [False] * 8
        assert got.data.tolist() == [1, 2] + [0] * 6
        return
    np.testing.assert_array_equal(
        zarr.open_array(tmp_path / "o" / "v", mode="r")[...], [1, 2] + [0] * 6
    )
    with xr.open_dataset(tmp_path / "o", engine="zarr", consolidated=False) as ds:
        np.testing.assert_array_equal(ds["v"].values, theirs)


def test_the_shard_readers_event_loop_is_closed(tmp_path: Path) -> None:
    """Re-encoding a sharded array reads it with zarr-python on an event loop of its
    own; the loop is closed when its reader is done (it was only stopped, and each
    convert left a ResourceWarning "unclosed event loop" when collected)."""
    _holes(tmp_path / "s.zarr")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        nczarr.convert(tmp_path / "s.zarr", str(tmp_path / "o"), "nczarr")
        gc.collect()
    assert [str(w.message) for w in said if issubclass(w.category, ResourceWarning)] == []


def test_a_combine_into_zarr_v3_says_why_shards_become_chunks(tmp_path: Path) -> None:
    """A combine writes one inner chunk at a time, whatever the target: into Zarr v3
    the warning says that, not "Zarr v2 has no shards" (as it did)."""
    parts = []
    for i in range(2):
        group = zarr.open_group(tmp_path / f"s{i}.zarr", mode="w", zarr_format=3)
        t = group.create_array(
            "t", shape=(4,), chunks=(4,), dtype="<i8", fill_value=0, dimension_names=["t"]
        )
        t[...] = np.arange(4 * i, 4 * i + 4)
        v = group.create_array(
            "v", shape=(4, 3), chunks=(2, 3), shards=(4, 3), dtype="<f4", fill_value=0.0
        )
        v.attrs["_ARRAY_DIMENSIONS"] = ["t", "x"]
        v[...] = np.arange(12, dtype="f4").reshape(4, 3) + 100 * i
        parts.append(v[...])
    sources = [tmp_path / "s0.zarr", tmp_path / "s1.zarr"]
    with pytest.warns(nczarr.NCZarrWarning) as said:
        nczarr.convert(sources, tmp_path / "o.zarr", "zarr", zarr_format=3, concat_dim="t")
    messages = [str(w.message) for w in said]
    assert any("a combine or an append writes each inner chunk as a chunk" in m for m in messages)
    assert not any("Zarr v2 has no shards" in m for m in messages), messages
    out = zarr.open_group(tmp_path / "o.zarr", mode="r")
    np.testing.assert_array_equal(out["v"][...], np.concatenate(parts))
