"""The numpy-free HDF5 reader gives the netCDF-4 reader what h5py gives it (issue 18).

Every file here is read twice, by :class:`~nczarr.ncfile.hdf5.HDF5Reader` with the
numpy-free reader tried first and with h5py alone, and the two readings must be
equal: the model (groups, dimensions, variables, types, fill values, attributes in
order, warnings), every variable's chunk index (offset, length, padding, re-encoding)
and the re-encoding notes. Files netcdf-c writes must be read by the numpy-free reader
(``backend == "pure"``); files it declines (user-defined types, filters without a
Zarr codec, a soft link) by h5py, with the same result as before. The command on a
netCDF-4 file imports neither numpy nor h5py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nczarr
from nczarr.ncfile.hdf5 import HDF5Reader

from .ncfiles import build_netcdf4


def _read_at(path: Path):
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))

    def read_at(offset: int, length: int) -> bytes:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, length)

    return fd, read_at


def _both(path: Path) -> tuple[HDF5Reader, HDF5Reader]:
    """The file read with the numpy-free reader first, and with h5py alone."""
    fd, read_at = _read_at(path)
    try:
        pure = HDF5Reader(str(path), "f.nc", read_at, path.stat().st_size)
    finally:
        os.close(fd)
    ref = HDF5Reader(str(path), "f.nc")
    assert ref.backend == "h5py"
    return pure, ref


def _index(reader: HDF5Reader) -> dict[str, object]:
    return {
        path: (a.fill, a.reason, sorted(a.chunks.items()), a.chunks.grid)
        for path, a in reader.arrays.items()
    }


def assert_same_reading(path: Path, backend: str = "pure") -> HDF5Reader:
    pure, ref = _both(path)
    try:
        assert pure.backend == backend
        if backend == "pure":
            assert pure.file is None  # h5py never opened it
        assert pure.dataset == ref.dataset
        assert pure.dataset.warnings == ref.dataset.warnings
        assert pure.dataset.skipped == ref.dataset.skipped
        assert pure.reencoded == ref.reencoded
        assert pure.ncproperties == ref.ncproperties
        assert _index(pure) == _index(ref)
        # attribute order and exact types, which model equality may not see
        for a, b in zip(_walk(pure.dataset.root), _walk(ref.dataset.root), strict=True):
            assert a == b
        return pure
    finally:
        pure.close()
        ref.close()


def _walk(group):
    yield group.path, [(n, a.type, a.value, type(a.value)) for n, a in group.attributes.items()]
    yield group.path, list(group.dimensions.items())
    for var in group.variables.values():
        yield (
            var.path,
            var.type,
            var.fill_value,
            type(var.fill_value),
            [(n, a.type, a.value, [type(v) for v in a.value]) for n, a in var.attributes.items()],
        )
    for child in group.groups.values():
        yield from _walk(child)


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF4_CLASSIC"])
def test_the_model_file_is_read_alike(tmp_path: Path, fmt: str) -> None:
    path = build_netcdf4(tmp_path / "f.nc", fmt)
    assert_same_reading(path)


def test_dense_links_and_attributes_deep_groups_and_many_chunks(tmp_path: Path) -> None:
    path = tmp_path / "dense.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 60)
        for i in range(40):  # > 8 attributes: dense attribute storage
            ds.setncattr(f"a{i:02d}", np.int16(i) if i % 2 else f"text {i}")
        g = ds
        for depth in range(4):
            g = g.createGroup(f"level{depth}")
            g.createDimension(f"d{depth}", depth + 2)
        for i in range(30):  # > 8 links: dense link storage
            v = ds.createVariable(f"v{i:02d}", "f4", ("t", "x"), chunksizes=(1, 7))
            for j in range(12):
                v.setncattr(f"att{j}", np.float64(j) / 3)
            v[0:3, :] = np.arange(180, dtype="f4").reshape(3, 60) + i
        many = g.createVariable("many", "i2", ("t", "x"), chunksizes=(1, 1))
        many[0:40, :] = 7  # 2,400 chunks: a chunk B-tree of more than one level
    assert_same_reading(path)


def test_fill_values_no_fill_endianness_and_strings(tmp_path: Path) -> None:
    path = tmp_path / "fills.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 5)
        ds.createDimension("s", 3)
        for code in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"]:
            for endian in ("little", "big"):
                dtype = np.dtype(code).newbyteorder("<" if endian == "little" else ">")
                fill = np.array(3, dtype)[()]
                v = ds.createVariable(
                    f"{code}_{endian}", dtype, ("x",), endian=endian, fill_value=fill
                )
                v[1] = 1
                ds.createVariable(f"{code}_{endian}_default", dtype, ("x",), endian=endian)[2] = 2
        ds.set_fill_off()
        ds.createVariable("nofill", "f4", ("x",))[0] = 1
        ds.set_fill_on()
        ds.createVariable("c", "S1", ("x",), fill_value=b"#")[0] = b"a"
        strings = ds.createVariable("strings", str, ("x",))
        strings[0] = "ünï"
        ds.setncattr_string("many_strings", ["a", "", "ç"])
        ds.setncattr("chars", "with\x00nul")
        ds.setncattr("empty_chars", "")
        ds.createVariable("scalar_s", str, ())
    assert_same_reading(path)


def test_plain_hdf5_files_phony_dimensions_and_old_style_groups(tmp_path: Path) -> None:
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w", libver="earliest") as f:  # symbol-table groups
        f.create_dataset("a", data=np.arange(12, dtype="<i4").reshape(3, 4))
        f.create_dataset("b", data=np.arange(4, dtype=">f8"), chunks=(2,), compression="gzip")
        f.create_dataset("fixed", data=np.array([b"abc", b"de"], "S3"))
        g = f.create_group("g")
        g.create_dataset("c", data=np.zeros((3,), "u2"), maxshape=(None,), chunks=(2,))
        g.attrs["one"] = 1.5
        f.attrs["empty"] = h5py.Empty("f4")
    assert_same_reading(path)
    tracked = tmp_path / "tracked.h5"
    with h5py.File(tracked, "w", track_order=True) as f:
        f.create_dataset("z", data=np.arange(3, dtype="i8"), track_order=True)
        f.create_dataset("y", data=np.arange(3, dtype="i8"))
        f["z"].attrs["b"] = 1
        f["z"].attrs["a"] = 2
        f["y"].attrs["b"] = 1
    assert_same_reading(tracked)
    untracked = tmp_path / "untracked.h5"
    with h5py.File(untracked, "w") as f:  # two attributes in an order nobody tracked
        f.create_dataset("y", data=np.arange(3, dtype="i8"))
        f["y"].attrs["b"] = 1
        f["y"].attrs["a"] = 2
    assert_same_reading(untracked, backend="h5py")


def test_files_the_pure_reader_declines_read_as_before(tmp_path: Path) -> None:
    compound = tmp_path / "compound.nc"
    with netCDF4.Dataset(compound, "w") as ds:
        ds.createDimension("x", 2)
        pair = ds.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
        ds.createVariable("p", pair, ("x",))
        ds.createVariable("ok", "i4", ("x",))[:] = [1, 2]
    reader = assert_same_reading(compound, backend="h5py")
    assert reader.dataset.skipped == ("/p",)
    soft = tmp_path / "soft.h5"
    with h5py.File(soft, "w") as f:
        f.create_dataset("a", data=np.arange(3))
        f["link"] = h5py.SoftLink("/a")
    assert_same_reading(soft, backend="h5py")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    types=st.lists(
        st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8", "S1", str]),
        min_size=1,
        max_size=4,
    ),
    records=st.integers(0, 5),
    chunk=st.integers(1, 4),
    attrs=st.integers(0, 12),
    compressed=st.booleans(),
    fmt=st.sampled_from(["NETCDF4", "NETCDF4_CLASSIC"]),
    data=st.data(),
)
def test_random_netcdf4_files_are_read_alike(
    tmp_path_factory, types, records, chunk, attrs, compressed, fmt, data
) -> None:
    if fmt == "NETCDF4_CLASSIC":
        types = [t for t in types if t in ("i1", "i2", "i4", "f4", "f8", "S1")] or ["i4"]
    path = tmp_path_factory.mktemp("random") / "r.nc"
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 5)
        for i, code in enumerate(types):
            kwargs = {} if code is str else {"zlib": compressed, "shuffle": compressed}
            if code is not str and data.draw(st.booleans(), "fill"):
                kwargs["fill_value"] = np.array(1, code if code != "S1" else "S1")[()]
            v = ds.createVariable(f"v{i}", code, ("t", "x"), chunksizes=(chunk, 2), **kwargs)
            for j in range(attrs):
                v.setncattr(f"a{j}", np.int32(j))
            if records:
                if code is str:
                    v[0, 0] = "s"
                elif code == "S1":
                    v[0:records, :] = b"q"
                else:
                    v[0:records, :] = np.ones((records, 5), code)
    assert_same_reading(path)


#: The command's imports, in a fresh interpreter.
_SCRIPT = """\
import json, sys
from nczarr.cli.main import main
status = main(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m in ("numpy", "h5py"))))
sys.exit(status)
"""


def test_the_command_converts_a_netcdf4_file_without_numpy_or_h5py(tmp_path: Path) -> None:
    path = tmp_path / "f.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 8)
        v = ds.createVariable("v", "f4", ("t", "x"), zlib=True, shuffle=True, chunksizes=(1, 8))
        v.units = "K"
        v[0:3, :] = np.arange(24, dtype="f4").reshape(3, 8)
        ds.createVariable("t", "f8", ("t",))[:] = [0.0, 1.0, 2.0]
    out = tmp_path / "out.zarr"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "convert", str(path), str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as got:
        assert got["v"][:].tolist() == np.arange(24, dtype="f4").reshape(3, 8).tolist()
        assert got["v"].units == "K"


#: A convert in a fresh interpreter where ``import h5py`` fails (as without the extra).
_NO_H5PY = """\
import sys
sys.modules["h5py"] = None  # import h5py raises ImportError
import nczarr
try:
    nczarr.convert(sys.argv[1], sys.argv[2])
