"""Stores written by zarr-python 2.18 and xarray 2024 (Zarr v2), with their readings.

Run by ``build.py`` inside a venv with ``zarr==2.18.*``, ``numcodecs<0.16``,
``numpy<2``, ``xarray`` 2024.x, ``pandas`` and ``cftime``::

    python make_zarr2.py OUTDIR

Each case writes ``OUTDIR/<name>/`` (a directory store) and ``OUTDIR/<name>.json``:
the producer, and what xarray's zarr engine and zarr-python read from it.
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


def _save(out: str, name: str, producer: str, **readings: object) -> None:
    record = {"name": name, "producer": producer, "zarr_format": 2, **readings}
    dump(record, os.path.join(out, f"{name}.json"))


def cf_numeric(out: str) -> None:
    """xarray's CF coders on numbers: packing with _FillValue, NaN and int fills, bool."""
    path = os.path.join(out, "x2_cf_numeric")
    temp = np.array([[271.15, np.nan, 300.5], [250.0, 260.25, np.nan]])
    ds = xr.Dataset(
        {
            "t_packed": (("y", "x"), temp, {"units": "K", "long_name": "packed temperature"}),
            "t_nan": (("y", "x"), temp.astype("f4"), {"units": "K"}),
            "count": (("y", "x"), np.array([[1, -999, 3], [4, 5, 6]], "i4")),
            "count_nofill": (("y", "x"), np.array([[0, 1, 2], [3, 4, 5]], "i2")),
            "flag": (("x",), np.array([True, False, True])),
            "level": ((), np.float64(850.0), {"positive": "down"}),
        },
        coords={"x": [10.0, 20.0, 30.0], "y": np.array([1, 2], "i8")},
        attrs={"title": "CF numeric encodings", "history": "made by make_zarr2.py"},
    )
    encoding = {
        "t_packed": {
            "dtype": "int16",
            "scale_factor": 0.01,
            "add_offset": 273.15,
            "_FillValue": -32767,
        },
        "count": {"_FillValue": -999},
        "count_nofill": {"_FillValue": None},
    }
    ds.to_zarr(path, mode="w", encoding=encoding, zarr_format=2)
    _save(out, "x2_cf_numeric", PRODUCER, xarray=xarray_reading(path), zarr=zarr_reading(path))


def cf_text(out: str) -> None:
    """xarray's text: S1 characters, fixed bytes |S5, <U unicode, object strings."""
    path = os.path.join(out, "x2_cf_text")
    ds = xr.Dataset(
        {
            "code": (("n",), np.array([b"ab", b"cdefg", b""], dtype="S5")),
            "letter": (("n",), np.array([b"x", b"y", b"z"], dtype="S1")),
            "name": (("n",), np.array(["alpha", "béta", ""], dtype="<U5")),
            "label": (("n",), np.array(["one", "two", "three"], dtype=object)),
        },
        attrs={"title": "text"},
    )
    ds.to_zarr(path, mode="w", zarr_format=2)
    _save(out, "x2_cf_text", PRODUCER, xarray=xarray_reading(path), zarr=zarr_reading(path))


def cf_time(out: str) -> None:
    """CF times with several calendars, NaT, and a timedelta."""
    import cftime

    path = os.path.join(out, "x2_cf_time")
    times = np.array(["2000-01-01T00:00", "2000-01-02T12:00", "NaT"], dtype="M8[ns]")
    noleap = [cftime.DatetimeNoLeap(2001, 2, 28), cftime.DatetimeNoLeap(2001, 3, 1)]
    d360 = [cftime.Datetime360Day(2001, 2, 30), cftime.Datetime360Day(2001, 3, 1)]
    ds = xr.Dataset(
        {
            "time": (("t",), times),
            "time_noleap": (("k",), noleap),
            "time_360": (("k",), d360),
            "duration": (("t",), np.array([3600, 5400, "NaT"], dtype="m8[s]").astype("m8[ns]")),
        }
    )
    ds.to_zarr(path, mode="w", zarr_format=2)
    _save(
        out,
        "x2_cf_time",
        PRODUCER,
        xarray=xarray_reading(path),
        zarr=zarr_reading(path),
    )


