"""A Zarr v2 chunk reading as a chunk the source never wrote, encoded with the array's
codecs.

fsspec's Parquet reference reader cannot leave a chunk out (with pandas 3 a missing
entry reads as the path ``nan``, not as "absent"), so a Parquet reference set holds,
for each chunk the source never wrote, a chunk that decodes to exactly what
zarr-python reads for that absent chunk (as the JSON set, which leaves it out, reads).
That is the fill value, or, for ``"fill_value": null``, zarr-python's default of the
dtype (0, ``b""``, ``""``, NaT ...): not ``None`` written as a value, which numpy turns
into the text ``"None"`` or NaN. zarr-python reads the absent chunk and encodes what it
read, exactly as it would write such a chunk.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import zarr
from zarr.core.buffer import Buffer, cpu
from zarr.core.sync import sync

from ..errors import UnsupportedError

__all__ = ["FillChunk", "encoded_fill_chunk"]


class FillChunk(NamedTuple):
    """An encoded chunk and what it reads as (for the warning that announces it)."""

    chunk: bytes
    reads_as: str


def encoded_fill_chunk(zarray: bytes, array: str) -> FillChunk:
    """The encoded chunk of the Zarr v2 array whose ``.zarray`` is ``zarray`` that reads
    as zarr-python reads a chunk never written (``array`` names it in errors)."""
    objects: dict[str, Buffer] = {}
    store = zarr.storage.MemoryStore(store_dict=objects)
    try:
        sync(store.set(".zarray", cpu.Buffer.from_bytes(zarray)))
        with zarr.config.set({"array.write_empty_chunks": True}):
            arr = zarr.open_array(store, mode="r+", zarr_format=2)
            region = tuple(slice(0, c) for c in arr.chunks)
            absent = arr[region]  # no chunk stored: zarr-python's own reading of a hole
            arr[region] = absent
    except Exception as exc:  # zarr-python cannot encode it: say which array
        raise UnsupportedError(
            f"array {array}: some chunks are missing (fill value) and zarr-python cannot "
            f"encode a fill-value chunk for fsspec's Parquet layout ({exc}); write the "
            "references as JSON, which leaves missing chunks out"
        ) from exc
    (chunk,) = (value for key, value in objects.items() if not key.startswith(".z"))
    return FillChunk(chunk.to_bytes(), _reads_as(absent, arr.fill_value))


def _reads_as(absent: Any, fill_value: Any) -> str:
    """``absent``'s value in words: the fill value, or zarr-python's default for a
    ``null`` fill value (which is what a reader gets, not ``None``)."""
    values = np.asarray(absent).ravel()
    if not values.size:
        value = "nothing"
    elif values.dtype.kind in "mM":  # NaT would show as None in Python terms
        value = str(values[0])
    else:
        value = repr(values[:1].tolist()[0])
    if fill_value is None:
        return f"{value} (fill_value null: zarr-python's default for the dtype)"
    return f"{value} (the fill value)"
