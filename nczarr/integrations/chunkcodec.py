"""One Zarr v2 chunk decoded and encoded as zarr-python's ``V2Codec`` does, faster.

The per-chunk half of :mod:`nczarr.integrations.fastpipeline` (which batches chunks
and threads): the same bytes and values as zarr-python's ``V2Codec`` with the array's
own numcodecs objects, with the few shortcuts measured to matter (a compressor's bytes
viewed in one call, large Blosc and zlib chunks decoded into a reused buffer or
straight into the output, shuffle as one numpy transpose, zlib inflated by libdeflate
when the ``fast`` extra is installed: :func:`nczarr.inflate.fast_inflate`). Each shortcut
applies only where its result is byte for byte the codec's own, else the codec is
called.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np
from numcodecs import Blosc, Shuffle, Zlib
from numcodecs.blosc import compress as blosc_compress
from numcodecs.blosc import decompress as blosc_decompress
from numcodecs.compat import ensure_bytes, ensure_contiguous_ndarray, ensure_ndarray_like
from zarr.codecs._v2 import V2Codec

from ..inflate import fast_inflate
from .bufferpool import POOL

try:  # numcodecs' own unshuffle loop (what ``Shuffle.decode`` calls)
    from numcodecs._shuffle import _doUnshuffle
except ImportError:  # another numcodecs layout: Shuffle.decode itself
    _doUnshuffle = None

__all__ = [
    "SCRATCH_BYTES",
    "Scratch",
    "decode_v2",
    "decompress",
    "encode_v2",
    "inflate_zlib",
    "shuffle_bytes",
    "unshuffle",
    "whole_chunk_block",
]


def decode_v2(codec: V2Codec, data: bytes, spec: Any, dtype: np.dtype | None = None) -> np.ndarray:
    """Chunk ``data`` decoded as zarr-python's ``V2Codec`` decodes it: compressor,
    filters in reverse, viewed as the array's dtype (``dtype``: the spec's native
    dtype, passed in by callers decoding many chunks), reshaped in the array's order."""
    if dtype is None:
        dtype = spec.dtype.to_native_dtype()
    compressor = codec.compressor
    chunk: Any
    if type(compressor) is Zlib and type(data) is bytes:
        chunk = inflate_zlib(data, math.prod(spec.shape) * dtype.itemsize)
    else:
        chunk = decompress(compressor, data) if compressor else data
    for f in reversed(codec.filters or ()):
        chunk = unshuffle(f, chunk) if type(f) is Shuffle else f.decode(chunk)
    if type(chunk) is bytes and len(chunk) % dtype.itemsize == 0:
        # what numcodecs' compressors return: the same read-only view as below, in
        # one call (this runs once per chunk)
        return np.frombuffer(chunk, dtype).reshape(spec.shape, order=spec.order)
    if (
        type(chunk) is np.ndarray
        and chunk.dtype == np.uint8
        and chunk.ndim == 1
        and chunk.flags.c_contiguous
        and chunk.nbytes % dtype.itemsize == 0
    ):  # what the unshuffle below returns: the same view as below, in one call
        return chunk.view(dtype).reshape(spec.shape, order=spec.order)
    chunk = ensure_ndarray_like(chunk)
    try:
        chunk = chunk.view(dtype)
    except TypeError:
        chunk = np.array(chunk).astype(dtype)
    chunk = chunk.reshape(-1, order="A")
    return chunk.reshape(spec.shape, order=spec.order)


def decompress(compressor: Any, data: Any) -> Any:
    """``compressor.decode(data)``: for numcodecs' ``Blosc`` and ``Zlib`` given ``bytes``
    (every map's chunks), the function their ``decode`` ends in, called directly.

    Why: the ``decode`` methods first normalise their input through numcodecs' Python
    helpers (``ensure_contiguous_ndarray``), which for 40 KB Blosc chunks cost about as
    much as the decompression itself. ``bytes`` need none of it: the result is the very
    same ``bytes`` object ``decode`` returns (``Blosc``: ``numcodecs.blosc.decompress``,
    after the same size limit; ``Zlib``: the standard library's ``zlib.decompress``)."""
    if type(data) is bytes:
        kind = type(compressor)
        if kind is Blosc and len(data) <= compressor.max_buffer_size:
            return blosc_decompress(data)
        if kind is Zlib:
            return zlib.decompress(data)
    return compressor.decode(data)


