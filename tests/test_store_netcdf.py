"""zarr-python reads what the real netcdf-c writes, through ZarrStore over FileMap and ZipMap.

netcdf-c (libnetcdf 4.10.1 inside the netCDF4 wheel) writes an NCZarr directory; zarr-python,
doing its I/O through :class:`~nczarr.integrations.zarr_store.ZarrStore`, must see the same
numbers that
netCDF4 reads back. The zip case zips the directory the way netcdf-c's zip map lays it out:
every member under one top-level folder named after the archive minus its last extension.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import zarr

from nczarr.integrations.zarr_store import ZarrStore
from nczarr.maps.file import FileMap
from nczarr.maps.zip import ZipMap

#: Every numeric variable of the dataset, by path: (netCDF dtype, dimension names).
VARIABLES = {
    "temp": ("f4", ("time", "y", "x")),
    "count": ("i4", ("time",)),
    "level": ("f8", ("y",)),
    "flags": ("i2", ("y", "x")),
    "obs/id": ("i8", ("x",)),
    "obs/deep/quality": ("f4", ("y", "x")),
}


@pytest.fixture(scope="module")
def netcdf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An NCZarr directory written by netcdf-c: groups, zlib and raw variables, unlimited dim."""
    path = tmp_path_factory.mktemp("nc") / "ds.file"
    rng = np.random.default_rng(7)
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.title = "written by netcdf-c"
        ds.createDimension("time", None)
        ds.createDimension("y", 4)
        ds.createDimension("x", 6)
        temp = ds.createVariable(
            "temp", "f4", ("time", "y", "x"), zlib=True, complevel=4, shuffle=False,
            chunksizes=(1, 2, 3),
        )  # fmt: skip
        temp.units = "K"
        temp[0:3] = rng.normal(280, 5, size=(3, 4, 6)).astype("f4")
        temp[4] = np.full((4, 6), 300.5, dtype="f4")  # time 3 is never written: fill value
        count = ds.createVariable("count", "i4", ("time",), fill_value=-99)
        count[0:5] = np.array([1, -2, 3, -4, 2**31 - 1], dtype="i4")
        level = ds.createVariable("level", "f8", ("y",), zlib=True, shuffle=False)
        level[:] = [1000.0, 850.0, 500.25, 1e-300]
        flags = ds.createVariable("flags", "i2", ("y", "x"), zlib=True, shuffle=False)
        flags[:] = np.arange(24, dtype="i2").reshape(4, 6) * -1000
        obs = ds.createGroup("obs")
        ident = obs.createVariable("id", "i8", ("x",))
        ident[:] = np.array([2**62, -(2**62), 0, 1, -1, 42], dtype="i8")
        deep = obs.createGroup("deep")
        # (not u1/i1: netcdf-c writes "<u1"/"<i1", which zarr-python 3 rejects; the
        # translation layer rewrites those to "|u1"/"|i1")
        quality = deep.createVariable("quality", "f4", ("y", "x"), zlib=True, shuffle=False)
        quality[:] = np.linspace(-1, 1, 24, dtype="f4").reshape(4, 6)
    return path


@pytest.fixture(scope="module")
def expected(netcdf_dir: Path) -> dict[str, np.ndarray]:
    """What netCDF4 itself reads back, raw (no masking: fill values stay numbers)."""
    out = {}
    with netCDF4.Dataset(f"file://{netcdf_dir}#mode=nczarr,file", "r") as ds:
        ds.set_auto_maskandscale(False)
        for path in VARIABLES:
            *groups, name = path.split("/")
            node = ds
            for group in groups:
                node = node.groups[group]
            out[path] = np.asarray(node.variables[name][...])
    assert out["temp"].shape == (5, 4, 6)  # the unlimited dimension grew to 5
    return out


def _zip_like_netcdf_c(directory: Path, target: Path, compression: int) -> Path:
    """Zip ``directory`` under one top-level folder named like netcdf-c's zip map does."""
    top = target.name.rsplit(".", 1)[0]  # "ds.file.zip" -> "ds.file"
    with zipfile.ZipFile(target, "w", compression=compression) as zf:
        zf.writestr(f"{top}/", b"")
        for root, dirs, files in os.walk(directory):
            rel = Path(root).relative_to(directory).as_posix()
            base = top if rel == "." else f"{top}/{rel}"
            for d in sorted(dirs):
                zf.writestr(f"{base}/{d}/", b"")
            for f in sorted(files):
                zf.write(Path(root) / f, f"{base}/{f}")
    return target


def _check_store(store: ZarrStore, expected: dict[str, np.ndarray]) -> None:
    root = zarr.open_group(store=store, mode="r", zarr_format=2)
    assert root.attrs["title"] == "written by netcdf-c"
    assert sorted(root.group_keys()) == ["obs"]
    for path, (dtype, dims) in VARIABLES.items():
        array = zarr.open_array(store=store, path=path, mode="r", zarr_format=2)
        values = array[...]
        assert values.dtype == np.dtype(dtype), path
        assert list(array.attrs["_ARRAY_DIMENSIONS"]) == list(dims), path
        np.testing.assert_array_equal(values, expected[path], err_msg=path)
    temp = zarr.open_array(store=store, path="temp", mode="r", zarr_format=2)
    assert temp.attrs["units"] == "K"
    assert temp.chunks == (1, 2, 3)
    assert temp.metadata.compressor.get_config() == {"id": "zlib", "level": 4}
    # the unwritten time step reads as netcdf-c's default float fill, in both libraries
    np.testing.assert_array_equal(temp[3], np.full((4, 6), np.float32(9.96921e36)))
    assert zarr.open_array(store=store, path="count", mode="r", zarr_format=2).fill_value == -99


def test_zarr_reads_netcdf_c_directory(netcdf_dir: Path, expected: dict[str, np.ndarray]) -> None:
    with ZarrStore(FileMap(str(netcdf_dir), mode="r")) as store:
        assert store.read_only
        _check_store(store, expected)


@pytest.mark.parametrize(
    "compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED], ids=["stored", "deflated"]
)
def test_zarr_reads_netcdf_c_zip(
    netcdf_dir: Path, expected: dict[str, np.ndarray], tmp_path: Path, compression: int
) -> None:
    archive = _zip_like_netcdf_c(netcdf_dir, tmp_path / "ds.file.zip", compression)
    with ZarrStore(ZipMap(str(archive), mode="r")) as store:
        assert store.read_only
        # keys are relative to the top-level folder, exactly as in the directory
        assert "temp/.zarray" in store.zmap
        assert "ds.file/temp/.zarray" not in store.zmap
        _check_store(store, expected)


def test_netcdf_c_reads_what_zarr_wrote_through_the_store(tmp_path: Path) -> None:
    """The other direction: zarr writes v2 through ZarrStore(FileMap); netcdf-c reads it."""
    path = tmp_path / "out.file"
    values = np.arange(12, dtype="f8").reshape(3, 4) / 7
    with ZarrStore(FileMap(str(path), mode="w")) as store:
        root = zarr.open_group(store=store, mode="w", zarr_format=2)
        array = root.create_array(
            "v", shape=(3, 4), chunks=(2, 2), dtype="f8", fill_value=-1.0, compressors=None
        )
        array[...] = values
        array.attrs["_ARRAY_DIMENSIONS"] = ["a", "b"]
    with netCDF4.Dataset(f"file://{path}#mode=zarr,file", "r") as ds:
        assert ds.variables["v"].dimensions == ("a", "b")
        np.testing.assert_array_equal(ds.variables["v"][...], values)
