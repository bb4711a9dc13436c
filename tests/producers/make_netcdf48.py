"""netcdf-c 4.8.0's NCZarr and pure Zarr, written by its ``ncgen`` and read by its ``ncdump``.

netcdf-c 4.8.0 wrote every numeric ``fill_value`` (and ``_FillValue`` attribute) as a
one-element JSON list, ``"fill_value": [-32767]`` (netcdf-c issue 2008, fixed in
4.8.1). This script writes small stores with that release's own ``ncgen`` from the CDL
below and records what that release's own ``ncdump`` prints for them: the oracle the
tests hold every nczarr path to.

It needs the ``ncgen`` and ``ncdump`` of netcdf-c **4.8.0** (built with
``--enable-nczarr``): put their directory in ``NCZARR_NETCDF48_BIN`` or on ``PATH``.
Nothing here builds netcdf-c; the script refuses any other release. It needs numpy
(``build.py`` runs it in a venv with numpy)::

    NCZARR_NETCDF48_BIN=/opt/netcdf-4.8.0/bin python make_netcdf48.py OUTDIR [CASE...]

What 4.8.0 cannot do (so no fixture has it): unlimited dimensions ("Invalid dimension
size"), filters (``_DeflateLevel``: "Attempting netcdf-4 operation on netcdf-3 file"),
``mode=xarray``; its ``ncdump`` crashes on a scalar variable (segmentation fault), and in
``mode=zarr`` on any attribute ("Not a valid data type or _FillValue type mismatch",
or a double free), so the pure Zarr store has none. A Linux build writes a NaN fill
as ``NaN``; the bare ``Nan`` of Windows builds (netcdf-c issue 2265) cannot be made
here and stays covered by ``tests/test_netcdf48_fill_values.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any

import numpy as np
from record import dump, encode_array, encode_value

#: case -> (mode, CDL). The CDL names the dataset; the store is named by the case.
CASES: dict[str, tuple[str, str]] = {
    "nc480_nczarr": (
        "nczarr",
        """netcdf nc480_nczarr {
dimensions:
	x = 4 ;
	t = 2 ;
	nchar = 5 ;
variables:
	short s(x) ;
		s:_FillValue = -32767s ;
		s:scale_factor = 0.5f ;
		s:add_offset = 10.f ;
	int i(x) ;
		i:_FillValue = -2147483647 ;
	int i_default(x) ;
	float f(x) ;
		f:_FillValue = -999.f ;
		f:units = "K" ;
	float f_nan(x) ;
		f_nan:_FillValue = NaNf ;
	double d(t, x) ;
		d:_FillValue = 9.96920996838687e+36 ;
	double d_default(x) ;
	char c(x, nchar) ;
	byte b(x) ;
		b:_FillValue = -127b ;
	ushort us(x) ;
		us:_FillValue = 65535US ;
	int64 i64(x) ;
		i64:_FillValue = -9223372036854775806LL ;

// global attributes:
		:title = "netcdf-c 4.8.0 NCZarr" ;
data:
 s = 0, _, 2, 4 ;
 i = 1, _, 3, 4 ;
 i_default = 1, 2, _, 4 ;
 f = 1.5, -999, _, 4.25 ;
 f_nan = 1.5, _, 3, 4 ;
 d = 1.5, _, 3.25, 4,
     _, 6, 7, 8.5 ;
 d_default = 0.5, 1, _, 2 ;
 c = "abc", "de", "", "fghij" ;
 b = 1, _, -1, 127 ;
 us = 1, _, 3, 65534 ;
 i64 = 1, _, 3, 9223372036854775807 ;
}
""",
    ),
    "nc480_groups": (
        "nczarr",
        """netcdf nc480_groups {
dimensions:
	x = 3 ;
variables:
	int top(x) ;
		top:_FillValue = -99 ;
		top:long_name = "in the root" ;
// global attributes:
		:history = "ncgen 4.8.0" ;
data:
 top = 1, _, 3 ;

group: g {
  dimensions:
	y = 2 ;
  variables:
	float inner(x, y) ;
		inner:_FillValue = -1.f ;
	short counts(y) ;
  // group attributes:
		:where = "g" ;
  data:
   inner = 0.5, _, 1.5, 2, _, 3.25 ;
   counts = _, 7 ;

  group: h {
    variables:
	double deep(y) ;
		deep:_FillValue = 1.e+30 ;
		deep:valid_max = 100. ;
	char label(x) ;
    data:
     deep = _, 2.5 ;
     label = "ab" ;
    } // group h
  } // group g
}
""",
    ),
    "nc480_pure_zarr": (
        "zarr",
        """netcdf nc480_pure_zarr {
dimensions:
	x = 4 ;
	y = 2 ;
	nchar = 3 ;
variables:
	int i(x) ;
	short s(x) ;
	float f(y, x) ;
	double d(x) ;
	byte b(x) ;
	char c(x, nchar) ;
data:
 i = 1, _, 3, 4 ;
 s = -1, 2, _, 4 ;
 f = 1.5, _, 3, 4, 5, 6, _, 8.25 ;
 d = 0.5, _, 2, 3 ;
 b = 1, 2, _, -4 ;
 c = "abc", "d", "", "ef" ;
}
""",
    ),
}

# ------------------------------------------------------------------ reading ncdump's CDL
#: CDL type name -> numpy dtype
TYPES = {
    "byte": "i1",
    "ubyte": "u1",
    "short": "i2",
    "ushort": "u2",
    "int": "i4",
    "uint": "u4",
    "int64": "i8",
    "uint64": "u8",
    "float": "f4",
    "double": "f8",
    "char": "S1",
}
#: netCDF's default fill values (netcdf.h), which ncdump shows as ``_``
DEFAULT_FILL = {
    "i1": -127,
    "u1": 255,
    "i2": -32767,
    "u2": 65535,
    "i4": -2147483647,
    "u4": 4294967295,
    "i8": -9223372036854775806,
    "u8": 18446744073709551614,
    "f4": 9.9692099683868690e36,
    "f8": 9.9692099683868690e36,
}
#: CDL attribute suffix -> numpy dtype (no suffix: int, or double when it has . e or a word)
SUFFIX = {"b": "i1", "UB": "u1", "s": "i2", "US": "u2", "U": "u4", "LL": "i8", "ULL": "u8"}
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[^\s,;]+')
_FLOAT_WORDS = {"nan": "nan", "infinity": "inf", "-infinity": "-inf", "+infinity": "inf"}


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _string(token: str) -> bytes:
    """A CDL string literal's bytes (ncdump escapes \\n, \\t, \\", \\\\ and \\ooo)."""
    body = token[1:-1]
    return body.encode("latin-1").decode("unicode_escape").encode("latin-1")


