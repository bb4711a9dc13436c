"""``include``/``exclude`` of a combine or an append are checked against all its sources
together, not source by source.

A variable (or an odd array nczarr skips) that only some sources hold can be excluded:
the sources without it are fine. A pattern that matches in no source at all (a typo)
is still refused, naming it, before anything is written. The result is read back by
netcdf-c (netCDF4 through xarray) and compared with ``xr.concat`` of the sources
without what was excluded.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.cli import main

from .growing import daily, expected_temp, files
from .ncoracle import nc_url

#: The message of a pattern that matches in no source.
NOWHERE = "variable pattern 'nope' matches no variable or group in any source"


def _open(path: Path, kind: str = "nczarr") -> xr.Dataset:
    """``path`` as netcdf-c reads it (an NCZarr store, or a netCDF-4 file)."""
    url = nc_url(path) if kind == "nczarr" else str(path)
    with xr.open_dataset(url, engine="netcdf4") as ds:
        return ds.load()


def _expected(paths: list[Path], kind: str = "nczarr", drop: tuple[str, ...] = ()) -> xr.Dataset:
    """``xr.concat`` of the sources along ``time``, without the variables ``drop``."""
    parts = [_open(p, kind).drop_vars(list(drop), errors="ignore") for p in paths]
    return xr.concat(parts, dim="time")


def _sources(tmp_path: Path, kind: str = "nczarr") -> list[Path]:
    """Three sources of two days each; the first and the last hold ``extra(time)``,
    the middle one does not."""
    suffix = ".nc" if kind == "nc" else ""
    return [daily(tmp_path / f"d{i}{suffix}", 2 * i, 2, kind=kind, extra=i != 1) for i in range(3)]


def _odd(array: Path) -> None:
    """Make the array at ``array`` one nczarr skips (an unknown dtype in its ``.zarray``)."""
    doc = json.loads((array / ".zarray").read_text())
    doc["dtype"] = "<x9"
    (array / ".zarray").write_text(json.dumps(doc))


@pytest.mark.parametrize("kind", ["nczarr", "nc"])
def test_a_variable_only_some_sources_hold_is_excluded(tmp_path, kind):
    srcs = _sources(tmp_path, kind)
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning, match="left out by include/exclude: /extra"):
        report = nczarr.convert(srcs, out, concat_dim="time", exclude=["extra"])
    assert report.arrays == 3
    got = _open(out)
    assert set(got.variables) == {"time", "lat", "temp"}
    np.testing.assert_array_equal(got["temp"].values, expected_temp(0, 6))
    xr.testing.assert_equal(got, _expected(srcs, kind, drop=("extra",)))


def test_an_odd_array_in_one_source_is_refused_unless_excluded(tmp_path):
    srcs = _sources(tmp_path)[:2]  # extra in the first only
    expected = _expected(srcs, drop=("extra",))  # netcdf-c refuses the odd store
    _odd(srcs[0] / "extra")
    with pytest.raises(nczarr.UnsupportedTypeError, match=r"cannot combine: /extra cannot be"):
        nczarr.convert(srcs, tmp_path / "refused", concat_dim="time")
    assert not (tmp_path / "refused").exists()
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning, match="skipped array '/extra'"):
        report = nczarr.convert(srcs, out, concat_dim="time", exclude=["extra"])
    assert report.arrays == 3
    got = _open(out)
    assert set(got.variables) == {"time", "lat", "temp"}
    xr.testing.assert_equal(got, expected)


def test_a_pattern_no_source_matches_is_refused_and_nothing_is_written(tmp_path):
    # the first source lacks extra: a check source by source named 'extra' there
    srcs = [*_sources(tmp_path)[1:], _sources(tmp_path)[0]]
    out = tmp_path / "out"
    with pytest.raises(nczarr.InvalidModeError, match=NOWHERE) as refused:
        nczarr.convert(srcs, out, concat_dim="time", exclude=["extra", "nope"])
    assert "'extra'" not in str(refused.value)
    assert not out.exists()
    with pytest.raises(nczarr.InvalidModeError, match=NOWHERE):
        nczarr.convert(srcs, out, concat_dim="time", exclude=["extra", "nope"], dry_run=True)
    assert not out.exists()
    # an existing target given with overwrite is left as it is (not cleared)
    with pytest.warns(nczarr.NCZarrWarning, match="left out"):
        nczarr.convert(srcs, out, concat_dim="time", exclude=["extra"])
    before = files(out)
    with pytest.raises(nczarr.InvalidModeError, match=NOWHERE):
        nczarr.convert(srcs, out, concat_dim="time", exclude=["nope", "extra"], overwrite=True)
    assert files(out) == before


def test_include_patterns_are_checked_against_all_sources(tmp_path):
    srcs = _sources(tmp_path)
    # 'extra' is matched (by two sources): the plan refuses the sources that lack it
    with pytest.raises(nczarr.InvalidModeError, match="variables differ: /extra"):
        nczarr.convert(srcs, tmp_path / "differ", concat_dim="time", include=["temp", "extra"])
    assert not (tmp_path / "differ").exists()
    with pytest.raises(nczarr.InvalidModeError, match=NOWHERE):
        nczarr.convert(srcs, tmp_path / "typo", concat_dim="time", include=["extra", "nope"])
    assert not (tmp_path / "typo").exists()
    out = tmp_path / "out"
    with pytest.warns(nczarr.NCZarrWarning, match="left out"):
        report = nczarr.convert(
            srcs, out, concat_dim="time", include=["time", "temp"], exclude=["extra"]
        )
    assert report.arrays == 2
    got = _open(out)
    assert set(got.variables) == {"time", "temp"}
    xr.testing.assert_equal(got, _expected(srcs, drop=("extra", "lat")))


def test_cli_exclude_of_a_variable_only_some_sources_hold(tmp_path, capsys):
    srcs = [str(p) for p in _sources(tmp_path)]
    out = tmp_path / "out"
    code = main(["convert", *srcs, str(out), "--concat-dim", "time", "--exclude", "extra"])
    assert code == 0, capsys.readouterr().err
    assert "left out by include/exclude: /extra" in capsys.readouterr().err
    got = _open(out)
    assert set(got.variables) == {"time", "lat", "temp"}
    xr.testing.assert_equal(got, _expected([Path(s) for s in srcs], drop=("extra",)))
    # a typo is refused, named, and nothing written (the first source lacks extra)
    typo = ["convert", srcs[1], srcs[0], str(tmp_path / "typo"), "--concat-dim", "time"]
    assert main([*typo, "--exclude", "extra", "nope"]) == 1
    assert f"nczarr: error: {NOWHERE}" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_append_excludes_a_variable_only_some_sources_hold(tmp_path):
    dst = daily(tmp_path / "dst", 0, 2)
    srcs = [daily(tmp_path / "s0", 2, 2), daily(tmp_path / "s1", 4, 2, extra=True)]
    old = _open(dst)
    before = files(dst)
    with pytest.raises(nczarr.InvalidModeError, match=NOWHERE):
        nczarr.convert(srcs, dst, append_dim="time", exclude=["extra", "nope"])
    assert files(dst) == before
    with pytest.warns(nczarr.NCZarrWarning, match="left out by include/exclude: /extra"):
        nczarr.convert(srcs, dst, append_dim="time", exclude=["extra"])
    got = _open(dst)
    assert set(got.variables) == {"time", "lat", "temp"}
    np.testing.assert_array_equal(got["temp"].values, expected_temp(0, 6))
    parts = [old, *(_open(s).drop_vars("extra", errors="ignore") for s in srcs)]
    xr.testing.assert_equal(got, xr.concat(parts, dim="time"))
