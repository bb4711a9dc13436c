"""An ``xr.Dataset`` or ``xr.DataTree`` as nczarr's netCDF-4 model, as netcdf4 would write it.

What :func:`nczarr.to_nczarr` writes is decided here, with no I/O: CF encoding is
xarray's own (the netcdf4 engine's pipeline: ``encode_dataset_coordinates``,
``cf_encoder``, ``EncodedStringCoder(allows_unicode=True)``, ``CharacterArrayCoder``);
what is nczarr's is the mapping of the encoded variables onto the model
(:mod:`nczarr.translate.model`):

* netCDF types from numpy dtypes, and attribute types as netCDF4-python assigns them
  (:func:`netcdf_attribute`);
* dimensions shared down the group tree by netCDF's scoping, unlimited where asked;
* text as NUL-padded UTF-8 of width ``max(longest, 128)`` (netcdf-c's
  ``|S<maxstrlen>``), chunks and codecs from the variables' encodings, and the
  ``_FillValue`` attribute retyped to its variable's type.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import (
    EncodingError,
    InvalidNameError,
    NCZarrError,
    UnsupportedError,
    UnsupportedTypeError,
    ValueRangeError,
    warn_all,
)
from ..translate.conventions import DEFAULT_MAXSTRLEN, DTYPE_TO_NC
from ..translate.model import Attribute, Dataset, Dimension, Group, Variable
from .xarray_ranges import checked_packing

__all__ = ["ModelPlan", "netcdf_attribute"]


# ------------------------------------------------------------------ attributes
def netcdf_attribute(name: str, value: Any) -> Attribute:
    """The typed netCDF attribute netCDF4-python (through xarray) would write for ``value``.

    ``str``/``bytes``: ``char``; a list of several strings: ``string``; numpy scalars
    and arrays keep their type; Python ``int``: ``int64``; ``float``: ``double``.

    Raises
    ------
    UnsupportedTypeError
        A value netCDF cannot type (bool, complex, nested or mixed lists, empty).
    """
    if isinstance(value, str):
        return Attribute(name, "char", value)
    if isinstance(value, bytes | np.bytes_):
        try:
            return Attribute(name, "char", bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            raise UnsupportedTypeError(
                f"attribute {name!r}: {value!r} is not UTF-8 text, which NCZarr attributes "
                "(JSON) must be"
            ) from None
    if isinstance(value, bool | np.bool_):
        raise UnsupportedTypeError(
            f"attribute {name!r}: {value!r} is a boolean, which netCDF cannot store "
            "(use an integer or a string)"
        )
    try:
        array = np.asarray(value)
    except ValueError:
        array = np.asarray(value, dtype=object)
    if array.dtype.kind in "US" or (
        array.dtype.kind == "O" and all(isinstance(v, str) for v in array.reshape(-1))
    ):
        texts = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in array.reshape(-1)]
        if len(texts) == 1:
            return Attribute(name, "char", texts[0])
        return Attribute(name, "string", tuple(texts))
    nc_type = DTYPE_TO_NC.get(f"{array.dtype.kind}{array.dtype.itemsize}")
    if nc_type is None or array.ndim > 1 or array.size == 0:
        raise UnsupportedTypeError(
            f"attribute {name!r}: {value!r} ({array.dtype}, shape {array.shape}) has no "
            "netCDF attribute type"
        )
    values = tuple(v.item() for v in array.reshape(-1))
    return Attribute(name, nc_type, values)


def _attributes(attrs: Mapping[Hashable, Any], where: str) -> dict[str, Attribute]:
    out = {}
    for name, value in attrs.items():
        try:
            out[str(name)] = netcdf_attribute(str(name), value)
        except UnsupportedTypeError as exc:
            raise UnsupportedTypeError(f"{where}: {exc}") from None
    return out


# ------------------------------------------------------------------ encoding
def check_fill_values(ds: Any, path: str) -> None:
    """Refuse a ``_FillValue`` (in ``encoding`` or ``attrs``) that the type it is stored
    as cannot hold, before xarray's CF encoding casts it (and wraps a numpy integer)."""
    for name, var in ds.variables.items():
        fill = var.encoding.get("_FillValue", var.attrs.get("_FillValue"))
        if fill is None or fill is False or isinstance(fill, str | bytes):
            continue
        try:
            dtype = np.dtype(var.encoding.get("dtype", var.dtype))
        except TypeError:
            continue  # xarray's encoder names a dtype it cannot use
        try:
            scalar = np.ndim(fill) == 0
        except ValueError:  # a ragged list: netcdf_attribute refuses it later
            continue
        if dtype.kind not in "iuf" or not scalar:
            continue
        where = f"{path.rstrip('/')}/{name}"
        unsigned = var.encoding.get("_Unsigned", var.attrs.get("_Unsigned"))
        if dtype.kind == "i" and str(unsigned).lower() == "true":
            try:  # netCDF's unsigned convention: either spelling of the bits
                fill_in_range(fill, np.dtype(f"u{dtype.itemsize}"), where)
                continue
            except ValueRangeError:
                pass
        fill_in_range(fill, dtype, where)


