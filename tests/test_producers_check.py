"""``nczarr check`` on every producer fixture: the findings it must report, and no others.

``EXPECTED`` is, per store in ``tests/data/producers/``, the verdict (``report.ok``)
and every finding of the readers the verdict follows (netcdf-c 4.10+, zarr-python 3,
xarray, GDAL 3.12; older netcdf-c releases are notes), as ``(reader, severity,
where)``. A store not in the table fails the test: a new fixture needs its expected
findings written down.

The "cannot open / cannot read" findings are also checked against the real readers
(:func:`test_real_readers_fail_where_check_says`): zarr-python 3 and xarray here,
libnetcdf 4.10 through netCDF4, and GDAL 3.12 through ``tests/gdalreader.py`` (whose
libgdal has only the zlib and gzip codecs: arrays it cannot decompress for want of
blosc, zstd, lz4 or lzma are not judged).
"""

from __future__ import annotations

import json
import re
import warnings
import zipfile
from pathlib import Path

import netCDF4
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.translate.compat import GDAL, NC410, XARRAY, ZARR_PYTHON

from .gdalreader import read_zarr

DATA = Path(__file__).parent / "data" / "producers"

Z, X, G, N = ZARR_PYTHON, XARRAY, GDAL, NC410

#: store -> (report.ok, {(reader, severity, where)}) for the judged readers.
EXPECTED: dict[str, tuple[bool, set[tuple[str, str, str]]]] = {
    "gdal312_v2": (
        True,
        set(),
    ),
    "gdal312_v3": (
        False,
        {
            (X, "ignores", "/gdal312_v3"),
        },
    ),
    "gdal312_v3_nonodata": (
        False,
        {
            (X, "fails", "/gdal312_v3_nonodata"),
            (Z, "fails", "/gdal312_v3_nonodata"),
        },
    ),
    "gdal_nodata": (
        False,
        {
            (N, "fails", "/temp"),
            (X, "fails", "/temp"),
            (X, "refuses", "/count"),
            (X, "refuses", "/plain"),
            (X, "refuses", "/temp"),
            (Z, "fails", "/temp"),
        },
    ),
    "nc480_groups": (
        False,
        {
            (N, "misreads", "/"),
            (N, "refuses", "/g/h/label"),
            (X, "refuses", "/g/counts"),
            (X, "refuses", "/g/h/deep"),
            (X, "refuses", "/g/h/label"),
            (X, "refuses", "/g/inner"),
            (X, "refuses", "/top"),
            (Z, "fails", "/g/counts"),
            (Z, "fails", "/g/h/deep"),
            (Z, "fails", "/g/h/label"),
            (Z, "fails", "/g/inner"),
            (Z, "fails", "/top"),
        },
    ),
    "nc480_nczarr": (
        False,
        {
            (N, "misreads", "/"),
            (N, "refuses", "/c"),
            (X, "refuses", "/b"),
            (X, "refuses", "/c"),
            (X, "refuses", "/d"),
            (X, "refuses", "/d_default"),
            (X, "refuses", "/f"),
            (X, "refuses", "/f_nan"),
            (X, "refuses", "/i"),
            (X, "refuses", "/i64"),
            (X, "refuses", "/i_default"),
            (X, "refuses", "/s"),
            (X, "refuses", "/us"),
            (Z, "fails", "/b"),
            (Z, "fails", "/c"),
            (Z, "fails", "/d"),
            (Z, "fails", "/d_default"),
            (Z, "fails", "/f"),
            (Z, "fails", "/f_nan"),
            (Z, "fails", "/i"),
            (Z, "fails", "/i64"),
            (Z, "fails", "/i_default"),
            (Z, "fails", "/s"),
            (Z, "fails", "/us"),
        },
    ),
    "nc480_pure_zarr": (
        False,
        {
            (N, "refuses", "/c"),
            (X, "refuses", "/b"),
            (X, "refuses", "/c"),
            (X, "refuses", "/d"),
            (X, "refuses", "/f"),
            (X, "refuses", "/i"),
            (X, "refuses", "/s"),
            (Z, "fails", "/b"),
            (Z, "fails", "/c"),
            (Z, "fails", "/d"),
            (Z, "fails", "/f"),
            (Z, "fails", "/i"),
            (Z, "fails", "/s"),
        },
    ),
    "nc_pure_zarr": (
        False,
        {
            (X, "refuses", "/c"),
            (Z, "fails", "/c"),
        },
    ),
    "x2_cf_numeric": (
        False,
        {
            (N, "ignores", "/level"),
        },
    ),
    "x2_cf_text": (
        False,
        {
            (G, "fails", "/label"),
            (N, "fails", "/label"),
            (N, "refuses", "/label"),
            (N, "refuses", "/name"),
        },
    ),
    "x2_cf_time": (
        True,
        set(),
    ),
    "x2_stale_zmetadata": (
        False,
        {
            (N, "misreads", ".zmetadata"),
            (X, "misreads", ".zmetadata"),
            (Z, "misreads", ".zmetadata"),
        },
    ),
    "x3_cf_numeric": (
        False,
        {
            (G, "fails", "/label"),
            (G, "fails", "/name"),
            (G, "misreads", "/flag"),
        },
    ),
    "z2_bitshuffle": (
        True,
        set(),
    ),
    "z2_codecs": (
        False,
        {
            (G, "fails", "/astype"),
            (G, "fails", "/bz2"),
            (G, "fails", "/fixedscaleoffset"),
            (G, "fails", "/packbits"),
            (G, "misreads", "/bool_plain"),
            (G, "misreads", "/packbits"),
            (N, "fails", "/astype"),
            (N, "fails", "/delta"),
            (N, "fails", "/fixedscaleoffset"),
            (N, "fails", "/gzip"),
            (N, "fails", "/lz4"),
            (N, "fails", "/lzma"),
            (N, "fails", "/packbits"),
            (N, "fails", "/quantize"),
            (N, "misreads", "/fortran"),
            (N, "refuses", "/bool_plain"),
            (N, "refuses", "/packbits"),
        },
    ),
    "z2_objects": (
        False,
        {
            (G, "fails", "/categorize"),
            (G, "fails", "/json"),
            (G, "fails", "/vlen_utf8"),
            (N, "fails", "/categorize"),
            (N, "fails", "/json"),
            (N, "fails", "/vlen_utf8"),
            (N, "refuses", "/categorize"),
            (N, "refuses", "/json"),
            (N, "refuses", "/vlen_utf8"),
            (X, "refuses", "/categorize"),
            (X, "refuses", "/json"),
            (Z, "fails", "/categorize"),
            (Z, "fails", "/json"),
        },
    ),
    "z2_plain": (
        False,
        {
            (G, "fails", "/stamps"),
            (G, "misreads", "/flags"),
            (N, "refuses", "/flags"),
            (N, "refuses", "/stamps"),
            (X, "refuses", "/fill_inf"),
            (X, "refuses", "/fill_nan"),
            (X, "refuses", "/fill_null"),
            (X, "refuses", "/flags"),
            (X, "refuses", "/partial"),
            (X, "refuses", "/stamps"),
            (X, "refuses", "/structured"),
            (X, "refuses", "/zeros_default"),
        },
    ),
    "z3_bitshuffle": (
        False,
        {
            (G, "fails", "/astype"),
            (G, "fails", "/delta"),
            (G, "fails", "/fixedscaleoffset"),
            (G, "fails", "/packbits"),
            (G, "fails", "/quantize"),
            (G, "fails", "/sharded_f4"),
            (G, "misreads", "/packbits"),
        },
    ),
    "z3_defaults": (
        False,
        {
            (G, "fails", "/big"),
            (G, "fails", "/sharded"),
            (G, "fails", "/words"),
            (G, "misreads", "/flags"),
        },
    ),
}


