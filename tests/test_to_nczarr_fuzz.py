"""Hypothesis fuzzing of ``to_nczarr`` (issue 16): whatever dataset it is given, it
writes a store that nczarr and the engine read back with the same names, or it raises
an ``NCZarrError`` before writing anything -- never another exception.

* datasets built from hostile parts: names (empty, ``.zarray``, ``/``, NUL, 300
  characters, nczarr's reserved attribute names), attribute values of every kind,
  dtypes, fill values, encodings (chunks, codecs, packing dtypes) and unlimited
  dimensions;
* the metadata fuzz of ``tests/test_fuzz.py`` carried through: each mutated store that
  the engine opens and loads is written again with ``to_nczarr``.

``NCZARR_FUZZ_EXAMPLES=<n>`` runs ``n`` examples per test.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import xarray as xr
from hypothesis import event, given
from hypothesis import strategies as st

import nczarr
from nczarr.errors import NCZarrError
from nczarr.maps.memory import MemoryMap

from .ncoracle import corrupt_metadata
from .test_fuzz import BASES, HOSTILE, OBJECTS, PARSED, fuzz_settings, no_hang

HOSTILE_NAMES = (
    "",
    ".",
    "..",
    ".zarray",
    ".zgroup",
    ".zattrs",
    ".hidden",
    "a/b",
    "/",
    "a\0b",
    "\x7f",
    "a" * 300,
    "é" * 130,
    "_nczarr_array",
    "_nczarr_attr",
    "_ARRAY_DIMENSIONS",
    "_FillValue",
    "with space",
    "x.y",
)
NAMES = st.one_of(
    st.sampled_from(HOSTILE_NAMES),
    st.text(alphabet="ab_.-/é \0", min_size=0, max_size=6),
    st.sampled_from(["x", "y", "v", "w"]),
)
DTYPES = st.sampled_from(
    ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8", "bool", "U3", "S2", "O", "c8"]
)
SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=4),
    st.booleans(),
    st.none(),
)
ATTR_VALUES = st.one_of(
    SCALARS,
    st.lists(st.integers(-(2**40), 2**40), max_size=3),
    st.lists(st.text(max_size=3), max_size=3),
    st.lists(st.lists(st.integers(0, 3), max_size=2), max_size=2),
    st.builds(lambda v, t: np.array(v).astype(t) if t else v, st.integers(-300, 300), DTYPES),
)
FILLS = st.one_of(
    st.none(),
    st.integers(-(2**66), 2**66),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.int64(1000), np.int16(-1), np.float64(1e40), np.uint8(255)]),
)
ENCODINGS = st.fixed_dictionaries(
    {},
    optional={
        "_FillValue": FILLS,
        "dtype": st.sampled_from(["i1", "u1", "i2", "f4", "f8", "S1", "complex64", "xyz"]),
        "chunksizes": st.lists(st.integers(-1, 5), min_size=0, max_size=3).map(tuple),
        "zlib": st.booleans(),
        "complevel": st.integers(-2, 12),
        "compressor": st.sampled_from(
            [{"id": "zlib", "level": 1}, {"id": "no-such"}, {"id": "blosc"}, {"level": 3}]
        ),
        "scale_factor": st.sampled_from([0.5, np.float32(0.25), 0.0, np.nan]),
        "units": st.sampled_from(["days since 2000-01-01", "m", "", "nonsense since x"]),
    },
)


def _values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    size = int(np.prod(shape))
    if dtype in ("U3", "O"):
        return np.array([f"s{i}" for i in range(size)], dtype=dtype).reshape(shape)
    if dtype == "S2":
        return np.array([b"ab"] * size).reshape(shape)
    return np.arange(size).astype(dtype).reshape(shape)


@st.composite
def datasets(draw: st.DrawFn) -> tuple[xr.Dataset, dict, list[str] | None]:
    dims = draw(st.lists(NAMES, min_size=1, max_size=2, unique=True))
    sizes = {d: draw(st.integers(1, 4)) for d in dims}
    variables, encoding = {}, {}
    for name in draw(st.lists(NAMES, min_size=1, max_size=3, unique=True)):
        if name in sizes:
            continue
        var_dims = tuple(draw(st.lists(st.sampled_from(dims), max_size=2, unique=True)))
        dtype = draw(DTYPES)
        attrs = draw(st.dictionaries(NAMES, ATTR_VALUES, max_size=2))
        variables[name] = (var_dims, _values(dtype, tuple(sizes[d] for d in var_dims)), attrs)
        encoding[name] = draw(ENCODINGS)
    attrs = draw(st.dictionaries(NAMES, ATTR_VALUES, max_size=3))
    unlimited = draw(st.one_of(st.none(), st.lists(st.sampled_from(dims), max_size=1)))
    return xr.Dataset(variables, attrs=attrs), encoding, unlimited


def _check_written(zmap: MemoryMap, ds: xr.Dataset) -> None:
    """What was written reads back, with every variable and global attribute name."""
    model = nczarr.read(MemoryMap(dict(zmap.items()), mode="r"))
    names = {v.name for v in model.root.variables.values()}
    assert {str(n) for n in ds.variables} <= names
    assert {str(n) for n in ds.attrs} <= set(model.root.attributes)
    back = xr.open_dataset(MemoryMap(dict(zmap.items()), mode="r"), engine="nczarr")
    assert set(map(str, back.variables)) >= {str(n) for n in ds.data_vars}
    back.load()


@fuzz_settings(300)
@given(datasets())
def test_any_dataset_is_written_readably_or_refused_with_an_nczarr_error(case):
    ds, encoding, unlimited = case
    zmap = MemoryMap()
    with no_hang(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nczarr.to_nczarr(ds, zmap, encoding=encoding, unlimited_dims=unlimited)
        except NCZarrError as exc:
            event(f"refused: {type(exc).__name__}")
            assert not list(zmap), "a refused write left objects behind"
            return
        event("written")
        _check_written(zmap, ds)


def _rewrite(content: dict[str, bytes]) -> None:
    """Open a (mutated) store with the engine; if it loads, to_nczarr gives a store or an
    NCZarrError. (Errors of the engine itself are issue 16's other items.)"""
    with no_hang(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ds = xr.open_dataset(MemoryMap(dict(content), mode="r"), engine="nczarr").load()
        except Exception:  # the engine's own errors are issue 16, items 6-17
            event("not opened by the engine")
            return
        zmap = MemoryMap()
        try:
            nczarr.to_nczarr(ds, zmap)
        except NCZarrError as exc:
            event(f"refused: {type(exc).__name__}")
            assert not list(zmap)
            return
        event("written")
        _check_written(zmap, ds)


@fuzz_settings(150)
@given(st.data())
def test_any_mutated_store_rewritten_by_to_nczarr(data):
    base = data.draw(st.sampled_from(sorted(BASES)))
    mutated = corrupt_metadata(data, PARSED[base])
    content = dict(BASES[base])
    content.update({k: json.dumps(v).encode() for k, v in mutated.items()})
    _rewrite(content)


@fuzz_settings(100)
@given(st.data())
def test_any_object_replaced_then_rewritten_by_to_nczarr(data):
    base, key = data.draw(st.sampled_from(OBJECTS))
    content = dict(BASES[base])
    content[key] = data.draw(HOSTILE)
    _rewrite(content)
