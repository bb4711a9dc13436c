"""Combines and appends between directories copy their verbatim chunks in batches
(``ZMap.copy_pairs``, one per source): each directory opened and verified once, at its
first pair, every chunk ``cp``'s system calls. The checked per-key path
(``FileMap._copy``) is then taken only to create a target directory that does not exist
yet, never per chunk; the result is still the concatenation."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.maps.file import FileMap

from .growing import daily, expected_temp, read_nc


@pytest.fixture
def checked(monkeypatch):
    """The target keys copied through the checked per-key path."""
    keys: list[str] = []
    real = FileMap._copy

    def spy(self, src, src_key, dst_key, atomic):
        keys.append(dst_key)
        return real(self, src, src_key, dst_key, atomic)

    monkeypatch.setattr(FileMap, "_copy", spy)
    return keys


def test_a_combine_copies_through_copy_pairs(tmp_path, checked):
    srcs = [daily(tmp_path / f"d{i}", 2 * i, 2) for i in range(8)]
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    # temp(time, lat, lon) chunks (2, 3, 2): 2 per source, time: 1, lat: 1 in all
    assert (report.chunks_copied, report.chunks_reencoded) == (8 * 3 + 1, 0)
    # only the first chunk of each new target directory (lat, temp, time) takes it
    assert len(checked) <= 3, checked
    np.testing.assert_array_equal(read_nc(out)["temp"], expected_temp(0, 16))
    parts = [xr.open_dataset(s, engine="nczarr").load() for s in srcs]
    xr.testing.assert_identical(
        xr.open_dataset(out, engine="nczarr").load(), xr.concat(parts, "time")
    )


def test_an_append_copies_through_copy_pairs(tmp_path, checked):
    dst = daily(tmp_path / "dst", 0, 4)
    srcs = [daily(tmp_path / f"s{i}", 4 + 2 * i, 2) for i in range(3)]
    report = nczarr.convert(srcs, dst, append_dim="time")
    assert (report.chunks_copied, report.chunks_reencoded) == (3 * 3, 0)
    assert checked == []  # the target's directories exist: no chunk takes it
    got = read_nc(dst)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 10))
    np.testing.assert_array_equal(got["time"], np.arange(10))