def _stores() -> list[str]:
    return sorted(p.stem for p in DATA.glob("*.zip"))


@pytest.mark.parametrize("name", _stores())
def test_check_reports_exactly_the_expected_findings(name: str) -> None:
    assert name in EXPECTED, f"write down what check must find on {name}.zip"
    ok, expected = EXPECTED[name]
    report = nczarr.check(str(DATA / f"{name}.zip"))
    found = {(f.reader, f.severity, f.where) for f in report.findings if f.reader in report.readers}
    assert found == expected
    assert report.ok is ok
    assert all(f.reader not in report.readers for f in report.notes)


# ------------------------------------------------------------------ the real readers
_WHOLE = ("listing its group fails", "cannot open the group", "whole dataset", "Zarr v3")
_NOT_IN_THIS_GDAL = ("blosc", "zstd", "lz4", "lzma")


def _arrays(root: Path) -> list[str]:
    """Every array's path (``/a``, ``/g/b``) in a directory store, v2 or v3."""
    out = []
    for meta in sorted(root.rglob("*")):
        if meta.name == ".zarray" or (
            meta.name == "zarr.json" and json.loads(meta.read_text()).get("node_type") == "array"
        ):
            out.append("/" + meta.parent.relative_to(root).as_posix())
    return out


def _lacks_codec(root: Path, path: str) -> bool:
    """The array needs a codec this libgdal was built without (blosc, zstd, lz4, lzma)."""
    folder = root / path.lstrip("/")
    meta = folder / ".zarray" if (folder / ".zarray").exists() else folder / "zarr.json"
    return re.search(r'"(numcodecs\.)?(blosc|zstd|lz4|lzma)"', meta.read_text()) is not None


