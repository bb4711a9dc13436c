"""Growing a store, differentially: sources written by their producers (netCDF4 as
NCZarr stores and netCDF-3/netCDF-4 files, xarray as Zarr v2 and v3) are combined
(``convert([...], dst, concat_dim=...)``) into every target kind, or appended
(``convert(src, dst, append_dim=...)``, ``to_nczarr(ds, url, mode="a", ...)``), and
what every reader of the result sees is compared with ``xr.concat`` of the sources as
each source's own reader reads them: values, masks, dtypes, ``_FillValue``, packing
and attributes (issue 20: the producer is the oracle).

A systematic table, not a search: each row varies one thing (type, fill value,
masked values, packing, chunk alignment, lengths including an empty source, fixed or
unlimited dimension, compression, a scalar, strings) from a small base dataset.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr

from .ncoracle import nc_url

#: What a target kind is, as ``convert``'s arguments.
TARGETS: dict[str, dict[str, Any]] = {
    "nczarr": {},
    "zarr2": {"mode": "zarr", "zarr_format": 2},
    "zarr3": {"mode": "zarr", "zarr_format": 3},
}

#: netCDF4's formats of a source (``nczarr``: an NCZarr directory store).
NC_KINDS = ("nczarr", "NETCDF4", "NETCDF4_CLASSIC", "NETCDF3_64BIT_OFFSET")


def _values(dtype: str, t0: int, n: int) -> np.ndarray:
    """Days ``t0 .. t0+n-1`` of ``v`` (3 values a day), distinct from any fill."""
    base = np.arange(t0 * 3, (t0 + n) * 3).reshape(n, 3)
    return (
        (base * 0.5).astype(dtype)
        if np.dtype(dtype).kind == "f"
        else (base % 100 + 1).astype(dtype)
    )


def nc_source(
    path: Path,
    kind: str,
    *,
    t0: int = 0,
    n: int = 3,
    dtype: str = "f4",
    fill: str = "value",
    masked: bool = False,
    packed: bool = False,
    chunk: int = 2,
    unlimited: bool = True,
    zlib: bool = False,
    scalar: bool = False,
    strings: bool = False,
    missing_value: int | None = None,
) -> Path:
    """Days ``t0 .. t0+n-1`` written by netCDF4 (``kind``: one of :data:`NC_KINDS`):
    ``time(time)``, ``x(x)`` (3, not on the dimension) and ``v(time, x)`` of
    ``dtype``, whose ``fill`` is ``"value"`` (-7 or 99), ``"default"`` (netCDF's) or
    ``"none"``; ``masked``: its second value of the first day is missing; ``packed``:
    ``scale_factor``/``add_offset`` (float); ``missing_value``: that attribute
    (of ``v``'s type, another missing value); ``scalar``: a 0-d ``s``; ``strings``:
    ``name(time)`` and ``station(x)`` of netCDF strings (netCDF-4 only)."""
    url, fmt = (nc_url(path), "NETCDF4") if kind == "nczarr" else (str(path), kind)
    nc3 = fmt.startswith("NETCDF3")
    with netCDF4.Dataset(url, "w", format=fmt) as ds:
        ds.createDimension("time", None if unlimited else n)
        ds.createDimension("x", 3)
        chunks = {} if nc3 else {"chunksizes": (chunk,)}
        t = ds.createVariable("time", "f8", ("time",), **chunks)
        t.units = "days since 2000-01-01"
        t[:] = np.arange(t0, t0 + n)
        ds.createVariable("x", "i4", ("x",))[:] = [10, 20, 30]
        opts: dict[str, Any] = (
            {} if nc3 else {"chunksizes": (chunk, 3), "zlib": zlib, "shuffle": zlib}
        )
        if fill == "value":
            opts["fill_value"] = np.array(-7 if np.dtype(dtype).kind in "if" else 99, dtype)
        elif fill == "none":
            opts["fill_value"] = False
        v = ds.createVariable("v", dtype, ("time", "x"), **opts)
        v.long_name = "vee"
        if missing_value is not None:
            v.missing_value = np.array(missing_value, dtype)
        if packed:
            v.scale_factor = np.float32(0.5)
            v.add_offset = np.float32(1.0)
            v.set_auto_maskandscale(False)
        data = _values(dtype, t0, n)
        if masked and n and fill != "none":
            data = np.ma.masked_array(data, mask=np.zeros(data.shape, bool))
            data[0, 1] = np.ma.masked
        v[:] = data
        if scalar:
            ds.createVariable("s", "f8", ())[...] = 3.5
        if strings:
            names = ds.createVariable("name", str, ("time",), **chunks)
            for i in range(n):
                names[i] = f"n{t0 + i}" * (1 + i % 2)
            station = ds.createVariable("station", str, ("x",))
            for i, text in enumerate(("a", "bé", "ccc")):
                station[i] = text
        ds.title = "grown"
    return path


def zarr_source(path: Path, zarr_format: int, **options: Any) -> Path:
    """The dataset of :func:`nc_source` (``options``) written by xarray as Zarr
    ``zarr_format``, with the same encoding (chunks along ``time``, fill, packing)."""
    staged = path.with_name(path.name + ".nc")
    nc_source(staged, "NETCDF4", **options)
    with xr.open_dataset(staged, engine="netcdf4", decode_times=False) as opened:
        ds = opened.load()
    encoding = {}
    for name, var in ds.variables.items():
        enc: dict[str, Any] = {"_FillValue": var.encoding.get("_FillValue")}
        if var.dims[:1] == ("time",):
            enc["chunks"] = (options.get("chunk", 2), *var.shape[1:])
        for key in ("scale_factor", "add_offset", "dtype"):
            if key in var.encoding:
                enc[key] = var.encoding[key]
        if var.dtype.kind in "OU":
            enc.pop("_FillValue")
        encoding[name] = enc
    ds.to_zarr(path, zarr_format=zarr_format, consolidated=False, encoding=encoding)
    staged.unlink()
    return path


def make_source(path: Path, kind: str, **options: Any) -> Path:
    """A source of ``kind`` (:data:`NC_KINDS`, ``zarr2`` or ``zarr3``)."""
    if kind.startswith("zarr"):
        return zarr_source(path, int(kind[-1]), **options)
    return nc_source(path, kind, **options)


def read_source(path: Path, kind: str) -> xr.Dataset:
    """``path`` as its producer's reader reads it through xarray (times undecoded)."""
    if kind == "nczarr":
        opened = xr.open_dataset(nc_url(path), engine="netcdf4", decode_times=False)
    elif kind.startswith("zarr"):
        opened = xr.open_dataset(path, engine="zarr", consolidated=False, decode_times=False)
    else:
        opened = xr.open_dataset(path, engine="netcdf4", decode_times=False)
    with opened:
        return opened.load()


def read_result(path: Path, target: str) -> dict[str, xr.Dataset]:
    """Every reader's view of a result: nczarr's engine, and netCDF4 for an NCZarr
    target."""
    out = {"nczarr": xr.open_dataset(path, engine="nczarr", decode_times=False).load()}
    if target == "nczarr":
        out["netCDF4"] = read_source(path, "nczarr")
    return out


def concat(parts: list[xr.Dataset]) -> xr.Dataset:
    """``xr.concat`` of the sources' readings along ``time``: what the result must read as."""
    return xr.concat(
        parts,
        dim="time",
        data_vars="minimal",
        coords="minimal",
        compat="equals",
        combine_attrs="identical",
    )


def _nan_or_none(a: Any, b: Any) -> bool:
    """Whether two float ``_FillValue`` encodings are each NaN or absent: the same
    values decode from both. A pure Zarr v2 copy of a Zarr v3 float array whose
    ``fill_value`` is NaN (no ``_FillValue``) keeps its v3 source's conventions
    (no ``_NCProperties``), by which a v2 ``fill_value`` is xarray's missing value:
    readers show ``_FillValue`` NaN in its encoding, as xarray's zarr engine does."""

    def nan_or_none(x: Any) -> bool:
        return x is None or bool(np.isnan(np.asarray(x, dtype=float)))

    return nan_or_none(a) and nan_or_none(b)


def differences(got: xr.Dataset, want: xr.Dataset) -> list[str]:
    """What differs between two readings: variables, dtypes, values (NaN equal to
    NaN), attributes, ``_FillValue`` and packing, and the packing's types (they decide
    the unpacked dtype; a ``_FillValue``'s JSON type in pure Zarr does not)."""
    out = [] if got.attrs == want.attrs else [f"attributes {got.attrs} != {want.attrs}"]
    for name in sorted(set(got.variables) | set(want.variables)):
        if name not in got.variables or name not in want.variables:
            out.append(f"{name}: in one reading only")
            continue
        g, w = got[name], want[name]
        if g.dtype != w.dtype or g.dims != w.dims:
            out.append(f"{name}: {g.dtype}{g.dims} != {w.dtype}{w.dims}")
        elif not g.variable.equals(w.variable):
            out.append(f"{name}: values {g.values.tolist()} != {w.values.tolist()}")
        if g.attrs != w.attrs:
            out.append(f"{name}: attributes {g.attrs} != {w.attrs}")
        for key in ("_FillValue", "scale_factor", "add_offset"):
            a, b = g.encoding.get(key), w.encoding.get(key)
            if key == "_FillValue" and g.dtype.kind == "f" and _nan_or_none(a, b):
                continue  # a NaN missing value masks nothing in floats (see below)
            if (a is None) != (b is None) or (
                a is not None and not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
            ):
                out.append(f"{name}: {key} {a!r} != {b!r}")
            elif key != "_FillValue" and np.asarray(a).dtype != np.asarray(b).dtype:
                out.append(f"{name}: {key} of type {np.asarray(a).dtype} != {np.asarray(b).dtype}")
    return out


def _sources(tmp_path: Path, kinds: list[str], lengths: list[int], **options: Any) -> list[Path]:
    """One source of each kind, of consecutive days of those lengths."""
    paths, t0 = [], 0
    for i, (kind, n) in enumerate(zip(kinds, lengths, strict=True)):
        suffix = ".nc" if kind.startswith("NETCDF") else ""
        paths.append(make_source(tmp_path / f"s{i}{suffix}", kind, t0=t0, n=n, **options))
        t0 += n
    return paths


# ------------------------------------------------------------------ appending
def test_to_nczarr_appends_to_a_store_packed_with_float_attributes(tmp_path: Path) -> None:
    """A store packed by netCDF4 with ``float`` (32-bit) ``scale_factor`` and
    ``add_offset``: ``to_nczarr(mode="a")`` packs the new values as the store does, with
    attributes of the store's type (a Python float, written as ``double``, made the
    append refuse "attribute(s) /v/add_offset, /v/scale_factor differ")."""
    store, new = _sources(
        tmp_path, ["nczarr", "nczarr"], [3, 2], dtype="i2", packed=True, masked=True
    )
    want = concat([read_source(store, "nczarr"), read_source(new, "nczarr")])
    nczarr.to_nczarr(read_source(new, "nczarr"), store, mode="a", append_dim="time")
    for reader, got in read_result(store, "nczarr").items():
        assert differences(got, want) == [], reader
    # a dataset made from scratch, encoded by the store alone, appends too
    fresh = read_source(new, "nczarr")
    fresh["time"] = fresh["time"].copy(data=[5.0, 6.0])
    for var in fresh.variables.values():
        var.encoding = {}
    nczarr.to_nczarr(fresh, store, mode="a", append_dim="time")
    with netCDF4.Dataset(nc_url(store)) as ds:
        assert ds["v"].scale_factor.dtype == np.float32
        np.testing.assert_array_equal(ds["time"][:], np.arange(7))
        np.testing.assert_array_equal(ds["v"][5:], ds["v"][3:5])


@pytest.mark.filterwarnings("ignore:variable 'v' has multiple fill values")  # xarray reading
def test_to_nczarr_appends_to_a_store_with_a_missing_value(tmp_path: Path) -> None:
    """A store whose variable has a ``missing_value`` besides its ``_FillValue``
    (xarray reads both as missing and keeps ``missing_value`` in the encoding):
    ``to_nczarr(mode="a")`` gives the new part the store's ``missing_value`` too, as
    an attribute (xarray refuses to encode one beside a different ``_FillValue``; the
    part had none, so the append was refused, "attribute(s) /v/missing_value
    differ")."""
    store, new = _sources(
        tmp_path, ["nczarr", "nczarr"], [3, 2], dtype="i2", missing_value=-5, masked=True
    )
    want = concat([read_source(store, "nczarr"), read_source(new, "nczarr")])
    nczarr.to_nczarr(read_source(new, "nczarr"), store, mode="a", append_dim="time")
    for reader, got in read_result(store, "nczarr").items():
        assert differences(got, want) == [], reader
    with netCDF4.Dataset(nc_url(store)) as ds:
        assert ds["v"].missing_value.dtype == np.int16


def _unsigned_bytes(path: Path, t0: int) -> Path:
    """A netCDF-3 file of days ``t0 .. t0+2``: ``b(time)``, signed bytes with
    ``_Unsigned = "true"`` (netCDF-3's unsigned bytes: 200, 10, missing)."""
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createVariable("time", "f8", ("time",))[:] = np.arange(t0, t0 + 3)
        b = ds.createVariable("b", "i1", ("time",), fill_value=np.int8(-1))
        b._Unsigned = "true"
        b.set_auto_maskandscale(False)
        b[:] = np.array([200, 10, 255], "u1").view("i1")
    return path


def test_to_nczarr_appends_unsigned_bytes_as_the_store_stores_them(tmp_path: Path) -> None:
    """A store of netCDF-3's unsigned bytes (``byte`` with ``_Unsigned = "true"``):
    ``to_nczarr(mode="a")`` of xarray's reading (``uint8`` values, ``_Unsigned`` in the
    encoding) stores them as the store does, signed with ``_Unsigned`` (without it, 200
    was refused as outside ``int8``'s range)."""
    first, other = _unsigned_bytes(tmp_path / "a.nc", 0), _unsigned_bytes(tmp_path / "b.nc", 3)
    want = concat([read_source(first, "NETCDF4"), read_source(other, "NETCDF4")])
    nczarr.convert(first, tmp_path / "store")
    nczarr.to_nczarr(read_source(other, "NETCDF4"), tmp_path / "store", mode="a", append_dim="time")
    # nczarr's engine (netCDF4 ignores _Unsigned on NCZarr: netcdf-c reads it back "1")
    assert differences(read_result(tmp_path / "store", "nczarr")["nczarr"], want) == []
    with netCDF4.Dataset(nc_url(tmp_path / "store")) as ds:
        ds.set_auto_maskandscale(False)
        assert ds["b"].dtype == np.int8
        assert ds["b"][:].view("u1").tolist() == [200, 10, 255] * 2


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("combine_attrs", ["identical", "override"])
def test_a_differing_fill_value_is_refused_without_offering_override(
    tmp_path: Path, combine_attrs: str
) -> None:
    """Sources whose ``_FillValue`` differs (-7, and netCDF's default) cannot be
    combined whatever ``combine_attrs`` is: the refusal names the attribute and says
    why, and never offers ``combine_attrs='override'``, which refuses it too (it
    offered it); nothing is written."""
    first = nc_source(tmp_path / "a", "nczarr")
    other = nc_source(tmp_path / "b", "nczarr", t0=3, fill="default")
    with pytest.raises(nczarr.InvalidModeError, match="what the stored values mean") as err:
        nczarr.convert(
            [first, other], tmp_path / "out", concat_dim="time", combine_attrs=combine_attrs
        )
    assert "/v/_FillValue" in str(err.value) and "override" not in str(err.value)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# ------------------------------------------------------------------ combining
@pytest.mark.parametrize("target", ["zarr2", "zarr3"])
def test_strings_of_a_netcdf4_file_and_an_nczarr_store_combine_into_pure_zarr(
    tmp_path: Path, target: str
) -> None:
    """netCDF strings of a netCDF-4 file (variable-length) and of an NCZarr store
    (fixed-width UTF-8 bytes) combine into pure Zarr as they do into NCZarr: each
    part's values are taken as text whatever its storage (the combine was refused,
    "variable '/name' stores its values differently"), ``station``, without the
    dimension, compared as text."""
    kinds = ["NETCDF4", "nczarr"]
    paths = _sources(tmp_path, kinds, [3, 2], strings=True)
    want = concat([read_source(p, k) for p, k in zip(paths, kinds, strict=True)])
    # the file's strings are heap references: its chunks are read through a view
    with pytest.warns(nczarr.NCZarrWarning) as record:
        nczarr.convert(paths, tmp_path / "out", concat_dim="time", **TARGETS[target])
    said = [str(w.message) for w in record]
    for name in ("name", "station"):
        assert any(f"array '/{name}'" in m and "heap references" in m for m in said), said
    for reader, got in read_result(tmp_path / "out", target).items():
        assert differences(got, want) == [], reader


def test_variable_length_strings_after_fixed_width_ones_are_refused_naming_them(
    tmp_path: Path,
) -> None:
    """Into pure Zarr, the first source's fixed-width strings (an NCZarr store's) set
    the target's width; a later source's variable-length strings (a netCDF-4 file's)
    are not measured before writing, so the combine is refused naming the variable and
    saying what takes them; nothing is written."""
    paths = _sources(tmp_path, ["nczarr", "NETCDF4"], [3, 2], strings=True)
    with pytest.raises(nczarr.InvalidModeError, match="'/name' holds variable-length strings"):
        nczarr.convert(paths, tmp_path / "out", concat_dim="time", mode="zarr", zarr_format=2)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("target", list(TARGETS))
def test_wide_characters_after_narrow_bytes_widen_the_target(tmp_path: Path, target: str) -> None:
    """The first source stores strings as 4 UTF-8 bytes (an NCZarr store with
    ``_nczarr_default_maxstrlen`` 4), the second as 4 characters (xarray's ``<U4``):
    ``"éééé"`` is 8 bytes, so a target of bytes is 16 wide (4 bytes a character), not
    4 (into pure Zarr this was refused, "stores its values differently"; as text in a
    4-byte target it would fail while writing, "a value of 8 bytes does not fit")."""
    url = nc_url(tmp_path / "a")
    with netCDF4.Dataset(url, "w") as ds:
        ds.setncattr("_nczarr_default_maxstrlen", 4)
        ds.createDimension("time", None)
        ds.createVariable("time", "f8", ("time",))[:] = [0.0, 1.0]
        names = ds.createVariable("name", str, ("time",))
        names[0], names[1] = "ab", "cd"
    wide = xr.Dataset(
        {"name": ("time", np.array(["éééé", "x"], dtype="<U4"))}, coords={"time": [2.0, 3.0]}
    )
    wide.to_zarr(tmp_path / "b", zarr_format=2, encoding={"time": {"_FillValue": None}})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        nczarr.convert(
            [tmp_path / "a", tmp_path / "b"],
            tmp_path / "out",
            concat_dim="time",
            combine_attrs="override",  # the store's _nczarr_default_maxstrlen
            **TARGETS[target],
        )
    assert _others(seen) == []
    got = read_result(tmp_path / "out", target)["nczarr"]
    assert got["name"].values.tolist() == ["ab", "cd", "éééé", "x"]


def _others(seen: list[warnings.WarningMessage]) -> list[str]:
    """Warnings nczarr gave of a category other than :class:`nczarr.NCZarrWarning`
    (another library's, e.g. h5py's on import, are not nczarr's to answer for)."""
    home = Path(nczarr.__file__).parent
    return [
        str(w.message)
        for w in seen
        if w.category is not nczarr.NCZarrWarning and Path(w.filename).is_relative_to(home)
    ]


def _combined(tmp_path: Path, paths: list[Path], target: str) -> None:
    """``paths`` combined into ``tmp_path/out`` as ``target``; the announcements met on
    the way (fill values, re-encoded chunks) are the single-source convert's, asserted
    by the tests about them, so only nczarr's warnings of other categories fail here."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        nczarr.convert(paths, tmp_path / "out", concat_dim="time", **TARGETS[target])
    assert _others(seen) == []


#: Source kinds and lengths: each of a kind (lengths unaligned with chunks of 2, or
#: aligned), an empty source, and mixed kinds.
KINDS = [
    (["nczarr", "nczarr", "nczarr"], [3, 2, 4]),
    (["NETCDF4", "NETCDF4"], [2, 4]),
    (["NETCDF4_CLASSIC", "NETCDF4_CLASSIC"], [3, 2]),
    (["NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_OFFSET"], [3, 3]),
    (["zarr2", "zarr2", "zarr2"], [0, 3, 2]),
    (["zarr3", "zarr3"], [3, 2]),
    (["nczarr", "NETCDF4", "zarr2"], [3, 2, 4]),
    (["NETCDF3_64BIT_OFFSET", "zarr3", "nczarr"], [1, 4, 1]),
]


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize(("kinds", "lengths"), KINDS, ids=lambda k: "-".join(map(str, k)))
def test_sources_of_every_kind_combine_as_xarray_concatenates_them(
    tmp_path: Path, kinds: list[str], lengths: list[int], target: str
) -> None:
    """Masked ``float`` values with a ``_FillValue``, a coordinate without the
    dimension: every reader of the combined store reads ``xr.concat`` of the sources."""
    paths = _sources(tmp_path, kinds, lengths, masked=True)
    want = concat([read_source(p, k) for p, k in zip(paths, kinds, strict=True)])
    _combined(tmp_path, paths, target)
    for reader, got in read_result(tmp_path / "out", target).items():
        assert differences(got, want) == [], reader


#: One thing varied from the base dataset: type and fill value, packing, chunking and
#: compression, lengths, a fixed dimension, a scalar, strings.
VARIANTS: dict[str, tuple[dict[str, Any], list[int]]] = {
    "i1": ({"dtype": "i1", "masked": True}, [3, 2]),
    "u2-default-fill": ({"dtype": "u2", "fill": "default", "masked": True}, [3, 2]),
    "i8-no-fill": ({"dtype": "i8", "fill": "none"}, [2, 3]),
    "u8-default-fill": ({"dtype": "u8", "fill": "default", "masked": True}, [3, 2]),
    "f8-default-fill": ({"dtype": "f8", "fill": "default", "masked": True}, [3, 2]),
    "packed": ({"dtype": "i2", "packed": True, "masked": True}, [3, 2]),
    "chunks-of-3-zlib": ({"chunk": 3, "zlib": True, "masked": True}, [4, 2]),
    "chunks-of-1": ({"chunk": 1}, [3, 2]),
    "fixed-dimension": ({"unlimited": False, "chunk": 1}, [3, 2]),
    "scalar": ({"scalar": True}, [3, 2]),
    "strings": ({"strings": True}, [3, 2]),
    "empty-middle": ({"masked": True}, [3, 0, 2]),
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("kind", ["nczarr", "NETCDF4"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_variant_combines_as_xarray_concatenates_it(
    tmp_path: Path, variant: str, kind: str, target: str
) -> None:
    """Each variant of netCDF4's sources, combined into every target kind, reads as
    ``xr.concat`` of the sources (a packed variable read from pure Zarr aside: its
    ``float`` ``scale_factor`` is a JSON number there, so xarray unpacks to
    ``float64``, as for a single source's convert)."""
    options, lengths = VARIANTS[variant]
    paths = _sources(tmp_path, [kind] * len(lengths), lengths, **options)
    want = concat([read_source(p, kind) for p in paths])
    _combined(tmp_path, paths, target)
    for reader, got in read_result(tmp_path / "out", target).items():
        if variant == "packed" and target != "nczarr":
            assert differences(got, want) == [
                "v: float64('time', 'x') != float32('time', 'x')",
                "v: scale_factor of type float64 != float32",
                "v: add_offset of type float64 != float32",
            ]
            assert got["v"].encoding["scale_factor"] == 0.5
        else:
            assert differences(got, want) == [], reader


# ------------------------------------------------------------------ appending, a table
#: The store (written by its producer) and the kind of the source appended to it.
APPENDS = [
    ("nczarr", "nczarr"),
    ("nczarr", "NETCDF4"),
    ("nczarr", "NETCDF3_64BIT_OFFSET"),
    ("nczarr", "zarr2"),
    ("zarr2", "zarr2"),
    ("zarr2", "NETCDF4"),
]

#: Variants an append meets: unaligned lengths, a default fill, no fill, strings.
APPEND_VARIANTS: dict[str, tuple[dict[str, Any], list[int]]] = {
    "masked": ({"masked": True}, [3, 2]),
    "aligned": ({"masked": True}, [2, 4]),
    "u1-default-fill": ({"dtype": "u1", "fill": "default", "masked": True}, [3, 2]),
    "i8-no-fill": ({"dtype": "i8", "fill": "none"}, [3, 3]),
    "empty": ({"masked": True}, [3, 0]),
}


#: Every store, source kind and variant netCDF4 can write (netCDF-3: no ``u1``, ``i8``).
APPEND_CASES = [
    pytest.param(store, kind, variant, id=f"{store}+{kind}-{variant}")
    for store, kind in APPENDS
    for variant, (options, _) in APPEND_VARIANTS.items()
    if not (kind.startswith("NETCDF3") and options.get("dtype") in ("u1", "i8"))
]


@pytest.mark.parametrize("how", ["convert", "to_nczarr"])
@pytest.mark.parametrize(("store", "kind", "variant"), APPEND_CASES)
def test_an_append_reads_as_xarray_concatenates_store_and_source(
    tmp_path: Path, store: str, kind: str, variant: str, how: str
) -> None:
    """A store its producer wrote, and a source appended with ``convert(append_dim=)``
    or (read by its producer's reader) ``to_nczarr(mode="a")``: every reader of the
    grown store reads ``xr.concat`` of the store and the source."""
    options, lengths = APPEND_VARIANTS[variant]
    dst, src = _sources(tmp_path, [store, kind], lengths, **options)
    want = concat([read_source(dst, store), read_source(src, kind)])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if how == "convert":
            nczarr.convert(src, dst, append_dim="time")
        else:
            nczarr.to_nczarr(read_source(src, kind), dst, mode="a", append_dim="time")
    assert _others(seen) == []
    for reader, got in read_result(dst, store).items():
        assert differences(got, want) == [], reader


def test_an_append_to_a_consolidated_store_with_nan_attributes_is_not_called_stale(
    tmp_path: Path,
) -> None:
    """A Zarr v2 store xarray wrote with consolidated metadata and ``_FillValue: NaN``
    attributes, appended to twice: ``.zmetadata`` is rewritten with the grown
    metadata, so no reader is told it is stale (its NaN attributes compared unequal to
    themselves, NaN != NaN, so every later read warned "'.zmetadata' is stale")."""
    paths = [nc_source(tmp_path / f"s{i}.nc", "NETCDF4", t0=3 * i, n=3) for i in range(3)]
    parts = [read_source(p, "NETCDF4") for p in paths]
    store, source = tmp_path / "store.zarr", tmp_path / "source.zarr"
    parts[0].to_zarr(store, zarr_format=2, consolidated=True)
    parts[1].to_zarr(source, zarr_format=2, consolidated=True)
    want = concat([read_source(store, "zarr2"), read_source(source, "zarr2"), parts[2]])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*is stale", nczarr.NCZarrWarning)
        nczarr.convert(source, store, append_dim="time")
        nczarr.to_nczarr(parts[2], store, mode="a", append_dim="time")
        got = read_result(store, "zarr2")["nczarr"]
    assert differences(got, want) == []
    consolidated = xr.open_zarr(store, decode_times=False, consolidated=True).load()
    assert differences(consolidated, want) == []


def test_a_refused_wider_append_names_the_width_the_type_allows(tmp_path: Path) -> None:
    """The values are not read before the refusal: the message says what a source's
    type allows (4 characters of ``<U4``, counted 4 bytes each), not what it holds."""
    src = tmp_path / "a.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.createDimension("t", None)
        var = ds.createVariable("s", str, ("t",))
        var[0], var[1] = "ab", "c"
        ds.createVariable("t", "i4", ("t",))[:] = [0, 1]
    store = tmp_path / "store"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        nczarr.convert(src, store)
    more = tmp_path / "b.zarr"
    xr.Dataset(
        {"s": ("t", np.array(["ef", "gh"], "<U4"))}, coords={"t": np.array([2, 3], "i4")}
    ).to_zarr(more, zarr_format=2, encoding={"t": {"_FillValue": None}, "s": {"_FillValue": None}})
    with pytest.raises(
        nczarr.InvalidModeError, match=r"at most 2 bytes and a source's type allows 16-byte"
    ):
        nczarr.convert(more, store, append_dim="t")


def test_a_value_that_is_not_utf8_is_refused_naming_the_variable(tmp_path: Path) -> None:
    """NCZarr strings are fixed-width UTF-8 bytes; combined with a source holding the
    variable as text, bytes that are no UTF-8 are refused naming the variable (a bare
    ``UnicodeDecodeError`` escaped before) and the target is left untouched."""
    import glob

    store = tmp_path / "a.file"
    with netCDF4.Dataset(nc_url(store), "w") as ds:
        ds.createDimension("t", None)
        var = ds.createVariable("s", str, ("t",))
        var[0], var[1] = "ab", "cd"
        ds.createVariable("t", "i4", ("t",))[:] = [2, 3]
    (chunk,) = glob.glob(str(store / "s" / "0*"))
    raw = Path(chunk).read_bytes()
    Path(chunk).write_bytes(raw.replace(b"ab", b"\xff\xfe", 1))
    src = tmp_path / "b.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.createDimension("t", None)
        ds.createVariable("s", str, ("t",))[0] = "ef"
        ds.createVariable("t", "i4", ("t",))[:] = [0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        with pytest.raises(nczarr.UnsupportedError, match=r"variable '/s': a value is not UTF-8"):
            nczarr.convert([src, store], tmp_path / "out", concat_dim="t", mode="zarr")
    assert not (tmp_path / "out" / ".zgroup").exists()