def _float(word: str) -> float:
    return float(_FLOAT_WORDS.get(word.lower(), word))


def _attribute(text: str) -> Any:
    """An attribute's values as ncdump prints them: a string, or a typed numpy array."""
    tokens = _tokens(text)
    if tokens[0].startswith('"'):
        return b"".join(_string(t) for t in tokens).decode("utf-8", "surrogateescape")
    dtype, values = None, []
    for token in tokens:
        number, suffix = re.fullmatch(r"(.*?)(ULL|LL|UB|US|U|b|s|f)?", token).groups()
        if suffix == "f":
            dtype = "f4"
        elif suffix:
            dtype = SUFFIX[suffix]
        elif re.fullmatch(r"[-+]?\d+", number) is None:
            dtype = dtype or "f8"
        values.append(number)
    dtype = dtype or "i4"
    return np.array([_float(v) if dtype[0] == "f" else int(v) for v in values], dtype)


def _data(tokens: list[str], var: dict[str, Any], shape: tuple[int, ...]) -> np.ndarray:
    """A variable's data: chars as ``S1``; numbers masked where ncdump printed ``_``."""
    kind = var["type"]
    if kind == "S1":
        row = shape[-1] if shape else 1
        raw = b"".join(_string(t).ljust(row, b"\0") for t in tokens)
        return np.frombuffer(raw, "S1").reshape(shape).copy()
    fill = var["attrs"].get("_FillValue")
    fill = fill[0] if fill is not None else DEFAULT_FILL[kind]
    mask = [t == "_" for t in tokens]
    convert = _float if kind[0] == "f" else int
    values = np.array([fill if m else convert(t) for t, m in zip(tokens, mask, strict=True)], kind)
    return np.ma.MaskedArray(values.reshape(shape), np.array(mask).reshape(shape))


def parse_cdl(text: str) -> dict[str, Any]:
    """ncdump's output as ``{"dims", "attrs", "variables"}``, keyed by full path."""
    dims: dict[str, int] = {}
    attrs: dict[str, dict[str, Any]] = {"/": {}}
    variables: dict[str, dict[str, Any]] = {}
    stack = ["/"]
    section = None
    statement = ""
    for line in text.splitlines():
        stripped = line.strip()
        if statement:  # a data statement spanning lines
            statement += " " + stripped
        elif not stripped or stripped.startswith("//"):
            continue
        elif m := re.fullmatch(r"(?:netcdf \S+|group: (\S+)) \{", stripped):
            if m.group(1):
                stack.append(stack[-1].rstrip("/") + "/" + m.group(1))
                attrs[stack[-1]] = {}
            section = None
            continue
        elif stripped.startswith("}"):
            stack.pop()
            continue
        elif stripped in ("dimensions:", "variables:", "data:"):
            section = stripped[:-1]
            continue
        else:
            statement = stripped
        if not statement.endswith(";"):
            continue
        _statement(statement[:-1].strip(), section, stack[-1], dims, attrs, variables)
        statement = ""
    return {"dims": dims, "attrs": attrs, "variables": variables}


