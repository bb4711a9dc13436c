"""Many sources of one layout (``nczarr/conversion/growsiblings.py``): a source whose
metadata objects hold the bytes of an earlier one is read as its model, so every
difference elsewhere must still be found: in chunk values of variables without the
dimension, in attributes, in an interrupted append; and a target inside any source,
under any name, is still refused."""

from __future__ import annotations

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.maps.pending import encode_append_journal

from .growing import daily, expected_temp, files, read_nc
from .ncoracle import nc_url


def _days(tmp_path, n, **kwargs):
    return [daily(tmp_path / f"d{i}", 2 * i, 2, **kwargs) for i in range(n)]


def test_identical_metadata_with_other_values_of_a_fixed_variable_is_refused(tmp_path):
    srcs = _days(tmp_path, 3)
    odd = daily(tmp_path / "odd", 6, 2, lat=(1.0, 2.0, 9.0))  # same metadata bytes
    assert (odd / "lat" / ".zarray").read_bytes() == (srcs[0] / "lat" / ".zarray").read_bytes()
    with pytest.raises(nczarr.InvalidModeError, match=r"odd.*'/lat'.*values differ"):
        nczarr.convert([*srcs, odd], tmp_path / "out", concat_dim="time")
    assert not (tmp_path / "out").exists()


def test_a_source_with_other_attributes_among_identical_ones_is_refused(tmp_path):
    srcs = [*_days(tmp_path, 2), daily(tmp_path / "other", 4, 2, title="another")]
    with pytest.raises(nczarr.InvalidModeError, match="title"):
        nczarr.convert(srcs, tmp_path / "out", concat_dim="time")


def test_many_identical_sources_read_as_the_concatenation(tmp_path):
    srcs = _days(tmp_path, 6)
    out = tmp_path / "out"
    report = nczarr.convert(srcs, out, concat_dim="time")
    assert report.chunks_reencoded == 0
    got = read_nc(out)
    np.testing.assert_array_equal(got["temp"], expected_temp(0, 12))
    parts = [xr.open_dataset(s, engine="nczarr").load() for s in srcs]
    xr.testing.assert_identical(
        xr.open_dataset(out, engine="nczarr").load(), xr.concat(parts, "time")
    )


def _interrupt(store, old, more):
    """``store`` as an append of ``more`` killed after its journal leaves it: every chunk
    written, the journal, the metadata objects still ``old``'s."""
    nczarr.convert(more, store, append_dim="time")
    keys = ("temp/.zarray", "time/.zarray", ".zattrs")
    journal = encode_append_journal([(k, (store / k).read_bytes()) for k in keys], ["x"], "time")
    (store / ".in-progress.nczarr").write_bytes(journal)
    for key in keys:
        (store / key).write_bytes((old / key).read_bytes())


def test_sources_with_interrupted_appends_are_read_as_grown(tmp_path):
    srcs = _days(tmp_path, 3)
    # two sources with the same stored metadata, their journals growing them by 2 and 4
    _interrupt(srcs[1], srcs[0], daily(tmp_path / "more1", 4, 2))
    _interrupt(srcs[2], srcs[0], daily(tmp_path / "more2", 6, 4))
    assert (srcs[1] / "temp" / ".zarray").read_bytes() == (
        srcs[2] / "temp" / ".zarray"
    ).read_bytes()
    out = tmp_path / "out"
    nczarr.convert(srcs, out, concat_dim="time")
    with netCDF4.Dataset(nc_url(out)) as ds:
        assert ds.dimensions["time"].size == 2 + 4 + 6
        np.testing.assert_array_equal(
            ds["temp"][:],
            np.concatenate(
                [
                    expected_temp(0, 2),
                    expected_temp(2, 2),
                    expected_temp(4, 2),
                    expected_temp(4, 2),
                    expected_temp(6, 4),
                ]
            ),
        )


def test_a_target_inside_a_later_source_under_another_name_is_refused(tmp_path):
    srcs = _days(tmp_path, 4)
    link = tmp_path / "link"
    link.symlink_to(srcs[3], target_is_directory=True)
    before = files(srcs[3])
    with pytest.raises(nczarr.InvalidModeError, match="overlap"):
        nczarr.convert(srcs, link / "inner", concat_dim="time")
    assert files(srcs[3]) == before
