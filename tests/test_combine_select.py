"""``dry_run`` and ``include``/``exclude`` with ``concat_dim``/``append_dim``.

A dry run of a combine or an append reports exactly what the run writes (keys, bytes,
chunks copied and re-encoded) and writes nothing; ``include``/``exclude`` select the
same variables in every source (netcdf-c reads the result back).
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.cli import main

from .growing import daily, expected_temp, files, read_nc
from .ncoracle import nc_url


def _with_extra(path: Path, t0: int, n: int) -> Path:
    """A :func:`daily` store with ``extra(time)`` too (netcdf-c writes it)."""
    return daily(path, t0, n, extra=True)


def _written(path: Path) -> dict[str, bytes]:
    return {k: v[2] for k, v in files(path).items()}


def test_a_dry_run_combine_reports_what_the_run_writes_and_writes_nothing(tmp_path):
    srcs = [daily(tmp_path / "a", 0, 3), daily(tmp_path / "b", 3, 1), daily(tmp_path / "c", 4, 4)]
    out = tmp_path / "out"
    dry = nczarr.convert(srcs, out, concat_dim="time", dry_run=True)
    assert not out.exists()
    report = nczarr.convert(srcs, out, concat_dim="time")
    assert dry.dry_run and not report.dry_run
    assert (dry.chunks_copied, dry.chunks_reencoded) == (10, 3)
    assert (dry.chunks_copied, dry.chunks_reencoded) == (
        report.chunks_copied,
        report.chunks_reencoded,
    )
    written = _written(out)
    assert set(dry.planned_keys) == set(written)
    assert dry.planned_bytes == sum(len(v) for v in written.values())
    assert "dry run:" in dry.summary()


def test_a_dry_run_append_reports_what_the_append_writes_and_leaves_the_store(tmp_path):
    dst = daily(tmp_path / "dst", 0, 3)
    twin = daily(tmp_path / "twin", 0, 3)
    src = daily(tmp_path / "src", 3, 4)
    before = files(dst)
    dry = nczarr.convert(src, dst, append_dim="time", dry_run=True)
    assert files(dst) == before  # same files, same bytes, not even touched
    old = _written(twin)
    report = nczarr.convert(src, twin, append_dim="time")
    changed = {k: v for k, v in _written(twin).items() if old.get(k) != v}
    assert set(dry.planned_keys) == set(changed)
    assert dry.planned_bytes == sum(len(v) for v in changed.values())
    assert (dry.chunks_copied, dry.chunks_reencoded) == (
        report.chunks_copied,
        report.chunks_reencoded,
    )
    # the source starts at day 3, inside a chunk of 2: every chunk from day 2 on is
    # assembled (time: 3, temp: 3 x 2)
    assert dry.chunks_reencoded == 9


def test_exclude_drops_a_variable_that_differs_between_sources(tmp_path):
    a = daily(tmp_path / "a", 0, 2, lat=(1.0, 2.0, 3.0))
    b = daily(tmp_path / "b", 2, 2, lat=(1.0, 2.0, 4.0))
    with pytest.raises(nczarr.InvalidModeError, match=r"'/lat'.*values differ"):
        nczarr.convert([a, b], tmp_path / "refused", concat_dim="time")
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning, match="left out by include/exclude: /lat"):
        nczarr.convert([a, b], out, concat_dim="time", exclude=["lat"])
    with netCDF4.Dataset(nc_url(out)) as ds:
        assert set(ds.variables) == {"time", "temp"}
        assert ds.dimensions["lat"].size == 3
        np.testing.assert_array_equal(ds["temp"][:], expected_temp(0, 4))


def test_include_selects_the_same_variables_in_every_source(tmp_path):
    srcs = [_with_extra(tmp_path / f"d{i}", 2 * i, 2) for i in range(3)]
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning, match="left out"):
        report = nczarr.convert(srcs, out, concat_dim="time", include=["extra", "time"])
    assert report.arrays == 2
    with netCDF4.Dataset(nc_url(out)) as ds:
        assert set(ds.variables) == {"time", "extra"}
        np.testing.assert_array_equal(ds["extra"][:], np.arange(6) * 10)
    with pytest.raises(nczarr.InvalidModeError, match="'nope' matches no variable"):
        nczarr.convert(srcs, tmp_path / "typo", concat_dim="time", include=["nope"])
    assert not (tmp_path / "typo").exists()


def test_append_excludes_a_source_variable_the_store_does_not_have(tmp_path):
    dst = daily(tmp_path / "dst", 0, 3)
    src = _with_extra(tmp_path / "src", 3, 4)
    before = files(dst)
    with pytest.raises(nczarr.InvalidModeError, match="variables differ: /extra"):
        nczarr.convert(src, dst, append_dim="time")
    assert files(dst) == before
    with pytest.warns(nczarr.NCZarrWarning, match="left out by include/exclude: /extra"):
        nczarr.convert(src, dst, append_dim="time", exclude=["extra"])
    got = read_nc(dst)
    assert got["size"] == 7
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 7))
    # a selection that drops a variable of the store is refused: the store keeps them all
    more = daily(tmp_path / "more", 7, 1)
    before = files(dst)
    with pytest.raises(nczarr.InvalidModeError, match="variables differ: /lat"):
        nczarr.convert(more, dst, append_dim="time", exclude=["lat"])
    assert files(dst) == before


def test_cli_dry_run_with_concat_dim(tmp_path, capsys):
    srcs = [daily(tmp_path / f"d{i}", 2 * i, 2) for i in range(2)]
    out = tmp_path / "out"
    code = main(["convert", *map(str, srcs), str(out), "--concat-dim", "time", "--dry-run"])
    assert code == 0, capsys.readouterr().err
    assert "dry run:" in capsys.readouterr().out
    assert not out.exists()