def _encode(ds: Any, path: str) -> tuple[dict[str, Any], dict[Hashable, Any]]:
    """The netcdf4 engine's CF encoding of one group's dataset: (variables, attributes).

    xarray's own range errors (a Python integer too large for the encoded dtype)
    become :class:`~nczarr.errors.ValueRangeError` naming the group."""
    try:
        return _cf_encode(ds)
    except NCZarrError:
        raise
    except OverflowError as exc:
        raise ValueRangeError(f"group {path!r}: {_described(exc)}") from None
    except NotImplementedError as exc:
        raise UnsupportedError(f"group {path!r}: {_described(exc)}") from None
    except (ValueError, TypeError) as exc:
        raise EncodingError(
            f"group {path!r}: xarray cannot encode it for netCDF: {_described(exc)}"
        ) from None


def _described(exc: BaseException) -> str:
    """An exception's message with the notes xarray adds (which variable it was)."""
    return " ".join([str(exc), *getattr(exc, "__notes__", ())])


def _cf_encode(ds: Any) -> tuple[dict[str, Any], dict[Hashable, Any]]:
    from xarray import conventions
    from xarray.backends.common import ensure_dtype_not_object
    from xarray.coding.strings import CharacterArrayCoder, EncodedStringCoder

    variables, attrs = conventions.encode_dataset_coordinates(ds)
    variables, attrs = conventions.cf_encoder(variables, attrs)
    out = {}
    for name, var in variables.items():
        var = ensure_dtype_not_object(var, name=name)
        var = EncodedStringCoder(allows_unicode=True).encode(var, name=name)
        var = CharacterArrayCoder().encode(var, name=name)
        out[str(name)] = var
    return out, attrs


def _nc_type(name: str, var: Any) -> str:
    """The netCDF type of an encoded variable."""
    from xarray.coding.strings import check_vlen_dtype

    dtype = var.dtype
    if dtype.kind == "S":
        if dtype.itemsize != 1:  # pragma: no cover - CharacterArrayCoder made it S1
            raise UnsupportedTypeError(f"variable {name!r}: bytes of width {dtype.itemsize}")
        return "char"
    if dtype.kind == "U" or (dtype.kind == "O" and check_vlen_dtype(dtype) is str):
        return "string"
    if dtype.kind == "O":
        values = np.asarray(var.values).reshape(-1)
        if all(isinstance(v, str) for v in values):
            return "string"
        raise UnsupportedTypeError(
            f"variable {name!r}: object values that are not all strings have no netCDF type"
        )
    if dtype.kind == "b":
        return "byte"  # pragma: no cover - cf_encoder turns bools into int8
    nc_type = DTYPE_TO_NC.get(f"{dtype.kind}{dtype.itemsize}")
    if nc_type is None:
        raise UnsupportedTypeError(f"variable {name!r}: dtype {dtype} has no netCDF-4 type")
    return nc_type


