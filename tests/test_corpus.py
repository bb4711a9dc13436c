"""Corpus test: netcdf-c's own test-suite CDL files (tests/data/corpus, origin in its
README.md), built by netcdf-c, through every nczarr path, compared with netCDF4.

Each CDL file is turned into a netCDF-4 file by Debian's ``ncgen`` (netcdf-c 4.9.0);
netCDF4 (libnetcdf 4.10) reading that file is the oracle. netCDF4 copies it into an
NCZarr (``#mode=nczarr,file``) and a pure Zarr (``#mode=zarr,file``) directory store,
and for the files ncgen 4.9 manages, ncgen writes the legacy NCZarr layout directly.
For each store: :func:`nczarr.read` (types, shapes, fills, attributes), convert to
NCZarr, convert to pure Zarr and back to NCZarr, and migrate in place to NCZarr must
give netCDF4 the oracle's values and types. Attribute types survive where the path
stays NCZarr; through pure Zarr (untyped JSON) attribute values are compared.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest

import nczarr

from .differential import (
    NC_OF,
    Seen,
    compare,
    copy_store,
    observe_model,
    observe_netcdf,
)
from .ncoracle import describe_url, nc_url

CORPUS = Path(__file__).parent / "data" / "corpus"
CDL_FILES = sorted(p.stem for p in CORPUS.glob("*.cdl"))
#: Files ``ncgen -4 -lb`` (netcdf-c 4.9.0) writes as legacy NCZarr; it aborts or
#: fails on the others (unlimited dimensions, string variables).
LEGACY = (
    "fills",
    "inttags",
    "ref_inttags4",
    "ref_nulls",
    "ref_scalar",
    "ref_tst_group_data",
    "ref_tst_nans",
    "ref_tst_radix",
    "ref_tst_utf8",
    "ref_whole",
    "tst_chararray",
)
STORES = ("nczarr", "zarr", "legacy")
PATHS = ("read", "convert-nczarr", "zarr-nczarr", "migrate-nczarr")
NUMPY_OF = {v: k for k, v in NC_OF.items()}
#: (cdl, store, path) cases that fail because of a defect listed in issue 7.
KNOWN: dict[tuple[str, str, str], str] = {}
_CHAR_BUG = (
    "new finding: char does not survive NCZarr -> pure Zarr -> NCZarr: nczarr writes "
    "char as '|S1' and reads pure-Zarr '|S1'/'>S1' back as netCDF string (as netcdf-c "
    "does with its own pure Zarr), so netCDF4 gets string, not char"
)
for _name in ("tst_chararray", "ref_tst_small", "ref_tst_unlim2"):
    KNOWN[_name, "nczarr", "zarr-nczarr"] = _CHAR_BUG
KNOWN["tst_chararray", "legacy", "zarr-nczarr"] = _CHAR_BUG
for _path in PATHS:
    KNOWN["ref_tst_nans", "zarr", _path] = (
        "issue 7 defect 4: netcdf-c writes NaN/Inf attributes to pure Zarr as JSON strings "
        'and netCDF4 reads them back as the char text \'["-Infinity","NaN",...]\'; '
        "nczarr reads a string list (defect 4 decides how both spellings read)"
    )
del _name, _path


def _ncgen() -> str:
    found = shutil.which("ncgen")
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("ncgen (netcdf-bin) is not on PATH; the corpus test needs it in CI")
        pytest.skip("ncgen (Debian netcdf-bin, netcdf-c 4.9) is not on PATH")
    return found


# ------------------------------------------------------------------ building
def _set_attr(obj: Any, attr: Any) -> None:
    if attr.type == "string":
        value = list(attr.value)
        obj.setncattr_string(attr.name, value[0] if len(value) == 1 else value)
    elif attr.type == "char":
        # bytes: netCDF4 writes a non-ASCII str as a string attribute, bytes as char
        obj.setncattr(attr.name, attr.value.encode("utf-8"))
    else:
        obj.setncattr(attr.name, np.array(attr.value, dtype=NUMPY_OF[attr.type]))


def _copy_group(src: Any, dst: Any, model: Any) -> None:
    for name, dim in src.dimensions.items():
        dst.createDimension(name, None if dim.isunlimited() else len(dim))
    for attr in model.attributes.values():
        _set_attr(dst, attr)
    for name, var in src.variables.items():
        mvar = model.variables[name]
        kwargs: dict[str, Any] = {}
        if "_FillValue" in var.ncattrs():
            kwargs["fill_value"] = var.getncattr("_FillValue")
        if mvar.type == "string":
            dtype: Any = str
        else:
            dtype = var.dtype
            kwargs["endian"] = var.endian()
        chunking = var.chunking()
        if chunking != "contiguous" and var.dimensions:
            kwargs["chunksizes"] = chunking
        filters = var.filters() or {}
        if filters.get("zlib"):
            kwargs.update(compression="zlib", complevel=filters.get("complevel", 4))
            kwargs["shuffle"] = bool(filters.get("shuffle"))
        out = dst.createVariable(name, dtype, var.dimensions, **kwargs)
        for attr in mvar.attributes.values():
            if attr.name != "_FillValue":
                _set_attr(out, attr)
        var.set_auto_maskandscale(False)
        out.set_auto_maskandscale(False)
        if mvar.type == "char":
            var.set_auto_chartostring(False)
            out.set_auto_chartostring(False)
        if not var.shape:
            if mvar.type == "string":
                out[0] = var.getValue()  # netCDF4 indexes scalar VLENs with 0 only
            else:
                out.assignValue(var.getValue())
        elif all(var.shape):
            out[tuple(slice(0, n) for n in var.shape)] = var[...]
    for name, child in src.groups.items():
        _copy_group(child, dst.createGroup(name), model.groups[name])


def _nc_copy(src: Path, dst: Path, mode: str) -> Path:
    """Copy the netCDF file ``src`` with netCDF4 into a directory store (``mode``)."""
    model = describe_url(str(src))
    with netCDF4.Dataset(src) as s, netCDF4.Dataset(nc_url(dst, mode), "w") as d:
        _copy_group(s, d, model.root)
    return dst


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """Every CDL file built once: ``{cdl: {"nc": file, "nczarr"/"zarr"/"legacy": store}}``."""
    ncgen = _ncgen()
    root = tmp_path_factory.mktemp("corpus")
    built: dict[str, dict[str, Path]] = {}
    for name in CDL_FILES:
        cdl = CORPUS / f"{name}.cdl"
        out = {"nc": root / f"{name}.nc"}
        subprocess.run([ncgen, "-4", "-o", str(out["nc"]), str(cdl)], check=True)
        out["nczarr"] = _nc_copy(out["nc"], root / f"{name}.file", "nczarr")
        out["zarr"] = _nc_copy(out["nc"], root / f"{name}.zarr", "zarr")
        if name in LEGACY:
            legacy = root / f"{name}.legacy"
            subprocess.run(
                [ncgen, "-4", "-lb", "-o", nc_url(legacy, "nczarr"), str(cdl)],
                check=True,
                capture_output=True,
            )
            out["legacy"] = legacy
        built[name] = out
    return built


# ------------------------------------------------------------------- the test
def _cases() -> list:
    out = []
    for name in CDL_FILES:
        for store in STORES:
            if store == "legacy" and name not in LEGACY:
                continue
            for path in PATHS:
                marks = []
                if (name, store, path) in KNOWN:
                    marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[name, store, path]))
                out.append(
                    pytest.param(name, store, path, marks=marks, id=f"{name}-{store}-{path}")
                )
    return out


def _run(store: str, path: str, src: Path, work: Path) -> Seen:
    typed = store != "zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        if path == "read":
            return observe_model(nczarr.read(src), typed=typed)
        if path == "convert-nczarr":
            nczarr.convert(src, work / "out.file", mode="nczarr", workers=2)
            return observe_netcdf(work / "out.file", "nczarr", typed=typed)
        if path == "zarr-nczarr":
            nczarr.convert(src, work / "mid.zarr", mode="zarr", workers=2)
            nczarr.convert(work / "mid.zarr", work / "out.file", mode="nczarr", workers=2)
            return observe_netcdf(work / "out.file", "nczarr", typed=False)
        if path == "migrate-nczarr":
            migrated = copy_store(src, work / "migrated.file")
            nczarr.migrate(migrated, to="nczarr")
            return observe_netcdf(migrated, "nczarr", typed=typed)
    raise AssertionError(path)


def _oracle(corpus: dict, name: str, store: str) -> Seen:
    """netCDF4 reading the store itself (what its producer, netcdf-c, reads), a pure
    Zarr scalar (``_scalar_``) as the true scalar it is; the ncgen-made netCDF-4 file
    for the legacy layout, which libnetcdf 4.10 no longer opens."""
    if store == "legacy":
        return observe_netcdf(corpus[name]["nc"], None, typed=True)
    try:
        seen = observe_netcdf(corpus[name][store], store, typed=True)
    except OSError:
        # libnetcdf 4.10 cannot reopen some pure Zarr it wrote (ref_inttags4: "Numeric
        # conversion not representable"); the netCDF-4 file it was copied from decides.
        return observe_netcdf(corpus[name]["nc"], None, typed=True)
    for var in seen.variables.values():
        if var.dims == ("_scalar_",):
            var.dims, var.shape, var.values = (), (), var.values.reshape(())
    return seen


@pytest.mark.parametrize(("name", "store", "path"), _cases())
def test_corpus(corpus: dict, name: str, store: str, path: str, tmp_path: Path) -> None:
    want = _oracle(corpus, name, store)
    got = _run(store, path, corpus[name][store], tmp_path)
    problems = compare(got, want)
    assert not problems, "\n".join(problems)


def test_corpus_covers_every_atomic_type(corpus: dict) -> None:
    """The corpus has a variable of each of the 12 netCDF atomic types (so every
    type is round-tripped above) and NaN/Infinity values."""
    kinds: set[str] = set()
    special = False
    for name in CDL_FILES:
        seen = observe_netcdf(corpus[name]["nc"], None, typed=True)
        for var in seen.variables.values():
            kinds.add(NC_OF.get(var.kind, var.kind))
            if var.kind in ("f4", "f8"):
                special |= bool(np.any(~np.isfinite(var.values)))
    assert kinds == {*NC_OF.values(), "char", "string"}
    assert special