except nczarr.NCZarrError as exc:
    print(type(exc).__name__, exc)
    sys.exit(3)
"""


def test_without_h5py_verbatim_files_convert_and_the_rest_are_refused_first(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain.nc"
    with netCDF4.Dataset(plain, "w") as ds:
        ds.createDimension("x", 4)
        ds.createVariable("v", "i4", ("x",), zlib=True)[:] = [1, 2, 3, 4]
    strings = tmp_path / "strings.nc"
    with netCDF4.Dataset(strings, "w") as ds:
        ds.createDimension("x", 2)
        ds.createVariable("s", str, ("x",))[0] = "text"  # heap references: re-encoded

    def convert(src: Path, out: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", _NO_H5PY, str(src), str(out)], capture_output=True, text=True
        )

    done = convert(plain, tmp_path / "plain.zarr")
    assert done.returncode == 0, done.stderr
    with netCDF4.Dataset(f"file://{tmp_path / 'plain.zarr'}#mode=nczarr,file") as got:
        assert got["v"][:].tolist() == [1, 2, 3, 4]
    done = convert(strings, tmp_path / "strings.zarr")
    assert done.returncode == 3, done.stderr
    assert "MissingDependencyError" in done.stdout and "h5py" in done.stdout
    assert not (tmp_path / "strings.zarr").exists()  # refused before the target was made


def test_an_extensible_array_index_unlimited_last_converts_right(tmp_path: Path) -> None:
    """HDF5 2.0's ``chunk_iter`` reports wrong chunk offsets for an extensible-array
    index whose unlimited dimension is not the first (h5py's path refuses the file as
    a corrupt index); the numpy-free reader reads the index itself: the copy holds the
    values HDF5 itself decodes."""
    path = tmp_path / "ea.h5"
    data = np.arange(36, dtype="i4").reshape(4, 9)
    with h5py.File(path, "w", libver="latest") as f:
        d = f.create_dataset("a", shape=(4, 9), maxshape=(4, None), chunks=(3, 2), dtype="i4")
        d[:] = data
    nczarr.convert(str(path), str(tmp_path / "ea.zarr"), mode="zarr")
    got = zarr.open_group(str(tmp_path / "ea.zarr"), mode="r")["a"][:]
    assert got.tolist() == data.tolist()


def _string_attribute(obj_id, name: str, value: bytes, pad: int, shape: tuple = ()) -> None:
    """A fixed-length string attribute with HDF5's ``pad`` (low-level: h5py's high level
    writes null-padded ones only)."""
    kind = h5py.h5t.C_S1.copy()
    kind.set_size(len(value))
    kind.set_strpad(pad)
    space = h5py.h5s.create(h5py.h5s.SCALAR) if shape == () else h5py.h5s.create_simple(shape)
    attr = h5py.h5a.create(obj_id, name.encode(), kind, space)
    attr.write(np.array(value if shape == () else [value], dtype=f"S{len(value)}"), mtype=kind)


@pytest.mark.parametrize(
    ("value", "pad", "shape"),
    [
        (b"DIMENSION_SCALE  ", h5py.h5t.STR_SPACEPAD, ()),  # HDF5 strips the spaces
        (b"DIMENSION_SCALE\0xx", h5py.h5t.STR_NULLTERM, ()),  # h5py stops at the NUL
        (b"DIMENSION_SCALE", h5py.h5t.STR_NULLTERM, (1,)),  # h5py shows the array's repr
    ],
)
def test_odd_strings_of_netcdf_bookkeeping_are_read_by_h5py(tmp_path, value, pad, shape) -> None:
    """``CLASS`` (is it a dimension scale?) and ``_NCProperties`` in a form h5py reads
    otherwise than as plain text: declined, so the reading is h5py's."""
    path = tmp_path / "odd.h5"
    with h5py.File(path, "w") as f:
        _string_attribute(f.id, "_NCProperties", value.replace(b"DIMENSION_SCALE", b"v=2"), pad)
        f.create_dataset("x", data=np.arange(3.0))
        _string_attribute(f["x"].id, "CLASS", value, pad, shape)
        f.create_dataset("v", data=np.arange(3.0))
    assert_same_reading(path, backend="h5py")


