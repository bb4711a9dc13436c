"""netCDF4 (libnetcdf 4.10.1) as the oracle for the readers, plus map builders for fixtures.

* :func:`nc_url` / :func:`build` write datasets with netCDF4 into directory stores.
* :func:`describe` opens a store with netCDF4 and reports what netcdf-c sees, in
  the same model classes the readers produce, so tests can compare the two.
* :func:`diff` lists field-by-field differences between two datasets.
* :func:`map_from_dir` / :func:`map_from_zip` load a store into a read-only
  MemoryMap (zips: netcdf-c's layout, one top-level folder named by entry 0).

netCDF4 does not report attribute types (a string attribute and a char attribute
both come back as ``str``), so :func:`describe` asks the same libnetcdf through
ctypes (``nc_inq_atttype``) with the group ids netCDF4 holds.
"""

from __future__ import annotations

import copy
import ctypes
import glob
import math
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest
from hypothesis import strategies as st

from nczarr.maps.memory import MemoryMap
from nczarr.translate.model import Attribute, Dataset, Dimension, Group, Variable

FIXTURES = Path(__file__).parent / "data"

__all__ = [
    "NUMPY_TO_NC",
    "FIXTURES",
    "fixture_path",
    "nc_url",
    "build",
    "describe",
    "describe_url",
    "diff",
    "map_from_dir",
    "map_from_zip",
    "NC_TYPE_IDS",
]

NC_TYPE_IDS = {
    1: "byte",
    2: "char",
    3: "short",
    4: "int",
    5: "float",
    6: "double",
    7: "ubyte",
    8: "ushort",
    9: "uint",
    10: "int64",
    11: "uint64",
    12: "string",
}
NUMPY_TO_NC = {
    "i1": "byte",
    "u1": "ubyte",
    "i2": "short",
    "u2": "ushort",
    "i4": "int",
    "u4": "uint",
    "i8": "int64",
    "u8": "uint64",
    "f4": "float",
    "f8": "double",
}


def fixture_path(name: str) -> Path:
    """Path of a file in tests/data."""
    return FIXTURES / name


def _libnetcdf() -> ctypes.CDLL:
    libs = Path(netCDF4.__file__).parent.parent / "netcdf4.libs"
    found = sorted(glob.glob(str(libs / "libnetcdf*")))
    if not found:  # pragma: no cover - depends on the wheel layout
        raise RuntimeError(f"libnetcdf not found next to netCDF4 in {libs}")
    return ctypes.CDLL(found[0])


_LIB = _libnetcdf()


def nc_url(path: str | os.PathLike[str], mode: str = "nczarr") -> str:
    """The netCDF URL of a directory store (``mode`` ``"nczarr"`` or ``"zarr"``)."""
    return f"file://{os.path.abspath(path)}#mode={mode},file"


def build(
    path: str | os.PathLike[str], fill: Callable[[netCDF4.Dataset], None], mode: str = "nczarr"
) -> Path:
    """Create a directory store at ``path`` with netCDF4 and let ``fill`` define its content."""
    with netCDF4.Dataset(nc_url(path, mode), "w") as ds:
        fill(ds)
    return Path(path)


def _att_type(grpid: int, varid: int, name: str) -> str:
    xtype = ctypes.c_int()
    status = _LIB.nc_inq_atttype(grpid, varid, name.encode("utf-8"), ctypes.byref(xtype))
    if status != 0:
        raise RuntimeError(f"nc_inq_atttype({name!r}) failed with {status}")
    return NC_TYPE_IDS[xtype.value]


