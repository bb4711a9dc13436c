"""A dataset in CDL, formatted as ``ncdump`` does (``nczarr dump``, ``dump -h``).

The text is what netcdf-c's ncdump prints for the same netCDF-4 content, so it can
be diffed against ncdump and fed to ``ncgen``: tab/space indentation, ``UNLIMITED ;
// (n currently)``, type suffixes on attribute values (``1b``, ``2s``, ``3UB``,
``4US``, ``5U``, ``6LL``, ``7ULL``, ``1.5f``), floats with 7 and doubles with 15
significant digits and trailing zeros trimmed (``1.f``, ``3.14159265358979``),
``NaN``/``Infinity``, escaped text and names (``\1dim``, ``x\\ y``), a space before
the ``:`` of an attribute whose variable is named like a CDL section (``data :units``),
``string`` before string attributes, a dimension shown by its full name only where
its simple name would resolve to another dimension. The data section (``dump``
without ``-h``) prints values as ncdump does: one line per row of a 2-D or larger
array, lines wrapped before 80 columns, ``_`` for fill values.

It differs from ncdump by design where nczarr's reading does: dimensions of pure
Zarr arrays without names are ``_Anonymous_Dimension_<n>`` (netcdf-c says
``_Anonymous_Dim_<n>``).

``special=True`` adds the virtual attributes ``ncdump -s`` shows that nczarr
knows (``_Storage``, ``_ChunkSizes``, ``_Endianness`` for big-endian data,
``_NoFill``, global ``_Format``); codec attributes (``_Filter``, ``_Codecs``) are
not reproduced.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection

import numpy as np

from ..translate.model import Attribute, Dataset, Group, Variable

__all__ = ["format_cdl", "format_attribute_values", "format_data", "escape_name", "DataSource"]

#: Reads one variable's values (the whole array) for the data section.
DataSource = Callable[[Variable], np.ndarray]

#: Characters ncdump escapes with a backslash in names.
_NAME_SPECIALS = frozenset(" !\"#$&'()*,:;<=>?[\\]^`{|}~")

_TEXT_ESCAPES = {
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
}

_INT_SUFFIX = {
    "byte": "b",
    "short": "s",
    "int": "",
    "ubyte": "UB",
    "ushort": "US",
    "uint": "U",
    "int64": "LL",
    "uint64": "ULL",
}

#: Variable names ncdump follows with a space before an attribute's ``:`` (otherwise
#: ``data:units`` would read as the start of the data section).
_SECTION_KEYWORDS = frozenset({"data", "variables", "dimensions", "types", "group"})

#: Width ncdump wraps data lines at.
_MAX_COLUMNS = 80


def escape_name(name: str) -> str:
    """A name as CDL writes it: special characters, and a leading digit, preceded by a
    backslash (``1dim`` -> ``\\1dim``)."""
    escaped = "".join("\\" + ch if ch in _NAME_SPECIALS else ch for ch in name)
    return "\\" + escaped if escaped[:1].isdigit() else escaped


def _text(value: str) -> str:
    """A quoted CDL string: trailing NULs dropped, C escapes, other controls as octal.

    A byte the reader kept undecoded (not UTF-8, held as a lone surrogate) is written
    as its octal escape (``"\\200"``), which ncgen reads back as that byte.
    """
    value = value.rstrip("\x00")
    out = ['"']
    for ch in value:
        if ch in _TEXT_ESCAPES:
            out.append(_TEXT_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        elif 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\{ord(ch) - 0xDC00:03o}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _tztrim(text: str) -> str:
    """Trailing zeros after the decimal point removed, the point itself kept (ncdump)."""
    i = 1 if text.startswith("-") else 0
    while i < len(text) and (text[i].isdigit() or text[i] == "."):
        i += 1
    cp = i - 1
    if text[cp] == ".":
        return text
    end = cp + 1
    while text[cp] == "0":
        cp -= 1
    cp += 1
    if cp == end:
        return text
    return text[:cp] + text[end:]


def _real(value: float, nc_type: str) -> str:
    suffix = "f" if nc_type == "float" else ""
    if math.isnan(value):
        return "NaN" + suffix
    if math.isinf(value):
        return ("-" if value < 0 else "") + "Infinity" + suffix
    if nc_type == "float":
        return _tztrim(format(float(np.float32(value)), "#.7g") + "f")
    return _tztrim(format(value, "#.15g"))


def format_attribute_values(attr: Attribute) -> str:
    """The right-hand side of a CDL attribute line (without ``" ;"``)."""
    if attr.type == "char":
        return _text(attr.value if isinstance(attr.value, str) else str(attr.value))
    values = (attr.value,) if isinstance(attr.value, str | int | float) else tuple(attr.value)
    if not values:
        return '""'
    if attr.type == "string":
        return ", ".join(_text(v) for v in values)
    if attr.type in ("float", "double"):
        return ", ".join(_real(float(v), attr.type) for v in values)
    suffix = _INT_SUFFIX[attr.type]
    return ", ".join(f"{int(v)}{suffix}" for v in values)


def _attribute_line(owner: str, attr: Attribute, indent: str) -> str:
    prefix = "string " if attr.type == "string" else ""
    space = " " if owner in _SECTION_KEYWORDS else ""
    return (
        f"{indent}\t\t{prefix}{escape_name(owner)}{space}:{escape_name(attr.name)} = "
        f"{format_attribute_values(attr)} ;"
    )


def _dimension_label(dataset: Dataset, group: Group, fqn: str) -> str:
    """The simple name if it resolves to ``fqn`` from ``group`` (netCDF scoping), else the FQN."""
    name = fqn.rsplit("/", 1)[-1]
    path = group.path.rstrip("/")
    while True:
        try:
            scope = dataset.find_group(path or "/")
        except KeyError:
            break
        if name in scope.dimensions:
            found = f"{path}/{name}"
            return escape_name(name) if found == fqn else _escaped_fqn(fqn)
        if not path:
            break
        path = path.rsplit("/", 1)[0]
    return _escaped_fqn(fqn)


def _escaped_fqn(fqn: str) -> str:
    return "/".join(escape_name(part) for part in fqn.split("/"))


def _special_lines(var: Variable, indent: str) -> list[str]:
    name = escape_name(var.name)
    lines = []
    if var.scalar:
        lines.append(f'{indent}\t\t{name}:_Storage = "contiguous" ;')
    else:
        lines.append(f'{indent}\t\t{name}:_Storage = "chunked" ;')
        lines.append(f"{indent}\t\t{name}:_ChunkSizes = {', '.join(map(str, var.chunks))} ;")
    if var.endian == "big" and var.type not in ("byte", "ubyte", "char", "string"):
        lines.append(f'{indent}\t\t{name}:_Endianness = "big" ;')
    if var.fill_value is None:
        lines.append(f'{indent}\t\t{name}:_NoFill = "true" ;')
    return lines


def _value_text(value: object, nc_type: str) -> str:
    if nc_type == "string":
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        return _text(text)
    if nc_type in ("float", "double"):
        number = float(value)  # type: ignore[arg-type]
        if not math.isfinite(number):
            return _real(number, nc_type)  # NaNf, -Infinityf for floats, as ncdump
        if nc_type == "float":
            return format(float(np.float32(number)), ".7g")
        return format(number, ".15g")
    return str(int(value))  # type: ignore[call-overload]


def _is_fill(values: np.ndarray, var: Variable) -> np.ndarray:
    fill = var.fill_value
    if fill is None or var.type == "char":
        return np.zeros(values.shape, dtype=bool)
    if var.type == "string":
        text = fill.decode("utf-8", "replace") if isinstance(fill, bytes) else str(fill)
        decoded = [
            (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)).rstrip("\x00")
            for v in values.ravel()
        ]
        return np.array([d == text for d in decoded], dtype=bool).reshape(values.shape)
    if var.type in ("float", "double") and isinstance(fill, float) and math.isnan(fill):
        return np.isnan(values)
    with np.errstate(invalid="ignore"):
        return np.asarray(values == np.asarray(fill).astype(values.dtype))


def _char_strings(values: np.ndarray) -> np.ndarray:
    """A char array's last dimension joined into strings (NULs kept; ``_text`` drops
    the trailing ones)."""
    if values.ndim == 0:
        values = values.reshape(1)
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(values.shape)
    flat = raw.reshape(-1, values.shape[-1]) if values.size else raw.reshape(0, 0)
    texts = [bytes(row).decode("latin-1") for row in flat]
    return np.array(texts, dtype=object).reshape(values.shape[:-1])


def _wrapped(first: str, pieces: list[str], continuation: str, unprinted: int = 0) -> list[str]:
    """``first`` followed by ``pieces``, wrapped as ncdump wraps data lines
    (``unprinted``: columns ncdump counts on the first line without printing them)."""
    lines: list[str] = []
    line, extra = first, unprinted
    for piece in pieces:
        if extra + len(line) + len(piece) > _MAX_COLUMNS - 1 and line.strip():
            lines.append(line)
            line, extra = continuation, 0
        line += piece
    lines.append(line)
    return lines


def _items(var: Variable, values: np.ndarray) -> np.ndarray:
    """Each value's CDL text, as an array: a char array's last dimension is joined
    into one quoted string, fill values are ``_``."""
    if var.type == "char":
        return np.vectorize(_text, otypes=[object])(_char_strings(values))
    fill = _is_fill(values, var).ravel()
    texts = [
        "_" if is_fill else _value_text(value, var.type)
        for value, is_fill in zip(values.ravel(), fill, strict=True)
    ]
    return np.array(texts, dtype=object).reshape(values.shape)


def format_data(var: Variable, values: np.ndarray, indent: str = "") -> list[str]:
    """The data-section lines of one variable, as ncdump prints them: one line (wrapped)
    for a scalar, a vector or one string; otherwise ``name =`` and one line per row."""
    items = _items(var, np.asarray(values))
    name = escape_name(var.name)
    continuation = indent + "    "
    multi_line = items.ndim >= 2 or (var.type == "char" and items.size > 1)
    if not multi_line:
        flat = list(items.ravel())
        pieces = [f"{item}, " for item in flat[:-1]] + [f"{flat[-1]} ;"]
        return _wrapped(f"{indent} {name} = ", pieces, continuation)
    rows = items.reshape(-1, 1) if var.type == "char" else items.reshape(-1, items.shape[-1])
    lines = [f"{indent} {name} ="]
    for i, row in enumerate(rows):
        end = " ;" if i == len(rows) - 1 else ","
        pieces = [f"{item}, " for item in row[:-1]] + [f"{row[-1]}{end}"]
        # ncdump prints a row's first line unindented in groups, but counts the indent
        lines.extend(_wrapped("  ", pieces, continuation, len(indent)))
    return lines


def _wanted(var: Variable, selected: Collection[str] | None) -> bool:
    return selected is None or var.name in selected or var.path in selected


def _group_lines(
    dataset: Dataset,
    group: Group,
    indent: str,
    is_root: bool,
    special: bool,
    data: DataSource | None = None,
    selected: Collection[str] | None = None,
) -> list[str]:
    lines: list[str] = []
    if group.dimensions:
        lines.append(f"{indent}dimensions:")
        for dim in group.dimensions.values():
            size = f"UNLIMITED ; // ({dim.size} currently)" if dim.unlimited else f"{dim.size} ;"
            lines.append(f"{indent}\t{escape_name(dim.name)} = {size}")
    if group.variables:
        lines.append(f"{indent}variables:")
    for var in group.variables.values():
        dims = ""
        if var.dimensions and not var.scalar:
            labels = (_dimension_label(dataset, group, d) for d in var.dimensions)
            dims = "(" + ", ".join(labels) + ")"
        lines.append(f"{indent}\t{var.type} {escape_name(var.name)}{dims} ;")
        lines.extend(_attribute_line(var.name, a, indent) for a in var.attributes.values())
        if special:
            lines.extend(_special_lines(var, indent))
    if group.attributes or (special and is_root):
        lines.append("")
        kind = "global" if is_root else "group"
        lines.append(f"{indent}// {kind} attributes:")
        lines.extend(_attribute_line("", a, indent) for a in group.attributes.values())
        if special and is_root:
            lines.append(f'{indent}\t\t:_Format = "netCDF-4" ;')
    if data is not None and group.variables:  # ncdump: even if -v selects none of them
        lines.append(f"{indent}data:")
        for var in (v for v in group.variables.values() if _wanted(v, selected)):
            lines.append("")
            lines.extend(format_data(var, data(var), indent))
    for child in group.groups.values():
        inner = indent + "  "
        lines.append("")
        lines.append(f"{indent}group: {escape_name(child.name)} {{")
        lines.extend(_group_lines(dataset, child, inner, False, special, data, selected))
        lines.append(f"{inner}}} // group {escape_name(child.name)}")
    return lines


def format_cdl(
    dataset: Dataset,
    name: str,
    *,
    special: bool = False,
    data: DataSource | None = None,
    variables: Collection[str] | None = None,
) -> str:
    """``dataset`` in CDL, as ``ncdump`` (``-h`` without ``data``, ``-s`` with
    ``special``, ``-v`` with ``variables``) prints it.

    Parameters
    ----------
    dataset : Dataset
        What a reader produced.
    name : str
        The dataset name after ``netcdf`` (ncdump uses the file name without its
        extension).
    special : bool
        Add the virtual attributes of ``ncdump -s`` (see the module docstring).
    data : callable, optional
        Reads a variable's values; with it the data section is printed too.
    variables : collection of str, optional
        Names or paths of the variables whose data to print (default: all).

    Returns
    -------
    str
        The text, ending with ``"}\\n"``.
    """
    lines = [f"netcdf {escape_name(name)} {{"]
    lines.extend(_group_lines(dataset, dataset.root, "", True, special, data, variables))
    lines.append("}")
    return "\n".join(lines) + "\n"