def inflate_zlib(data: bytes, size: int, out: np.ndarray | None = None) -> Any:
    """``zlib.decompress(data)`` (what numcodecs' ``Zlib.decode`` returns), by
    libdeflate when the ``fast`` extra is installed and the result fits in ``size``
    bytes (into ``out`` when given: then the view of its first bytes); otherwise, and
    for every stream libdeflate refuses, by the standard library, so the values and
    the errors are zlib's own (:func:`nczarr.inflate.fast_inflate`)."""
    fast = fast_inflate(data, size, out)
    return fast if fast is not None else zlib.decompress(data)


#: Element sizes up to which :func:`unshuffle` moves bytes with numpy (one strided
#: copy per byte of an element); larger ones use numcodecs' loop.
_NUMPY_UNSHUFFLE_MAX = 16


def unshuffle(f: Shuffle, data: Any) -> Any:
    """``f.decode(data)`` (numcodecs' ``Shuffle``) for ``bytes``: the same ``uint8`` array.

    Byte ``k`` of every element is stored as the ``k``-th of ``elementsize`` planes;
    here each plane is copied into its column of the output with one numpy strided
    copy. Why: numcodecs' byte loop (after a zero-filled allocation and input
    normalisation) was the one cost of a zlib + shuffle read above libnetcdf's
    (callgrind, 225 chunks of 40 KB: 55.6 M instructions for numcodecs' loop, 38.4 M
    for HDF5's filter in libnetcdf, 35.6 M for these copies)."""
    size = f.elementsize
    if size <= 1 or type(data) is not bytes or len(data) % size:
        return f.decode(data)  # numcodecs' own result or error
    if size > _NUMPY_UNSHUFFLE_MAX:
        if _doUnshuffle is None:
            return f.decode(data)
        out = np.empty(len(data), dtype=np.uint8)
        _doUnshuffle(np.frombuffer(data, dtype=np.uint8), out, size)
        return out
    count = len(data) // size
    planes = np.frombuffer(data, dtype=np.uint8).reshape(size, count)
    elements = np.empty((count, size), dtype=np.uint8)
    for k in range(size):
        elements[:, k] = planes[k]
    return elements.reshape(-1)


#: Chunks from this size on are decoded into a :class:`Scratch` buffer. Below it the
#: allocator reuses memory anyway, and numcodecs' ``out=`` path costs more
#: instructions than the allocation it saves (~29 k per 40 KB Blosc chunk, callgrind).
SCRATCH_BYTES = 1 << 18


