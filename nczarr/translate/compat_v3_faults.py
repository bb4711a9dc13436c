"""What is malformed in a Zarr v3 node document below the root, as zarr-python 3 judges it (pure).

:func:`node_fault` looks at one ``zarr.json`` as :func:`~nczarr.load.load_metadata`
reads it (a :class:`~nczarr.translate.jsontext.InvalidJSON` when its text is no JSON)
and names the first field zarr-python 3.1 refuses, in the order it reads them: the
document itself, ``zarr_format``, ``node_type``, then an array's required keys, each
key's value, ``dimension_names`` and ``attributes``. :func:`node_faults` does it for
every node of a store. What each reader then does with that node is
:mod:`~nczarr.translate.compat_v3_nodes`' (measured in
``tests/test_check_odd_v3_and_dimrefs.py``).

zarr-python is the yardstick because its checks are the strictest of the v3 readers
and they are plain: it accepts any value of ``fill_value`` for ``bool``, integral
numbers and integer text for integer types, and numbers, float text and 4, 8 or 16
hex digits for float types. A ``fill_value`` of ``null`` is left to the rules
(:mod:`~nczarr.translate.compat_rules`), as are data types and codecs it knows and
other readers do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..records import record
from .attrs import json_text_safe
from .conventions import ZARR_JSON
from .jsontext import kind_of

__all__ = ["ARRAY_KEYS_V3", "ZARR_PYTHON_DATA_TYPES", "NodeFault", "node_fault", "node_faults"]

#: Keys every v3 array document must hold, in the order zarr-python reads them.
ARRAY_KEYS_V3 = ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs")

#: The data type names zarr-python 3.1 registers (``zarr.core.dtype.data_type_registry``);
#: any other name is refused.
ZARR_PYTHON_DATA_TYPES = frozenset(
    {
        "bool",
        "complex64",
        "complex128",
        "fixed_length_utf32",
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "null_terminated_bytes",
        "numpy.datetime64",
        "numpy.timedelta64",
        "raw_bytes",
        "string",
        "structured",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "variable_length_bytes",
    }
)

#: Integer data type -> (signed, bits).
_INT_BITS = {f"{u}int{bits}": (not u, bits) for u in ("", "u") for bits in (8, 16, 32, 64)}
_FLOATS = frozenset({"float16", "float32", "float64"})


@record
class NodeFault:
    """The first thing zarr-python refuses in one node's ``zarr.json``.

    Attributes
    ----------
    key : str
        The document's key (``g/v/zarr.json``).
    field : str
        ``"document"`` (no JSON object), ``"zarr_format"``, ``"node_type"``, one of
        :data:`ARRAY_KEYS_V3`, ``"dimension_names"``, ``"chunk_shape"`` (a chunk
        length of 0, which zarr-python opens and fails reading) or ``"attributes"``.
    missing : bool
        The field is absent (zarr-python then leaves the node out of a listing).
    reason : str
        What is wrong, naming the key.
    value : Any
        The field's value as stored (None when missing).
    kind : str
        ``"array"``, ``"group"`` (its document says so, or nodes lie below it) or
        ``"node"`` (neither is known).
    """

    key: str
    field: str
    missing: bool
    reason: str
    value: Any = None
    kind: str = "node"


def node_faults(meta: Mapping[str, Any]) -> dict[str, NodeFault]:
    """Node prefix -> :class:`NodeFault` of every malformed ``zarr.json`` below the root."""
    parents: set[str] = set()  # every prefix some node lies below (one pass, not n^2)
    for key, _ in _documents(meta):
        prefix = key.rpartition("/")[0]
        while "/" in prefix:
            prefix = prefix.rpartition("/")[0]
            if prefix in parents:
                break
            parents.add(prefix)
    out: dict[str, NodeFault] = {}
    for key, doc in _documents(meta):
        prefix = key.rpartition("/")[0]
        if not prefix:
            continue
        fault = node_fault(doc, key, holds_nodes=prefix in parents)
        if fault is not None:
            out[prefix] = fault
    return out


def _documents(meta: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    return ((k, v) for k, v in meta.items() if k.rpartition("/")[2] == ZARR_JSON)


def node_fault(doc: Any, key: str, *, holds_nodes: bool = False) -> NodeFault | None:
    """The first field of ``doc`` (the document at ``key``) zarr-python refuses, or None."""
    declared = doc.get("node_type") if isinstance(doc, dict) else None
    kind = "group" if holds_nodes or declared == "group" else "node"
    kind = "array" if declared == "array" and not holds_nodes else kind
    if not isinstance(doc, dict):
        return NodeFault(key, "document", False, f"{key!r} holds {kind_of(doc)}", doc, kind)
    found = _header(doc, key) or (
        _array_field(doc, key) if kind == "array" else _attributes(doc, key)
    )
    if found is None:
        return None
    field, missing, reason = found
    value = _chunk_shape(doc) if field == "chunk_shape" else doc.get(field)
    return NodeFault(key, field, missing, reason, value, kind)


_Found = tuple[str, bool, str] | None


def _header(doc: dict[str, Any], key: str) -> _Found:
    if "zarr_format" not in doc:
        return "zarr_format", True, f"{key!r} has no 'zarr_format'"
    if doc["zarr_format"] != 3:
        return "zarr_format", False, f"{key!r}: zarr_format {_shown(doc['zarr_format'])}, not 3"
    if doc.get("node_type") not in ("group", "array"):
        shown = _shown(doc["node_type"]) if "node_type" in doc else "missing"
        return "node_type", False, f"{key!r}: node_type {shown}, not 'group' or 'array'"
    return None


def _array_field(doc: dict[str, Any], key: str) -> _Found:
    for name in ARRAY_KEYS_V3:
        if name not in doc:
            return name, True, f"{key!r} has no {name!r}"
    shape = doc["shape"]
    if not _naturals(shape, low=0):
        return "shape", False, f"{key!r}: shape {_shown(shape)} is no list of integers >= 0"
    for name, test in _VALUE_TESTS:
        problem = test(doc, len(shape))
        if problem is not None:
            value = _chunk_shape(doc) if name == "chunk_shape" else doc.get(name)
            return name, False, f"{key!r}: {name} {_shown(value)} {problem}"
    return _attributes(doc, key, array=True)


def _attributes(doc: dict[str, Any], key: str, *, array: bool = False) -> _Found:
    """An array's ``attributes`` that zarr-python keeps and xarray iterates: an empty
    list or text is no attributes (both open it); anything else not an object fails
    xarray (a list of pairs too). A group's must be an object."""
    attrs = doc.get("attributes")
    empty = isinstance(attrs, list | str) and not attrs
    if attrs is None or isinstance(attrs, dict) or (array and empty):
        return None
    return "attributes", False, f"{key!r}: attributes {_shown(attrs)} is no JSON object"


