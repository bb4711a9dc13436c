"""Reference sets written to files: fsspec's JSON (version 1) or its Parquet layout.

``write_references(src, out)`` writes the set :func:`~nczarr.references` returns, as
JSON when ``out`` ends in ``.json``, or in the Parquet layout fsspec's
``reference://`` filesystem reads lazily (``LazyReferenceMapper``: a directory with
``.zmetadata`` holding the metadata and, per array, ``refs.N.parq`` files of
``record_size`` chunk entries each) when it ends in ``.parq`` or ``.parquet``.

The Parquet set is written by fsspec's own writer (``LazyReferenceMapper.create``),
fed array by array, one record's worth of the chunk grid at a time, so each record
file is written as soon as it is full: memory holds one flag per grid cell of the
array being written and one record of entries, not the keys of every chunk. fsspec's
writer needs pandas, fastparquet and kerchunk (the ``refs`` extra); readers need
fsspec, pandas and fastparquet.

fsspec's Parquet layout knows Zarr v2 keys only (``.zarray``, chunk keys ``a/0.1``):
``zarr_format=3`` and arrays whose chunk keys use ``/`` are refused before anything
is written.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ..errors import TargetExistsError, UnsupportedError, warn_all
from ..maps.base import ZMap
from ..readthrough import view
from .fillchunk import FillChunk, encoded_fill_chunk
from .outputfile import write_whole
from .references import DEFAULT_MAX_INLINED, Entries, check_limits, inline_bytes

__all__ = ["DEFAULT_RECORD_SIZE", "PARQUET_SUFFIXES", "reference_format", "write_references"]

#: Chunk entries per Parquet record file (fsspec's default).
DEFAULT_RECORD_SIZE = 10_000

#: Output names written in fsspec's Parquet layout.
PARQUET_SUFFIXES = (".parq", ".parquet")


def reference_format(out: str | os.PathLike[str]) -> Literal["json", "parquet"]:
    """``"parquet"`` when ``out`` ends in ``.parq``/``.parquet``, else ``"json"``."""
    return "parquet" if os.fspath(out).rstrip("/").endswith(PARQUET_SUFFIXES) else "json"


def _open_parquet_writer(out: str, record_size: int, options: Mapping[str, Any]) -> Any:
    """fsspec's Parquet reference writer at ``out``, after checking that ``out`` is
    absent or a Parquet reference set (fsspec's ``create`` empties the directory)."""
    try:
        import fastparquet  # noqa: F401
        import kerchunk.df  # noqa: F401
        import pandas  # noqa: F401
        from fsspec.core import url_to_fs
        from fsspec.implementations.reference import LazyReferenceMapper
    except ImportError as exc:
        raise UnsupportedError(
            f"{out}: writing Parquet reference sets needs pandas, fastparquet and kerchunk "
            f"({exc.name} is missing): pip install 'nczarr[refs]'"
        ) from exc
    fs, root = url_to_fs(out, **options)
    if fs.exists(root):
        _check_replaceable(fs, root, out)
    return LazyReferenceMapper.create(root, fs=fs, record_size=record_size)


def _check_replaceable(fs: Any, root: str, out: str) -> None:
    """Only a Parquet reference set (its ``.zmetadata`` has ``record_size``) may be
    replaced; anything else at ``out`` is refused untouched."""
    try:
        meta = json.loads(fs.cat_file(f"{root.rstrip('/')}/.zmetadata"))
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, dict) or "record_size" not in meta:
        raise TargetExistsError(
            f"{out} exists and is not a Parquet reference set: nothing was written "
            "(remove it, or name another output)"
        )


def _check_parquet_keys(entries: Entries, out: str) -> None:
    """fsspec's Parquet layout reads Zarr v2 metadata and ``.``-separated chunk keys."""
    for key, text in entries.metadata:
        if key == "zarr.json" or key.endswith("/zarr.json"):
            raise UnsupportedError(
                f"{out}: fsspec's Parquet reference layout holds Zarr v2 metadata only; "
                "write zarr_format=3 references as JSON"
            )
        if key.endswith(".zarray") and json.loads(text).get("dimension_separator") == "/":
            array = "/" + key[: -len(".zarray")].strip("/")
            raise UnsupportedError(
                f"{out}: array {array} has '/'-separated chunk keys, which fsspec's Parquet "
                "reference layout cannot hold; write its references as JSON"
            )


