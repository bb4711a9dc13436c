"""GDAL's Zarr driver as a reader in the tests: the real libgdal, through ctypes.

Where it comes from: PyPI has no wheel of the ``gdal`` bindings (an sdist that
needs a matching libgdal), Debian's is GDAL 3.6, and rasterio's wheels with GDAL
3.12 need Python 3.12. The ``pyogrio`` wheel (>= 0.13, Python 3.10+, abi3) bundles
libgdal 3.12 with every core driver, Zarr included; pyogrio itself only reads
vectors, so this module opens that very library with ``ctypes`` and calls GDAL's
multidimensional C API (``GDALOpenEx`` with ``GDAL_OF_MULTIDIM_RASTER``,
``GDALGroupOpenMDArray``, ``GDALMDArrayRead`` ...), the API GDAL's Zarr driver is
written for. ``pyogrio`` is in the ``test`` extra, so this runs wherever the suite
does. Its libgdal decodes only the ``zlib`` and ``gzip`` compressors (no blosc, zstd,
lzma: the tests of GDAL's rules use those two or none); ``NCZARR_TEST_LIBGDAL=/path/to/
libgdal.so`` picks another libgdal, such as the one in rasterio 1.5's wheel
(``rasterio.libs/``, Python 3.12+), which has them.

:func:`read_zarr` returns what GDAL shows of every array of a store (dimensions,
type, values, nodata, attributes), or the error GDAL raised opening it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_OF_MULTIDIM_RASTER = 0x10
_OF_VERBOSE_ERROR = 0x40
_GEDTC_NUMERIC = 0

#: GDALDataType -> numpy dtype.
_NUMPY = {
    1: "u1",
    2: "u2",
    3: "i2",
    4: "u4",
    5: "i4",
    6: "f4",
    7: "f8",
    12: "u8",
    13: "i8",
    14: "i1",
}
_GDT = {v: k for k, v in _NUMPY.items()}


def _library_path() -> Path:
    chosen = os.environ.get("NCZARR_TEST_LIBGDAL")
    if chosen:  # another libgdal >= 3.12, such as rasterio 1.5's (it has blosc, lzma, zstd)
        return Path(chosen)
    spec = importlib.util.find_spec("pyogrio")
    assert spec is not None and spec.origin is not None, "pyogrio (test extra) is not installed"
    package = Path(spec.origin).parent
    for folder in (package.parent / "pyogrio.libs", package / ".dylibs", package.parent):
        found = sorted(folder.glob("*gdal*.so*")) + sorted(folder.glob("*gdal*.dylib"))
        found += sorted(folder.glob("*gdal*.dll"))
        if found:
            return found[0]
    raise AssertionError(f"no libgdal found beside {package}")


def _load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(_library_path()))
    p, c, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "GDALVersionInfo": (c, [c]),
        "GDALOpenEx": (p, [c, ctypes.c_uint, p, p, p]),
        "GDALClose": (None, [p]),
        "GDALDatasetGetRootGroup": (p, [p]),
        "GDALGroupRelease": (None, [p]),
        "GDALGroupGetMDArrayNames": (ctypes.POINTER(c), [p, p]),
        "GDALGroupGetGroupNames": (ctypes.POINTER(c), [p, p]),
        "GDALGroupOpenMDArray": (p, [p, c, p]),
        "GDALGroupOpenGroup": (p, [p, c, p]),
        "GDALGroupGetAttributes": (ctypes.POINTER(p), [p, ctypes.POINTER(sz), p]),
        "CSLDestroy": (None, [p]),
        "GDALMDArrayRelease": (None, [p]),
        "GDALMDArrayGetDimensions": (ctypes.POINTER(p), [p, ctypes.POINTER(sz)]),
        "GDALReleaseDimensions": (None, [ctypes.POINTER(p), sz]),
        "GDALDimensionGetName": (c, [p]),
        "GDALDimensionGetSize": (ctypes.c_uint64, [p]),
        "GDALMDArrayGetDataType": (p, [p]),
        "GDALExtendedDataTypeGetClass": (ctypes.c_int, [p]),
        "GDALExtendedDataTypeGetNumericDataType": (ctypes.c_int, [p]),
        "GDALExtendedDataTypeCreate": (p, [ctypes.c_int]),
        "GDALExtendedDataTypeRelease": (None, [p]),
        "GDALMDArrayRead": (
            ctypes.c_int,
            [p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(sz), p, p, p, p, p, sz],
        ),
        "GDALMDArrayGetNoDataValueAsDouble": (ctypes.c_double, [p, ctypes.POINTER(ctypes.c_int)]),
        "GDALMDArrayGetAttributes": (ctypes.POINTER(p), [p, ctypes.POINTER(sz), p]),
        "GDALReleaseAttributes": (None, [ctypes.POINTER(p), sz]),
        "GDALAttributeGetName": (c, [p]),
        "GDALAttributeGetDataType": (p, [p]),
        "GDALAttributeReadAsString": (c, [p]),
        "GDALAttributeReadAsDouble": (ctypes.c_double, [p]),
        "GDALAttributeGetTotalElementsCount": (ctypes.c_uint64, [p]),
        "CPLGetLastErrorMsg": (c, []),
        "CPLErrorReset": (None, []),
        "CPLPushErrorHandler": (None, [p]),
        "CPLQuietErrorHandler": (None, [ctypes.c_int, ctypes.c_int, c]),
    }
    for name, (restype, argtypes) in signatures.items():
        func = getattr(lib, name)
        func.restype, func.argtypes = restype, argtypes
    lib.GDALAllRegister()
    lib.CPLPushErrorHandler(ctypes.cast(lib.CPLQuietErrorHandler, ctypes.c_void_p))
    return lib


_LIB: ctypes.CDLL | None = None


def libgdal() -> ctypes.CDLL:
    """The loaded libgdal (once per process)."""
    global _LIB
    if _LIB is None:
        _LIB = _load()
    return _LIB


def version() -> str:
    """GDAL's release name (``"3.12.4"``)."""
    return libgdal().GDALVersionInfo(b"RELEASE_NAME").decode()