def stale_zmetadata(out: str) -> None:
    """An array added with zarr-python after xarray consolidated the metadata."""
    path = os.path.join(out, "x2_stale_zmetadata")
    ds = xr.Dataset({"a": (("x",), np.arange(4.0))})
    ds.to_zarr(path, mode="w", zarr_format=2)
    group = zarr.open_group(path, mode="a")
    late = group.create_dataset("late", data=np.arange(4, dtype="i4"), fill_value=None)
    late.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    late.attrs["added"] = "after consolidation"
    _save(
        out,
        "x2_stale_zmetadata",
        PRODUCER,
        xarray=xarray_reading(path, consolidated=False),
        xarray_consolidated=xarray_reading(path, consolidated=True),
        zarr=zarr_reading(path),
    )


def _array(group, name, data, dims, **kwargs):
    array = group.create_dataset(name, data=data, **kwargs)
    array.attrs["_ARRAY_DIMENSIONS"] = dims
    return array


def codecs(out: str) -> None:
    """Every numcodecs compressor and filter zarr 2 archives use, in one group.

    Written with zarr-python (xarray would add its CF encodings) but with
    ``_ARRAY_DIMENSIONS`` and no fill value, so xarray reads them too and nothing is
    a missing value.
    """
    from numcodecs import (
        BZ2,
        LZ4,
        LZMA,
        AsType,
        Blosc,
        Delta,
        FixedScaleOffset,
        GZip,
        PackBits,
        Quantize,
        Zlib,
        Zstd,
    )

    path = os.path.join(out, "z2_codecs")
    group = zarr.open_group(path, mode="w")
    ints = np.arange(24, dtype="<i4").reshape(4, 6) * 1001 - 7000
    reals = np.linspace(-3.5, 40.25, 24).reshape(4, 6)
    common = {"chunks": (2, 3), "fill_value": None}
    dims = ["y", "x"]
    for shuffle, label in ((Blosc.NOSHUFFLE, "noshuffle"), (Blosc.SHUFFLE, "shuffle")):
        comp = Blosc(cname="lz4", clevel=5, shuffle=shuffle)
        _array(group, f"blosc_{label}", ints, dims, compressor=comp, **common)
    comp = Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE)
    _array(group, "blosc_bitshuffle", ints, dims, compressor=comp, **common)
    for name, comp in (
        ("zstd", Zstd(level=3)),
        ("gzip", GZip(level=5)),
        ("lz4", LZ4()),
        ("zlib", Zlib(level=4)),
        ("bz2", BZ2(level=9)),
        ("lzma", LZMA()),
    ):
        _array(group, name, ints, dims, compressor=comp, **common)
    _array(group, "none", ints, dims, compressor=None, **common)
    _array(group, "delta", ints, dims, filters=[Delta(dtype="<i4")], **common)
    fso = FixedScaleOffset(offset=10, scale=100, dtype="<f8", astype="<i4")
    _array(group, "fixedscaleoffset", reals, dims, filters=[fso], **common)
    _array(group, "quantize", reals, dims, filters=[Quantize(digits=2, dtype="<f8")], **common)
    _array(
        group,
        "astype",
        reals,
        dims,
        filters=[AsType(encode_dtype="<f4", decode_dtype="<f8")],
        **common,
    )
    bits = np.array([[True, False, True, True, False, False]] * 4)
    _array(group, "packbits", bits, dims, filters=[PackBits()], chunks=(2, 3), fill_value=None)
    _array(group, "bool_plain", bits, dims, chunks=(2, 3), fill_value=None)
    nested = group.create_dataset(
        "nested", data=ints, dimension_separator="/", compressor=Zlib(1), **common
    )
    nested.attrs["_ARRAY_DIMENSIONS"] = dims
    _array(group, "fortran", ints, dims, order="F", compressor=Zlib(1), **common)
    group.attrs["title"] = "numcodecs"
    zarr.consolidate_metadata(path)
    _save(out, "z2_codecs", PRODUCER, xarray=xarray_reading(path), zarr=zarr_reading(path))


def objects(out: str) -> None:
    """Object arrays: Categorize, JSON and VLenUTF8 (xarray 2024 refuses the first two,
    so only zarr-python's reading is recorded)."""
    from numcodecs import JSON, Categorize, VLenUTF8

    path = os.path.join(out, "z2_objects")
    group = zarr.open_group(path, mode="w")
    labels = ["low", "mid", "high"]
    words = np.array(["low", "high", "mid", "low", "mid", "high"], dtype=object)
    _array(
        group,
        "categorize",
        words,
        ["x"],
        chunks=(3,),
        fill_value=None,
        dtype=object,
        filters=[Categorize(labels, dtype=object)],
    )
    _array(group, "vlen_utf8", words, ["x"], chunks=(3,), dtype=object, object_codec=VLenUTF8())
    _array(
        group,
        "json",
        np.array(["a", 1, [2, 3], None, {"k": "v"}, 4.5], dtype=object),
        ["x"],
        chunks=(3,),
        dtype=object,
        object_codec=JSON(),
    )
    zarr.consolidate_metadata(path)
    _save(out, "z2_objects", PRODUCER, zarr=zarr_reading(path))