def _shown(value: Any) -> str:
    text = json_text_safe(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _naturals(value: Any, *, low: int) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value
    )


def _type_name(doc: dict[str, Any]) -> Any:
    dtype = doc.get("data_type")
    return dtype.get("name") if isinstance(dtype, dict) else dtype


def _data_type(doc: dict[str, Any], ndim: int) -> str | None:
    name = _type_name(doc)
    if isinstance(name, str) and name in ZARR_PYTHON_DATA_TYPES:
        return None
    return "is no data type zarr-python knows"


def _chunk_grid(doc: dict[str, Any], ndim: int) -> str | None:
    grid = doc["chunk_grid"]
    if not isinstance(grid, dict):
        return "is no JSON object"
    if grid.get("name") != "regular":
        return "is no 'regular' grid"
    chunks = _chunk_shape(doc)
    if not _naturals(chunks, low=0):
        return "has no chunk_shape of integers >= 0"
    if len(chunks) != ndim:
        return f"has a chunk_shape of {len(chunks)} dimension(s) for a shape of {ndim}"
    return None


def _chunk_shape(doc: dict[str, Any]) -> Any:
    grid = doc.get("chunk_grid")
    config = grid.get("configuration") if isinstance(grid, dict) else None
    return config.get("chunk_shape") if isinstance(config, dict) else None


def _zero_chunks(doc: dict[str, Any], ndim: int) -> str | None:
    """A chunk length of 0: zarr-python opens the array and fails reading it."""
    return "has a chunk length of 0" if 0 in _chunk_shape(doc) else None


def _chunk_key_encoding(doc: dict[str, Any], ndim: int) -> str | None:
    encoding = doc["chunk_key_encoding"]
    if isinstance(encoding, dict) and encoding.get("name") in ("default", "v2"):
        return None
    return "is no 'default' or 'v2' encoding object"


def _fill_value(doc: dict[str, Any], ndim: int) -> str | None:
    fill, name = doc["fill_value"], _type_name(doc)
    if fill is None:  # the rules' (zarr-python, xarray fail; GDAL writes it)
        return None
    if name in _INT_BITS and not _int_fill(fill, *_INT_BITS[name]):
        return f"is no {name} value"
    if name in _FLOATS and not _float_fill(fill):
        return f"is no {name} value"
    return None


def _int_fill(fill: Any, signed: bool, bits: int) -> bool:
    if isinstance(fill, float) and fill.is_integer():
        fill = int(fill)
    elif isinstance(fill, str):
        try:
            fill = int(fill)
        except ValueError:
            return False
    if not isinstance(fill, int):
        return False
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if signed else (0, 2**bits)
    return low <= fill < high


def _float_fill(fill: Any) -> bool:
    if isinstance(fill, int | float):
        return True
    if not isinstance(fill, str):
        return False
    if fill.startswith("0x"):
        digits = fill[2:]
        return len(digits) in (4, 8, 16) and all(c in "0123456789abcdefABCDEF" for c in digits)
    try:
        float(fill)
    except ValueError:
        return False
    return True


def _codecs(doc: dict[str, Any], ndim: int) -> str | None:
    codecs = doc["codecs"]
    if not isinstance(codecs, list):
        return "is no list"
    if not codecs:
        return "holds no codec"
    for entry in codecs:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)):
            return f"holds {_shown(entry)}, no codec object"
    return None


def _dimension_names(doc: dict[str, Any], ndim: int) -> str | None:
    names = doc.get("dimension_names")
    if names is None:
        return None
    if isinstance(names, str):  # zarr-python takes each character for a name
        return None if len(names) == ndim else f"names {len(names)} dimension(s), not {ndim}"
    if not isinstance(names, list) or not all(n is None or isinstance(n, str) for n in names):
        return "is no list of names"
    if len(names) != ndim:
        return f"names {len(names)} dimension(s), not {ndim}"
    return None


#: The value tests of an array's fields, in the order zarr-python reads them.
_VALUE_TESTS = (
    ("data_type", _data_type),
    ("chunk_grid", _chunk_grid),
    ("chunk_key_encoding", _chunk_key_encoding),
    ("fill_value", _fill_value),
    ("codecs", _codecs),
    ("dimension_names", _dimension_names),
    ("chunk_shape", _zero_chunks),
)