@dataclass
class GdalArray:
    """What GDAL shows of one array."""

    dims: list[tuple[str, int]] = field(default_factory=list)
    numeric: bool = True
    dtype: str | None = None
    values: np.ndarray | None = None
    nodata: float | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    #: numeric attributes' types as GDAL types them (numpy codes: "f8", "i4" ...)
    attr_types: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass
class GdalStore:
    """What GDAL shows of a store: every array by path, or the error opening it."""

    arrays: dict[str, GdalArray] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _error(lib: ctypes.CDLL) -> str:
    message = lib.CPLGetLastErrorMsg()
    return message.decode(errors="replace") if message else "unknown GDAL error"


def _names(lib: ctypes.CDLL, array: Any) -> list[str]:
    out = []
    if array:
        i = 0
        while array[i]:
            out.append(array[i].decode())
            i += 1
        lib.CSLDestroy(ctypes.cast(array, ctypes.c_void_p))
    return out


def _attributes(
    lib: ctypes.CDLL, handles: Any, count: int, types: dict[str, str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(count):
        attr = handles[i]
        name = lib.GDALAttributeGetName(attr).decode()
        dtype = lib.GDALAttributeGetDataType(attr)
        klass = lib.GDALExtendedDataTypeGetClass(dtype)
        if types is not None and klass == _GEDTC_NUMERIC:
            types[name] = _NUMPY.get(lib.GDALExtendedDataTypeGetNumericDataType(dtype), "?")
        lib.GDALExtendedDataTypeRelease(dtype)
        if klass == _GEDTC_NUMERIC and lib.GDALAttributeGetTotalElementsCount(attr) == 1:
            out[name] = lib.GDALAttributeReadAsDouble(attr)
        else:
            text = lib.GDALAttributeReadAsString(attr)
            out[name] = text.decode(errors="replace") if text else None
    if handles:
        lib.GDALReleaseAttributes(handles, count)
    return out


def _read_array(lib: ctypes.CDLL, group: Any, name: str) -> GdalArray:
    lib.CPLErrorReset()
    handle = lib.GDALGroupOpenMDArray(group, name.encode(), None)
    if not handle:
        return GdalArray(error=_error(lib))
    try:
        return _describe(lib, handle)
    finally:
        lib.GDALMDArrayRelease(handle)


def _describe(lib: ctypes.CDLL, handle: Any) -> GdalArray:
    out = GdalArray()
    count = ctypes.c_size_t()
    dims = lib.GDALMDArrayGetDimensions(handle, ctypes.byref(count))
    for i in range(count.value):
        name = lib.GDALDimensionGetName(dims[i])
        out.dims.append((name.decode() if name else "", int(lib.GDALDimensionGetSize(dims[i]))))
    if dims:
        lib.GDALReleaseDimensions(dims, count.value)
    nattrs = ctypes.c_size_t()
    out.attrs = _attributes(
        lib,
        lib.GDALMDArrayGetAttributes(handle, ctypes.byref(nattrs), None),
        nattrs.value,
        out.attr_types,
    )
    has = ctypes.c_int()
    nodata = lib.GDALMDArrayGetNoDataValueAsDouble(handle, ctypes.byref(has))
    out.nodata = nodata if has.value else None
    dtype = lib.GDALMDArrayGetDataType(handle)
    try:
        out.numeric = lib.GDALExtendedDataTypeGetClass(dtype) == _GEDTC_NUMERIC
        if out.numeric:
            out.dtype = _NUMPY.get(lib.GDALExtendedDataTypeGetNumericDataType(dtype))
    finally:
        lib.GDALExtendedDataTypeRelease(dtype)
    if out.numeric and out.dtype is not None:
        out.values, out.error = _values(lib, handle, out.dtype, [size for _, size in out.dims])
    return out


def _values(
    lib: ctypes.CDLL, handle: Any, dtype: str, shape: list[int]
) -> tuple[np.ndarray | None, str | None]:
    buffer = np.zeros(shape, dtype=dtype)
    ndim = len(shape)
    start = (ctypes.c_uint64 * max(ndim, 1))(*([0] * ndim))
    count = (ctypes.c_size_t * max(ndim, 1))(*shape)
    buffer_type = lib.GDALExtendedDataTypeCreate(_GDT[dtype])
    lib.CPLErrorReset()
    try:
        ok = lib.GDALMDArrayRead(
            handle, start, count, None, None, buffer_type, buffer.ctypes.data, None, 0
        )
    finally:
        lib.GDALExtendedDataTypeRelease(buffer_type)
    return (buffer, None) if ok else (None, _error(lib))


def _walk(lib: ctypes.CDLL, group: Any, path: str, store: GdalStore) -> None:
    for name in _names(lib, lib.GDALGroupGetMDArrayNames(group, None)):
        store.arrays[f"{path}/{name}"] = _read_array(lib, group, name)
    for name in _names(lib, lib.GDALGroupGetGroupNames(group, None)):
        child = lib.GDALGroupOpenGroup(group, name.encode(), None)
        if not child:
            store.arrays[f"{path}/{name}/"] = GdalArray(error=_error(lib))
            continue
        try:
            _walk(lib, child, f"{path}/{name}", store)
        finally:
            lib.GDALGroupRelease(child)


def read_zarr(path: str | Path) -> GdalStore:
    """Everything GDAL's Zarr driver shows of the store at ``path`` (a directory)."""
    lib = libgdal()
    lib.CPLErrorReset()
    drivers = (ctypes.c_char_p * 2)(b"Zarr", None)
    flags = _OF_MULTIDIM_RASTER | _OF_VERBOSE_ERROR
    dataset = lib.GDALOpenEx(str(path).encode(), flags, drivers, None, None)
    if not dataset:
        return GdalStore(error=_error(lib))
    try:
        root = lib.GDALDatasetGetRootGroup(dataset)
        if not root:
            return GdalStore(error=_error(lib))
        store = GdalStore()
        try:
            count = ctypes.c_size_t()
            handles = lib.GDALGroupGetAttributes(root, ctypes.byref(count), None)
            store.attrs = _attributes(lib, handles, count.value)
            _walk(lib, root, "", store)
        finally:
            lib.GDALGroupRelease(root)
        return store
    finally:
        lib.GDALClose(dataset)


def create_zarr(path: str | Path, *, zarr_format: int = 3, compress: str = "GZIP") -> None:
    """Have GDAL's Zarr driver write a 4 x 3 int16 raster at ``path`` (no data
    written: GDAL's own metadata is what the tests look at)."""
    lib = libgdal()
    lib.GDALGetDriverByName.restype = ctypes.c_void_p
    lib.GDALGetDriverByName.argtypes = [ctypes.c_char_p]
    lib.GDALCreate.restype = ctypes.c_void_p
    lib.GDALCreate.argtypes = [ctypes.c_void_p, ctypes.c_char_p] + [ctypes.c_int] * 4
    lib.GDALCreate.argtypes += [ctypes.c_void_p]
    options = (ctypes.c_char_p * 3)(
        f"FORMAT=ZARR_V{zarr_format}".encode(), f"COMPRESS={compress}".encode(), None
    )
    lib.CPLErrorReset()
    driver = lib.GDALGetDriverByName(b"Zarr")
    dataset = lib.GDALCreate(driver, str(path).encode(), 4, 3, 1, 3, options)
    assert dataset, _error(lib)
    lib.GDALClose(dataset)