def _zarr_python(root: Path, arrays: list[str]) -> set[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            group = zarr.open_group(str(root), mode="r", use_consolidated=False)
        except Exception:
            return set(arrays)
        failed = set()
        for path in arrays:
            try:
                group[path.lstrip("/")][...]
            except Exception:
                failed.add(path)
        return failed


def _xarray(root: Path, arrays: list[str]) -> set[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ds = xr.open_zarr(str(root), consolidated=False, decode_timedelta=True)
        except Exception:
            return set(arrays)
        failed = set()
        for path in arrays:
            try:
                _ = ds[path.lstrip("/")].values
            except Exception:
                failed.add(path)
        return failed


def _netcdf_c(root: Path, arrays: list[str]) -> set[str]:
    try:
        nc = netCDF4.Dataset(f"file://{root}#mode=zarr,file")
    except Exception:
        return set(arrays)
    failed = set()
    with nc:
        for path in arrays:
            try:
                nc[path.lstrip("/")][...]
            except Exception:
                failed.add(path)
    return failed


def _gdal(root: Path, arrays: list[str]) -> tuple[set[str], set[str]]:
    """(arrays GDAL fails on, arrays this libgdal cannot judge)."""
    unjudged = {path for path in arrays if _lacks_codec(root, path)}
    seen = read_zarr(root)
    if seen.error is not None:
        return set(arrays), unjudged
    failed = set()
    for path in arrays:
        array = seen.arrays.get(path)
        if array is None or array.error:
            failed.add(path)
    return failed - unjudged, unjudged


@pytest.mark.parametrize("name", _stores())
def test_real_readers_fail_where_check_says(name: str, tmp_path: Path) -> None:
    """Every array check says a reader cannot open or read is one the real reader
    fails on, and every array the real reader fails on is named by check (or lies in
    a group or store check says the reader cannot open)."""
    root = tmp_path / name
    with zipfile.ZipFile(DATA / f"{name}.zip") as archive:
        archive.extractall(root)
    arrays = _arrays(root)
    report = nczarr.check(str(DATA / f"{name}.zip"))
    for reader, real in ((Z, _zarr_python), (X, _xarray), (N, _netcdf_c), (G, _gdal)):
        unjudged: set[str] = set()
        failed = real(root, arrays)
        if reader == G:
            failed, unjudged = failed
        flagged = [f for f in report.for_reader(reader) if f.severity in ("refuses", "fails")]
        named = {f.where for f in flagged}
        # a reader that leaves an array out ("ignores") shows it as failing here
        missing = {f.where for f in report.for_reader(reader) if f.severity == "ignores"}
        whole = any(w in f.problem for f in flagged for w in _WHOLE) or "/" in named
        assert (named & set(arrays)) - unjudged <= failed, (reader, named, failed)
        if not whole:
            assert failed - unjudged <= named | missing, (reader, failed - named)
        else:
            assert failed, (reader, "check says the reader cannot open it, yet it does")


def test_xarray_does_not_mask_gdal_v3_nodata_as_check_says(tmp_path: Path) -> None:
    root = tmp_path / "g"
    with zipfile.ZipFile(DATA / "gdal312_v3.zip") as archive:
        archive.extractall(root)
    values = xr.open_zarr(str(root), consolidated=False)["gdal312_v3"].values
    assert (values == -1).sum() == 2  # GDAL's nodata, read as data
    gdal = read_zarr(root).arrays["/gdal312_v3"]
    assert gdal.nodata == -1.0