def _py(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _attr_value(nc_type: str, value: Any) -> Any:
    if nc_type == "char":
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return str(value)
    if nc_type == "string":
        if isinstance(value, str):
            return (value,)
        return tuple(str(v) for v in value)
    values = np.atleast_1d(value).tolist()
    if nc_type in ("float", "double"):
        return tuple(float(v) for v in values)
    return tuple(int(v) for v in values)


def _attributes(obj: Any, grpid: int, varid: int) -> dict[str, Attribute]:
    out = {}
    for name in obj.ncattrs():
        nc_type = _att_type(grpid, varid, name)
        out[name] = Attribute(name, nc_type, _attr_value(nc_type, obj.getncattr(name)))
    return out


def _var_type(var: netCDF4.Variable) -> str:
    if var.dtype is str:
        return "string"
    kind = np.dtype(var.dtype)
    if kind.kind == "S":
        return "char"
    return NUMPY_TO_NC[f"{kind.kind}{kind.itemsize}"]


def _codecs(var: netCDF4.Variable, itemsize: int) -> tuple[dict | None, tuple[dict, ...]]:
    """The codec chain netcdf-c 4.10 writes for what ``var.filters()`` reports.

    Chain order (observed): shuffle, the compressor, fletcher32; the last element is
    the Zarr ``compressor``, the others are ``filters``. Shuffle's elementsize is the
    item size (what the reader normalises netcdf-c's 0 to).
    """
    info = var.filters() or {}
    chain: list[dict] = []
    if info.get("shuffle"):
        chain.append({"id": "shuffle", "elementsize": itemsize})
    level = info.get("complevel", 0)
    if info.get("zlib"):
        chain.append({"id": "zlib", "level": level})
    if info.get("zstd"):
        chain.append({"id": "zstd", "level": level})
    if info.get("bzip2"):
        chain.append({"id": "bz2", "level": level})
    if isinstance(info.get("blosc"), dict):
        blosc = info["blosc"]
        chain.append(
            {
                "id": "blosc",
                "clevel": level,
                "blocksize": 0,
                "cname": blosc["compressor"].removeprefix("blosc_"),
                "shuffle": blosc["shuffle"],
            }
        )
    if info.get("fletcher32"):
        chain.append({"id": "fletcher32"})
    if not chain:
        return None, ()
    return chain[-1], tuple(chain[:-1])


def _fill(var: netCDF4.Variable, nc_type: str) -> Any:
    if nc_type == "string":
        # netCDF4 reports no fill for variable-length strings; netcdf-c stores "".
        return ""
    value = var.get_fill_value()
    if value is None:
        return None
    array = np.asarray(value).reshape(())
    if array.dtype.byteorder == ">":
        # netCDF4-python quirk: the fill of a big-endian variable comes back in native
        # byte order but labelled big-endian; swap to get the real value.
        array = array.byteswap()
    value = array.item()
    if nc_type == "char":
        return value.decode("utf-8") if isinstance(value, bytes) else str(value)
    return value


def _variable(var: netCDF4.Variable, default_maxstrlen: int) -> Variable:
    nc_type = _var_type(var)
    dims = tuple(
        ("/" if d.group().path == "/" else d.group().path + "/") + d.name for d in var.get_dims()
    )
    chunking = var.chunking()
    chunks = () if chunking in ("contiguous", None) or not dims else tuple(chunking)
    itemsize = 1 if nc_type in ("char", "string") else np.dtype(var.dtype).itemsize
    compressor, filters = _codecs(var, itemsize)
    endian = var.endian()
    maxstrlen = None
    if nc_type == "string":
        maxstrlen = (
            int(var.getncattr("_nczarr_maxstrlen"))
            if "_nczarr_maxstrlen" in var.ncattrs()
            else default_maxstrlen
        )
    group = var.group()
    path = ("" if group.path == "/" else group.path) + "/" + var.name
    return Variable(
        name=var.name,
        path=path,
        type=nc_type,
        dimensions=dims,
        shape=tuple(var.shape),
        chunks=chunks,
        fill_value=_fill(var, nc_type),
        compressor=compressor,
        filters=filters,
        attributes=_attributes(var, group._grpid, var._varid),
        scalar=not dims,
        maxstrlen=maxstrlen,
        endian="big" if endian == "big" else "little",
    )


def _group(grp: Any, default_maxstrlen: int) -> Group:
    dims = {n: Dimension(n, len(d), d.isunlimited()) for n, d in grp.dimensions.items()}
    return Group(
        name=grp.name,
        path=grp.path,
        dimensions=dims,
        attributes=_attributes(grp, grp._grpid, -1),
        variables={n: _variable(v, default_maxstrlen) for n, v in grp.variables.items()},
        groups={n: _group(g, default_maxstrlen) for n, g in grp.groups.items()},
    )


def describe(
    path: str | os.PathLike[str], mode: str = "nczarr", layout: str = "nczarr-v2"
) -> Dataset:
    """What netcdf-c (through netCDF4) sees in the directory store at ``path``."""
    return describe_url(nc_url(path, mode), layout)


def describe_url(url: str, layout: str = "nczarr-v2") -> Dataset:
    """What netcdf-c (through netCDF4) sees in the dataset at ``url`` (any netCDF file or URL)."""
    with netCDF4.Dataset(url) as ds:
        default = 128
        if "_nczarr_default_maxstrlen" in ds.ncattrs():
            default = int(ds.getncattr("_nczarr_default_maxstrlen"))
        return Dataset(_group(ds, default), layout)


# ------------------------------------------------------------------------- diffs
def _diff_value(where: str, a: Any, b: Any, out: list[str]) -> None:
    from nczarr.translate.model import same_value

    if not same_value(a, b):
        out.append(f"{where}: {a!r} != {b!r}")


def diff(a: Dataset, b: Dataset, *, ignore: tuple[str, ...] = ()) -> list[str]:
    """Field-by-field differences between two datasets (``[]`` when equal).

    ``ignore`` names Variable/Group/Dataset fields to skip (e.g. ``"warnings"``).
    """
    out: list[str] = []
    if "layout" not in ignore:
        _diff_value("layout", a.layout, b.layout, out)
    if "warnings" not in ignore:
        _diff_value("warnings", a.warnings, b.warnings, out)
    _diff_group(a.root, b.root, out, ignore)
    return out


def _diff_dict(where: str, a: dict, b: dict, out: list[str], each: Callable) -> None:
    if list(a) != list(b):
        out.append(f"{where}: names {list(a)} != {list(b)}")
    for name in a.keys() & b.keys():
        each(f"{where}[{name!r}]", a[name], b[name])


def _diff_group(a: Group, b: Group, out: list[str], ignore: tuple[str, ...]) -> None:
    where = f"group {a.path}"
    for fname in ("name", "path"):
        _diff_value(f"{where}.{fname}", getattr(a, fname), getattr(b, fname), out)
    _diff_dict(
        f"{where}.dimensions",
        a.dimensions,
        b.dimensions,
        out,
        lambda w, x, y: _diff_value(w, x, y, out),
    )
    _diff_dict(
        f"{where}.attributes",
        a.attributes,
        b.attributes,
        out,
        lambda w, x, y: _diff_value(w, x, y, out),
    )
    _diff_dict(
        f"{where}.variables",
        a.variables,
        b.variables,
        out,
        lambda w, x, y: _diff_variable(w, x, y, out, ignore),
    )
    for name in a.groups.keys() & b.groups.keys():
        _diff_group(a.groups[name], b.groups[name], out, ignore)
    if list(a.groups) != list(b.groups):
        out.append(f"{where}.groups: {list(a.groups)} != {list(b.groups)}")


def _diff_variable(
    where: str, a: Variable, b: Variable, out: list[str], ignore: tuple[str, ...]
) -> None:
    from nczarr.records import fields

    for f in fields(Variable):
        if f.name in ignore:
            continue
        if f.name == "attributes":
            _diff_dict(
                f"{where}.attributes",
                a.attributes,
                b.attributes,
                out,
                lambda w, x, y: _diff_value(w, x, y, out),
            )
            continue
        _diff_value(f"{where}.{f.name}", getattr(a, f.name), getattr(b, f.name), out)


def rename_dimensions(ds: Dataset, mapping: Callable[[str], str]) -> Dataset:
    """A copy of ``ds`` with every dimension name (and reference) passed through ``mapping``."""
    from nczarr.records import replace

    def fqn(ref: str) -> str:
        head, _, name = ref.rpartition("/")
        return f"{head}/{mapping(name)}"

    def group(g: Group) -> Group:
        return replace(
            g,
            dimensions={mapping(n): replace(d, name=mapping(n)) for n, d in g.dimensions.items()},
            variables={
                n: replace(v, dimensions=tuple(fqn(r) for r in v.dimensions))
                for n, v in g.variables.items()
            },
            groups={n: group(c) for n, c in g.groups.items()},
        )

    return replace(ds, root=group(ds.root))


# --------------------------------------------------------------------- fixtures
def map_from_dir(path: str | os.PathLike[str]) -> MemoryMap:
    """A read-only MemoryMap holding every file below directory ``path``."""
    root = Path(path)
    content = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
    return MemoryMap(content, mode="r")


def map_from_zip(path: str | os.PathLike[str]) -> MemoryMap:
    """A read-only MemoryMap of a zipped store.

    As netcdf-c does, the dataset is the folder named by the first segment of the
    archive's first entry; an archive whose first entry is a root-level file (the
    zarr-python ZipStore layout) is used whole.
    """
    import zipfile_deflate64  # noqa: F401  (registers Deflate64 with zipfile)

    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        first = infos[0].filename if infos else ""
        prefix = first.split("/", 1)[0] + "/" if "/" in first else ""
        content = {}
        for info in infos:
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            key = info.filename[len(prefix) :]
            if key:
                content[key] = zf.read(info)
    return MemoryMap(content, mode="r")


def finite(x: float) -> bool:
    """Helper for hypothesis filters."""
    return math.isfinite(x)


# --------------------------------------------------------------- shared test helpers
def extract_fixture(name: str, where: Path) -> Path:
    """Extract a netcdf-c zip fixture (one top-level folder) into ``where``; the folder."""
    with zipfile.ZipFile(FIXTURES / name) as zf:
        top = zf.namelist()[0].split("/")[0]
        zf.extractall(where)
    return where / top


def file_tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` as ``{relative posix path: bytes}``, sorted."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def open_append(path: Path) -> netCDF4.Dataset:
    """``netCDF4.Dataset(url, "a")`` that really opens (NC_WRITE) an existing NCZarr store.

    netCDF4-python chooses between nc_open and nc_create with ``os.path.exists(url)``,
    which is False for a URL, so "a"/"r+" on an NCZarr URL would create (clobber) the
    store. A placeholder directory named like the URL, relative to the working
    directory (tests chdir to a scratch directory first), makes that check true;
    libnetcdf then opens the URL itself.
    """
    url = nc_url(path)
    os.makedirs(url, exist_ok=True)
    return netCDF4.Dataset(url, "a")


def load_attributes(group: Any) -> None:
    """Read every attribute: netcdf-c 4.10.1 drops a group's unread ones on close."""
    for name in group.ncattrs():
        group.getncattr(name)
    for var in group.variables.values():
        for name in var.ncattrs():
            var.getncattr(name)
    for child in group.groups.values():
        load_attributes(child)


# ------------------------------------------------------------ metadata fuzzing
_JSON_ATOMS = st.none() | st.booleans() | st.integers(-5, 300) | st.text(max_size=4)
#: Small arbitrary JSON values, to put where valid metadata had something else.
JSON_VALUES = st.recursive(
    _JSON_ATOMS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


def corrupt_metadata(data: st.DataObject, base: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of loaded metadata with 1-3 values (anywhere, at any depth)
    replaced by arbitrary JSON: what readers must reject with MetadataError only."""
    meta = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(meta)))
        path = data.draw(st.sampled_from(_paths(meta[key])))
        new = data.draw(JSON_VALUES)
        if not path:
            meta[key] = new
            continue
        target = meta[key]
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = new
    return meta


def debian_490(tool: str) -> str:
    """Debian's netcdf-bin 4.9.0 ``tool`` (``ncgen``, ``ncdump``): CI installs it
    (``.ci/run``), so there its absence fails; elsewhere the test is skipped."""
    found = shutil.which(tool)
    if found is None:
        if os.environ.get("CI"):
            raise AssertionError("CI installs Debian's netcdf-bin (.ci/run)")
        pytest.skip(f"Debian's netcdf-bin ({tool} 4.9.0) is not installed")
    banner = subprocess.run([shutil.which("ncdump") or found], capture_output=True, text=True)
    if "4.9.0" not in banner.stderr:
        pytest.skip(f"ncdump is not netcdf-c 4.9.0: {banner.stderr.strip().splitlines()[-1:]}")
    return found
