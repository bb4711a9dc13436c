"""migrate(): in-place upgrade of legacy NCZarr stores, and NCZarr <-> Zarr rewrites.

The oracle is libnetcdf 4.10 (netCDF4): after ``migrate`` it opens the store
read-write and a write sticks. Chunk objects are never touched, a second run changes
nothing, and the number of storage operations does not depend on the chunk count.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import ClassVar

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.conversion.migrate import RUNNING
from nczarr.errors import InvalidModeError
from nczarr.maps.file import TEMP_PREFIX, FileMap

from .ncoracle import extract_fixture, file_tree, load_attributes, open_append

DATA = Path(__file__).parent / "data"
LEGACY = {
    "v1": "ref_oldformat_v1.zip",
    "v2uc-4.9.0": "v2uc_ncgen490.zip",
    "oldkeys-4.9.2": "ref_oldkeys.file.zip",
    "v2attrs-4.9.3": "ref_oldformat_v2attrs.zip",
}


def _is_metadata(key: str) -> bool:
    name = key.rsplit("/", 1)[-1]
    return name.startswith(".z") or name.startswith(".ncz")


def _chunks(tree: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in tree.items() if not _is_metadata(k)}


def _first_numeric(ds) -> tuple[object, str]:
    groups = [ds]
    while groups:
        g = groups.pop(0)
        for name, v in g.variables.items():
            if v.dtype != str and v.dtype.kind in "iuf" and v.size > 0:
                return g, name
        groups.extend(g.groups.values())
    raise AssertionError("no numeric variable")


def _netcdf_writes(path: Path) -> None:
    """netCDF4 opens ``path`` read-write, a write sticks, and a reopen sees it.

    netcdf-c rewrites every metadata object on close, in place without truncating
    (``tests/test_netcdf_rewrite.py``): this also checks that none of ours is left
    with a stale tail.
    """
    with open_append(path) as ds:
        # netcdf-c 4.10 rewrites every group's .zattrs on close, and drops the
        # attributes it has not loaded yet (its own 4.9.3 stores lose them too):
        # load them all first.
        load_attributes(ds)
        group, name = _first_numeric(ds)
        var = group.variables[name]
        index = (0,) * var.ndim
        var[index] = 42
        ds.setncattr("migrated", "yes")
        path_of_var = var.group().path
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "r") as ds:
        grp = ds if path_of_var == "/" else ds[path_of_var]
        assert np.asarray(grp.variables[name][index]).item() == 42
        assert ds.getncattr("migrated") == "yes"


pytestmark = pytest.mark.usefixtures("scratch_cwd")


@pytest.mark.parametrize("kind", list(LEGACY))
def test_migrate_legacy_to_current_opens_read_write(kind, tmp_path):
    store = extract_fixture(LEGACY[kind], tmp_path)
    before = file_tree(store)
    if kind in ("v2uc-4.9.0", "oldkeys-4.9.2"):
        # netcdf-c 4.10 refuses the first (NC_ENCZARR) and opens the second read-only.
        # (It opens V1 read-write and corrupts it; 4.9.3's layout is its own.)
        with pytest.raises((OSError, RuntimeError)):
            _netcdf_writes(store)
        assert file_tree(store) == before
    model_before = nczarr.read(str(store))
    report = nczarr.migrate(str(store))
    after = file_tree(store)
    assert _chunks(after) == _chunks(before)
    assert report.source_layout == model_before.layout
    assert report.target_format == "nczarr"
    assert nczarr.detect(str(store)).layout == "nczarr-v2"
    assert not any(k.rsplit("/", 1)[-1].startswith(".ncz") for k in after)
    model_after = nczarr.read(str(store))
    assert [v.path for v in model_after.root.all_variables()] == [
        v.path for v in model_before.root.all_variables()
    ]
    assert model_after.root.dimensions == model_before.root.dimensions
    # a second run changes nothing
    again = nczarr.migrate(str(store))
    assert again.metadata_written == () and again.deleted_keys == ()
    assert file_tree(store) == after
    _netcdf_writes(store)


def test_v1_migration_deletes_every_separate_object(tmp_path):
    store = extract_fixture("ref_oldformat_v1.zip", tmp_path)
    report = nczarr.migrate(str(store))
    assert sorted(report.deleted_keys) == sorted(
        [
            ".nczarr",
            ".nczattrs",
            ".nczgroup",
            "g1/.nczattrs",
            "g1/.nczgroup",
            "g1/pos/.nczarray",
            "g1/pos/.nczattrs",
            "lat/.nczarray",
            "lat/.nczattrs",
        ]
    )
    assert report.metadata_written[-1] in (".zgroup", ".zattrs")
    assert all("/" in k for k in report.metadata_written[:-2])


def test_migrate_to_zarr_and_back(tmp_path):
    import xarray as xr

    store = extract_fixture("current_netcdf4101.zip", tmp_path)
    chunks = _chunks(file_tree(store))
    nczarr.migrate(str(store), to="zarr")
    tree = file_tree(store)
    assert _chunks(tree) == chunks
    assert not any(b"_nczarr" in v for k, v in tree.items() if _is_metadata(k))
    assert nczarr.detect(str(store)).layout == "zarr"
    with xr.open_zarr(str(store), consolidated=False, mask_and_scale=False) as ds:
        assert ds["v"].dims[-1] in {d for d in ds.dims}
    nczarr.migrate(str(store), to="nczarr")
    assert nczarr.detect(str(store)).layout == "nczarr-v2"
    _netcdf_writes(store)


def test_current_store_is_left_byte_for_byte(tmp_path):
    store = extract_fixture("current_netcdf4101.zip", tmp_path)
    before = file_tree(store)
    report = nczarr.migrate(str(store))
    assert report.metadata_written == () and report.deleted_keys == ()
    assert report.source_layout == "nczarr-v2"
    assert file_tree(store) == before
    _netcdf_writes(store)


class _Stop(Exception):
    pass


def _stop_after(n: int):
    def progress(done: int, total: int) -> None:
        if done == n:
            raise _Stop

    return progress


@pytest.mark.parametrize("fixture", ["ref_oldformat_v1.zip", "current_netcdf4101.zip"])
def test_rerun_removes_the_temporaries_of_a_killed_write(fixture, tmp_path):
    """A migrate killed in an atomic write leaves its temporary file beside the object
    (test_kill's random kill found one in ``g1/``), and RUNNING at the root, written
    before its first write: the rerun, whether it still has metadata to write or finds
    the store migrated, removes both and nothing else, wherever the temporary is."""
    reference = extract_fixture(fixture, tmp_path / "reference")
    nczarr.migrate(str(reference), to="zarr")
    nczarr.migrate(str(reference), to="nczarr")
    expected = file_tree(reference)
    store = extract_fixture(fixture, tmp_path)
    nczarr.migrate(str(store), to="zarr")
    with pytest.raises(_Stop):  # stopped after its first write: RUNNING stays
        nczarr.migrate(str(store), to="nczarr", progress=_stop_after(1))
    assert (store / RUNNING).exists()
    array = next(p for p in store.rglob(".zarray")).parent
    strays = [array / f"{TEMP_PREFIX}72f2bdc7f6a7a092", store / f"{TEMP_PREFIX}0a1b"]
    for stray in strays:
        stray.write_bytes(b'{"zarr_format": 2')  # half a metadata object
    nczarr.migrate(str(store), to="nczarr")
    assert not [s for s in strays if s.exists()] and not (store / RUNNING).exists()
    assert file_tree(store) == expected


def test_rerun_removes_the_temporary_of_running_itself(tmp_path):
    """Killed in RUNNING's own write (nothing else written, no RUNNING): the rerun
    lists the root, where that temporary is."""
    store = extract_fixture("current_netcdf4101.zip", tmp_path)
    expected = file_tree(store)
    stray = store / f"{TEMP_PREFIX}5e5e"
    stray.write_bytes(b"nczarr mig")
    nczarr.migrate(str(store))
    assert not stray.exists() and file_tree(store) == expected


class _Cleanup(FileMap):
    """Records where each migrate looked for temporaries (None: the whole tree)."""

    asked: ClassVar[list[list[str] | None]] = []

    def remove_temporaries(self, directories=None):
        type(self).asked.append(None if directories is None else list(directories))
        return super().remove_temporaries(directories)


def test_cleanup_walks_the_chunks_only_after_a_killed_run(tmp_path):
    """A migrate that was not interrupted lists the root for temporaries, not every
    chunk directory; one that finds RUNNING walks the tree (it walked it every time:
    the cost of every migrate grew with the chunks, 28x from 1,000 to 100,000)."""
    path = _with_chunks(tmp_path, 40)
    _Cleanup.asked = []
    nczarr.migrate(_Cleanup(path, mode="r+"), to="zarr")
    nczarr.migrate(_Cleanup(path, mode="r+"), to="zarr")  # nothing to do
    assert _Cleanup.asked == [[""], [""]]
    with pytest.raises(_Stop):
        nczarr.migrate(_Cleanup(path, mode="r+"), to="nczarr", progress=_stop_after(1))
    stray = path / "v" / f"{TEMP_PREFIX}77"
    stray.write_bytes(b"{")
    _Cleanup.asked = []
    nczarr.migrate(_Cleanup(path, mode="r+"), to="nczarr")
    assert _Cleanup.asked == [None] and not stray.exists()
    assert not (path / RUNNING).exists()


def test_remove_temporaries_in_directories_stays_in_them(tmp_path):
    """``remove_temporaries(directories)``: directly in those directories only, never
    below them, never through a link out of the tree."""
    root = tmp_path / "store"
    (root / "v" / "0").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside)
    names = ["v", "v/0", "out"]
    for name in ["", *names]:
        (root / name / f"{TEMP_PREFIX}1").write_bytes(b"")
    (root / "v" / "keep").write_bytes(b"data")
    with FileMap(root, mode="r+") as zmap:
        assert zmap.remove_temporaries(["", "v", "missing", "out"]) == 2
    assert not (root / f"{TEMP_PREFIX}1").exists() and not (root / "v" / f"{TEMP_PREFIX}1").exists()
    assert (root / "v" / "0" / f"{TEMP_PREFIX}1").exists()  # below: not asked
    assert (outside / f"{TEMP_PREFIX}1").exists() and (root / "v" / "keep").exists()


def test_dry_run_changes_nothing_and_predicts_the_run(tmp_path):
    store = extract_fixture("v2uc_ncgen490.zip", tmp_path)
    before = file_tree(store)
    plan = nczarr.migrate(str(store), dry_run=True)
    assert file_tree(store) == before
    assert plan.dry_run and plan.planned_keys
    real = nczarr.migrate(str(store))
    assert plan.planned_keys == real.metadata_written
    assert plan.deleted_keys == real.deleted_keys
    assert "dry run" in plan.summary()


def test_bad_target_format(tmp_path):
    store = extract_fixture("v2uc_ncgen490.zip", tmp_path)
    with pytest.raises(InvalidModeError, match="invalid target format 'hdf5'"):
        nczarr.migrate(str(store), to="hdf5")


def test_migrate_zip_in_place(tmp_path):
    archive = tmp_path / "legacy.zip"
    shutil.copy(DATA / "v2uc_ncgen490.zip", archive)
    nczarr.migrate(str(archive))
    assert nczarr.detect(str(archive)).layout == "nczarr-v2"
    out = tmp_path / "out.file"
    nczarr.convert(str(archive), str(out))
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file", "r") as ds:
        assert sorted(ds.variables) == ["code", "count", "id", "pressure"]
        assert ds["pressure"].units == "hPa"
    again = nczarr.migrate(str(archive))
    assert again.metadata_written == () and again.deleted_keys == ()


def test_migrate_s3_in_place(tmp_path, s3_endpoint, s3_bucket, s3_client):
    store = extract_fixture("ref_oldformat_v1.zip", tmp_path)
    for key, value in file_tree(store).items():
        s3_client.put_object(Bucket=s3_bucket, Key=f"ds/{key}", Body=value)
    url = f"{s3_endpoint}/{s3_bucket}/ds#mode=nczarr,s3"
    report = nczarr.migrate(url)
    assert ".nczarr" in report.deleted_keys
    keys = {o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]}
    assert "ds/.nczarr" not in keys and "ds/lat/.zarray" in keys
    assert nczarr.detect(url).layout == "nczarr-v2"


def _with_chunks(tmp_path: Path, n: int) -> Path:
    """The same metadata (a 1-D array of ``n`` one-element chunks), ``n`` chunk files."""
    path = tmp_path / f"c{n}.file"
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("x", n)
        v = ds.createVariable("v", "i4", ("x",), chunksizes=(1,))
        v[:] = np.arange(n, dtype="i4")
    return path


class _Counting(FileMap):
    calls = 0

    def _load(self, key):
        type(self).calls += 1
        return super()._load(key)

    def _exists(self, key):
        type(self).calls += 1
        return super()._exists(key)

    def _store(self, key, value):
        type(self).calls += 1
        return super()._store(key, value)

    def _remove(self, key):
        type(self).calls += 1
        return super()._remove(key)


def test_migrate_cost_does_not_depend_on_chunk_count(tmp_path):
    counts = []
    for n in (4, 400):
        path = _with_chunks(tmp_path, n)
        nczarr.migrate(str(path), to="zarr")
        _Counting.calls = 0
        nczarr.migrate(_Counting(path, mode="r+"), to="nczarr")
        counts.append(_Counting.calls)
    assert counts[0] == counts[1] > 0


class _Reads(FileMap):
    """Counts reads of each key (through every read path of a map)."""

    reads: ClassVar[dict[str, int]] = {}

    def _load(self, key):
        type(self).reads[key] = type(self).reads.get(key, 0) + 1
        return super()._load(key)


def test_migrate_to_zarr_reads_each_metadata_object_once(tmp_path):
    """The store is crawled once: the translation and the "already current?" check
    share what was read (it was crawled twice)."""
    path = _with_chunks(tmp_path, 4)
    nczarr.migrate(str(path), to="zarr")  # now pure Zarr: migrate(to="zarr") checks it
    _Reads.reads = {}
    report = nczarr.migrate(_Reads(path, mode="r+"), to="zarr")
    assert report.source_layout == "zarr"
    assert _Reads.reads and set(_Reads.reads.values()) == {1}, _Reads.reads
