"""Where the lazy values of an ``xr.Dataset`` are read from, so ``to_nczarr`` never
writes over them.

A variable opened lazily (``chunks={}``, or no ``chunks`` and not yet loaded) keeps
reading its store until it is computed. If ``to_nczarr`` replaced that store first,
the values written would be whatever is left there (NaN, fill values). The variable's
``encoding["source"]`` is not a reliable witness: arithmetic, ``assign`` and
``drop_encoding`` lose it while the dask graph still reads the store. So the data
itself is searched:

* a variable's data is unwrapped through xarray's lazy adapters (their ``array``
  attribute: ``LazilyIndexedArray``, ``CopyOnWriteArray``, ``MemoryCachedArray``,
  CF decoding wrappers, ...);
* a dask array's graph is walked (task arguments, data nodes, nested containers);
* at the bottom sit backend arrays: nczarr's own engine (a zarr array over a
  :class:`~nczarr.ZarrStore` over a translated view over the source map), xarray's
  zarr engine and ``dask.array.from_zarr`` (a zarr array over a ``LocalStore``,
  ``ZipStore`` or ``FsspecStore``), and file-based engines (netcdf4, h5netcdf, scipy:
  a datastore with a ``_filename``).

Each source becomes a :class:`~nczarr.conversion.overlap.Location`, and convert's
own overlap rules decide (symbolic links, ``..`` spellings, hard links and bind
mounts of archives, S3 endpoints and key prefixes).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from ..errors import InvalidModeError
from ..maps.base import ZMap
from ..maps.overlap import Location, location_of, overlap

__all__ = ["lazy_sources", "check_not_reading_from"]

#: How deep the walk goes into nested wrappers and task arguments.
_MAX_DEPTH = 64
#: Tasks searched per graph layer (a layer's tasks share their literal arguments).
_TASKS_PER_LAYER = 1000


def _variables(obj: Any) -> Iterator[tuple[str, Any]]:
    """``(path, xarray Variable)`` of every variable of a Dataset or DataTree."""
    import xarray as xr

    if isinstance(obj, xr.DataTree):
        for node in obj.subtree:
            prefix = "/" + node.relative_to(obj) if not node.is_root else ""
            for name, var in node.to_dataset(inherit=False).variables.items():
                yield f"{prefix.rstrip('/')}/{name}", var
    elif isinstance(obj, xr.Dataset):
        for name, var in obj.variables.items():
            yield str(name), var


def _children(value: Any) -> list[Any]:
    """The objects a lazy value refers to that may lead to a backend array."""
    if isinstance(value, str | bytes | int | float | complex | slice | type(None)):
        return []
    if isinstance(value, tuple | list | set | frozenset):
        return list(value)
    if isinstance(value, Mapping):
        return list(value.values())
    module = type(value).__module__
    if module.startswith("dask"):
        if hasattr(value, "__dask_graph__") and callable(value.__dask_graph__):
            return _graph_children(value.__dask_graph__())
        # task specs (dask >= 2024.12): Task.args/kwargs, DataNode.value; refs lead nowhere
        parts = (getattr(value, a, None) for a in ("args", "kwargs", "value"))
        return [p for p in parts if p is not None]
    if hasattr(value, "__dask_graph__") and callable(value.__dask_graph__):
        return _graph_children(value.__dask_graph__())
    if module.startswith("xarray"):  # xarray's lazy adapters keep what they wrap in .array
        inner = getattr(value, "array", None)
        return [inner] if inner is not None else []
    return []


def _graph_children(graph: Any) -> list[Any]:
    """The values of a dask graph worth searching, without materializing it.

    A ``HighLevelGraph`` is read layer by layer: a materialized layer's values (the
    backend array xarray and ``from_array`` store under an ``original-`` key is one),
    a ``Blockwise`` layer's literal arguments, task template and I/O dependencies
    (where an inlined array sits). Of the tasks of one layer only the first :data:`_TASKS_PER_LAYER`
    are searched: the tasks of a layer share their literal arguments."""
    if graph is None:
        return []
    layers = getattr(graph, "layers", None)
    if not isinstance(layers, Mapping):
        return _some_tasks(graph.values())
    out: list[Any] = []
    for layer in layers.values():
        mapping = getattr(layer, "mapping", None)
        if isinstance(mapping, Mapping):
            out += _some_tasks(mapping.values())
        elif hasattr(layer, "indices") and hasattr(layer, "output_indices"):  # Blockwise
            out += [v for v, index in layer.indices if index is None]
            out += [getattr(layer, a) for a in ("task", "dsk", "io_deps") if hasattr(layer, a)]
        else:
            out += _some_tasks(islice(layer.values(), _TASKS_PER_LAYER))
    return out


def _some_tasks(values: Iterable[Any]) -> list[Any]:
    """Every value that is not a task, and the first tasks."""
    out, tasks = [], 0
    for value in values:
        is_task = (type(value).__name__ == "Task") or (
            isinstance(value, tuple) and bool(value) and callable(value[0])
        )
        if is_task:
            tasks += 1
            if tasks > _TASKS_PER_LAYER:
                continue
        out.append(value)
    return out


def _store_location(store: Any, path: str = "") -> tuple[str, Location] | None:
    """(description, location) of a zarr store: nczarr's ZarrStore or zarr's own."""
    from zarr.storage import FsspecStore, LocalStore, ZipStore

    from .zarr_store import ZarrStore

    if isinstance(store, ZarrStore):
        return _map_location(store.zmap)
    if isinstance(store, LocalStore):
        where = os.path.join(os.fspath(store.root), path) if path else os.fspath(store.root)
        return where, Location("local", os.path.abspath(where))
    if isinstance(store, ZipStore):
        where = os.fspath(store.path)
        return where, Location("local", os.path.abspath(where))
    if isinstance(store, FsspecStore):
        return _fsspec_location(store.fs, f"{store.path.rstrip('/')}/{path}".rstrip("/"))
    return None


def _fsspec_location(fs: Any, path: str) -> tuple[str, Location] | None:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol in ("file", "local"):
        return path, Location("local", os.path.abspath(path))
    if protocol in ("s3", "s3a"):
        bucket, _, key = path.lstrip("/").partition("/")
        endpoint = getattr(fs, "endpoint_url", None) or (
            getattr(fs, "client_kwargs", None) or {}
        ).get("endpoint_url")
        url = location_of(f"s3://{bucket}/{key}", {"endpoint_url": endpoint} if endpoint else {})
        return f"s3://{bucket}/{key}", url
    return f"{protocol}://{path}", Location(protocol, path.rstrip("/"))


def _map_location(zmap: ZMap) -> tuple[str, Location]:
    """The store a map reads from: a translated view's source, else the map itself."""
    seen = 0
    while zmap.source is not None and seen < _MAX_DEPTH:
        zmap = zmap.source
        seen += 1
    return zmap.url, location_of(zmap)