class Scratch:
    """One chunk's worth of bytes that a part of a read decodes large Blosc and zlib
    chunks into, one after another (each is copied into the output before the next is
    decoded), or the chunk's block of the output itself when a chunk fills it.

    Why: numcodecs allocates a new output per chunk, and for large chunks the
    allocator hands back fresh pages each time (4 MB chunks: ~1000 page faults per
    chunk, most of the read's system time); and every copy of a 4 MB chunk costs
    about a quarter of its Blosc decode. Copies per zlib + shuffle chunk: inflate,
    unshuffle, copy into the output before; inflate into this buffer, unshuffle
    straight into the output now. Used only where the result is the very bytes
    :func:`decode_v2` gives: a Blosc compressor without filters whose header declares
    one chunk's bytes, or zlib (by libdeflate, :func:`nczarr.inflate.fast_inflate`) without
    filters or with one ``Shuffle``, inflating to exactly one chunk's bytes; anything
    else (and every stream libdeflate refuses) decodes the usual way."""

    __slots__ = ("_buffer", "_second", "nbytes")

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self._buffer: np.ndarray | None = None
        self._second: np.ndarray | None = None

    def _scratch(self) -> np.ndarray:
        if self._buffer is None:
            self._buffer = POOL.take(self.nbytes)
        return self._buffer

    def release(self) -> None:
        """Give the buffers back to the pool (:mod:`nczarr.integrations.bufferpool`)
        for the next read; no result of :meth:`decode` may be used after this."""
        for buffer in (self._buffer, self._second):
            if buffer is not None:
                POOL.give(buffer)
        self._buffer = self._second = None

    def decode(
        self, codec: V2Codec, data: Any, spec: Any, dtype: np.dtype, target: Any = None
    ) -> np.ndarray | None:
        """``decode_v2(codec, data, spec, dtype)`` decoded into this buffer, or None
        when this chunk cannot be (the caller then decodes it the usual way).

        ``target``: the block of the output this whole chunk is read into (same shape
        and dtype), or None; when the values were written straight into it, the
        result is ``target`` itself (nothing left to copy)."""
        if type(data) is not bytes or self.nbytes % dtype.itemsize:
            return None
        if target is not None and (target.shape != spec.shape or target.dtype != dtype):
            target = None
        kind = type(codec.compressor)
        if kind is Blosc and not codec.filters:
            return self._blosc(codec.compressor, data, spec, dtype, target)
        if kind is Zlib:
            return self._zlib(codec.filters or (), data, spec, dtype, target)
        return None

    def _blosc(self, compressor: Any, data: bytes, spec: Any, dtype: Any, target: Any) -> Any:
        # Blosc's 16-byte header: version, versionlz, flags, typesize, then the
        # decompressed size as a little-endian uint32 (anything else: the usual path)
        if len(data) < 16 or int.from_bytes(data[4:8], "little") != self.nbytes:
            return None
        direct = _contiguous_bytes(target, spec.order)
        compressor.decode(data, out=self._scratch() if direct is None else direct)
        if direct is not None:
            return target
        return self._scratch().view(dtype).reshape(spec.shape, order=spec.order)

    def _zlib(self, filters: Any, data: bytes, spec: Any, dtype: Any, target: Any) -> Any:
        shuffle = filters[0] if len(filters) == 1 and type(filters[0]) is Shuffle else None
        if filters and (
            shuffle is None
            or not 1 < shuffle.elementsize <= _NUMPY_UNSHUFFLE_MAX
            or self.nbytes % shuffle.elementsize
        ):
            return None
        direct = _contiguous_bytes(target, spec.order) if shuffle is None else None
        raw = fast_inflate(data, self.nbytes, self._scratch() if direct is None else direct)
        if raw is None or len(raw) != self.nbytes:
            return None  # the standard library decides: the same values or error
        if shuffle is None:
            if direct is not None:
                return target
            return raw.view(dtype).reshape(spec.shape, order=spec.order)
        size = shuffle.elementsize
        planes = raw.reshape(size, self.nbytes // size)
        elements = _element_bytes(target, size)
        if elements is not None:  # byte k of every element, in the chunk's order
            shaped = [plane.reshape(spec.shape, order=spec.order) for plane in planes]
            _planes_into(shaped, elements)
            return target
        if self._second is None:
            self._second = POOL.take(self.nbytes)
        _planes_into(planes, self._second.reshape(-1, size))
        return self._second.view(dtype).reshape(spec.shape, order=spec.order)


#: Elements one step of :func:`_planes_into` moves (~128 KB of float32 output).
UNSHUFFLE_BLOCK = 1 << 15


def _planes_into(planes: Any, elements: np.ndarray) -> None:
    """``elements[..., k] = planes[k]`` for every byte ``k`` of an element, a block of
    leading rows (about :data:`UNSHUFFLE_BLOCK` elements) at a time.

    Why blocks: each plane's copy writes one byte of every element, so the whole
    output is written ``elementsize`` times; a 4 MB chunk's output does not stay in
    the core's cache between those passes, a block does (4 MB float32 chunks just
    inflated: 4.3 ms a chunk in four whole passes, 2.6-2.7 ms in blocks)."""
    rows = elements.shape[0]
    step = max(1, UNSHUFFLE_BLOCK // max(1, math.prod(elements.shape[1:-1])))
    for start in range(0, rows, step):
        block = elements[start : start + step]
        for k, plane in enumerate(planes):
            block[..., k] = plane[start : start + step]


def _contiguous_bytes(target: Any, order: str) -> np.ndarray | None:
    """The bytes of ``target`` as one writable ``uint8`` vector in the chunk's order
    (``order``), when ``target`` is one contiguous block; None otherwise."""
    if target is None or order != "C" or not target.flags.c_contiguous:
        return None
    return target.reshape(-1).view(np.uint8)


def _element_bytes(target: Any, size: int) -> np.ndarray | None:
    """``target`` (writable, its elements ``size`` bytes, the last axis contiguous) as
    a ``uint8`` view of shape ``(*target.shape, size)``; None otherwise."""
    if target is None or target.ndim == 0 or target.itemsize != size:
        return None
    if target.strides[-1] != size:
        return None
    try:
        return target[..., np.newaxis].view(np.uint8)
    except ValueError:
        return None


def encode_v2(codec: V2Codec, chunk: np.ndarray, spec: Any) -> bytes:
    """Chunk values encoded as zarr-python's ``V2Codec`` encodes them."""
    dtype = spec.dtype.to_native_dtype()
    filters = codec.filters or ()
    data: Any = None
    if filters and type(filters[0]) is Shuffle:
        data = _shuffled_view(chunk, dtype, spec.order, filters[0].elementsize)
    start = 0 if data is None else 1
    if data is None:
        data = chunk.astype(dtype, order=spec.order, copy=False)
    for f in filters[start:]:
        data = shuffle_bytes(data, f.elementsize) if type(f) is Shuffle else f.encode(data)
    compressor = codec.compressor
    if compressor:
        if type(compressor) is Zlib and (
            type(data) is bytes or (type(data) is np.ndarray and data.flags.c_contiguous)
        ):
            # what Zlib.encode ends in, without its input normalisation: the same bytes
            data = zlib.compress(data, compressor.level)
        elif type(compressor) is Blosc and _plain_block(data, compressor):
            # what Blosc.encode ends in (``ensure_contiguous_ndarray`` of a contiguous
            # array of numbers is the array itself, flattened in its memory order:
            # same item size, same bytes), without the normalisation, which costs
            # about as much as compressing a 40 KB chunk
            data = blosc_compress(
                data.reshape(-1, order="A"),
                compressor._cname_bytes,
                compressor.clevel,
                compressor.shuffle,
                compressor.blocksize,
                compressor._typesize,
            )
        else:
            data = compressor.encode(data)
    return ensure_bytes(data)


def _plain_block(data: Any, compressor: Any) -> bool:
    """Whether ``data`` is what numcodecs' ``Blosc.encode`` would pass on unchanged to
    ``compress``: a contiguous numpy array of numbers within the size limit, and a
    numcodecs whose ``Blosc`` keeps the attributes it compresses with."""
    return (
        type(data) is np.ndarray
        and (data.flags.c_contiguous or data.flags.f_contiguous)
        and data.dtype.kind in "biuf"
        and data.nbytes <= compressor.max_buffer_size
        and hasattr(compressor, "_cname_bytes")
        and hasattr(compressor, "_typesize")
    )


def _shuffled_view(chunk: np.ndarray, dtype: np.dtype, order: str, size: int) -> Any:
    """``shuffle_bytes(chunk.astype(dtype, order=order), size)`` in one copy instead of
    two, for the common case (a C-order chunk of its own dtype, whose elements are
    ``size`` bytes, contiguous along the last axis: a block of a C-order array); None
    otherwise. The shuffled bytes are byte ``k`` of every element in C order, for each
    ``k`` in turn: the chunk's bytes as ``(..., size)``, ``k`` moved first."""
    if (
        order != "C"
        or type(chunk) is not np.ndarray
        or chunk.dtype != dtype
        or dtype.itemsize != size
        or size <= 1
        or chunk.ndim == 0
        or chunk.strides[-1] != size
        or dtype.kind not in "biuf"
    ):
        return None
    raw = chunk.view(np.uint8)  # (..., n * size): the last axis is contiguous
    raw = raw.reshape(*chunk.shape, size)
    return np.ascontiguousarray(np.moveaxis(raw, -1, 0)).reshape(-1)


def shuffle_bytes(data: Any, elementsize: int) -> Any:
    """``numcodecs.Shuffle(elementsize).encode(data)``, the same bytes (byte ``k`` of
    every element, for each ``k`` in turn) as one numpy transpose: 2.5x less CPU
    than numcodecs' byte loop, which was the largest cost of a write after zlib."""
    buf = ensure_contiguous_ndarray(data)
    if elementsize <= 1 or buf.nbytes % elementsize:
        return Shuffle(elementsize).encode(data)  # numcodecs' own result or error
    return np.ascontiguousarray(buf.view(np.uint8).reshape(-1, elementsize).T).reshape(-1)


def whole_chunk_block(
    out: np.ndarray, out_selection: Any, complete: bool, drop_axes: tuple[int, ...]
) -> np.ndarray | None:
    """The block of ``out`` a whole chunk is read into, as a view (writing into it writes
    the output), when the chunk is read whole (zarr's ``is_complete_chunk``) into a
    plain slice of the output; None otherwise (the chunk is then copied)."""
    if not complete or drop_axes or type(out_selection) is not tuple:
        return None
    for s in out_selection:
        if type(s) is not slice or s.step not in (None, 1):
            return None
    return out[out_selection]