def bitshuffle(out: str) -> None:
    """Blosc with bit-shuffle (and AUTOSHUFFLE, bit-shuffle for 1-byte items) on
    every item size, each internal compressor, as zarr-python 2 archives hold them."""
    from numcodecs import Blosc

    path = os.path.join(out, "z2_bitshuffle")
    group = zarr.open_group(path, mode="w")
    data = {
        "u1": np.arange(24, dtype="u1").reshape(4, 6) * 7,
        "i2": (np.arange(24, dtype="<i2").reshape(4, 6) - 12) * 301,
        "f4": np.linspace(-1.5, 2.5, 24, dtype="<f4").reshape(4, 6),
        "f8": np.linspace(-3.5, 40.25, 24).reshape(4, 6),
        "i8": np.arange(24, dtype="<i8").reshape(4, 6) * 10**12,
    }
    for cname in ("lz4", "zstd", "blosclz", "zlib", "lz4hc"):
        for kind, values in data.items():
            comp = Blosc(cname=cname, clevel=5, shuffle=Blosc.BITSHUFFLE)
            _array(
                group,
                f"{cname}_{kind}",
                values,
                ["y", "x"],
                chunks=(2, 3),
                compressor=comp,
                fill_value=None,
            )
    for kind in ("u1", "f8"):
        comp = Blosc(cname="lz4", clevel=5, shuffle=Blosc.AUTOSHUFFLE)
        _array(
            group,
            f"auto_{kind}",
            data[kind],
            ["y", "x"],
            chunks=(2, 3),
            compressor=comp,
            fill_value=None,
        )
    big = _array(
        group,
        "big_i4",
        data["i2"].astype(">i4"),
        ["y", "x"],
        chunks=(2, 3),
        compressor=Blosc(cname="zstd", shuffle=Blosc.BITSHUFFLE),
        fill_value=None,
    )
    big.attrs["note"] = "big-endian, bit-shuffled"
    zarr.consolidate_metadata(path)
    _save(out, "z2_bitshuffle", PRODUCER, xarray=xarray_reading(path), zarr=zarr_reading(path))


def plain(out: str) -> None:
    """zarr-python alone: default fill values, fill_value null/NaN/Infinity,
    structured and datetime64 dtypes, unwritten chunks, no ``_ARRAY_DIMENSIONS``."""
    path = os.path.join(out, "z2_plain")
    group = zarr.open_group(path, mode="w")
    group.create_dataset("zeros_default", data=np.array([0, 1, 2, 3], "i4"), chunks=(2,))
    partial = group.create_dataset("partial", shape=(6,), chunks=(2,), dtype="f8", fill_value=-1.5)
    partial[:2] = [0.5, 1.5]
    group.create_dataset("fill_null", data=np.array([1, 2], "i2"), fill_value=None)
    group.create_dataset("fill_nan", data=np.array([np.nan, 1.0]), fill_value=np.nan)
    group.create_dataset("fill_inf", data=np.array([np.inf, 1.0]), fill_value=np.inf)
    point = np.dtype([("a", "<i4"), ("b", "<f8")])
    group.create_dataset("structured", data=np.array([(1, 2.5), (3, 4.5)], dtype=point))
    group.create_dataset(
        "stamps", data=np.array(["2020-01-01", "2020-06-30"], dtype="M8[s]"), fill_value=None
    )
    group.create_dataset("flags", data=np.array([True, False, True]), fill_value=False)
    group.attrs.update(
        {"is_ok": True, "missing": None, "meta": {"a": 1, "b": [1, 2]}, "grid": [[1, 2], [3, 4]]}
    )
    _save(out, "z2_plain", PRODUCER, zarr=zarr_reading(path))


CASES = [cf_numeric, cf_text, cf_time, stale_zmetadata, codecs, objects, plain, bitshuffle]

if __name__ == "__main__":
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    chosen = set(sys.argv[2:])  # build.py --cases: only these
    for case in CASES:
        if not chosen or case.__name__ in chosen:
            case(outdir)
            print("wrote", case.__name__)