def _text_bytes(data: Any, where: str) -> tuple[Any, int]:
    """Text values as NUL-padded UTF-8 (``|S<width>``) and that width.

    netCDF strings are C strings: a value holding a NUL character ends there for
    every netCDF reader (also after xarray's netcdf4 engine). That is announced with
    an :class:`~nczarr.NCZarrWarning`.
    """
    values = np.asarray(data)
    texts = [v if isinstance(v, str) else "" if v is None else str(v) for v in values.reshape(-1)]
    try:
        flat = [t.encode("utf-8") for t in texts]
    except UnicodeEncodeError as exc:
        raise UnsupportedError(
            f"variable {where}: {exc.object!r} is not valid Unicode (a lone surrogate at "
            f"{exc.start}); netCDF strings are UTF-8"
        ) from None
    cut = sum(1 for b in flat if b"\0" in b)
    if cut:
        warn_all(
            [
                f"variable {where}: {cut} value(s) contain a NUL character; netCDF strings "
                "end at the first NUL, so readers see them cut there"
            ],
            stacklevel=5,
        )
    width = max([DEFAULT_MAXSTRLEN, *(len(b) for b in flat)])
    return np.array(flat, dtype=f"S{width}").reshape(values.shape), width


def _chunks(var: Any, unlimited: set[str]) -> tuple[int, ...]:
    """Zarr chunks: the encoding's (``chunksizes``/``chunks``), dask's, or the shape.

    As ``to_netcdf`` does, an encoded chunking that no longer fits (read from a store
    whose variable had another shape, or chunks beyond a fixed dimension) is dropped.
    """
    if not var.shape:
        return ()
    original = var.encoding.get("original_shape")
    stale = original is not None and tuple(original) != tuple(var.shape)
    for key in ("chunksizes", "chunks"):
        chunks = var.encoding.get(key)
        if not chunks or stale or isinstance(chunks, dict) or len(chunks) != len(var.shape):
            continue
        too_big = any(
            c > n and d not in unlimited
            for c, n, d in zip(chunks, var.shape, var.dims, strict=True)
        )
        if not too_big:
            return tuple(max(1, int(c)) for c in chunks)
    if var.chunks is not None:
        return tuple(max(1, int(c[0])) for c in var.chunks)
    return tuple(max(1, int(s)) for s in var.shape)


def _codecs(
    var: Any, itemsize: int, where: str
) -> tuple[dict[str, Any] | None, tuple[dict[str, Any], ...]]:
    """Compressor and filters from the encoding: netCDF4-style ``zlib``/``complevel``/
    ``shuffle``, or a numcodecs ``compressor``; default none, as ``to_netcdf``."""
    enc = var.encoding
    compressor = enc.get("compressor")
    if compressor is not None:
        config = compressor.get_config() if hasattr(compressor, "get_config") else dict(compressor)
        return config, ()
    compression = enc.get("compression")
    if enc.get("zlib") or compression == "zlib":
        filters: tuple[dict[str, Any], ...] = ()
        if enc.get("shuffle", True) and itemsize > 1:
            filters = ({"id": "shuffle", "elementsize": itemsize},)
        return {"id": "zlib", "level": _level(enc, where, 0, 9)}, filters
    if compression is None:
        return None, ()
    return _other_compression(str(compression), enc, where), ()


def _level(enc: Mapping[str, Any], where: str, low: int, high: int) -> int:
    """The encoding's ``complevel`` (default 4), refused outside ``low..high`` (as
    netcdf-c refuses it: zlib wrote nothing and failed mid-write)."""
    level = enc.get("complevel", 4)
    if (
        isinstance(level, bool)
        or not isinstance(level, int | np.integer)
        or not (low <= level <= high)
    ):
        raise EncodingError(
            f"{where}: encoding complevel={level!r} is not an integer from {low} to {high}"
        )
    return int(level)


#: netCDF4's ``compression`` values for Blosc and the Blosc compressor each names.
_BLOSC_CNAMES = {
    "blosc_lz": "blosclz",
    "blosc_lz4": "lz4",
    "blosc_lz4hc": "lz4hc",
    "blosc_zlib": "zlib",
    "blosc_zstd": "zstd",
}