def _write_parquet(entries: Entries, out: str, record_size: int, options: Mapping) -> None:
    _check_parquet_keys(entries, out)
    mapper = _open_parquet_writer(out, record_size, options)
    try:
        zarrays = {}
        for key, text in entries.metadata:
            if key == ".zmetadata":
                continue  # the layout's own .zmetadata carries every metadata object
            mapper[key] = text
            if key.endswith(".zarray"):
                zarrays[key[: -len(".zarray")].rstrip("/")] = text
        for array in entries.arrays:
            _write_array(mapper, entries, array, zarrays[array], record_size)
        mapper.flush()
    except BaseException:
        mapper.fs.rm(mapper.root, recursive=True)  # no half-written set is left behind
        raise


def _write_array(mapper: Any, entries: Entries, array: str, zarray: str, step: int) -> None:
    """Every chunk of ``array``'s grid, one record file's worth at a time in grid
    order, so fsspec's writer writes each record as it fills: the chunks the source
    holds as their entries, the others as the encoded fill-value chunk (fsspec's
    Parquet reader cannot leave a chunk out), announced.

    Memory: one flag per grid cell (which chunks the view lists) and one record of
    keys, not the keys of every chunk."""
    meta = json.loads(zarray)
    grid = tuple(math.ceil(s / c) for s, c in zip(meta["shape"], meta["chunks"], strict=True))
    if _stream_array(mapper, entries, array, zarray, grid):
        return
    total = math.prod(grid)
    present = np.zeros(total, dtype=bool)
    strays = []  # listed keys that are no cell of the grid: written as listed
    for key in entries.translated.array_chunk_keys(array):
        index = _grid_index(key[len(array) + 1 :], grid)
        if index is None:
            strays.append(key)
        else:
            present[index] = True
    fill: FillChunk | None = None
    inlined = ""
    missing = 0
    for start in range(0, total, step):
        stop = min(start + step, total)
        keys = _grid_keys(array, grid, start, stop)
        flags = present[start:stop].tolist()
        found = [key for key, here in zip(keys, flags, strict=True) if here]
        for key, entry in entries.entries_for(array, found):
            mapper[key] = entry
        if len(found) < len(keys):
            if fill is None:
                fill = encoded_fill_chunk(zarray.encode(), "/" + array)
                inlined = inline_bytes(fill.chunk)
            for key, here in zip(keys, flags, strict=True):
                if not here:
                    mapper[key] = inlined
                    missing += 1
    for key, entry in entries.entries_for(array, strays):
        mapper[key] = entry
    _note_missing(entries, array, missing, fill)


def _stream_array(
    mapper: Any, entries: Entries, array: str, zarray: str, grid: tuple[int, ...]
) -> bool:
    """Write ``array``'s entries as its source walks its stored chunks, when the source
    can (a netCDF-4 variable whose chunks are all verbatim: one walk of its HDF5 chunk
    B-tree, :meth:`~nczarr.maps.base.ZMap.each_stored_chunk`),
    with no chunk index held; False (nothing written) otherwise.

    The walk comes in grid order in practice: cells it passes over are written as the
    encoded fill chunk at once, so each record file is written when full. A chunk
    coming after its cell was passed replaces the fill there once the walk is over
    (:func:`_replace_fill`). Memory: one flag per grid cell, and the late chunks."""
    translated = entries.translated
    source = translated.source
    if (
        entries.inline_threshold
        or translated.keys_mapped
        or array in translated.reencoded
        or not grid
    ):
        return False
    present = bytearray(math.prod(grid))
    strides = [math.prod(grid[i + 1 :]) for i in range(len(grid))]
    state = {"next": 0, "missing": 0}
    fill, refused = _fill_before_walk(zarray, array)
    inlined = inline_bytes(fill.chunk) if fill is not None else ""
    later: list[str] = []  # chunks with a skipped filter: re-encoded after the walk
    late: list[tuple[str, list]] = []  # pointers to cells already written as the fill

    def holes(stop: int) -> None:
        """Fill the cells from the last one passed to ``stop`` that hold no chunk."""
        start = state["next"]
        if stop <= start:
            return
        flags = present[start:stop]
        if flags.count(0):
            if refused is not None:
                raise refused
            for key, here in zip(_grid_keys(array, grid, start, stop), flags, strict=True):
                if not here:
                    mapper[key] = inlined
                    state["missing"] += 1
        state["next"] = stop

    def visit(coords: tuple[int, ...], url: str, offset: int, size: int, mask: int) -> None:
        at = sum(c * s for c, s in zip(coords, strides, strict=True))
        passed = at < state["next"] and not present[at]  # written as a hole: late
        if at >= state["next"]:
            holes(at)
            state["next"] = at + 1
        elif passed:
            state["missing"] -= 1
        present[at] = 1
        key = f"{array}/" + ".".join(map(str, coords))
        if mask:
            later.append(key)  # its inlined bytes replace the fill's
            return
        entries.pointed += 1
        if passed:
            late.append((key, [url, offset, size]))
        else:
            mapper[key] = [url, offset, size]

    if not source.each_stored_chunk(array, visit):
        return False
    holes(len(present))
    _replace_fill(mapper, late)
    for key, entry in entries.entries_for(array, later):
        mapper[key] = entry
    _note_missing(entries, array, state["missing"], fill)
    return True


