"""An append SIGKILLed at each write of its metadata window (the journal, then every
metadata object), and every reader opening the store right after, before anything
repairs it: nczarr's readers (``read``, the engine, ``open_zarr``, ``view``,
``convert``) see the old store or the grown one, never a mix and never an error;
netcdf-c sees the old store, the grown one, or refuses to open it ("Invalid dimension
size", while array shapes and dimension sizes disagree), never a mix of values.
"""

from __future__ import annotations

import signal
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.conversion.journal import JOURNAL_KEY
from nczarr.maps.file import FileMap

from .growing import daily, expected_temp, read_nc
from .test_append import run_killer

ROOT = Path(__file__).resolve().parents[1]
#: 9 chunk writes come first; then the journal (write 10) and 8 metadata objects.
CHUNK_WRITES = 9
METADATA_WRITES = 8


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The store before and after appending (as nczarr's engine and netcdf-c read
    them), and the source."""
    base = tmp_path_factory.mktemp("appendkill")
    old = daily(base / "old", 0, 3)
    src = daily(base / "src", 3, 4)
    grown = base / "grown"
    daily(grown, 0, 3)
    nczarr.convert(src, grown, append_dim="time")
    return {
        "old": old,
        "src": src,
        "engine": {"old": _engine(old), "new": _engine(grown)},
        "netcdf": {"old": read_nc(old), "new": read_nc(grown)},
    }


def _engine(path: Path) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a store read leniently would be a finding
        return xr.open_dataset(path, engine="nczarr").load()


def _old_or_new(got: xr.Dataset, expected: dict[str, xr.Dataset], reader: str) -> str:
    for which in ("old", "new"):
        if got.identical(expected[which]):
            return which
    raise AssertionError(f"{reader} reads neither the old nor the grown store:\n{got}")


def _netcdf(path: Path, expected: dict[str, dict]) -> str:
    """``"old"``, ``"new"`` or ``"refused"``: what netcdf-c reads."""
    try:
        got = read_nc(path)
    except OSError as exc:
        assert "Invalid dimension size" in str(exc), exc
        return "refused"
    for which in ("old", "new"):
        want = expected[which]
        if got["size"] == want["size"]:
            for name in ("time", "temp", "lat"):
                np.testing.assert_array_equal(got[name], want[name], err_msg=name)
            assert got["unlimited"]
            return which
    raise AssertionError(f"netcdf-c reads a time dimension of {got['size']}")


def _kill_at(n: int, src: Path, dst: Path, script: Path) -> None:
    proc = run_killer(src, dst, n, script)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


@pytest.mark.parametrize("n", range(CHUNK_WRITES + 1, CHUNK_WRITES + METADATA_WRITES + 2))
def test_every_reader_sees_old_or_new_after_a_kill_among_the_metadata_writes(stores, tmp_path, n):
    dst = tmp_path / "dst"
    daily(dst, 0, 3)
    _kill_at(n, stores["src"], dst, tmp_path / "killer.py")
    journal = (dst / JOURNAL_KEY).exists()
    assert journal == (n > CHUNK_WRITES + 1)  # killed before writing it, or after
    expected = stores["engine"]
    seen = {_old_or_new(_engine(dst), expected, "the nczarr engine")}
    # read: the model's dimension size
    size = nczarr.read(dst).root.dimensions["time"].size
    seen.add({3: "old", 7: "new"}[size])
    # open_zarr (a zarr-python group) and view (the translated map)
    group = nczarr.open_zarr(str(dst))
    which = {3: "old", 7: "new"}[group["temp"].shape[0]]
    assert group["time"].shape == group["temp"].shape[:1]
    np.testing.assert_array_equal(group["temp"][:], expected[which]["temp"].values)
    seen.add(which)
    view = nczarr.view(str(dst), "nczarr")
    copy = tmp_path / "copy"
    nczarr.convert(view, copy)  # convert of the view, then of the store itself
    seen.add(_old_or_new(_engine(copy), expected, "a convert of the view"))
    nczarr.convert(dst, tmp_path / "copy2")
    seen.add(_old_or_new(_engine(tmp_path / "copy2"), expected, "convert"))
    # one answer for all of them: the grown store as soon as the journal is there
    assert seen == {"new" if journal else "old"}
    # netcdf-c: old, new, or a refusal while the shapes and sizes disagree
    seen_by_netcdf = _netcdf(dst, stores["netcdf"])
    # it refuses after the first grown shape (temp/.zarray, write 15) is written and
    # before the root's dimension sizes (write 17) are
    assert (seen_by_netcdf == "refused") == (n in (16, 17))
    if not journal:
        assert seen_by_netcdf == "old"
    # the next append finishes the interrupted one; netcdf-c reads the grown store
    if journal:
        with pytest.raises(nczarr.TargetExistsError, match="now complete"):
            nczarr.convert(stores["src"], dst, append_dim="time")
        assert _netcdf(dst, stores["netcdf"]) == "new"
        assert _old_or_new(_engine(dst), expected, "the engine") == "new"


def test_open_zarr_of_a_pure_zarr_store_at_every_metadata_write(tmp_path):
    """zarr-python through ``open_zarr`` (the store read as it is, no translated view):
    each state an append leaves after its journal and a prefix of its metadata writes
    (as a kill leaves it) opens as the grown store."""
    dst = tmp_path / "dst.zarr"
    nczarr.convert(daily(tmp_path / "a", 0, 3), dst, mode="zarr")
    old = {p.relative_to(dst).as_posix(): p.read_bytes() for p in dst.rglob("*") if p.is_file()}
    writes = []

    class Recording(FileMap):
        def _store(self, key, value):
            writes.append((key, value))
            super()._store(key, value)

    nczarr.convert(daily(tmp_path / "b", 3, 4), Recording(dst, mode="a"), append_dim="time")
    at = [k for k, _ in writes].index(JOURNAL_KEY)
    assert len(writes) - at - 1 >= 2  # some metadata objects after the journal
    for n in range(at, len(writes) + 1):
        state = tmp_path / f"state{n}"
        for key, value in [*old.items(), *writes[:n]]:
            (state / key).parent.mkdir(parents=True, exist_ok=True)
            (state / key).write_bytes(value)
        group = nczarr.open_zarr(str(state))
        want = 3 if n == at else 7  # before the journal: old; from it on: grown
        assert (group["time"].shape[0], group["temp"].shape[0]) == (want, want), n
        np.testing.assert_array_equal(group["temp"][:], expected_temp(0, want))