def test_a_scale_linked_twice_is_read_by_h5py(tmp_path) -> None:
    twice = tmp_path / "twice.h5"
    with h5py.File(twice, "w") as f:
        x = f.create_group("a").create_dataset("x", data=np.arange(3.0))
        x.make_scale("x")
        f["b"] = x  # a second hard link: HDF5 names the scale by one of them
        v = f.create_dataset("v", data=np.zeros(3))
        v.dims[0].attach_scale(x)
    assert_same_reading(twice, backend="h5py")


def test_a_dense_heap_of_many_attributes_and_a_group_of_many_variables_read_fast(
    tmp_path,
) -> None:
    """Dense attributes are listed in hash order: each heap block is read and checked
    once (a cache of 4 blocks read one per attribute: 40 s for 2,000), and a group's
    links, attributes and global heap collections once per file (not per listing)."""
    path = tmp_path / "many.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 2)
        v = ds.createVariable("v", "f4", ("x",))
        for i in range(1500):
            v.setncattr(f"attribute_number_{i}", f"value {i} " * 8)
        for i in range(300):
            ds.createVariable(f"w{i}", "i2", ("x",))
    fd, read_at = _read_at(path)
    reads = []

    def counted(offset: int, length: int) -> bytes:
        reads.append(length)
        return read_at(offset, length)

    try:
        reader = HDF5Reader(str(path), "f.nc", counted, path.stat().st_size)
    finally:
        os.close(fd)
    assert reader.backend == "pure"
    assert len(reader.dataset.root.variables["v"].attributes) == 1500
    # every metadata block read about once (the bug: a heap block per attribute)
    assert len(reads) < 2500 and sum(reads) < 3 * path.stat().st_size, (len(reads), sum(reads))
    assert_same_reading(path)


