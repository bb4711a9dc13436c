"""Small Zarr v2 sources with a chosen number of chunk objects, written by zarr-python."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def zarr_source(path: Path, rows: int, *, nested: int = 0) -> tuple[Path, int]:
    """A Zarr v2 group at ``path``: array ``a`` with ``rows`` x 4 chunks of 2 x 2 ``i4``
    (``.`` separated), plus, with ``nested``, array ``g/b`` of ``nested`` chunks in
    ``/``-separated rows. Returns the path and the number of chunk objects."""
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.attrs["title"] = "request counting"
    a = root.create_array("a", shape=(2 * rows, 8), chunks=(2, 2), dtype="i4", fill_value=-1)
    a[:] = np.arange(16 * rows, dtype="i4").reshape(2 * rows, 8)
    a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    count = 4 * rows
    if nested:
        b = root.create_group("g").create_array(
            "b",
            shape=(nested, 2),
            chunks=(1, 2),
            dtype="f8",
            fill_value=0.0,
            chunk_key_encoding={"name": "v2", "separator": "/"},
        )
        b[:] = np.linspace(0, 1, 2 * nested).reshape(nested, 2)
        b.attrs["_ARRAY_DIMENSIONS"] = ["n", "two"]
        count += nested
    return path, count


def tree(path: Path) -> dict[str, bytes]:
    """Every file below ``path`` as ``relative/posix/key -> bytes``."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}
