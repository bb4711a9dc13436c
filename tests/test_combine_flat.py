"""A combine holds a few sources open at a time, not all of them (issue 20: memory
flat in the number of sources): each source is opened while it is read, closed, and
opened again while its chunks are copied; every check still comes before anything is
written. The sources are written by netcdf-c (netCDF4)."""

from __future__ import annotations

import json
import os
import shutil

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.conversion.journal import JOURNAL_KEY
from nczarr.maps.file import FileMap
from nczarr.maps.open import open_map, open_plain_dir
from nczarr.maps.overlap import RealPaths
from nczarr.translate.grow import _variables, plan_growth
from nczarr.translate.growchunks import Copy, chunk_plan

from .growing import OpenMaps, daily, days, expected_temp, read_nc
from .ncoracle import nc_url


def test_a_few_sources_open_at_a_time(tmp_path, monkeypatch):
    srcs = days(tmp_path, 24)
    maps = OpenMaps(monkeypatch, FileMap, str(tmp_path / "src"))
    report = nczarr.convert(srcs, tmp_path / "out", concat_dim="time")
    assert report.chunks_reencoded == 0
    assert maps.most <= 3  # the first, the one read or copied (and the one before)
    # read, closed, opened again for the copies
    assert sum(maps.opened.values()) >= 2 * len(srcs) - 1
    assert not maps.open  # every map closed at the end
    got = read_nc(tmp_path / "out")
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 48))


def test_a_later_source_overlapping_the_target_is_refused_before_writing(tmp_path):
    srcs = days(tmp_path, 6)
    inside = srcs[4] / "out"  # the target inside the fifth source
    with pytest.raises(nczarr.InvalidModeError, match="overlap"):
        nczarr.convert(srcs, inside, concat_dim="time")
    assert not inside.exists()
    link = tmp_path / "link"
    os.symlink(srcs[3], link)  # the fourth source under another name is the target
    before = sorted(p.name for p in srcs[3].iterdir())
    with pytest.raises(nczarr.InvalidModeError, match="overlap"):
        nczarr.convert(srcs, link, concat_dim="time", overwrite=True)
    assert sorted(p.name for p in srcs[3].iterdir()) == before


def test_disagreeing_last_source_is_refused_before_writing(tmp_path):
    srcs = days(tmp_path, 8)
    shutil.rmtree(srcs[-1])
    daily(srcs[-1], 14, 2, title="other")
    with pytest.raises(nczarr.InvalidModeError, match="title"):
        nczarr.convert(srcs, tmp_path / "out", concat_dim="time")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_journal_of_many_sources_is_bounded_and_resumes(tmp_path):
    srcs = days(tmp_path, 30)
    out = tmp_path / "out"
    seen = {}

    def stop(done, total):
        if done == 1:
            seen["journal"] = json.loads((out / JOURNAL_KEY).read_bytes())
        if done == 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nczarr.convert(srcs, out, concat_dim="time", workers=1, progress=stop)
    text = seen["journal"]["source"]
    assert str(srcs[0].resolve()) in text and "+29 more, sha256 " in text
    assert len(text) < 300  # not one name per source
    report = nczarr.convert(srcs, out, concat_dim="time", resume=True)
    assert report.chunks_skipped == 20
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 60))
    # another list of sources is another combine: not resumed into this target
    nczarr.convert(srcs[:2], tmp_path / "two", concat_dim="time")
    with netCDF4.Dataset(nc_url(out)) as ds:
        assert ds.dimensions["time"].size == 60


def test_open_plain_dir_is_open_map_for_a_directory(tmp_path):
    (tmp_path / "real").mkdir()
    src = daily(tmp_path / "real" / "d", 0, 2)
    os.symlink(tmp_path / "real", tmp_path / "alias")
    for path in (src, tmp_path / "alias" / "d", str(tmp_path / "alias" / "d")):
        zmap = open_plain_dir(path, RealPaths())
        want = open_map(path)
        assert isinstance(zmap, FileMap) and zmap.url == want.url
        assert zmap.real_root == want.real_root == os.path.realpath(path)
        assert sorted(zmap.keys_below("")) == sorted(want.keys_below(""))
    (tmp_path / "file.nc").write_bytes(b"CDF\x01")
    for other in (
        tmp_path / "file.nc",  # a file: open_map decides
        tmp_path / "missing",
        f"file://{src}",  # a URL
        f"{src}#mode=nczarr,file",
        tmp_path / "x.zip",
    ):
        assert open_plain_dir(other) is None


@pytest.mark.parametrize(
    "lengths",
    [
        (4, 4, 4),
        (3, 1, 4),
        (2, 0, 2, 5),
        (1,) * 7,
        (2,) * 9,
        (4, 2, 2, 2, 2, 6),
        (2, 2, 3, 2, 2, 2, 1),
    ],
)
def test_copies_made_per_part_are_the_planned_ones(lengths):
    from nczarr.translate.model import Dataset, Dimension, Group, Variable

    def part(n):
        var = Variable(
            name="v",
            path="/v",
            type="int",
            dimensions=("/t", "/x"),
            shape=(n, 3),
            chunks=(2, 2),
        )
        dims = {"t": Dimension("t", n, True), "x": Dimension("x", 3)}
        return Dataset(root=Group(name="/", path="/", dimensions=dims, variables={"v": var}))

    parts = [part(n) for n in lengths]
    stored = [frozenset(f"v/{i}.{j}" for i in range(-(-n // 2)) for j in range(2)) for n in lengths]
    plan = plan_growth(parts, "t", stored)
    var = plan.dataset.find_variable("/v")
    planned = [
        (c.part, c.source_key, c.target_key)
        for c in chunk_plan(
            var, [_variables(p) for p in parts], "/t", plan.offsets, stored, ({}, {})
        )
        if isinstance(c, Copy)  # not an assembled chunk's coordinates
    ]
    made = [(c.part, c.source_key, c.target_key) for c in plan.copies]
    assert made == sorted(planned, key=lambda c: c[0]) and len(plan.copies) == len(made)
    assert list(plan.target_chunk_keys)[: len(made)] == [t for _, _, t in made]


def test_a_lazy_real_root_confines_links_as_an_eager_one(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x").write_bytes(b"inside")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "y").write_bytes(b"secret")
    os.symlink(root / "a", root / "in")  # a link inside the root
    os.symlink(tmp_path / "outside", root / "out")  # a link out of it
    for lazy in (False, True):
        zmap = FileMap(root, lazy_real_root=lazy)
        assert zmap["in/x"] == b"inside"
        with pytest.raises((KeyError, nczarr.NCZarrError)):
            zmap["out/y"]
        assert "out/y" not in set(zmap.keys_below(""))
        assert zmap.real_root == os.path.realpath(root)