def test_a_string_attribute_holding_a_nul_is_read_by_h5py(tmp_path) -> None:
    """h5py (and netcdf-c) read a variable-length string up to a NUL in its stored
    bytes; such bytes (another writer's, made here by patching the heap) are declined."""
    path = tmp_path / "nul.h5"
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs["s"] = "aQQQQb"
        f.create_dataset("x", data=np.arange(3))
    data = bytearray(path.read_bytes())
    data[data.index(b"aQQQQb") + 1] = 0
    path.write_bytes(bytes(data))
    reader = assert_same_reading(path, backend="h5py")
    assert reader.dataset.root.attributes["s"].value == ("a",)


def _hdf5_library():
    """h5py's own HDF5 library, for a call h5py does not wrap."""
    import ctypes

    base = Path(h5py.__file__).parent
    for pattern in ("../h5py.libs/libhdf5-*", ".dylibs/libhdf5.*", "libhdf5*", "hdf5*.dll"):
        for found in sorted(base.glob(pattern)):
            if "hl" not in found.name:
                return ctypes.CDLL(str(found))
    raise AssertionError(f"no HDF5 library beside h5py in {base}")


def test_an_undefined_fill_value_reads_as_none_through_h5py(tmp_path) -> None:
    """``H5Pset_fill_value(dcpl, type, NULL)``: HDF5 refuses to give the fill value of
    such a dataset; it is read as having none (a compound dataset beside it makes the
    numpy-free reader decline, so h5py reads the file)."""
    import ctypes

    lib = _hdf5_library()
    path = tmp_path / "undefined.h5"
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        undefined = lib.H5Pset_fill_value(
            ctypes.c_int64(dcpl.id), ctypes.c_int64(h5py.h5t.STD_I32LE.id), None
        )
        assert undefined >= 0
        space = h5py.h5s.create_simple((10,))
        h5py.h5d.create(f.id, b"v", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
        f["v"][...] = np.arange(10)
        f.create_dataset("pair", shape=(2,), dtype=np.dtype([("a", "<i4"), ("b", "<f8")]))
    reader = assert_same_reading(path, backend="h5py")
    assert reader.dataset.root.variables["v"].fill_value is None
    assert reader.dataset.skipped == ("/pair",)


def test_a_null_dataspace_is_said_once_and_not_called_damage(tmp_path: Path) -> None:
    """h5py reads a dataset of null dataspace (the numpy-free reader declines it): the
    error names it once, not wrapped again as a damaged header."""
    path = tmp_path / "null.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=h5py.Empty("f4"))
    with pytest.raises(nczarr.MetadataError) as caught:
        nczarr.read(str(path))
    message = str(caught.value)
    assert message == f"{path}: dataset '/v' has a null dataspace: no netCDF variable"
