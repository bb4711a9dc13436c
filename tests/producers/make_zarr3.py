"""Stores written by zarr-python 3 and xarray in Zarr v3 (their defaults), with readings.

Run by ``build.py`` inside a venv with the newest ``zarr`` 3 and ``xarray``::

    python make_zarr3.py OUTDIR
"""

from __future__ import annotations

import os
import sys

import numcodecs
import numpy as np
import xarray as xr
import zarr
from readings import xarray_reading, zarr_reading
from record import dump

PRODUCER = f"zarr {zarr.__version__}, numcodecs {numcodecs.__version__}, xarray {xr.__version__}"


def _save(out: str, name: str, **readings: object) -> None:
    record = {"name": name, "producer": PRODUCER, "zarr_format": 3, **readings}
    dump(record, os.path.join(out, f"{name}.json"))


def cf_numeric(out: str) -> None:
    """xarray v3: _FillValue as an attribute, packing, NaN fill, int fill, bool, text."""
    path = os.path.join(out, "x3_cf_numeric")
    temp = np.array([[271.15, np.nan, 300.5], [250.0, 260.25, np.nan]])
    ds = xr.Dataset(
        {
            "t_packed": (("y", "x"), temp, {"units": "K"}),
            "t_nan": (("y", "x"), temp.astype("f4")),
            "count": (("y", "x"), np.array([[1, -999, 3], [4, 5, 6]], "i4")),
            "zero_data": (("x",), np.array([0, 1, 2], "i4")),
            "flag": (("x",), np.array([True, False, True])),
            "name": (("x",), np.array(["a", "bc", "déf"], dtype="<U3")),
            "label": (("x",), np.array(["one", "two", "three"], dtype=object)),
        },
        coords={"x": [10.0, 20.0, 30.0]},
        attrs={"title": "xarray v3", "flag_attr": "yes"},
    )
    encoding = {
        "t_packed": {
            "dtype": "int16",
            "scale_factor": 0.01,
            "add_offset": 273.15,
            "_FillValue": -32767,
        },
        "count": {"_FillValue": -999},
    }
    ds.to_zarr(path, mode="w", encoding=encoding, zarr_format=3)
    _save(out, "x3_cf_numeric", xarray=xarray_reading(path), zarr=zarr_reading(path))


def defaults(out: str) -> None:
    """zarr-python 3 alone: c/ keys, sharding (crc32c index), transpose, big-endian
    bytes, vlen-utf8, dimension_names with nulls, fill values, JSON attributes."""
    path = os.path.join(out, "z3_defaults")
    root = zarr.open_group(path, mode="w", zarr_format=3)
    ints = np.arange(24, dtype="i4").reshape(4, 6)
    plain = root.create_array(
        "plain", shape=(4, 6), chunks=(2, 3), dtype="i4", dimension_names=["y", "x"]
    )
    plain[...] = ints
    sharded = root.create_array(
        "sharded",
        shape=(4, 6),
        chunks=(2, 3),
        shards=(4, 6),
        dtype="f8",
        dimension_names=["y", "x"],
        fill_value=-1.0,
    )
    sharded[:2, :] = ints[:2].astype("f8")
    transposed = root.create_array(
        "transposed",
        shape=(4, 6),
        chunks=(2, 3),
        dtype="i2",
        dimension_names=["y", "x"],
        filters=[zarr.codecs.TransposeCodec(order=(1, 0))],
    )
    transposed[...] = ints.astype("i2")
    big = root.create_array(
        "big",
        shape=(6,),
        chunks=(3,),
        dtype=">i4",
        dimension_names=["x"],
        serializer=zarr.codecs.BytesCodec(endian="big"),
        compressors=[zarr.codecs.Crc32cCodec()],
    )
    big[...] = np.arange(6, dtype=">i4") - 3
    words = root.create_array("words", shape=(3,), chunks=(2,), dtype=str, dimension_names=["n"])
    words[...] = np.array(["alpha", "", "gamma"], dtype=object)
    anon = root.create_array(
        "anon", shape=(2, 3), chunks=(2, 3), dtype="u1", dimension_names=[None, "x3"]
    )
    anon[...] = np.arange(6, dtype="u1").reshape(2, 3)
    flags = root.create_array("flags", shape=(3,), chunks=(3,), dtype=bool, dimension_names=["n"])
    flags[...] = [True, False, True]
    root.attrs.update(
        {"is_ok": True, "missing": None, "meta": {"a": 1, "b": [1, 2]}, "grid": [[1, 2], [3, 4]]}
    )
    _save(out, "z3_defaults", zarr=zarr_reading(path))


def bitshuffle(out: str) -> None:
    """zarr-python 3's BloscCodec with ``shuffle: bitshuffle`` (and its own typesize) on
    every item size, plus the numcodecs filters archives carry into v3
    (``numcodecs.fixedscaleoffset``, ``numcodecs.packbits`` ...)."""
    from zarr.codecs import BloscCodec
    from zarr.codecs import numcodecs as v3

    path = os.path.join(out, "z3_bitshuffle")
    root = zarr.open_group(path, mode="w", zarr_format=3)
    data = {
        "u1": np.arange(24, dtype="u1").reshape(4, 6) * 7,
        "i2": (np.arange(24, dtype="i2").reshape(4, 6) - 12) * 301,
        "f4": np.linspace(-1.5, 2.5, 24, dtype="f4").reshape(4, 6),
        "f8": np.linspace(-3.5, 40.25, 24).reshape(4, 6),
    }
    for cname in ("lz4", "zstd", "blosclz"):
        for kind, values in data.items():
            blosc = BloscCodec(cname=cname, clevel=5, shuffle="bitshuffle")
            array = root.create_array(
                f"{cname}_{kind}",
                shape=values.shape,
                chunks=(2, 3),
                dtype=values.dtype,
                compressors=[blosc],
                dimension_names=["y", "x"],
            )
            array[...] = values
    sharded = root.create_array(
        "sharded_f4",
        shape=(4, 6),
        chunks=(2, 3),
        shards=(4, 6),
        dtype="f4",
        compressors=[BloscCodec(cname="zstd", shuffle="bitshuffle")],
        dimension_names=["y", "x"],
    )
    sharded[...] = data["f4"]
    filtered = {
        "fixedscaleoffset": (
            data["f8"],
            v3.FixedScaleOffset(offset=10, scale=100, dtype="<f8", astype="<i4"),
        ),
        "astype": (data["f8"], v3.AsType(encode_dtype="<f4", decode_dtype="<f8")),
        "quantize": (data["f8"], v3.Quantize(digits=2, dtype="<f8")),
        "packbits": (data["u1"] % 2 == 1, v3.PackBits()),
        "delta": (data["i2"], v3.Delta(dtype="<i2")),
    }
    for name, (values, codec) in filtered.items():
        array = root.create_array(
            name,
            shape=values.shape,
            chunks=(2, 3),
            dtype=values.dtype,
            filters=[codec],
            compressors=[BloscCodec(cname="lz4", shuffle="bitshuffle")],
            dimension_names=["y", "x"],
        )
        array[...] = values
    _save(out, "z3_bitshuffle", xarray=xarray_reading(path), zarr=zarr_reading(path))


CASES = [cf_numeric, defaults, bitshuffle]

if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    chosen = set(sys.argv[2:])  # build.py --cases: only these
    for case in CASES:
        if not chosen or case.__name__ in chosen:
            case(sys.argv[1])
            print("wrote", case.__name__)
