"""Every compression the netCDF4 wheel writes, from a ``.nc`` file to every target.

The wheel writes deflate (with and without shuffle), zstd, bzip2, blosc with each of
its compressors and shuffle modes, szip, fletcher32 and quantization (BitGroom,
GranularBitRound, BitRound: altered values under deflate). Every chunk with a Zarr
codec that decodes the same bytes is copied byte for byte (asserted against HDF5's
stored chunk); szip has none and is re-encoded, named in ``report.reencoded``. netCDF4
(NCZarr) and zarr-python (Zarr v2, v3) read the values netCDF4 reads from the file.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.errors import NCZarrWarning

from .ncfiles import assert_same_values, nc_values, stored_chunks

BLOSC = ("blosc_lz", "blosc_lz4", "blosc_lz4hc", "blosc_zlib", "blosc_zstd")
QUANTIZE = ("BitGroom", "GranularBitRound", "BitRound")


def _variants() -> dict[str, dict[str, Any]]:
    """createVariable keywords of every compression variant, by variable name."""
    out: dict[str, dict[str, Any]] = {
        "deflate": {"compression": "zlib", "complevel": 4},
        "deflate_shuffle": {"compression": "zlib", "shuffle": True},
        "deflate_fletcher": {"compression": "zlib", "shuffle": True, "fletcher32": True},
        "fletcher_only": {"fletcher32": True},
        "zstd": {"compression": "zstd", "complevel": 3},
        "bzip2": {"compression": "bzip2", "complevel": 9},
        "szip": {"compression": "szip", "szip_coding": "nn", "szip_pixels_per_block": 8},
    }
    for name in BLOSC:
        for shuffle in (0, 1, 2):
            out[f"{name}_{shuffle}"] = {
                "compression": name,
                "complevel": 4,
                "blosc_shuffle": shuffle,
            }
    for mode in QUANTIZE:
        out[f"quantize_{mode}"] = {
            "compression": "zlib",
            "significant_digits": 3,
            "quantize_mode": mode,
        }
    return out


VARIANTS = _variants()
REENCODED = {"/szip"}


def _build(path: Path) -> Path:
    data = np.repeat(np.arange(40, dtype="f4"), 30).reshape(4, 300) / 7
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("t", None)
        ds.createDimension("x", 300)
        for name, kwargs in VARIANTS.items():
            v = ds.createVariable(name, "f4", ("t", "x"), chunksizes=(2, 128), **kwargs)
            v[:] = data  # ragged along x: 300 = 128 + 128 + 44
    return path


def _v3_chunks(array: Path) -> dict[str, bytes]:
    """A Zarr v3 array's chunk objects by v2-style key (either chunk key encoding)."""
    out = {}
    for p in array.rglob("*"):
        rel = p.relative_to(array).as_posix()
        if p.is_file() and rel != "zarr.json":
            out[rel.removeprefix("c/").replace("/", ".")] = p.read_bytes()
    return out


def _convert(path: Path, out: Path, target: str, **extra: Any) -> nczarr.ConvertReport:
    with pytest.warns(NCZarrWarning) as caught:
        report = nczarr.convert(str(path), str(out), target, **extra)
    ours = [str(w.message) for w in caught if issubclass(w.category, NCZarrWarning)]
    assert ours == ["re-encoded array '/szip': HDF5 filter 'szip' (id 4) has no Zarr codec"]
    return report


@pytest.mark.parametrize("target", ["nczarr", "zarr"])
def test_every_compression_is_copied_byte_for_byte(tmp_path: Path, target: str) -> None:
    path = _build(tmp_path / "comp.nc")
    out = tmp_path / "out"
    report = _convert(path, out, target)
    assert {p for p, _ in report.reencoded} == REENCODED
    assert report.chunks_reencoded == 6  # szip: 2 x 3 chunks
    for name in VARIANTS:
        if f"/{name}" in REENCODED:
            continue
        copied = {p.name: p.read_bytes() for p in (out / name).iterdir() if p.name[0] != "."}
        assert copied == stored_chunks(path, name), name
    if target == "nczarr":
        got = nc_values(f"file://{out}#mode=nczarr,file")
    else:
        group = zarr.open_group(str(out), mode="r")
        got = {f"/{n}": a[...] for n, a in group.arrays()}
    assert_same_values(nc_values(str(path)), got)


def test_every_compression_in_zarr_v3(tmp_path: Path) -> None:
    path = _build(tmp_path / "comp.nc")
    out = tmp_path / "out3"
    report = _convert(path, out, "zarr", zarr_format=3)
    assert {p for p, _ in report.reencoded} == REENCODED
    for name in VARIANTS:
        if f"/{name}" not in REENCODED:
            assert _v3_chunks(out / name) == stored_chunks(path, name), name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        group = zarr.open_group(str(out), mode="r", zarr_format=3)
        got = {f"/{n}": a[...] for n, a in group.arrays()}
    assert_same_values(nc_values(str(path)), got)


def test_quantized_values_are_the_files(tmp_path: Path) -> None:
    path = _build(tmp_path / "comp.nc")
    with netCDF4.Dataset(path) as ds:  # quantization altered the values it stored
        assert "_QuantizeBitRoundNumberOfSignificantBits" in ds["quantize_BitRound"].ncattrs()
        assert not np.array_equal(ds["quantize_BitGroom"][...], ds["deflate"][...])
    with pytest.warns(NCZarrWarning, match="/szip"):
        dataset = nczarr.read(str(path))
    attrs = dataset.find_variable("/quantize_BitRound").attributes
    assert "_QuantizeBitRoundNumberOfSignificantBits" in attrs
