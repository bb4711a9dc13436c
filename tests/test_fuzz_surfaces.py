"""Issue 16: the metadata fuzz of ``tests/test_fuzz.py`` through the other surfaces.

The same base stores, hostile inputs and mutations, fed to the xarray engine (open
and load every variable), ``nczarr.check`` and ``nczarr dump`` (header and data): each
gives a result or an ``NCZarrError`` (the command: exit status 1 and one line) --
never another exception, never a hang. Counts are modest by default;
``NCZARR_FUZZ_EXAMPLES=<n>`` runs ``n`` per test.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import warnings
from pathlib import Path

import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

import nczarr
from nczarr.cli.main import main
from nczarr.errors import NCZarrError
from nczarr.maps.memory import MemoryMap

from .ncoracle import corrupt_metadata
from .test_fuzz import (
    BASES,
    HOSTILE_VALUES,
    OBJECTS,
    PARSED,
    fuzz_settings,
    no_hang,
    replaced_object,
)


def _engine(content: dict[str, bytes]) -> None:
    try:
        ds = xr.open_dataset(MemoryMap(dict(content), mode="r"), engine="nczarr")
    except NCZarrError:
        return
    try:
        for name in ds.variables:
            with contextlib.suppress(NCZarrError):
                ds[name].load()
    finally:
        ds.close()


def _check(content: dict[str, bytes]) -> None:
    with contextlib.suppress(NCZarrError):
        nczarr.check(MemoryMap(dict(content), mode="r"))


def _dump(content: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as where:
        root = Path(where, "s.zarr")
        for key, value in content.items():
            path = root.joinpath(*key.split("/"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(value)
        for args in (["dump", "-h", str(root)], ["dump", str(root)]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(args)
            assert status in (0, 1)
            if status == 1:
                assert err.getvalue().count("nczarr: error: ") == 1, err.getvalue()


def _all(content: dict[str, bytes]) -> None:
    """The engine, check and dump give a value or an NCZarrError."""
    with no_hang(60), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _engine(content)
        _check(content)
        _dump(content)


@fuzz_settings(40)
@given(st.data())
def test_surfaces_any_object_replaced_by_anything(data):
    content = replaced_object(data)
    _all(content)


@fuzz_settings(40)
@given(st.data())
def test_surfaces_any_value_inside_any_object_mutated(data):
    base = data.draw(st.sampled_from(sorted(BASES)))
    mutated = corrupt_metadata(data, PARSED[base])
    content = dict(BASES[base])
    content.update({k: json.dumps(v).encode() for k, v in mutated.items()})
    _all(content)


@pytest.mark.parametrize(("base", "key"), OBJECTS)
def test_surfaces_every_object_kind_hostile(base, key):
    """Each object of each store, deterministically replaced by each hostile input."""
    for value in HOSTILE_VALUES:
        content = dict(BASES[base])
        content[key] = value
        _all(content)
