"""An array left out by ``include``/``exclude`` is not warned about as re-encoded.

A ``.nc`` file's reader notes its re-encoded arrays when the file is opened, before
any selection; the convert, the view and the report must speak only of the arrays
they keep (and still of every kept one)."""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.errors import NCZarrWarning


def _file(path: Path) -> Path:
    """``s`` (variable-length strings: re-encoded), ``g/t`` (the same, in a group) and
    ``v`` (verbatim)."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", 3)
        s = ds.createVariable("s", str, ("n",))
        for i, word in enumerate(["a", "bb", "c"]):
            s[i] = word
        ds.createVariable("v", "f4", ("n",))[:] = np.arange(3, dtype="f4")
        t = ds.createGroup("g").createVariable("t", str, ("n",))
        for i, word in enumerate(["x", "yy", "z"]):
            t[i] = word
    return path


def _messages(caught: list[warnings.WarningMessage]) -> list[str]:
    return sorted(str(w.message) for w in caught if issubclass(w.category, NCZarrWarning))


@pytest.mark.parametrize("fmt", ["nczarr", "zarr"])
@pytest.mark.parametrize(
    ("selection", "warned"),
    [
        ({"exclude": ["/s"]}, ["/g/t"]),
        ({"exclude": ["s", "/g"]}, []),
        ({"include": ["v"]}, []),
        ({"include": ["/g"]}, ["/g/t"]),
    ],
)
def test_excluded_arrays_are_not_warned_about(
    tmp_path: Path, fmt: str, selection: dict[str, list[str]], warned: list[str]
) -> None:
    path = _file(tmp_path / "x.nc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = nczarr.convert(str(path), str(tmp_path / "out"), fmt, **selection)
    reencoded = [m for m in _messages(caught) if m.startswith("re-encoded array")]
    assert [m.split("'")[1] for m in reencoded] == warned
    assert [m for m in report.warnings if m.startswith("re-encoded array")] == reencoded
    assert [path for path, _ in report.reencoded] == warned


def test_every_kept_array_is_still_warned_about(tmp_path: Path) -> None:
    path = _file(tmp_path / "x.nc")
    with pytest.warns(NCZarrWarning) as caught:
        nczarr.convert(str(path), str(tmp_path / "out"), "zarr")
    reencoded = [m for m in _messages(caught) if m.startswith("re-encoded array")]
    assert [m.split("'")[1] for m in reencoded] == ["/g/t", "/s"]
