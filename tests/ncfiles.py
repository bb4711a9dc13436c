"""Builders of netCDF files (written by netCDF4-python) and readers of their values.

The files cover what the formats hold: every numeric type, char, string, scalars,
groups, unlimited and fixed dimensions, several records, partial writes, ragged
edge chunks, the compressions the netCDF4 wheel writes, contiguous storage,
big-endian data and a 0-length unlimited dimension.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import netCDF4
import numpy as np

NC3_TYPES = ("i1", "i2", "i4", "f4", "f8")
CDF5_TYPES = ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8")
NC4_TYPES = CDF5_TYPES


def _values(dtype: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.normal(size=shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dt)


def compressions() -> list[str]:
    """The compressions this netCDF4 wheel writes (its HDF5 plugins)."""
    found = ["zlib"]
    for name in ("zstd", "bzip2", "blosc_lz4"):
        flag = {"zstd": "zstandard", "bzip2": "bzip2", "blosc_lz4": "blosc"}[name]
        if getattr(netCDF4, f"__has_{flag}_support__", False):
            found.append(name)
    return found


def build_netcdf4(path: Path, fmt: str = "NETCDF4") -> Path:
    """A netCDF-4 file exercising the model and the storage layouts."""
    full = fmt == "NETCDF4"
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.title = "netCDF-4 source"
        ds.setncattr("ints", np.array([1, 2, 3], "i4"))
        ds.setncattr("pi", np.float32(3.25))
        ds.createDimension("time", None)
        ds.createDimension("lat", 5)
        ds.createDimension("lon", 7)  # no coordinate variable
        ds.createDimension("nchar", 4)
        if full:
            ds.createDimension("empty", None)  # stays 0-length
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = np.arange(3.0)
        lat = ds.createVariable("lat", "f4", ("lat",), contiguous=True)
        lat[:] = np.linspace(-60, 60, 5)
        types = NC4_TYPES if full else NC3_TYPES
        for i, dtype in enumerate(types):
            v = ds.createVariable(
                f"v_{dtype}",
                dtype,
                ("time", "lat", "lon"),
                compression="zlib",
                complevel=4,
                shuffle=True,
                chunksizes=(2, 3, 4),  # ragged edges along every axis
            )
            v.long_name = f"a {dtype} variable"
            v[:] = _values(dtype, (3, 5, 7), i)
        fl = ds.createVariable(
            "fletcher", "i4", ("lat", "lon"), compression="zlib", shuffle=True, fletcher32=True
        )
        fl[:] = _values("i4", (5, 7), 10)
        fl8 = ds.createVariable(
            "fletcher8", "f8", ("lat", "lon"), compression="zlib", shuffle=True, fletcher32=True
        )
        fl8[:] = _values("f8", (5, 7), 11)
        plain = ds.createVariable("plain", "i2", ("lat", "lon"), chunksizes=(2, 7))
        plain[:] = _values("i2", (5, 7), 12)
        cont = ds.createVariable("contiguous", "f8", ("lat", "lon"), contiguous=True)
        cont[:] = _values("f8", (5, 7), 13)
        big = ds.createVariable("big", ">i4", ("lat", "lon"), endian="big", compression="zlib")
        big[:] = _values("i4", (5, 7), 14)
        bigc = ds.createVariable("big_contiguous", ">f4", ("lat",), endian="big", contiguous=True)
        bigc[:] = _values("f4", (5,), 15)
        scalar = ds.createVariable("scalar", "f8", ())
        scalar[...] = 42.5
        scalar.note = "a scalar"
        filled = ds.createVariable("filled", "f4", ("time", "lat"), fill_value=-1.0)
        filled.valid_min = np.float32(-10)
        filled[1, :] = np.arange(5, dtype="f4")
        partial = ds.createVariable("partial", "i4", ("time", "lat", "lon"), chunksizes=(1, 5, 7))
        partial[2, :, :] = _values("i4", (5, 7), 16)  # record chunks 0 and 1 never written
        chars = ds.createVariable("chars", "S1", ("lat", "nchar"))
        chars[:] = netCDF4.stringtochar(np.array(["ab", "cdef", "g", "", "hij"], "S4"))
        if full:
            ds.createVariable("in_empty", "f4", ("empty", "lat"))
            ds.createDimension("u", None)  # unlimited, no coordinate variable
            ds.createVariable("short_u", "i2", ("u",))[0] = 1  # before the longer one
            ds.createVariable("long_u", "i2", ("u",))[:] = np.arange(3, dtype="i2")
            ds.setncattr_string("tags", ["one", "two"])
            strings = ds.createVariable("strings", str, ("lat",))
            for i, text in enumerate(["x", "yy", "", "zzzz", "é"]):
                strings[i] = text
            ds.createDimension("n", 256)
            for j, comp in enumerate(compressions()[1:]):
                cv = ds.createVariable(
                    f"comp_{comp}", "f4", ("time", "n"), compression=comp, complevel=3
                )
                cv[:] = np.repeat(np.arange(24, dtype="f4"), 32).reshape(3, 256) * (j + 1)
            g = ds.createGroup("g")
            g.createDimension("x", 3)
            g.about = "a group"
            gv = g.createVariable("v", "i8", ("time", "x"), compression="zlib")
            gv.units = "m"
            gv[:] = _values("i8", (3, 3), 30)
            h = g.createGroup("h")
            hv = h.createVariable("w", "u2", ("x", "lat"))
            hv[:] = _values("u2", (3, 5), 31)
    return path


def build_netcdf3(path: Path, fmt: str = "NETCDF3_CLASSIC", *, single_record: bool = False) -> Path:
    """A netCDF-3 file: fixed and record variables of every type the format has."""
    types = CDF5_TYPES if fmt == "NETCDF3_64BIT_DATA" else NC3_TYPES
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.title = "netCDF-3 source"
        ds.setncattr("ints", np.array([1, 2, 3], "i4"))
        ds.setncattr("d", np.float64(0.5))
        ds.createDimension("time", None)
        ds.createDimension("lat", 5)
        ds.createDimension("lon", 3)
        ds.createDimension("nchar", 4)
        time = ds.createVariable("time", "f8", ("time",))
        time[:] = np.arange(4.0)
        if not single_record:
            for i, dtype in enumerate(types):
                v = ds.createVariable(f"r_{dtype}", dtype, ("time", "lat", "lon"))
                v.units = "1"
                v[:] = _values(dtype, (4, 5, 3), i)
            small = ds.createVariable("r_small", "i2", ("time",))  # padded to 4 bytes
            small[:] = np.arange(4, dtype="i2")
            f = ds.createVariable("with_fill", "f4", ("time", "lat"), fill_value=-9.0)
            f[1:3, :] = 1.5
        for i, dtype in enumerate(types):
            v = ds.createVariable(f"f_{dtype}", dtype, ("lat", "lon"))
            v[:] = _values(dtype, (5, 3), 40 + i)
        sc = ds.createVariable("scalar", "i4", ())
        sc[...] = 7
        chars = ds.createVariable("chars", "S1", ("lat", "nchar"))
        chars[:] = netCDF4.stringtochar(np.array(["ab", "cdef", "g", "", "hij"], "S4"))
    return path


def nc_values(url: str) -> dict[str, Any]:
    """Every variable's raw values as netCDF4 reads them (no masking, no scaling,
    chars as bytes), keyed by FQN."""
    out: dict[str, Any] = {}

    def walk(group: Any) -> None:
        for name, var in group.variables.items():
            var.set_auto_maskandscale(False)
            var.set_auto_chartostring(False)
            fqn = ("" if group.path == "/" else group.path) + "/" + name
            out[fqn] = var[...]
        for child in group.groups.values():
            walk(child)

    with netCDF4.Dataset(url) as ds:
        walk(ds)
    return out


def assert_same_values(expected: dict[str, Any], got: dict[str, Any]) -> None:
    """Same variables, same values (strings compared as text, NaN equal to NaN)."""
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = np.asarray(got[name])
        want = np.asarray(want)
        assert have.shape == want.shape, name
        if want.dtype == object or have.dtype == object:
            assert [str(x) for x in have.ravel()] == [str(x) for x in want.ravel()], name
        else:
            np.testing.assert_array_equal(have, want.astype(have.dtype), err_msg=name)


def stored_chunks(path: Path, name: str) -> dict[str, bytes]:
    """The chunks HDF5 stored for dataset ``name``, by Zarr chunk key, as stored (the
    bytes a verbatim copy must hold)."""
    out = {}
    with h5py.File(path, "r") as f:
        ds = f[name]
        for i in range(ds.id.get_num_chunks()):
            info = ds.id.get_chunk_info(i)
            key = ".".join(str(o // c) for o, c in zip(info.chunk_offset, ds.chunks, strict=True))
            out[key] = ds.id.read_direct_chunk(info.chunk_offset)[1]
    return out


def force_h5py(monkeypatch: Any) -> None:
    """Have h5py read every netCDF-4 file's metadata: the numpy-free reader declines."""
    from nczarr.ncfile import hdf5
    from nczarr.ncfile.h5pure import Unsupported

    def decline(*args: Any) -> Any:
        raise Unsupported("this test has h5py read the file")

    monkeypatch.setattr(hdf5, "pure_root", decline)