def _replace_fill(mapper: Any, late: list[tuple[str, list]]) -> None:
    """Point the cells in ``late`` (written as the inlined fill chunk) at their chunks.

    fsspec's writer merges an entry into a record file already written, but a pointer
    merged there keeps the cell's inlined bytes, which its reader returns first (the
    chunk would read as the fill value). A deletion clears both: the cells are deleted
    and written out, then pointed."""
    if not late:
        return
    for key, _ in late:
        del mapper[key]
    mapper.flush()
    for key, entry in late:
        mapper[key] = entry


def _fill_before_walk(zarray: str, array: str) -> tuple[FillChunk | None, UnsupportedError | None]:
    """The fill-value chunk of ``array``, or the refusal to raise if a chunk turns out
    to be missing.

    Encoded before the chunk walk, never inside it: HDF5's chunk walk calls back with
    h5py's global lock held, and zarr-python encodes in its own event-loop thread,
    where a garbage collection that frees an h5py object waits for that lock while
    the walk waits for zarr: a deadlock (seen in CI, in
    ``test_nc_parquet_streamed_values_and_fill``)."""
    try:
        return encoded_fill_chunk(zarray.encode(), "/" + array), None
    except UnsupportedError as exc:
        return None, exc


def _note_missing(entries: Entries, array: str, missing: int, fill: FillChunk | None) -> None:
    """Announce the ``missing`` chunks of ``array`` given ``fill`` (what it reads as)."""
    if missing and fill is not None:
        entries.notes.append(
            f"array /{array}: {missing} chunk(s) missing from the source written into "
            f"the Parquet set as an encoded chunk of {len(fill.chunk)} bytes reading "
            f"as {fill.reads_as}, as zarr-python reads a chunk never written "
            "(fsspec's Parquet reader cannot leave a chunk out)"
        )


def _grid_index(rest: str, grid: tuple[int, ...]) -> int | None:
    """The row-major index in ``grid`` of chunk key ``rest`` (``"3.1"``, ``"0"`` for a
    0-d array), or None when it is no cell of the grid."""
    if not grid:
        return 0 if rest == "0" else None
    parts = rest.split(".")
    if len(parts) != len(grid) or not all(p.isascii() and p.isdigit() for p in parts):
        return None
    index = 0
    for part, n in zip(parts, grid, strict=True):
        c = int(part)
        if c >= n:
            return None
        index = index * n + c
    return index


def _grid_keys(array: str, grid: tuple[int, ...], start: int, stop: int) -> list[str]:
    """The chunk keys of cells ``start`` to ``stop`` (row-major) of ``grid``."""
    if not grid:
        return [f"{array}/0"] if start == 0 and stop > 0 else []
    cells = np.unravel_index(np.arange(start, stop), grid)
    columns = [c.tolist() for c in cells]
    if len(columns) == 1:
        return [f"{array}/{i}" for i in columns[0]]
    if len(columns) == 2:
        return [f"{array}/{i}.{j}" for i, j in zip(*columns, strict=True)]
    return [f"{array}/" + ".".join(map(str, c)) for c in zip(*columns, strict=True)]