def _leaf_location(value: Any) -> tuple[str, Location] | None:
    """The source of a backend array (or a zarr array, or a map), if ``value`` is one."""
    if isinstance(value, ZMap):
        return _map_location(value)
    store_path = getattr(value, "store_path", None)  # a zarr (v3 library) Array
    if store_path is not None and hasattr(store_path, "store"):
        return _store_location(store_path.store, str(store_path.path))
    inner = getattr(value, "_array", None)  # xarray's / nczarr's ZarrArrayWrapper
    if inner is not None and hasattr(inner, "store_path"):
        return _leaf_location(inner)
    datastore = getattr(value, "datastore", None)  # netcdf4, h5netcdf, scipy engines
    filename = getattr(datastore, "_filename", None)
    if isinstance(filename, str | os.PathLike):
        where = os.fspath(filename)
        if "://" in where:
            try:
                return where, location_of(where)
            except Exception:
                return None
        return where, Location("local", os.path.abspath(where))
    return None


def lazy_sources(obj: Any) -> Iterator[tuple[str, str, Location]]:
    """``(variable path, source URL, Location)`` for each store a lazy variable reads."""
    for name, var in _variables(obj):
        data = getattr(var, "_data", None)
        stack = [(data, 0)]
        seen: set[int] = set()
        found: set[str] = set()
        while stack:
            value, depth = stack.pop()
            if id(value) in seen or depth > _MAX_DEPTH:
                continue
            seen.add(id(value))
            leaf = _leaf_location(value)
            if leaf is not None:
                if leaf[0] not in found:
                    found.add(leaf[0])
                    yield name, leaf[0], leaf[1]
                continue
            stack.extend((child, depth + 1) for child in _children(value))


def check_not_reading_from(obj: Any, target: ZMap | Location, shown: str) -> None:
    """Raise :class:`InvalidModeError` if a lazy variable of ``obj`` reads from ``target``
    (the same store under any name, a store inside it, or one it lies inside)."""
    where = target if isinstance(target, Location) else location_of(target)
    for name, source, location in lazy_sources(obj):
        if overlap(where, location):
            raise InvalidModeError(
                f"cannot write to {shown!r}: variable {name!r} is read from it (lazily, "
                f"from {source!r}: that store, a store inside it, or one holding it); "
                "load the data first (.load() or .compute()) or write elsewhere"
            )