def _other_compression(compression: str, enc: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The compressor netcdf-c writes for netCDF4's ``compression`` (other than zlib):
    Blosc (``blosc_shuffle``, default 1; ``complevel``, default 4), ``zstd``, ``bzip2``;
    no filter, as netcdf-c writes none with them. Anything else is refused (written
    uncompressed it would be silent)."""
    cname = _BLOSC_CNAMES.get(compression)
    low = 1 if compression == "bzip2" else 0  # numcodecs' BZ2 takes 1-9
    level = int(enc.get("complevel", 4)) if compression == "zstd" else _level(enc, where, low, 9)
    if cname is not None:
        shuffle = int(enc.get("blosc_shuffle", 1))
        return {"id": "blosc", "clevel": level, "blocksize": 0, "cname": cname, "shuffle": shuffle}
    if compression == "zstd":
        return {"id": "zstd", "level": level}
    if compression == "bzip2":
        return {"id": "bz2", "level": level}
    raise UnsupportedError(
        f"encoding compression={compression!r} is not supported by to_nczarr (zlib, "
        f"{', '.join(_BLOSC_CNAMES)}, zstd or bzip2; or a numcodecs compressor)"
    )


# ------------------------------------------------------------------ model
def _groups_of(obj: Any) -> dict[str, Any]:
    """``{group path: its own Dataset}`` for a Dataset or a DataTree, parents first."""
    import xarray as xr

    if isinstance(obj, xr.DataTree):
        return {
            ("/" if node.is_root else "/" + node.relative_to(obj)): node.to_dataset(inherit=False)
            for node in obj.subtree
        }
    if isinstance(obj, xr.Dataset):
        return {"/": obj}
    raise TypeError(f"to_nczarr needs an xarray Dataset or DataTree, got {type(obj).__name__}")


def _dimension_owner(dims: dict[str, dict[str, Dimension]], path: str, name: str) -> str | None:
    """The group (``path`` or an ancestor) whose dimension ``name`` netCDF scoping finds."""
    parts = [p for p in path.split("/") if p]
    for i in range(len(parts), -1, -1):
        group = "/" + "/".join(parts[:i])
        if name in dims.get(group, {}):
            return group
    return None


class ModelPlan:
    """The model of the whole dataset (``dataset``), and the data to write for each
    variable (``data``: ``{variable path: (array, Variable)}``)."""

    def __init__(self, obj: Any, unlimited_dims: Iterable[str] | None) -> None:
        self.data: dict[str, tuple[Any, Variable]] = {}
        groups = _groups_of(obj)
        dims: dict[str, dict[str, Dimension]] = {}
        contents: dict[str, tuple[dict[str, Variable], dict[str, Attribute]]] = {}
        for path, ds in groups.items():
            unlimited = set(ds.encoding.get("unlimited_dims", ()) or ())
            if unlimited_dims is not None:
                unlimited = (
                    {unlimited_dims} if isinstance(unlimited_dims, str) else set(unlimited_dims)
                )
            check_fill_values(ds, path)
            variables, attrs = _encode(checked_packing(ds, path), path)
            dims[path] = {}
            nc_vars: dict[str, Variable] = {}
            for name, var in variables.items():
                if "/" in name:
                    raise InvalidNameError(f"variable name {name!r} in group {path!r} contains '/'")
                fqns = []
                for dim, size in zip(var.dims, var.shape, strict=True):
                    dim = str(dim)
                    owner = _dimension_owner(dims, path, dim)
                    if owner is None or dims[owner][dim].size != size:
                        if dim in dims[path] and dims[path][dim].size != size:
                            raise NCZarrError(
                                f"group {path!r}: dimension {dim!r} has sizes "
                                f"{dims[path][dim].size} and {size}"
                            )
                        dims[path][dim] = Dimension(dim, int(size), dim in unlimited)
                        owner = path
                    fqns.append(f"{owner.rstrip('/')}/{dim}")
                nc_type = _nc_type(f"{path.rstrip('/')}/{name}", var)
                data = var.data
                maxstrlen = None
                if nc_type == "string":
                    data, maxstrlen = _text_bytes(var.values, f"{path.rstrip('/')}/{name}")
                attributes = _attributes(var.attrs, f"variable {path.rstrip('/')}/{name}")
                itemsize = 1 if nc_type in ("char", "string") else var.dtype.itemsize
                compressor, filters = _codecs(var, itemsize, f"variable {path.rstrip('/')}/{name}")
                model = Variable(
                    name=name,
                    path=f"{path.rstrip('/')}/{name}",
                    type=nc_type,
                    dimensions=tuple(fqns),
                    shape=tuple(int(s) for s in var.shape),
                    chunks=_chunks(var, unlimited),
                    fill_value=_typed_fill(
                        attributes, nc_type, var.dtype, f"{path.rstrip('/')}/{name}"
                    ),
                    compressor=compressor,
                    filters=filters,
                    attributes=attributes,
                    scalar=not var.dims,
                    maxstrlen=maxstrlen,
                )
                nc_vars[name] = model
                self.data[model.path] = (data, model)
            contents[path] = (nc_vars, _attributes(attrs, f"group {path}"))
        self.dataset = Dataset(_tree("/", groups, dims, contents), layout="nczarr-v2")


def _typed_fill(attributes: dict[str, Attribute], nc_type: str, dtype: Any, where: str) -> Any:
    """The Zarr fill value, with the ``_FillValue`` attribute retyped to the variable's
    type where it is not (netCDF requires the two to agree). A value the type cannot
    hold is refused (:func:`fill_in_range`), as ``to_netcdf`` does."""
    fill = attributes.get("_FillValue")
    if fill is None:
        return None
    values = (fill.value,) if isinstance(fill.value, str) else tuple(fill.value)
    if not values:
        return None
    if nc_type in ("char", "string"):
        text = str(values[0])
        if nc_type == "char":
            text = text[:1]
        kind = "char" if nc_type == "char" else "string"
        attributes["_FillValue"] = Attribute(
            "_FillValue", kind, text if kind == "char" else (text,)
        )
        return text
    value = fill_in_range(values[0], np.dtype(dtype), where)
    attributes["_FillValue"] = Attribute("_FillValue", nc_type, (value,))
    return value


def fill_in_range(value: Any, dtype: np.dtype, where: str) -> Any:
    """``value`` as a ``dtype`` scalar, or :class:`~nczarr.errors.ValueRangeError` if the
    type cannot hold it (an integer out of range or not finite, a finite float beyond
    the float type's range): a wrapped value would mask a real one."""
    number = np.asarray(value)
    if number.dtype.kind not in "biuf":
        raise UnsupportedTypeError(
            f"variable {where!r}: _FillValue {value!r} is not a number, its type is {dtype}"
        )
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        finite = number.dtype.kind in "iub" or bool(np.isfinite(number))
        if not finite or not info.min <= number.item() <= info.max:
            raise ValueRangeError(
                f"variable {where!r}: _FillValue {value!r} does not fit its type {dtype} "
                f"({info.min} to {info.max})"
            )
    elif (
        dtype.kind == "f"
        and number.dtype.kind in "iuf"
        and bool(np.isfinite(number))
        and abs(float(number)) > float(np.finfo(dtype).max)
    ):
        raise ValueRangeError(
            f"variable {where!r}: _FillValue {value!r} is beyond the range of {dtype}"
        )
    with np.errstate(all="ignore"):
        return number.astype(dtype).item()


def _tree(
    path: str,
    groups: Mapping[str, Any],
    dims: Mapping[str, dict[str, Dimension]],
    contents: Mapping[str, tuple[dict[str, Variable], dict[str, Attribute]]],
) -> Group:
    prefix = path.rstrip("/")
    children = {
        p.rsplit("/", 1)[1]: _tree(p, groups, dims, contents)
        for p in groups
        if p != path and p.rsplit("/", 1)[0] == prefix
    }
    variables, attributes = contents[path]
    return Group(
        name="" if path == "/" else path.rsplit("/", 1)[1],
        path=path,
        dimensions=dims[path],
        attributes=attributes,
        variables=variables,
        groups=children,
    )