def _path(group: str, name: str) -> str:
    return group.rstrip("/") + "/" + name


def _statement(
    text: str,
    section: str | None,
    group: str,
    dims: dict[str, int],
    attrs: dict[str, dict[str, Any]],
    variables: dict[str, dict[str, Any]],
) -> None:
    if section == "dimensions":
        name, size = (s.strip() for s in text.split("=", 1))
        dims[_path(group, name)] = int(size.split()[0]) if size[0].isdigit() else 0
    elif section == "variables" and (m := re.fullmatch(r"(\S*):(\S+) = (.*)", text, re.S)):
        owner = group if not m.group(1) else _path(group, m.group(1))
        target = attrs[owner] if not m.group(1) else variables[owner]["attrs"]
        target[m.group(2)] = _attribute(m.group(3))
    elif section == "variables":
        m = re.fullmatch(r"(\w+) (\S+?)(?:\((.*)\))?", text)
        names = [d.strip() for d in (m.group(3) or "").split(",") if d.strip()]
        entry = {"type": TYPES[m.group(1)], "dims": names, "attrs": {}}
        variables[_path(group, m.group(2))] = entry
    elif section == "data":
        name, values = text.split("=", 1)
        var = variables[_path(group, name.strip())]
        var["data"] = _tokens(values)


def _shape(var: dict[str, Any], group: str, dims: dict[str, int]) -> tuple[int, ...]:
    """The shape from the dimension names, looked up in the group and its ancestors."""
    shape = []
    for name in var["dims"]:
        scope = group
        while _path(scope, name) not in dims:
            scope = scope.rsplit("/", 1)[0] or "/"
        shape.append(dims[_path(scope, name)])
    return tuple(shape)


def reading(text: str) -> dict[str, Any]:
    """The record of ncdump's output: attributes typed, data with its ``_`` mask."""
    parsed = parse_cdl(text)
    variables = {}
    for path, var in parsed["variables"].items():
        group = path.rsplit("/", 1)[0] or "/"
        shape = _shape(var, group, parsed["dims"])
        data = _data(var.get("data", []), var, shape)
        variables[path] = {
            "dims": var["dims"],
            "dtype": np.dtype(var["type"]).str,
            "attrs": {k: encode_value(v) for k, v in var["attrs"].items()},
            "values": encode_array(data),
        }
    return {
        "dims": parsed["dims"],
        "attrs": {
            group: {k: encode_value(v) for k, v in attrs.items()}
            for group, attrs in parsed["attrs"].items()
        },
        "variables": variables,
    }


# ------------------------------------------------------------------ running 4.8.0
def _tool(name: str) -> str:
    folder = os.environ.get("NCZARR_NETCDF48_BIN")
    found = shutil.which(name, path=folder) if folder else shutil.which(name)
    if found is None:
        sys.exit(f"{name} of netcdf-c 4.8.0 not found: set NCZARR_NETCDF48_BIN or PATH")
    return found


def _release(ncdump: str) -> str:
    """The netcdf-c release of ``ncdump`` (its usage text ends with it); only 4.8.0."""
    usage = subprocess.run([ncdump], capture_output=True, text=True)
    m = re.search(r"netcdf library version (\S+)", usage.stdout + usage.stderr)
    if m is None or m.group(1) != "4.8.0":
        sys.exit(f"{ncdump} is not netcdf-c 4.8.0 ({m.group(1) if m else 'unknown'})")
    return m.group(1)


def make(out: str, name: str) -> None:
    """Write store ``name`` with 4.8.0's ncgen; record 4.8.0's ncdump of it."""
    ncgen, ncdump = _tool("ncgen"), _tool("ncdump")
    release = _release(ncdump)
    mode, cdl = CASES[name]
    path = os.path.abspath(os.path.join(out, name))
    url = f"file://{path}#mode={mode},file"
    source = os.path.join(out, f"{name}.cdl")
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(cdl)
    subprocess.run([ncgen, "-4", "-lb", "-o", url, source], check=True)
    os.remove(source)
    # -p 9,17: floats and doubles with enough digits to come back bit for bit
    text = subprocess.run(
        [ncdump, "-p", "9,17", url], check=True, capture_output=True, text=True
    ).stdout
    dump(
        {
            "name": name,
            "producer": f"netcdf-c {release} ncgen -4 -lb, mode={mode},file",
            "zarr_format": 2,
            "cdl": cdl,
            "ncdump48": {"reader": f"ncdump {release} -p 9,17", "text": text, **reading(text)},
        },
        os.path.join(out, f"{name}.json"),
    )


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    for case in sys.argv[2:] or list(CASES):
        make(sys.argv[1], case)
        print(f"wrote {case}")
