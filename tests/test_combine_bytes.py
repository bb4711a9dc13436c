"""Combining and appending stores of fixed-width bytes (``|S4``, ``Variable.logical ==
"bytes"``).

An NCZarr copy holds such an array as netCDF ``char`` with one more axis (chunk keys
``s/0.0.0``); the combine planned the model's keys (``s/0.0``), matched none of those
the parts list, and wrote no chunk of it: netCDF4 read every value as ``b""``, the
report counted only the other arrays (review 15). The producers are the oracle:
zarr-python / xarray reading the sources, ``xr.concat`` of those readings, netCDF4 and
xarray reading the combined store.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import InvalidModeError, MetadataError
from nczarr.translate.grow import plan_growth

from .ncoracle import nc_url

VALUES = np.array(
    [[b"ab", b"c"], [b"e", b"defg"], [b"hi", b"j"], [b"k", b"lm"], [b"n", b"op"], [b"q", b"rstu"]],
    dtype="S4",
)
LABELS = np.array([b"x0", b"xyz1"], dtype="S4")

#: Target: (mode, zarr_format).
TARGETS = [("nczarr", 2), ("zarr", 2), ("zarr", 3)]


def _zarr_python(path: Path, zarr_format: int, lo: int, hi: int) -> Path:
    """``t(t)`` (int32, chunks 2), ``s(t, x)`` |S4 (chunks (2, 1)) holding rows
    ``lo:hi`` of :data:`VALUES`, and ``lab(x)`` |S4 (no ``t``), written by zarr-python."""
    group = zarr.open_group(path, mode="w", zarr_format=zarr_format)

    def array(name: str, dims: list[str], **kwargs: object) -> zarr.Array:
        named = {"dimension_names": dims} if zarr_format == 3 else {}
        created = group.create_array(name, **kwargs, **named)  # type: ignore[arg-type]
        if zarr_format == 2:
            created.attrs["_ARRAY_DIMENSIONS"] = dims
        return created

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python: |S4 is not in the v3 spec
        array("t", ["t"], shape=(hi - lo,), dtype="i4", chunks=(2,))[:] = np.arange(lo, hi) + 1
        s = array("s", ["t", "x"], shape=(hi - lo, 2), dtype="S4", chunks=(2, 1), fill_value=b"")
        s[:] = VALUES[lo:hi]
        array("lab", ["x"], shape=(2,), dtype="S4", chunks=(1,), fill_value=b"")[:] = LABELS
    return path


def _source_key(zarr_format: int, coords: tuple[int, ...]) -> str:
    return "/".join(("c", *map(str, coords))) if zarr_format == 3 else ".".join(map(str, coords))


def _combine(srcs: list[Path], out: Path, mode: str, zarr_format: int) -> nczarr.ConvertReport:
    dst = nc_url(out, mode) if zarr_format == 2 else str(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nczarr.convert(srcs, dst, mode, concat_dim="t", zarr_format=zarr_format)


def _expected(srcs: list[Path]) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        readings = [xr.open_zarr(s, consolidated=False).load() for s in srcs]
    return xr.concat(readings, "t", data_vars="minimal")


def _read_back(out: Path, mode: str, zarr_format: int) -> list[tuple[str, np.ndarray]]:
    """``s`` as netCDF4 (NCZarr and Zarr v2: netcdf-c reads no pure Zarr v3 here) and
    xarray read the combined store (and zarr-python, a pure Zarr one)."""
    got = []
    if zarr_format == 2:
        with netCDF4.Dataset(nc_url(out, mode)) as nc:
            var = nc["s"]
            var.set_auto_mask(False)
            if mode == "nczarr":
                assert (var.dtype, var.dimensions) == (np.dtype("S1"), ("t", "x", "string4"))
                got.append(("netCDF4", netCDF4.chartostring(var[...], encoding="bytes")))
            else:  # netcdf-c reads |S4 in pure Zarr as strings
                got.append(("netCDF4", np.asarray(var[...]).astype("S4")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "nczarr":
            back = xr.open_dataset(nc_url(out), engine="netcdf4").load()
        else:
            back = xr.open_zarr(out, consolidated=False).load()
            got.append(("zarr-python", zarr.open_group(out, mode="r")["s"][...]))
    got.append(("xarray", back["s"].values))
    np.testing.assert_array_equal(back["lab"].values, LABELS)
    np.testing.assert_array_equal(back["t"].values, np.arange(len(VALUES)) + 1)
    return got


def _combined_halves(
    tmp_path: Path, source_format: int, split: int, mode: str, target_format: int
) -> tuple[list[Path], Path, nczarr.ConvertReport]:
    """Rows ``[0, split)`` and ``[split, 6)`` in two zarr-python stores, combined into
    ``tmp_path/out``; every reader of the result reads the values of both in order."""
    srcs = [
        _zarr_python(tmp_path / "a.zarr", source_format, 0, split),
        _zarr_python(tmp_path / "b.zarr", source_format, split, 6),
    ]
    out = tmp_path / "out"
    report = _combine(srcs, out, mode, target_format)
    want = _expected(srcs)
    for reader, got in _read_back(out, mode, target_format):
        np.testing.assert_array_equal(got, want["s"].values, err_msg=reader)
    return srcs, out, report


@pytest.mark.parametrize(("mode", "target_format"), TARGETS, ids=lambda v: str(v))
@pytest.mark.parametrize("source_format", [2, 3])
def test_aligned_bytes_sources_are_copied_verbatim(
    tmp_path: Path, source_format: int, mode: str, target_format: int
) -> None:
    srcs, out, report = _combined_halves(tmp_path, source_format, 4, mode, target_format)
    # t: 2 + 1 chunks; s: 2 x 2 + 1 x 2; lab: 2 (the first source's)
    assert (report.chunks_copied, report.chunks_reencoded) == (3 + 6 + 2, 0)
    # the second source's chunk (0, 1) is target chunk (2, 1), byte for byte (nczarr's
    # Zarr v3 stores use v2 chunk keys; NCZarr char has one more axis)
    shown = "2.1.0" if mode == "nczarr" else "2.1"
    source = srcs[1] / "s" / _source_key(source_format, (0, 1))
    assert (out / "s" / shown).read_bytes() == source.read_bytes()


@pytest.mark.parametrize(("mode", "target_format"), TARGETS, ids=lambda v: str(v))
@pytest.mark.parametrize("source_format", [2, 3])
def test_unaligned_bytes_sources_are_assembled(
    tmp_path: Path, source_format: int, mode: str, target_format: int
) -> None:
    _, _, report = _combined_halves(tmp_path, source_format, 3, mode, target_format)
    # rows [0, 2) are a's chunk; [2, 4) holds both; [4, 6) is b's rows 1-2 (unaligned)
    # copied: t 1, s 2, lab 2; assembled: t 2, s 2 x 2
    assert (report.chunks_copied, report.chunks_reencoded) == (5, 6)


def test_appending_bytes_to_an_nczarr_store(tmp_path: Path) -> None:
    """An append read the source's |S4 array as bytes and the store's as char, and
    refused ("dimensions of '/' differ"); both are now the char form."""
    srcs = [
        _zarr_python(tmp_path / f"{n}.zarr", 3, lo, hi) for n, lo, hi in (("a", 0, 4), ("b", 4, 6))
    ]
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nczarr.convert(srcs[0], nc_url(out), "nczarr")
        report = nczarr.convert(srcs[1], nc_url(out), append_dim="t")
    # t: 1, s: 1 x 2, the source on a chunk boundary of the store
    assert (report.chunks_copied, report.chunks_reencoded) == (3, 0)
    want = _expected(srcs)
    for reader, got in _read_back(out, "nczarr", 2):
        np.testing.assert_array_equal(got, want["s"].values, err_msg=reader)


def test_bytes_of_other_widths_are_refused_naming_the_array(tmp_path: Path) -> None:
    """NCZarr char copies keep each source's width (a dimension ``string<n>``): parts
    of other widths are refused naming the array (they were written as fill)."""
    srcs = []
    for width in (4, 8):
        group = zarr.open_group(tmp_path / f"w{width}.zarr", mode="w", zarr_format=2)
        array = group.create_array("s", shape=(2,), dtype=f"S{width}", chunks=(2,))
        array[:] = [b"ab", b"cdefgh"[:width]]
        array.attrs["_ARRAY_DIMENSIONS"] = ["t"]
        srcs.append(tmp_path / f"w{width}.zarr")
    with pytest.raises(InvalidModeError, match=r"dimension '/string8' \(of '/s'\)"):
        _combine(srcs, tmp_path / "out", "nczarr", 2)
    assert not (tmp_path / "out").exists()


def _netcdf_source(path: Path, lo: int, hi: int) -> Path:
    """netCDF4's NCZarr store: ``c(t, n4)`` char and ``name(t)`` string."""
    words = VALUES[:, 1]
    with netCDF4.Dataset(nc_url(path), "w") as nc:
        nc.createDimension("t", None)
        nc.createDimension("n4", 4)
        nc.createVariable("t", "i4", ("t",), chunksizes=(2,))[:] = np.arange(lo, hi)
        char = nc.createVariable("c", "S1", ("t", "n4"), chunksizes=(2, 4))
        char[:] = netCDF4.stringtochar(words[lo:hi])
        name = nc.createVariable("name", str, ("t",), chunksizes=(2,))
        name[:] = np.array([w.decode() for w in words[lo:hi]], dtype=object)
    return path


