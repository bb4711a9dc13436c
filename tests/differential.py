"""Generated datasets, their producers, and what every reader sees: helpers for the
differential tests (tests/test_differential.py) and the corpus test.

A :class:`Spec` describes a small dataset (numeric, char and string variables of 0 to
4 dimensions, ragged edge chunks, fill values, partially written regions, named or
unnamed dimensions, attributes of every netCDF type). :func:`specs` generates them
with hypothesis; :data:`PRODUCERS` writes one with zarr-python (Zarr v2, v3) or
netcdf-c through netCDF4 (NCZarr and pure Zarr modes).

The oracle is always the producer's own library: :func:`expect_netcdf` reads a
store with netCDF4 (raw values: no masking, no char-to-string), :func:`expect_zarr`
with zarr-python. The ``observe_*`` functions read a result with the reader a user
of that format would pick (netCDF4 for NCZarr; zarr-python and xarray for pure Zarr;
nczarr's own model for :func:`nczarr.read`) into the same :class:`Seen` shape, and
:func:`compare` lists the differences.

Attribute values are compared exactly where both sides keep netCDF types (NCZarr to
NCZarr); across pure Zarr, which stores untyped JSON, they are compared as the JSON
value a reader gets (a one-element numeric or string attribute is a scalar, as
netCDF4, xarray and zarr-python show it), so ``1.5`` and ``"text"`` must survive
but ``short`` may come back as ``int``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import zarr
from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .ncoracle import NUMPY_TO_NC, describe_url, nc_url

# ------------------------------------------------------------------------ the spec
NUMERIC = ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8")
NC_OF = NUMPY_TO_NC
DIM_NAMES = ("x", "y", "z", "w")


@dataclass(frozen=True)
class VarSpec:
    """One variable: ``kind`` is a numeric dtype code (``"i4"``), ``"char"`` or ``"string"``.

    ``fill`` is ``"default"`` (the producer's default), ``"none"`` (no fill value) or
    a value. ``region`` is what is written (``None``: nothing), ``data`` its values.
    For char variables the last dimension is the character dimension.
    """

    name: str
    kind: str
    endian: str
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    fill: Any
    region: tuple[slice, ...] | None
    data: Any
    compressor: str
    attrs: dict[str, tuple[str, Any]] = field(default_factory=dict)

    @property
    def dtype(self) -> np.dtype:
        if self.kind == "char":
            return np.dtype("S1")
        if self.kind == "string":
            return np.dtype(object)
        order = ">" if self.endian == "big" else "<"
        return np.dtype(order + self.kind)


@dataclass(frozen=True)
class Spec:
    """A dataset: dimension sizes, variables, root attributes; ``named`` dimensions or not."""

    dims: dict[str, int]
    named: bool
    variables: tuple[VarSpec, ...]
    attrs: dict[str, tuple[str, Any]]

    def __repr__(self) -> str:  # short, readable falsifying examples
        lines = [f"Spec(named={self.named}, dims={self.dims}, attrs={self.attrs!r}"]
        for v in self.variables:
            lines.append(
                f"  {v.name}: {v.kind} {v.endian} dims={v.dims} shape={v.shape} "
                f"chunks={v.chunks} fill={v.fill!r} region={v.region} "
                f"compressor={v.compressor} attrs={v.attrs!r} data={v.data!r}"
            )
        return "\n".join(lines) + ")"


# ------------------------------------------------------------------ strategies
def _finite_or_special(kind: str) -> st.SearchStrategy[Any]:
    dtype = np.dtype(kind)
    if dtype.kind == "f":
        return hnp.from_dtype(dtype, allow_nan=True, allow_infinity=True, allow_subnormal=True)
    info = np.iinfo(dtype)
    return st.sampled_from([info.min, info.max, 0]) | st.integers(int(info.min), int(info.max))


def _attr_values(nc_type: str, kind: str | None) -> st.SearchStrategy[Any]:
    if nc_type == "char":
        return st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=8)
    if nc_type == "string":
        text = st.text(st.characters(min_codepoint=32, max_codepoint=0x24F), max_size=6)
        return text | st.lists(text, min_size=2, max_size=3)
    elements = _finite_or_special(kind)
    return st.lists(elements, min_size=1, max_size=3).map(lambda v: np.array(v, dtype=kind))


@st.composite
def typed_attrs(draw: Any, max_size: int = 3) -> dict[str, tuple[str, Any]]:
    """Attributes of every netCDF type, ``{name: (nc_type, value)}``."""
    out = {}
    for i in range(draw(st.integers(0, max_size))):
        choice = draw(st.sampled_from((*NUMERIC, "char", "string")))
        nc_type = NC_OF.get(choice, choice)
        kind = choice if choice in NC_OF else None
        out[f"a{i}_{nc_type}"] = (nc_type, draw(_attr_values(nc_type, kind)))
    return out


@st.composite
def json_attrs(draw: Any, max_size: int = 3) -> dict[str, tuple[str, Any]]:
    """Attributes a Zarr producer writes: JSON numbers (int64/uint64 extremes, NaN,
    +-Infinity), strings and homogeneous lists, ``{name: ("json", value)}``."""
    signed = st.sampled_from([-(2**63), 2**63 - 1, 0]) | st.integers(-(2**40), 2**40)
    unsigned = st.sampled_from([2**64 - 1, 2**63, 0]) | st.integers(0, 2**40)
    ints = signed | unsigned
    floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
        [math.nan, math.inf, -math.inf, 1e300, -0.0, 5e-324]
    )
    text = st.text(st.characters(min_codepoint=32, max_codepoint=0x24F), min_size=1, max_size=6)
    atoms = st.one_of(ints, floats, text)
    # A list mixing negatives and values above 2**63 - 1 has no netCDF integer type
    # (nczarr reads it as double); each list stays within int64 or uint64.
    lists = st.one_of(
        st.lists(signed, min_size=1, max_size=3),
        st.lists(unsigned, min_size=1, max_size=3),
        st.lists(floats, min_size=1, max_size=3),
        st.lists(text, min_size=2, max_size=3),
    )
    out = {}
    for i in range(draw(st.integers(0, max_size))):
        out[f"j{i}"] = ("json", draw(atoms | lists))
    return out


def _values(kind: str, shape: tuple[int, ...]) -> st.SearchStrategy[Any]:
    if kind == "char":
        # ASCII: netCDF4 cannot decode other bytes where netcdf-c turns char into string
        # (no NUL: numpy's S1 cannot tell b"\0" from b"")
        ascii_ = st.integers(1, 127).map(lambda i: bytes([i]))
        return hnp.arrays("S1", shape, elements=ascii_)
    if kind == "string":
        text = st.text(st.characters(min_codepoint=32, max_codepoint=0x24F), max_size=5)
        return hnp.arrays(object, shape, elements=text)
    return hnp.arrays(np.dtype(kind), shape, elements=_finite_or_special(kind))


@st.composite
def _region(draw: Any, shape: tuple[int, ...]) -> tuple[slice, ...] | None:
    how = draw(st.sampled_from(("none", "all", "part", "part")))
    if how == "none":
        return None
    if how == "all" or not shape:
        return tuple(slice(0, n) for n in shape)
    out = []
    for n in shape:
        start = draw(st.integers(0, n - 1))
        out.append(slice(start, draw(st.integers(start + 1, n))))
    return tuple(out)


@st.composite
def specs(
    draw: Any,
    *,
    netcdf: bool,
    zarr_format: int = 2,
    max_vars: int = 3,
) -> Spec:
    """A dataset spec. ``netcdf``: written by netcdf-c (always named dimensions, char
    and string variables and typed attributes); else by zarr-python (JSON attributes,
    numeric variables, dimensions named or not)."""
    sizes = {n: draw(st.integers(1, 5)) for n in DIM_NAMES}
    named = True if netcdf else draw(st.booleans())
    kinds = (*NUMERIC, "char", "string") if netcdf else NUMERIC
    variables = []
    for i in range(draw(st.integers(1, max_vars))):
        kind = draw(st.sampled_from(kinds))
        ndim = draw(st.integers(0, 3 if kind == "char" else 4))
        dims = tuple(draw(st.permutations(DIM_NAMES))[:ndim])
        if kind == "char":
            dims = (*dims, "nchar")
            sizes.setdefault("nchar", draw(st.integers(1, 4)))
        shape = tuple(sizes[d] for d in dims)
        chunks = tuple(draw(st.integers(1, n)) for n in shape)
        endian = "little"
        if kind not in ("char", "string") and np.dtype(kind).itemsize > 1:
            endian = draw(st.sampled_from(("little", "big")))
        if kind == "string":
            fill = "default"
        elif kind == "char":
            fill = draw(st.sampled_from(("default", b"*")))
        else:
            fill = draw(st.sampled_from(("default", "none", "value", "value")))
            if fill == "value":
                fill = draw(_finite_or_special(kind))
        region = draw(_region(shape))
        data = None
        if region is not None:
            part = tuple(s.stop - s.start for s in region)
            data = draw(_values(kind, part))
        compressor = draw(st.sampled_from(("default", "none", "zlib")))
        attrs = draw(typed_attrs(2) if netcdf else json_attrs(2))
        variables.append(
            VarSpec(
                f"v{i}", kind, endian, dims, shape, chunks, fill, region, data, compressor, attrs
            )
        )
    used = {d for v in variables for d in v.dims}
    return Spec(
        dims={n: s for n, s in sizes.items() if n in used},
        named=named,
        variables=tuple(variables),
        attrs=draw(typed_attrs(4) if netcdf else json_attrs(4)),
    )


# ------------------------------------------------------------------- producers
def _json_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def write_netcdf(spec: Spec, path: Path, mode: str) -> Path:
    """Write ``spec`` with netcdf-c (netCDF4) as NCZarr (``mode="nczarr"``) or pure Zarr."""
    with netCDF4.Dataset(nc_url(path, mode), "w") as ds:
        for name, size in spec.dims.items():
            ds.createDimension(name, size)
        _netcdf_attrs(ds, spec.attrs)
        for v in spec.variables:
            kwargs: dict[str, Any] = {}
            if v.dims:
                kwargs["chunksizes"] = v.chunks
            if v.compressor == "zlib":
                kwargs["compression"] = "zlib"
                kwargs["shuffle"] = v.kind not in ("char", "string")
            if v.fill == "none":
                kwargs["fill_value"] = False
            elif v.fill != "default":
                kwargs["fill_value"] = v.fill
            if v.kind in ("char", "string"):
                dtype: Any = "S1" if v.kind == "char" else str
            else:
                dtype = v.dtype
                kwargs["endian"] = v.endian
            var = ds.createVariable(v.name, dtype, v.dims, **kwargs)
            var.set_auto_maskandscale(False)
            if v.kind == "char":
                var.set_auto_chartostring(False)
            _netcdf_attrs(var, v.attrs)
            if v.region is not None:
                if v.dims:
                    var[v.region] = v.data
                elif v.kind == "string":
                    var[0] = v.data[()]  # netCDF4 indexes scalar VLENs with 0 only
                else:
                    var.assignValue(v.data[()])
    return path


def _netcdf_attrs(obj: Any, attrs: dict[str, tuple[str, Any]]) -> None:
    for name, (nc_type, value) in attrs.items():
        if nc_type == "string":
            obj.setncattr_string(name, value)
        elif nc_type == "char":
            obj.setncattr(name, value)
        else:
            obj.setncattr(name, value)


def write_zarr(spec: Spec, path: Path, zarr_format: int) -> Path:
    """Write ``spec`` with zarr-python 3 as Zarr v2 or v3 (xarray's dimension conventions)."""
    group = zarr.open_group(
        path,
        mode="w",
        zarr_format=zarr_format,
        attributes={k: _json_value(v) for k, (_, v) in spec.attrs.items()},
    )
    for v in spec.variables:
        attrs = {k: _json_value(val) for k, (_, val) in v.attrs.items()}
        kwargs: dict[str, Any] = {}
        if spec.named:
            if zarr_format == 3:
                kwargs["dimension_names"] = list(v.dims)
            else:
                attrs["_ARRAY_DIMENSIONS"] = list(v.dims)
        if v.compressor == "none":
            kwargs["compressors"] = None
        elif v.compressor == "zlib":
            if zarr_format == 2:
                import numcodecs

                kwargs["compressors"] = numcodecs.Zlib(level=1)
            else:
                from zarr.codecs import ZstdCodec

                kwargs["compressors"] = ZstdCodec(level=1)
        fill = v.fill
        if fill == "default":
            fill = None if zarr_format == 3 else 0
        elif fill == "none":
            fill = None
        array = group.create_array(
            v.name,
            shape=v.shape,
            **({"chunks": v.chunks} if v.shape else {}),
            dtype=v.dtype,
            fill_value=fill,
            attributes=attrs,
            **kwargs,
        )
        if v.region is not None:
            array[v.region] = v.data
    return path


#: Producer name -> (writer, whether netcdf-c wrote it, the netCDF mode it reads in).
PRODUCERS: dict[str, tuple[Callable[[Spec, Path], Path], bool, str]] = {
    "zarr2": (lambda s, p: write_zarr(s, p, 2), False, "zarr"),
    "zarr3": (lambda s, p: write_zarr(s, p, 3), False, "zarr"),
    "netcdf-nczarr": (lambda s, p: write_netcdf(s, p, "nczarr"), True, "nczarr"),
    "netcdf-zarr": (lambda s, p: write_netcdf(s, p, "zarr"), True, "zarr"),
}


# ---------------------------------------------------------------- what is seen
@dataclass
class SeenVar:
    """One variable as a reader sees it. ``attrs`` holds JSON-like values (``json``
    comparison) or model :class:`~nczarr.Attribute` objects (``typed``)."""

    kind: str  # numeric dtype code, "char" or "string"
    dims: tuple[str, ...] | None
    shape: tuple[int, ...]
    values: Any  # numpy array (native byte order) or None when not read
    fill: Any
    attrs: dict[str, Any]
    big_endian: bool = False


@dataclass
class Seen:
    """A whole dataset as one reader sees it; ``typed``: attrs are typed Attributes."""

    variables: dict[str, SeenVar]
    attrs: dict[str, Any]
    typed: bool


def _native(values: Any) -> Any:
    array = np.asarray(values)
    if array.dtype.kind in "iuf" and array.dtype.byteorder not in ("=", "|"):
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def _kind_of(dtype: Any) -> str:
    if dtype is str or np.dtype(dtype).kind in "OUT":
        return "string"
    dtype = np.dtype(dtype)
    if dtype.kind == "S":
        return "char" if dtype.itemsize == 1 else "string"
    return f"{dtype.kind}{dtype.itemsize}"


def json_of_attribute(attr: Any) -> Any:
    """The JSON value a reader of untyped attributes gets for a model attribute."""
    value = attr.value
    if attr.type == "char":
        return value
    values = list(value)
    return values[0] if len(values) == 1 else values


def json_of_netcdf(value: Any) -> Any:
    """A netCDF4 attribute value as JSON-like Python (what xarray writes to Zarr)."""
    if isinstance(value, np.ndarray):
        return value.tolist() if value.size != 1 else value.reshape(()).item()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [json_of_netcdf(v) for v in value]
    return value


def _json_plain(value: Any) -> Any:
    """JSON-like Python with tuples as lists and a one-element list as its element
    (netCDF has no one-element array distinct from a scalar attribute)."""
    if isinstance(value, tuple | list):
        if len(value) == 1:
            return _json_plain(value[0])
        return [_json_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


HIDDEN_ROOT_ATTRS = ("_NCProperties",)


def observe_netcdf(path: Path | str, mode: str | None, typed: bool) -> Seen:
    """What netCDF4 (libnetcdf) reads from the directory store at ``path`` (or, with
    ``mode=None``, the netCDF file or URL ``path``). Variables of child groups are
    keyed by their path (``"g1/var"``), group attributes as ``"g1:name"``."""
    url = str(path) if mode is None else nc_url(path, mode)
    model = describe_url(url)
    out: dict[str, SeenVar] = {}
    root: dict[str, Any] = {}
    with netCDF4.Dataset(url) as ds:
        _observe_netcdf_group(ds, model.root, typed, out, root)
    return Seen(out, root, typed)


def _observe_netcdf_group(
    grp: Any, mgrp: Any, typed: bool, out: dict[str, SeenVar], root: dict[str, Any]
) -> None:
    prefix = mgrp.path.strip("/")
    for name, var in grp.variables.items():
        var.set_auto_maskandscale(False)
        if _kind_of(var.dtype) == "char":
            var.set_auto_chartostring(False)
        mvar = mgrp.variables[name]
        values = var[...] if var.shape else var.getValue()
        if mvar.type == "string":
            values = np.asarray(values, dtype=object)
        attrs: dict[str, Any]
        if typed:
            attrs = dict(mvar.attributes)
        else:
            attrs = {
                k: json_of_netcdf(var.getncattr(k)) for k in var.ncattrs() if k != "_FillValue"
            }
        out[f"{prefix}/{name}" if prefix else name] = SeenVar(
            kind=_kind_of(var.dtype),
            dims=tuple(var.dimensions),
            shape=tuple(var.shape),
            values=_native(values),
            fill=mvar.fill_value,
            attrs=attrs,
            big_endian=mvar.endian == "big",
        )
    for k in grp.ncattrs():
        key = f"{prefix}:{k}" if prefix else k
        root[key] = mgrp.attributes[k] if typed else json_of_netcdf(grp.getncattr(k))
    for name, child in grp.groups.items():
        _observe_netcdf_group(child, mgrp.groups[name], typed, out, root)


def observe_zarr(store: Any, *, xarray_too: Any = None) -> Seen:
    """What zarr-python reads from ``store`` (a path or a zarr Store); ``xarray_too``:
    also open it with xarray (raw: no CF decoding) and require the same values."""
    group = zarr.open_group(store=store, mode="r")
    out: dict[str, SeenVar] = {}
    root: dict[str, Any] = {}
    for name, node in group.members(max_depth=None):
        if isinstance(node, zarr.Group):
            for k, v in node.attrs.asdict().items():
                root[f"{name}:{k}"] = _json_plain(v)
            continue
        array = node
        attrs = array.attrs.asdict()
        dims = attrs.pop("_ARRAY_DIMENSIONS", None)
        attrs = {k: _json_plain(v) for k, v in attrs.items()}
        if array.metadata.zarr_format == 3 and array.metadata.dimension_names is not None:
            dims = list(array.metadata.dimension_names)
        attrs.pop("_FillValue", None)
        values = array[...]
        kind = _kind_of(array.dtype)
        if kind == "string" and values.dtype.kind == "S":
            values = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(values)
        fill = array.fill_value
        if isinstance(fill, np.generic):
            fill = fill.item()
        out[name] = SeenVar(
            kind=kind,
            dims=tuple(dims) if dims is not None else None,
            shape=tuple(array.shape),
            values=_native(values),
            fill=fill,
            attrs=attrs,
            big_endian=array.dtype.byteorder == ">",
        )
    # _NCProperties is provenance: netCDF4 and xarray hide it, so it is no attribute.
    root.update(
        (k, _json_plain(v)) for k, v in group.attrs.asdict().items() if k not in HIDDEN_ROOT_ATTRS
    )
    seen = Seen(out, root, False)
    if xarray_too is not None:
        _check_xarray(xarray_too, seen)
    return seen


def _check_xarray(store: Any, seen: Seen) -> None:
    import xarray as xr

    with xr.open_zarr(store, consolidated=False, decode_cf=False, mask_and_scale=False) as ds:
        for name, var in seen.variables.items():
            if "/" in name:  # xarray opens one group at a time: the root here
                continue
            got = ds[name]
            if var.dims is not None:
                assert tuple(got.dims) == var.dims, (name, got.dims, var.dims)
            values = _native(got.values)
            if var.kind == "string" and values.dtype.kind == "S":
                values = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(values)
            assert _same_array(values, var.values), (name, got.values, var.values)
        for name, value in seen.attrs.items():
            if ":" in name:
                continue
            assert _same_json(_json_plain(json_of_netcdf(ds.attrs[name])), value), name


def observe_model(dataset: Any, typed: bool) -> Seen:
    """What :func:`nczarr.read` models (types, shapes, fills, attributes; no values)."""
    out = {}
    for var in dataset.root.all_variables():
        kind = {v: k for k, v in NC_OF.items()}.get(var.type, var.type)
        dims = tuple(d.rpartition("/")[2] for d in var.dimensions)
        attrs = {
            k: (a if typed else json_of_attribute(a))
            for k, a in var.attributes.items()
            if typed or k != "_FillValue"
        }
        key = var.path.strip("/")
        out[key] = SeenVar(kind, dims, tuple(var.shape), None, var.fill_value, attrs)
    root = {}
    for group in dataset.root.walk():
        prefix = group.path.strip("/")
        for k, a in group.attributes.items():
            root[f"{prefix}:{k}" if prefix else k] = a if typed else json_of_attribute(a)
    return Seen(out, root, typed)


def expect(path: Path, producer: str) -> Seen:
    """What the producer's own library reads from its store at ``path``.

    netcdf-c writes a scalar to pure Zarr as shape ``[1]`` with dimension
    ``_scalar_`` and netCDF4 reads it back so; issue 7 (defect 7) makes that
    convention a true scalar for every nczarr path, so that is what is expected.
    """
    _, by_netcdf, mode = PRODUCERS[producer]
    if not by_netcdf:
        return observe_zarr(path)
    try:
        seen = observe_netcdf(path, mode, typed=True)
    except OSError:
        # libnetcdf 4.10 cannot reopen some pure Zarr it wrote itself ("Numeric
        # conversion not representable", e.g. int64/uint64 extremes): no oracle.
        reject()
    if mode == "zarr":
        # Pure Zarr keeps no attribute types, and netcdf-c's reading of its own JSON
        # is lossy in ways nczarr deliberately improves on (infer_type: a list of
        # strings is char JSON text to netcdf-c, [0, 0.5] truncates to ints, 2**63-1
        # is uint64): the attributes expected are the JSON values stored.
        seen.typed = False
        seen.attrs = _stored_json(Path(path) / ".zattrs")
        for name, var in seen.variables.items():
            if var.dims == ("_scalar_",):
                var.dims, var.shape, var.values = (), (), var.values.reshape(())
            var.attrs = _stored_json(Path(path) / name / ".zattrs")
    return seen


def _stored_json(key: Path) -> dict[str, Any]:
    """The attributes in a pure-Zarr ``.zattrs`` written by netcdf-c, without its
    reserved ones, as JSON-like values."""
    if not key.exists():
        return {}
    doc = json.loads(key.read_text(encoding="utf-8"))
    return {
        k: _json_plain(_reals(v))
        for k, v in doc.items()
        if not k.startswith("_nczarr")
        and k not in ("_ARRAY_DIMENSIONS", "_FillValue", *HIDDEN_ROOT_ATTRS)
    }


def _reals(value: Any) -> Any:
    """netcdf-c writes a float/double attribute's whole values without a point
    (``[5.9e16, 0]``): a numeric list holding any real is a list of reals."""
    numbers = isinstance(value, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value
    )
    if numbers and any(isinstance(v, float) for v in value):
        return [float(v) for v in value]
    return value


# ------------------------------------------------------------------- comparing
def _same_json(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _same_array(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if a.dtype.kind == "O" or b.dtype.kind == "O":
        return a.tolist() == b.tolist()
    return a.dtype == b.dtype and np.array_equal(a, b)


def _attrs_as_json(seen: Seen, attrs: dict[str, Any]) -> dict[str, Any]:
    if not seen.typed:
        return attrs
    return {k: json_of_attribute(a) for k, a in attrs.items() if k != "_FillValue"}


def _compare_attrs(
    where: str, got: Seen, g: dict, want: Seen, w: dict, out: list[str], typed: bool
) -> None:
    if typed and got.typed and want.typed:
        if list(g) != list(w):
            out.append(f"{where} attribute names {list(g)} != {list(w)}")
        for name in g.keys() & w.keys():
            if g[name] != w[name]:
                out.append(f"{where} attribute {name!r}: {g[name]!r} != {w[name]!r}")
        return
    gj, wj = _attrs_as_json(got, g), _attrs_as_json(want, w)
    if sorted(gj) != sorted(wj):
        out.append(f"{where} attribute names {sorted(gj)} != {sorted(wj)}")
    for name in gj.keys() & wj.keys():
        if not _same_json(_json_plain(gj[name]), _json_plain(wj[name])):
            out.append(f"{where} attribute {name!r}: {gj[name]!r} != {wj[name]!r}")


#: netcdf-c writes the default double fill (NC_FILL_DOUBLE) into NCZarr and Zarr JSON
#: as ``9.96921e+36`` (6 digits) and uses that value for unwritten data, while
#: netCDF4's ``get_fill_value()`` reports NC_FILL_DOUBLE: one fill, two spellings.
_DOUBLE_FILL_SPELLINGS = {9.969209968386869e36, 9.96921e36}


def _same_fill(a: Any, b: Any) -> bool:
    if {a, b} <= _DOUBLE_FILL_SPELLINGS and isinstance(a, float) and isinstance(b, float):
        return True
    if isinstance(a, bytes):
        a = a.decode("latin-1")
    if isinstance(b, bytes):
        b = b.decode("latin-1")
    numbers = isinstance(a, float | int) and isinstance(b, float | int)
    if numbers and (isinstance(a, float) or isinstance(b, float)):
        return float(a) == float(b) or (math.isnan(float(a)) and math.isnan(float(b)))
    return a == b


def _unswap_fill(values: Any, fill: Any) -> Any:
    """``values`` with every element equal to the byte-swapped ``fill`` set to ``fill``.

    netcdf-c 4.10.1 quirk (seen through netCDF4 on its own stores): for a big-endian
    variable it fills unwritten elements with the fill value's bytes in the wrong
    order, both in chunks it writes (partly written chunks) and in what it returns
    for chunks that do not exist, while the Zarr ``fill_value`` holds the true value.
    So zarr-python and netCDF4 disagree on unwritten elements of the same source
    store. Both spellings of the fill are made one before comparing; nothing else
    is relaxed.
    """
    if fill is None or not isinstance(fill, int | float):
        return values
    array = np.asarray(values)
    if array.dtype.kind not in "iuf" or array.dtype.itemsize == 1:
        return array
    swapped = np.asarray(fill, dtype=array.dtype).byteswap()
    out = array.copy()
    if array.dtype.kind == "f" and np.isnan(swapped):
        out[np.isnan(array)] = fill
    else:
        out[array == swapped] = fill
    return out


def _is_zarr_default_fill(value: Any) -> bool:
    return (
        value is not None
        and value == 0
        and not (isinstance(value, float) and math.copysign(1, value) < 0)
    )


def _char_as_string(var: SeenVar) -> SeenVar:
    """A char variable as the string variable of its 1-byte texts (same shape)."""
    values = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(var.values)
    fill = var.fill.decode("utf-8") if isinstance(var.fill, bytes) else var.fill
    return SeenVar("string", var.dims, var.shape, values, fill, var.attrs, var.big_endian)


def compare(
    got: Seen,
    want: Seen,
    *,
    typed: bool = True,
    dims: bool = True,
    fill: bool = True,
    char_as_string: bool = False,
) -> list[str]:
    """Differences between what a reader saw (``got``) and the producer's view (``want``).

    ``typed``: compare attribute types too when both sides are typed. ``dims``: compare
    dimension names (``want.dims is None``: the producer named none, any names do).
    ``fill``: compare fill values.
    """
    out: list[str] = []
    if sorted(got.variables) != sorted(want.variables):
        out.append(f"variables {sorted(got.variables)} != {sorted(want.variables)}")
    for name in sorted(got.variables.keys() & want.variables.keys()):
        g, w = got.variables[name], want.variables[name]
        if char_as_string and g.kind == "string" and w.kind == "char":
            w = _char_as_string(w)
        if g.kind != w.kind:
            out.append(f"{name}: type {g.kind} != {w.kind}")
        if g.shape != w.shape:
            out.append(f"{name}: shape {g.shape} != {w.shape}")
        if dims and w.dims is not None and g.dims != w.dims:
            out.append(f"{name}: dimensions {g.dims} != {w.dims}")
        # nczarr reads a Zarr v3 array's default fill 0 with dimension_names as "no
        # fill value" (nczarr.translate.read_zarr3): without one every reader gets 0
        # for unwritten chunks too, which the values comparison checks.
        zero_as_none = g.fill is None and not want.typed and _is_zarr_default_fill(w.fill)
        if fill and not zero_as_none and not _same_fill(g.fill, w.fill):
            out.append(f"{name}: fill value {g.fill!r} != {w.fill!r}")
        if g.values is not None and w.values is not None:
            gv, wv = g.values, w.values
            if g.big_endian or w.big_endian:
                gv, wv = _unswap_fill(gv, w.fill), _unswap_fill(wv, w.fill)
            if g.kind == w.kind == "string":
                gv, wv = np.asarray(gv, dtype=object), np.asarray(wv, dtype=object)
            if not _same_array(gv, wv):
                out.append(f"{name}: values\n{gv!r}\n!=\n{wv!r}")
        _compare_attrs(name, got, g.attrs, want, w.attrs, out, typed)
    _compare_attrs("/", got, got.attrs, want, want.attrs, out, typed)
    return out


# --------------------------------------------------------------------- paths
def copy_store(src: Path, dst: Path) -> Path:
    """A copy of the directory store ``src`` (for in-place paths such as migrate)."""
    shutil.copytree(src, dst)
    return dst


def abspath(path: Path) -> str:
    return os.path.abspath(path)


def aborts_netcdf_zarr(spec: Spec) -> bool:
    """Whether libnetcdf 4.10.1 would abort (SIGABRT) reopening ``spec`` written in
    pure-Zarr mode: it writes a float attribute ``[-0.0, nan]`` as ``[-0,"NaN"]`` and
    crashes reading a list whose first number is whole and a later one a string."""
    groups = [spec.attrs, *(v.attrs for v in spec.variables)]
    for attrs in groups:
        for nc_type, value in attrs.values():
            if nc_type not in ("float", "double") or len(value) < 2:
                continue
            first = float(value[0])
            if math.isfinite(first) and first == int(first) and not np.all(np.isfinite(value)):
                return True
    return False
