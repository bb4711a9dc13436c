"""zarr-python's failures on a damaged chunk, as errors naming the chunk and the store.

zarr-python decodes chunks with numcodecs and numpy: a truncated chunk surfaces as a
bare ``zlib.error``, ``RuntimeError`` or a reshape ``ValueError`` naming neither the
store nor the chunk. :func:`read_values` (``dump``) and :func:`chunk_failure` (the
xarray engine) turn them into :class:`~nczarr.errors.CorruptChunkError`: after a
failed read, the chunks of the array are read one by one (at most
:data:`_SEARCH` of them) to name the first that cannot be decoded.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..errors import CorruptChunkError, NCZarrError, UnsupportedError
from ..inflate import MAX_DECODED_BYTES

__all__ = [
    "MAX_ENGINE_CHUNKS",
    "chunk_failure",
    "check_chunk_count",
    "check_chunk_size",
    "read_values",
    "store_url",
]

#: Most chunks one array may declare for the xarray engine to open it: beyond, a dask
#: graph over the stored chunks (``chunks={}``) cannot even be built (dask's chunk
#: tuples alone exhaust memory), and no store holds that many objects for one array.
MAX_ENGINE_CHUNKS = 2**31

#: Most chunks read one by one to find the damaged one.
_SEARCH = 10_000


def _bad_chunk(array: Any) -> str | None:
    """The key of the first chunk of ``array`` zarr-python cannot decode, if found."""
    grid = getattr(array, "cdata_shape", None)
    if grid is None:
        return None
    for coords in itertools.islice(itertools.product(*(range(n) for n in grid)), _SEARCH):
        try:
            array.get_block_selection(coords)
        except NCZarrError:
            raise
        except Exception:
            name = array.metadata.encode_chunk_key(coords)
            return f"{array.path}/{name}" if array.path else name
    return None


def store_url(array: Any) -> str:
    """The URL of the store ``array`` is read from (through a translated view: its source)."""
    zmap = getattr(array.store, "zmap", None)
    if zmap is None:
        return str(array.store)
    source = zmap.source
    return str((source if source is not None else zmap).url)


def chunk_failure(array: Any, exc: BaseException, url: str | None = None) -> NCZarrError:
    """The error to raise for ``exc``, raised by zarr-python reading ``array`` (of the
    store at ``url``; default: :func:`store_url`)."""
    url = url or store_url(array)
    if isinstance(exc, MemoryError):
        return UnsupportedError(
            f"{url}: array '/{array.path}': not enough memory to read it ({exc or 'MemoryError'})"
        )
    key = _bad_chunk(array)
    what = f"chunk {key!r}" if key is not None else "a chunk"
    detail = str(exc).splitlines()[0] if str(exc) else ""
    return CorruptChunkError(
        f"{url}: array '/{array.path}': {what} cannot be decoded: "
        f"{type(exc).__name__}{': ' + detail if detail else ''}"
    )


def check_chunk_size(array: Any, url: str) -> None:
    """Refuse an array whose chunks are larger than :data:`MAX_DECODED_BYTES` before
    reading any of them."""
    chunks = getattr(array, "chunks", None) or ()
    size = int(np.prod(chunks, dtype=object)) * array.dtype.itemsize
    if size > MAX_DECODED_BYTES:
        raise UnsupportedError(
            f"{url}: array '/{array.path}': one chunk ({list(chunks)}) holds {size} bytes, "
            f"more than the {MAX_DECODED_BYTES} bytes nczarr decodes at once "
            "(NCZARR_MAX_CHUNK_BYTES)"
        )


def read_values(array: Any, url: str) -> Any:
    """Every value of ``array`` (zarr-python), with damaged chunks named."""
    check_chunk_size(array, url)
    try:
        return array[...]
    except NCZarrError:
        raise
    except Exception as exc:  # numcodecs', numpy's, zarr-python's own
        raise chunk_failure(array, exc, url) from exc


def check_chunk_count(path: str, shape: tuple[int, ...], chunks: tuple[int, ...], url: str) -> None:
    """Refuse an array declaring more than :data:`MAX_ENGINE_CHUNKS` chunks, before
    xarray or dask build anything over it."""
    count = 1
    for size, chunk in zip(shape, chunks, strict=False):  # a scalar may carry chunks [1]
        count *= -(-size // chunk)
    if count > MAX_ENGINE_CHUNKS:
        raise UnsupportedError(
            f"{url}: array {path!r} declares {count} chunks (shape {list(shape)}, chunks "
            f"{list(chunks)}), more than the {MAX_ENGINE_CHUNKS} the nczarr engine opens: "
            "a task graph over them cannot be built"
        )
