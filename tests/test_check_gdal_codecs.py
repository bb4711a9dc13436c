"""``nczarr check`` knows which Zarr v2 codecs GDAL 3.12 decodes: measured with the real GDAL.

GDAL's Zarr driver (the libgdal the ``pyogrio`` wheel bundles, through
``tests/gdalreader.py``) is given one array per numcodecs filter zarr-python 2
archives use, each compressed with ``zlib`` (which every libgdal has): the arrays
GDAL cannot read are the ones ``check`` reports for GDAL, and no other.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.translate.compat import GDAL

from .gdalreader import read_zarr

REALS = np.linspace(-3.5, 40.25, 24).reshape(4, 6)
INTS = np.arange(24, dtype="<i4").reshape(4, 6)
BITS = np.array([[True, False, True, True, False, False]] * 4)

#: name -> (data, filters); GDAL reads the first group, fails on the second.
READ = {
    "plain": (INTS, None),
    "delta": (INTS, [numcodecs.Delta(dtype="<i4")]),
    "shuffle": (INTS, [numcodecs.Shuffle(elementsize=4)]),
    "quantize": (REALS, [numcodecs.Quantize(digits=2, dtype="<f8")]),
}
FAILS = {
    "fixedscaleoffset": (
        REALS,
        [numcodecs.FixedScaleOffset(offset=10, scale=100, dtype="<f8", astype="<i4")],
    ),
    "astype": (REALS, [numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")]),
    "packbits": (BITS, [numcodecs.PackBits()]),
    "fletcher32": (INTS, [numcodecs.Fletcher32()]),
    "crc32": (INTS, [numcodecs.CRC32()]),
    "delta_astype": (INTS, [numcodecs.Delta(dtype="<i4", astype="<i2")]),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gdal") / "codecs.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        for name, (data, filters) in {**READ, **FAILS}.items():
            array = root.create_array(
                name,
                shape=data.shape,
                chunks=(2, 3),
                dtype=data.dtype,
                filters=filters,
                compressors=numcodecs.Zlib(level=1),
                fill_value=None,
            )
            array[...] = data
            array.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
        bz2 = root.create_array(
            "bz2", shape=(4, 6), chunks=(2, 3), dtype="<i4", compressors=numcodecs.BZ2(level=1)
        )
        bz2[...] = INTS
        bz2.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    return path


@pytest.mark.parametrize("name", sorted(READ))
def test_gdal_reads_these_and_check_says_nothing(name: str, store: Path) -> None:
    seen = read_zarr(store).arrays[f"/{name}"]
    assert seen.error is None
    np.testing.assert_array_equal(seen.values, zarr.open_array(str(store / name))[...])
    report = nczarr.check(str(store))
    assert [f for f in report.for_reader(GDAL) if f.where == f"/{name}"] == []


@pytest.mark.parametrize("name", [*sorted(FAILS), "bz2"])
def test_gdal_fails_on_these_and_check_says_so(name: str, store: Path) -> None:
    seen = read_zarr(store).arrays[f"/{name}"]
    assert seen.error is not None and seen.values is None
    report = nczarr.check(str(store))
    found = [f for f in report.for_reader(GDAL) if f.where == f"/{name}"]
    assert "fails" in {f.severity for f in found}  # (packbits: also "bool shown as uint8")
    assert not report.ok
