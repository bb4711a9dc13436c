"""An append of many sources holds a few of them open, not all.

04480dd opened every source of an append at once and held them to the end (an append
of 365 daily stores: 365 open maps, their trees, files, clients). Now each source is
opened, read and closed in turn, and opened again for its copies, as a combine's are.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nczarr
from nczarr.maps.file import FileMap

from .growing import OpenMaps, daily, expected_temp, read_nc

SOURCES = 16


def _store_and_sources(tmp_path: Path) -> tuple[Path, list[Path]]:
    store = daily(tmp_path / "store", 0, 2)
    (tmp_path / "src").mkdir()
    srcs = [daily(tmp_path / "src" / f"d{i:02d}", 2 + 2 * i, 2) for i in range(SOURCES)]
    return store, srcs


def test_an_append_of_many_sources_holds_a_few_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, srcs = _store_and_sources(tmp_path)
    maps = OpenMaps(monkeypatch, FileMap, str(tmp_path / "src"))
    report = nczarr.convert(srcs, store, append_dim="time")
    assert report.chunks_reencoded == 0
    # the first, the few readers kept (a comparison, the copies) and the one opened;
    # 04480dd: every source at once
    assert maps.most <= 6 < SOURCES
    assert not maps.open  # every map closed at the end
    np.testing.assert_array_equal(read_nc(store)["temp"], expected_temp(0, 2 + 2 * SOURCES))


def test_an_append_dry_run_of_many_sources_writes_nothing_and_plans_the_same(
    tmp_path: Path,
) -> None:
    store, srcs = _store_and_sources(tmp_path)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    planned = nczarr.convert(srcs, store, append_dim="time", dry_run=True)
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    done = nczarr.convert(srcs, store, append_dim="time")
    assert (planned.chunks_copied, planned.chunks_reencoded) == (
        done.chunks_copied,
        done.chunks_reencoded,
    )
