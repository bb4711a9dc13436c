"""A dataset header in CDL, formatted exactly as ``ncdump -h`` does (``nczarr dump -h``).

Byte-for-byte what netcdf-c's ncdump prints for the same netCDF-4 content, so the
output can be diffed against ``ncdump -h``: tab/space indentation, ``UNLIMITED ;
// (n currently)``, type suffixes on attribute values (``1b``, ``2s``, ``3UB``,
``4US``, ``5U``, ``6L``, ``7UL``, ``1.5f``), floats with 7 and doubles with 15
significant digits and trailing zeros trimmed (``1.f``, ``3.14159265358979``),
``NaN``/``Infinity``, escaped text, ``string`` before string attributes, a
dimension shown by its full name only where its simple name would resolve to
another dimension.

``special=True`` adds the virtual attributes ``ncdump -s`` shows that nczarr
knows (``_Storage``, ``_ChunkSizes``, ``_Endianness`` for big-endian data,
``_NoFill``, global ``_Format``); codec attributes (``_Filter``, ``_Codecs``) are
not reproduced.
"""

from __future__ import annotations

import math

import numpy as np

from ..translate.model import Attribute, Dataset, Group, Variable

__all__ = ["format_cdl", "format_attribute_values", "escape_name"]

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
    "int64": "L",
    "uint64": "UL",
}


def escape_name(name: str) -> str:
    """A name as CDL writes it: special characters preceded by a backslash."""
    return "".join("\\" + ch if ch in _NAME_SPECIALS else ch for ch in name)


def _text(value: str) -> str:
    """A quoted CDL string: trailing NULs dropped, C escapes, other controls as octal."""
    value = value.rstrip("\x00")
    out = ['"']
    for ch in value:
        if ch in _TEXT_ESCAPES:
            out.append(_TEXT_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
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
    return (
        f"{indent}\t\t{prefix}{escape_name(owner)}:{escape_name(attr.name)} = "
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


def _group_lines(
    dataset: Dataset, group: Group, indent: str, is_root: bool, special: bool
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
    for child in group.groups.values():
        inner = indent + "  "
        lines.append("")
        lines.append(f"{indent}group: {escape_name(child.name)} {{")
        lines.extend(_group_lines(dataset, child, inner, False, special))
        lines.append(f"{inner}}} // group {escape_name(child.name)}")
    return lines


def format_cdl(dataset: Dataset, name: str, *, special: bool = False) -> str:
    """The CDL header of ``dataset``, as ``ncdump -h`` (``-s`` with ``special``) prints it.

    Parameters
    ----------
    dataset : Dataset
        What a reader produced.
    name : str
        The dataset name after ``netcdf`` (ncdump uses the file name without its
        extension).
    special : bool
        Add the virtual attributes of ``ncdump -s`` (see the module docstring).

    Returns
    -------
    str
        The text, ending with ``"}\\n"``.
    """
    lines = [f"netcdf {escape_name(name)} {{"]
    lines.extend(_group_lines(dataset, dataset.root, "", True, special))
    lines.append("}")
    return "\n".join(lines) + "\n"