def _open_streamed(src: Any, storage_options: Mapping[str, Any] | None) -> ZMap | None:
    """``src`` opened so that its chunk index is read array by array, where it can be
    (a netCDF-4 file: :mod:`nczarr.ncfile.streamed`), else None (the view opens it)."""
    from ..ncfile.streamed import open_streamed

    return open_streamed(src, dict(storage_options or {}))


def _write_json(entries: Entries, out: str, options: Mapping) -> None:
    """The set as one JSON document at ``out``, replacing what is there only once the
    new one is whole (:func:`~nczarr.conversion.outputfile.write_whole`). The document
    is made in memory first: JSON sets are for what fits there (Parquet streams)."""
    refs: dict[str, Any] = dict(entries.metadata)
    refs.update(entries.chunks())
    write_whole(out, json.dumps({"version": 1, "refs": refs}).encode("utf-8"), options)


def write_references(
    src: str | os.PathLike[str] | ZMap,
    out: str | os.PathLike[str],
    mode: Literal["zarr", "nczarr"] = "zarr",
    *,
    zarr_format: int = 2,
    storage_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    consolidated: bool | None = True,
    inline_threshold: int = 0,
    exclude: Sequence[str] | None = None,
    max_inlined: int = DEFAULT_MAX_INLINED,
    record_size: int = DEFAULT_RECORD_SIZE,
) -> dict[str, int]:
    """Write the reference set of ``src`` (as :func:`nczarr.references` makes it) to
    ``out``: fsspec's Parquet layout when ``out`` ends in ``.parq``/``.parquet``,
    else JSON.

    Parameters
    ----------
    src, mode, zarr_format, storage_options, consolidated, inline_threshold, exclude, max_inlined
        As :func:`nczarr.references`. (A Parquet set's own ``.zmetadata`` holds every
        metadata object, which zarr reads as consolidated metadata: ``consolidated``
        changes nothing there.)
    out : str or path-like
        Local path or fsspec URL of the output. An existing JSON file is replaced once
        the new set is whole (a failure leaves it as it was); an existing Parquet
        output is replaced only if it is a Parquet reference set.
    target_options : mapping, optional
        fsspec options for writing ``out``.
    record_size : int
        Chunk entries per Parquet record file.

    Returns
    -------
    dict
        ``{"metadata": n, "pointers": n, "inlined": n}``: entries written.

    When writing fails, a JSON ``out`` is as it was before; nothing is left at a
    Parquet ``out`` (a Parquet set it replaced is gone).

    Raises
    ------
    UnsupportedError
        As :func:`nczarr.references`; or Parquet asked for Zarr v3 metadata or
        ``/``-separated chunk keys, or its writer's packages are not installed.
    TargetExistsError
        ``out`` is a Parquet output that exists and is not a reference set.
    InvalidModeError
        ``out`` lies inside ``src`` or the other way round.
    """
    from .overlap import check_distinct

    check_limits(inline_threshold, max_inlined)
    if record_size < 1:
        raise ValueError(f"record_size must be >= 1, got {record_size}")
    out = os.fspath(out)
    options = dict(target_options or {})
    check_distinct(src, out, src_options=storage_options, dst_options=options)
    fmt = reference_format(out)
    if fmt == "parquet" and zarr_format != 2:
        raise UnsupportedError(
            f"{out}: fsspec's Parquet reference layout holds Zarr v2 metadata only; "
            "write zarr_format=3 references as JSON"
        )
    with contextlib.ExitStack() as stack:
        opened = _open_streamed(src, storage_options) if fmt == "parquet" else None
        if opened is not None:
            stack.callback(opened.close)
        translated = stack.enter_context(
            view(
                opened if opened is not None else src,
                mode,
                zarr_format=zarr_format,
                consolidated=consolidated,
                storage_options=None if opened is not None else storage_options,
            )
        )
        entries = Entries(
            translated,
            inline_threshold=inline_threshold,
            exclude=exclude,
            max_inlined=max_inlined,
        )
        if fmt == "parquet":
            _write_parquet(entries, out, record_size, options)
        else:
            _write_json(entries, out, options)
    warn_all(entries.warnings())
    return {
        "metadata": len(entries.metadata),
        "pointers": entries.pointed,
        "inlined": entries.inlined,
    }
