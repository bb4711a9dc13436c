"""The convert plan lists chunk keys when it is iterated, never holds them all
(issue 18: memory flat in the number of chunks), and splits them into verbatim and
re-encoded ones as they pass, as the view's own ``partition`` does."""

from __future__ import annotations

import contextlib
import pickle
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.conversion.plan import ChunkKeys, build_plan, split_chunks
from nczarr.errors import NCZarrWarning
from nczarr.ncfile.source import NetCDFFileMap
from nczarr.readthrough import TranslatedView
from nczarr.translate.target import Target

from .test_convert_plan import FakeView, _dataset


class CountingView(FakeView):
    """A view whose chunk listing counts how often it is started."""

    listed = 0

    def chunk_keys(self):
        type(self).listed += 1
        return iter(self.chunks)


def test_build_plan_lists_no_chunk_key_until_iterated_and_relists_each_time():
    CountingView.listed = 0
    view = CountingView(_dataset(), {".zgroup": b"R"}, ["x/0", "x/1", "g/v/0"])
    plan = build_plan(view)
    assert CountingView.listed == 0  # the old plan held a tuple made here
    for _ in range(2):  # (list() would ask len() first: a walk of its own)
        assert [key for key in plan.chunk_keys] == ["x/0", "x/1", "g/v/0"]
    assert CountingView.listed == 2
    assert len(plan.chunk_keys) == 3 and CountingView.listed == 2  # counted by a walk
    assert "g/v/0" in plan.chunk_keys and "g/v/9" not in plan.chunk_keys
    assert plan.keys == ("x/0", "x/1", "g/v/0", ".zgroup")


def test_chunk_keys_len_bool_where_equality_and_pickle():
    keys = ChunkKeys(("a/0", "a/1", "b/0").__iter__)
    assert len(keys) == 3 and keys
    assert not ChunkKeys(().__iter__) and len(ChunkKeys(().__iter__)) == 0
    assert keys == ("a/0", "a/1", "b/0") and keys == ["a/0", "a/1", "b/0"]
    assert keys != ("a/0",) and keys == ChunkKeys(["a/0", "a/1", "b/0"].__iter__)
    b = keys.where(lambda k: k.startswith("b/"))
    a = keys.where(lambda k: k.startswith("b/"), False)
    assert list(b) == ["b/0"] and list(a) == ["a/0", "a/1"] and len(a) == 2
    listed = ChunkKeys(["x/0", "x/1"].__iter__)
    assert pickle.loads(pickle.dumps(listed)) == listed


def _mixed(path: Path) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", 6)
        ds.createDimension("n", 5)
        zl = ds.createVariable("zl", "f4", ("t",), compression="zlib", chunksizes=(2,))
        zl[:] = np.arange(6, dtype="f4")
        s = ds.createVariable("s", str, ("n",), chunksizes=(2,))
        for i, word in enumerate(["a", "bb", "", "dddd", "é"]):
            s[i] = word  # variable-length strings: re-encoded
    return path


def test_split_chunks_is_the_views_partition_of_a_netcdf_file(tmp_path):
    with NetCDFFileMap(str(_mixed(tmp_path / "m.nc"))) as src:
        view = TranslatedView.from_source(src, Target("nczarr"))
        plan = build_plan(view)
        source, verbatim, reencoded = split_chunks(view, plan.chunk_keys)
        old = view.partition(list(plan.chunk_keys))
        assert (source, list(verbatim), list(reencoded)) == old
        assert list(verbatim) == ["zl/0", "zl/1", "zl/2"]
        assert list(reencoded) == ["s/0", "s/1", "s/2"]
        assert len(verbatim) == 3 and len(reencoded) == 3


def test_an_interrupted_convert_of_a_netcdf_file_resumes(tmp_path):
    """The plan is walked by the journal's digest, the copy and the resume's skip
    test: each walk lists the same keys, so a resume skips what the first run wrote."""
    src = str(_mixed(tmp_path / "m.nc"))
    out = str(tmp_path / "out")

    def stop(done, total):
        assert total == 6
        if done == 4:
            raise RuntimeError("killed")

    strings = pytest.warns(NCZarrWarning, match="re-encoded array '/s'")
    with strings, contextlib.suppress(RuntimeError):
        nczarr.convert(src, out, "zarr", workers=1, progress=stop)
    assert not (tmp_path / "out" / ".zgroup").exists()
    with pytest.warns(NCZarrWarning, match="re-encoded array '/s'"):
        report = nczarr.convert(src, out, "zarr", resume=True)
    assert report.chunks_skipped == 4
    assert report.chunks_copied + report.chunks_reencoded == 2
    with netCDF4.Dataset(tmp_path / "m.nc") as ds:
        import zarr

        group = zarr.open_group(out, mode="r")
        np.testing.assert_array_equal(group["zl"][:], ds["zl"][:])
        assert list(group["s"][:]) == list(ds["s"][:])
