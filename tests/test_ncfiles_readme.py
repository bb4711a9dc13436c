"""The README's tour of ``.nc`` sources runs as written (local part) and says true things."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import zarr

import nczarr
from nczarr.errors import NCZarrWarning

from .ncfiles import assert_same_values, build_netcdf4, nc_values

ROOT = Path(__file__).resolve().parent.parent


def _nc_snippet() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"\*\*From `\.nc` files\.\*\*.*?```python\n(.*?)```", readme, re.S)
    assert found, "README lost its .nc tour"
    return found.group(1).splitlines()


def test_readme_nc_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _nc_snippet()
    detect, convert = lines[0], lines[1]
    assert detect.startswith('nczarr.detect("obs.nc").layout  # ')
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_netcdf4(tmp_path / "obs.nc")
    layout = eval(detect, {"nczarr": nczarr})  # the README's own line
    assert repr(layout) in detect.split("#", 1)[1]  # the comment names it
    out = tmp_path / "obs.zarr"
    with pytest.warns(NCZarrWarning, match="re-encoded array"):  # the README says so
        exec(convert.replace("/tmp/obs.zarr", str(out)), {"nczarr": nczarr})
    group = zarr.open_group(str(out), mode="r")
    got = {f"/{name}": array[...] for name, array in group.arrays()}
    got.update({f"/g/{n}": a[...] for n, a in group["g"].arrays()})
    got.update({f"/g/h/{n}": a[...] for n, a in group["g/h"].arrays()})
    assert_same_values(nc_values(str(tmp_path / "obs.nc")), got)
