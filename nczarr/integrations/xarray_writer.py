"""``to_nczarr``: write an ``xr.Dataset`` or ``xr.DataTree`` as current NCZarr.

The result is what netcdf-c 4.9.3+ writes: netCDF dimensions (shared down the group
tree, unlimited where asked), typed attributes, ``char`` and ``string`` variables, and
CF-encoded values, so that ``netCDF4``/``ncdump`` see the same variables, dimensions,
values and attributes, and ``xr.open_dataset(url, engine="netcdf4")`` (or
``engine="nczarr"``) returns the input.

How
---
* CF encoding is xarray's own, the netcdf4 engine's pipeline: coordinates
  (``encode_dataset_coordinates``), ``cf_encoder`` (times, ``_FillValue``, packing,
  booleans), then ``EncodedStringCoder(allows_unicode=True)`` and
  ``CharacterArrayCoder`` (bytes become ``char`` arrays with a ``string<n>``
  dimension, text stays text and becomes netCDF ``string``). Nothing CF-related is
  re-implemented here.
* The encoded variables become nczarr's netCDF-4 model (``nczarr.translate.model``):
  types from numpy dtypes, attribute types from numpy types as netCDF4-python
  assigns them (``np.float32`` stays ``float``, a Python ``int`` is ``int64``, a list
  of strings is ``string``). :func:`nczarr.translate.write` turns the model into
  NCZarr metadata -- no NCZarr JSON is written by hand.
* Chunks are encoded by zarr-python, through a :class:`~nczarr.ZarrStore` over a map
  that keeps the pure-Zarr ``.zarray`` of each array in memory (zarr-python cannot
  open netcdf-c's ``>S1`` char dtype) and sends chunk objects to the target. Text is
  stored as NUL-padded UTF-8 of width ``max(longest, 128)`` (netcdf-c's
  ``|S<maxstrlen>``). Dask arrays are rechunked to the Zarr chunks and stored chunk
  by chunk, never loaded whole.
* Order: chunks first, then array metadata, the root group last, so an interrupted
  write never looks like a complete dataset.

Not supported (clear errors): appending (``mode="a"``/``"r+"``, ``append_dim=``),
region writes (``region=``), complex, timedelta without CF units, object arrays
that are not text, and attributes netCDF cannot type (booleans, nested lists).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ..errors import (
    InvalidModeError,
    NCZarrError,
    TargetExistsError,
    UnsupportedError,
    UnsupportedTypeError,
    warn_all,
)
from ..maps.base import ZMap
from ..translate.conventions import DEFAULT_MAXSTRLEN, DTYPE_TO_NC, ZARRAY, ZATTRS, ZGROUP
from ..translate.model import Attribute, Dataset, Dimension, Group, Variable

__all__ = ["to_nczarr", "netcdf_attribute"]

_MODES = ("w-", "w")
_METADATA_NAMES = (ZARRAY, ZATTRS, ZGROUP)


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
        return Attribute(name, "char", bytes(value).decode("utf-8"))
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
def _encode(ds: Any) -> tuple[dict[str, Any], dict[Hashable, Any]]:
    """The netcdf4 engine's CF encoding of one group's dataset: (variables, attributes)."""
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


def _codecs(var: Any, itemsize: int) -> tuple[dict[str, Any] | None, tuple[dict[str, Any], ...]]:
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
        return {"id": "zlib", "level": int(enc.get("complevel", 4))}, filters
    return None, ()


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


class _Plan:
    """The model of the whole dataset, and the data to write for each variable."""

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
            variables, attrs = _encode(ds)
            dims[path] = {}
            nc_vars: dict[str, Variable] = {}
            for name, var in variables.items():
                if "/" in name:
                    raise ValueError(f"variable name {name!r} in group {path!r} contains '/'")
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
                compressor, filters = _codecs(var, itemsize)
                model = Variable(
                    name=name,
                    path=f"{path.rstrip('/')}/{name}",
                    type=nc_type,
                    dimensions=tuple(fqns),
                    shape=tuple(int(s) for s in var.shape),
                    chunks=_chunks(var, unlimited),
                    fill_value=_typed_fill(attributes, nc_type, var.dtype),
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


def _typed_fill(attributes: dict[str, Attribute], nc_type: str, dtype: Any) -> Any:
    """The Zarr fill value, with the ``_FillValue`` attribute retyped to the variable's
    type where it is not (netCDF requires the two to agree)."""
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
    value = np.array(values[0]).astype(dtype).item()
    attributes["_FillValue"] = Attribute("_FillValue", nc_type, (value,))
    return value


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


# ------------------------------------------------------------------ chunk writing
class _ChunkSink(ZMap):
    """zarr-python's view while writing chunks: metadata objects live in memory, chunk
    objects go to ``target``. The target thus never holds pure-Zarr metadata."""

    def __init__(self, target: ZMap, metadata: Mapping[str, bytes]) -> None:
        super().__init__("a")
        self._target = target
        self._metadata = dict(metadata)

    @staticmethod
    def _is_metadata(key: str) -> bool:
        return key.rsplit("/", 1)[-1] in _METADATA_NAMES

    def _load(self, key: str) -> bytes:
        if self._is_metadata(key):
            return self._metadata[key]
        return self._target[key]

    def _exists(self, key: str) -> bool:
        return key in self._metadata if self._is_metadata(key) else key in self._target

    def _store(self, key: str, value: bytes) -> None:
        if self._is_metadata(key):
            self._metadata[key] = bytes(value)
        else:
            self._target[key] = value

    def _remove(self, key: str) -> None:
        if self._is_metadata(key):
            del self._metadata[key]
        else:
            del self._target[key]

    def _list(self, prefix: str) -> Iterator[str]:
        yield from (
            k for k in self._metadata if not prefix or k == prefix or k.startswith(prefix + "/")
        )
        yield from (k for k in self._target.keys_below(prefix) if not self._is_metadata(k))

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return (f"chunks-to:{self._target.url}", {})


def _write_chunks(sink: ZMap, plan: _Plan) -> None:
    import zarr

    from .zarr_store import ZarrStore

    store = ZarrStore(sink)
    lazy_sources, lazy_targets = [], []
    for data, var in plan.data.values():
        array = zarr.open_array(store=store, path=var.path.strip("/"), mode="r+", zarr_format=2)
        if hasattr(data, "dask") and hasattr(data, "rechunk"):
            lazy_sources.append(data.rechunk(var.chunks or data.shape))
            lazy_targets.append(array)
        else:
            array[...] = np.asarray(data)
    if lazy_sources:
        import dask.array as da

        da.store(lazy_sources, lazy_targets, lock=False)


# ------------------------------------------------------------------ entry point
def to_nczarr(
    obj: Any,
    url: str | os.PathLike[str] | ZMap,
    mode: str = "w-",
    *,
    storage_options: Mapping[str, Any] | None = None,
    encoding: Mapping[str, Mapping[str, Any]] | None = None,
    unlimited_dims: Iterable[str] | None = None,
    region: Any = None,
    append_dim: str | None = None,
) -> None:
    """Write ``obj`` (an ``xr.Dataset`` or ``xr.DataTree``) at ``url`` as current NCZarr.

    Parameters
    ----------
    obj
        The dataset; a DataTree's nodes become netCDF groups (a child's variables
        use the parent's dimension when the name and size match).
    url
        Where to write: a path, a netCDF-style URL (``file:///x.file#mode=nczarr,file``,
        ``x.zip``, ``s3://bucket/key``) or an open writable map. A new zip archive gets
        netcdf-c's layout (one top-level folder), which netcdf-c requires.
    mode
        ``"w-"`` (default): fail if the target holds anything. ``"w"``: replace it.
    storage_options
        Passed to :func:`nczarr.open_map` (S3 ``endpoint_url``, ``anon``, ...).
    encoding
        Per-variable encodings, as for ``to_netcdf``: ``dtype``, ``_FillValue``,
        ``scale_factor``, ``add_offset``, ``units``, ``calendar``, ``chunksizes``
        (or ``chunks``), ``zlib``/``complevel``/``shuffle`` or a numcodecs
        ``compressor``. For a DataTree, keys are variable paths (``"/g/v"``).
    unlimited_dims
        Dimensions to mark unlimited (default: each dataset's
        ``encoding["unlimited_dims"]``).
    region, append_dim
        Not supported: an NCZarr store is written whole.

    Raises
    ------
    UnsupportedError
        ``mode`` ``"a"``/``"r+"``, ``region=`` or ``append_dim=`` (appending and region
        writes are not supported: write a new store, or use ``to_zarr`` and
        :func:`nczarr.convert`).
    TargetExistsError
        ``mode="w-"`` and the target is not empty. Nothing is written.
    UnsupportedTypeError
        A variable or attribute has no netCDF-4 type; nothing is written.
    """
    if mode in ("a", "r+") or region is not None or append_dim is not None:
        what = "region writes (region=)" if region is not None else "appending"
        where = url if isinstance(url, ZMap) else os.fspath(url)
        raise UnsupportedError(
            f"to_nczarr does not support {what} ({where!r}): it writes a whole new NCZarr "
            "store (mode 'w-' or 'w'); to extend one, write pure Zarr with to_zarr and "
            "convert it with nczarr.convert"
        )
    if mode not in _MODES:
        raise InvalidModeError(f"invalid mode {mode!r} for to_nczarr: expected 'w-' or 'w'")
    obj = _with_encoding(obj, encoding)
    plan = _Plan(obj, unlimited_dims)  # every type error before anything is written
    from ..translate.writer import write, write_with_warnings

    result = write_with_warnings(plan.dataset, "nczarr")
    warn_all(result.warnings, stacklevel=3)
    zarr_metadata = {k: v for k, v in write(plan.dataset, "zarr").items() if k.endswith(ZARRAY)}
    zmap, owned = _open_target(url, storage_options)
    try:
        if any(True for _ in zmap.keys_below("")):
            _check_not_reading_from(obj, zmap)
            if mode == "w-":
                raise TargetExistsError(
                    f"target {zmap.url!r} exists and is not empty: pass mode='w' to replace it"
                )
            for root_object in (ZGROUP, ZATTRS, ".zmetadata"):
                if root_object in zmap:
                    del zmap[root_object]
            zmap.clear()
        _write_chunks(_ChunkSink(zmap, zarr_metadata), plan)
        metadata = result.metadata
        order = sorted(metadata, key=lambda k: (k.rsplit("/", 1)[-1] != ZARRAY, -k.count("/")))
        for key in order:  # arrays, then groups deepest first, the root last
            zmap[key] = metadata[key]
        zmap.flush()
    finally:
        if owned:
            zmap.close()


def _with_encoding(obj: Any, encoding: Mapping[str, Mapping[str, Any]] | None) -> Any:
    if not encoding:
        return obj
    import xarray as xr

    obj = obj.copy(deep=False)
    for key, enc in encoding.items():
        if isinstance(obj, xr.DataTree):
            group, _, name = str(key).rpartition("/")
            node = obj[group] if group else obj
            target = node.dataset[name]  # raises KeyError naming an unknown variable
            target.encoding = {**target.encoding, **enc}
            node[name] = target
        else:
            if key not in obj.variables:
                raise KeyError(f"encoding names variable {key!r}, which is not in the dataset")
            obj[key].encoding = {**obj[key].encoding, **enc}
    return obj


def _location(url: str) -> tuple[str, str | None, str] | None:
    """(storage, bucket, path) of a URL, local paths resolved; None if not a URL."""
    from ..maps.url import parse_url

    try:
        parsed = parse_url(url)
    except (NCZarrError, ValueError, TypeError):
        return None
    path = parsed.path
    if parsed.storage in ("file", "zip"):
        path = os.path.realpath(path)
    return ("local" if parsed.storage in ("file", "zip") else parsed.storage, parsed.bucket, path)


def _check_not_reading_from(obj: Any, zmap: ZMap) -> None:
    """Refuse to replace a store that ``obj``'s (lazy) variables are read from."""
    import xarray as xr

    target = _location(zmap.url)
    if target is None:
        return
    datasets = (
        [n.to_dataset(inherit=False) for n in obj.subtree]
        if isinstance(obj, xr.DataTree)
        else [obj]
    )
    for ds in datasets:
        for name, var in ds.variables.items():
            source = var.encoding.get("source")
            here = _location(source) if isinstance(source, str) else None
            if here is None or here[:2] != target[:2]:
                continue
            a, b = here[2].rstrip("/"), target[2].rstrip("/")
            if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
                raise InvalidModeError(
                    f"cannot replace {zmap.url!r}: variable {name!r} is read from it "
                    f"({source!r}); load the data first (.load()) or write elsewhere"
                )


def _open_target(url: Any, storage_options: Mapping[str, Any] | None) -> tuple[ZMap, bool]:
    if isinstance(url, ZMap):
        if storage_options:
            raise TypeError(f"storage_options cannot be applied to an open map {url!r}")
        return url, False
    from ..maps.open import open_map
    from ..maps.url import parse_url

    options = dict(storage_options or {})
    parsed = parse_url(os.fspath(url))
    if parsed.storage == "zip" and not os.path.exists(parsed.path):
        options.setdefault("layout", "netcdf")  # the only zip layout netcdf-c reads
    return open_map(parsed, "a", storage_options=options), True
