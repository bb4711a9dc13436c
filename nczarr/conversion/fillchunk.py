"""A Zarr v2 chunk holding only the fill value, encoded with the array's codecs.

fsspec's Parquet reference reader cannot leave a chunk out (with pandas 3 a missing
entry reads as the path ``nan``, not as "absent"), so a Parquet reference set holds,
for each chunk the source never wrote, the chunk a reader decodes to the fill value.
zarr-python encodes it, exactly as it would write such a chunk.
"""

from __future__ import annotations

import zarr
from zarr.core.buffer import Buffer, cpu
from zarr.core.sync import sync

from ..errors import UnsupportedError

__all__ = ["encoded_fill_chunk"]


def encoded_fill_chunk(zarray: bytes, array: str) -> bytes:
    """The bytes of a chunk of fill values of the Zarr v2 array whose ``.zarray`` is
    ``zarray`` (``array`` names it in errors)."""
    objects: dict[str, Buffer] = {}
    store = zarr.storage.MemoryStore(store_dict=objects)
    try:
        sync(store.set(".zarray", cpu.Buffer.from_bytes(zarray)))
        with zarr.config.set({"array.write_empty_chunks": True}):
            arr = zarr.open_array(store, mode="r+", zarr_format=2)
            region = tuple(slice(0, c) for c in arr.chunks)
            arr[region] = arr.fill_value
    except Exception as exc:  # zarr-python cannot encode it: say which array
        raise UnsupportedError(
            f"array {array}: some chunks are missing (fill value) and zarr-python cannot "
            f"encode a fill-value chunk for fsspec's Parquet layout ({exc}); write the "
            "references as JSON, which leaves missing chunks out"
        ) from exc
    (chunk,) = (value for key, value in objects.items() if not key.startswith(".z"))
    return chunk.to_bytes()