@pytest.mark.parametrize(("mode", "target_format"), TARGETS, ids=lambda v: str(v))
@pytest.mark.parametrize("split", [2, 3], ids=["aligned", "unaligned"])
def test_netcdf_char_and_strings_combined(
    tmp_path: Path, split: int, mode: str, target_format: int
) -> None:
    """netCDF char and string variables (not fixed bytes) were combined right already:
    kept so (they passed before the fix too)."""
    srcs = [_netcdf_source(tmp_path / "a", 0, split), _netcdf_source(tmp_path / "b", split, 6)]
    out = tmp_path / "out"
    report = _combine(srcs, out, mode, target_format)
    copied = (3 + 3 + 3, 0) if split == 2 else (3, 6)  # per array: t, c, name
    assert (report.chunks_copied, report.chunks_reencoded) == copied
    want = xr.concat([xr.open_dataset(nc_url(s), engine="netcdf4") for s in srcs], "t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "nczarr":
            back = xr.open_dataset(nc_url(out), engine="netcdf4").load()
        else:
            back = xr.open_zarr(out, consolidated=False).load()
    for name in ("c", "name"):
        np.testing.assert_array_equal(back[name].values, want[name].values, err_msg=name)


def test_a_plan_that_reads_none_of_a_parts_chunks_is_refused(tmp_path: Path) -> None:
    """The guard: a part storing chunks of an array under keys the plan does not name
    (``s/0.0.0`` for a 2-d ``s``, the bug above) is refused naming the array, rather
    than written as fill; a stale chunk past the part's extent is no such chunk."""
    group = zarr.open_group(tmp_path / "s.zarr", mode="w", zarr_format=2)
    array = group.create_array("s", shape=(2, 2), dtype="S4", chunks=(2, 1))
    array.attrs["_ARRAY_DIMENSIONS"] = ["t", "x"]
    model = nczarr.read(tmp_path / "s.zarr")
    with pytest.raises(MetadataError, match=r"chunk 's/0\.0\.0' of variable '/s'"):
        plan_growth([model, model], "t", [{"s/0.0"}, {"s/0.0.0"}])
    plan = plan_growth([model, model], "t", [{"s/0.0"}, {"s/7.0", "s/README"}])
    assert [c.target_key for c in plan.copies] == ["s/0.0"]


def test_bytes_without_the_dimension_are_compared(tmp_path: Path) -> None:
    """``lab`` (|S4, no ``t``) must be equal in every source: the comparison read no
    chunk of it either (the model's keys), saw fill in both and kept the first's."""
    srcs = [
        _zarr_python(tmp_path / "a.zarr", 2, 0, 4),
        _zarr_python(tmp_path / "b.zarr", 2, 4, 6),
    ]
    zarr.open_group(srcs[1])["lab"][:] = np.array([b"zz", b"yy"], dtype="S4")
    with pytest.raises(InvalidModeError, match="variable '/lab' does not have the dimension"):
        _combine(srcs, tmp_path / "out", "nczarr", 2)
    assert not (tmp_path / "out").exists()
