"""What README.md claims about the shipped examples is true."""

from __future__ import annotations

import re
from pathlib import Path

import xarray as xr
import zarr

import nczarr
from nczarr.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_first_command_converts_the_legacy_example_and_info_describes_it(tmp_path, capsys):
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"nczarr convert (\S+) (\S+) (.*?) && nczarr info (\S+)", readme)
    assert command, "README lost its first command"
    src, dst, flags, info_target = command.groups()
    assert (ROOT / src).exists() and dst == info_target
    out = tmp_path / "demo.zarr"
    assert main(["convert", str(ROOT / src), str(out), *flags.split()]) == 0
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "layout        zarr: pure Zarr" in text
    assert f"written by    nczarr-python {nczarr.__version__}" in text
    assert "/pressure  double  (station=4, level=2)" in text
    # and the result is plain Zarr that zarr-python and xarray open without nczarr
    assert zarr.open_group(str(out), mode="r")["pressure"].shape == (4, 2)
    assert xr.open_zarr(out, consolidated=False)["pressure"].dims == ("station", "level")


def test_tour_detect_and_read_examples():
    info = nczarr.detect(str(EXAMPLES / "legacy.zip"))
    assert (info.layout, info.netcdf_version) == ("nczarr-v2-keys", "4.9.0")
    ds = nczarr.read(str(EXAMPLES / "legacy.zip"))
    assert {v.path for v in ds.root.all_variables()} == {
        "/pressure",
        "/code",
        "/id",
        "/count",
        "/sub/t",
    }


def test_tour_view_reads_in_zarr_and_xarray():
    store = nczarr.ZarrStore(nczarr.view(str(EXAMPLES / "netcdf4101.zip"), mode="zarr"))
    group = zarr.open_group(store=store, mode="r")
    ds = xr.open_zarr(store, consolidated=False)
    assert group["v"].shape == ds["v"].shape
    assert ds["v"].dims == ("t", "x")


def test_tour_xarray_engine_and_to_nczarr(tmp_path):
    import dask.array as da

    from .ncoracle import nc_url
    from .test_xarray_backend import NCZarrBackendEntrypoint

    readme = (ROOT / "README.md").read_text()
    assert 'xr.open_dataset("examples/legacy.zip", engine="nczarr")' in readme
    assert 'nczarr.to_nczarr(ds, "/tmp/out.file", mode="w")' in readme
    engine = "nczarr" if "nczarr" in xr.backends.list_engines() else NCZarrBackendEntrypoint
    ds = xr.open_dataset(str(EXAMPLES / "legacy.zip"), engine=engine)
    sub = xr.open_dataset(str(EXAMPLES / "legacy.zip"), engine=engine, group="sub")
    assert ds["pressure"].dims == ("station", "level") and sub["t"].dims == ("n", "level")
    tree = xr.open_datatree(str(EXAMPLES / "netcdf4101.zip"), engine=engine, chunks={})
    assert isinstance(tree["g"]["gv"].data, da.Array)

    nczarr.to_nczarr(ds, str(tmp_path / "out.file"), mode="w")
    back = xr.open_dataset(nc_url(tmp_path / "out.file"), engine="netcdf4")
    xr.testing.assert_identical(back.load(), ds.load())
    nczarr.to_nczarr(
        tree,
        str(tmp_path / "tree.file"),
        encoding={"/g/gv": {"zlib": True, "complevel": 4}},
        unlimited_dims=["t"],
    )
    back_tree = xr.open_datatree(nc_url(tmp_path / "tree.file"), engine="netcdf4")
    xr.testing.assert_identical(back_tree.load(), tree.load())
