"""Pure Zarr naming rules shared by the Zarr v2 and Zarr v3 writers.

Both pure-Zarr writers (:mod:`~nczarr.translate.write_zarr`,
:mod:`~nczarr.translate.write_zarr3`) write attributes as untyped JSON, name every
array's dimensions (``_ARRAY_DIMENSIONS`` in v2, ``dimension_names`` in v3) by the
same rules, and write metadata as UTF-8 only; these rules live here so that no
writer imports another.

Metadata a reader kept undecoded (bytes that are not UTF-8, which netcdf-c 4.9
writes for a char attribute ``"\\200"``) becomes the Latin-1 characters those bytes
stand for, with a warning (:func:`utf8_json`): Zarr metadata is UTF-8 JSON, and
zarr-python and xarray refuse anything else.

``_ARRAY_DIMENSIONS``/``dimension_names`` hold plain names. xarray and netcdf-c
resolve a name in the array's own group, so when one group's arrays use two
different dimensions with the same name and different sizes (a root ``x`` and the
group's own ``x``), the one that netCDF scoping would *not* pick is renamed
``<name>_<n>`` and a warning says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .attrs import encode_attribute
from .conventions import HIDDEN_ATTRIBUTES
from .lazymeta import LazyMetadata
from .model import Attribute, Dataset, Group
from .write_common import dumps

__all__ = [
    "plain_attributes",
    "dimension_names",
    "utf8_json",
    "add_utf8_json",
]


#: A byte a reader kept undecoded (``surrogateescape``: 0x80-0xFF -> U+DC80-U+DCFF).
_LONE_SURROGATE = re.compile("[\udc80-\udcff]")


#: Any surrogate (undecoded bytes, or text no UTF-8 can hold): serialised at once.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _latin1(match: re.Match[str]) -> str:
    return chr(ord(match.group()) - 0xDC00)


def utf8_json(key: str, doc: dict[str, Any], warnings: list[str]) -> bytes:
    """``doc`` serialised as UTF-8 JSON; undecoded bytes become Latin-1 characters,
    and a warning naming ``key`` is appended to ``warnings``."""
    data = dumps(doc)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = _LONE_SURROGATE.sub(_latin1, data.decode("utf-8", "surrogateescape"))
        data = data.encode("utf-8")
        warnings.append(
            f"{key!r}: bytes that are not UTF-8 are written as the Latin-1 characters "
            "they stand for (Zarr metadata is UTF-8 JSON, zarr-python reads nothing "
            "else); the NCZarr form keeps the bytes"
        )
    return data


def add_utf8_json(out: LazyMetadata, key: str, doc: dict[str, Any], warnings: list[str]) -> None:
    """Store ``doc`` in ``out`` as :func:`utf8_json` would write it: serialised when
    first asked for, or at once (with its warning) when it holds undecoded bytes."""
    if _plain_text(doc):
        out.add(key, doc, dumps)
    else:
        out[key] = utf8_json(key, doc, warnings)


def _plain_text(doc: Any) -> bool:
    """Whether ``doc`` is JSON holding no undecoded byte (lone surrogate): found with
    the standard library's C encoder, not a walk in Python (this runs at every open)."""
    try:
        text = json.dumps(doc, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return False  # utf8_json says what is wrong
    return text.isascii() or _SURROGATE.search(text) is None


def plain_attributes(attributes: Iterable[Attribute]) -> dict[str, Any]:
    """Attributes as untyped JSON (hidden netCDF/NCZarr bookkeeping left out), as
    zarr-python and xarray write them."""
    out: dict[str, Any] = {}
    for attr in attributes:
        if attr.name in HIDDEN_ATTRIBUTES:
            continue
        if attr.json is not None:  # the producer's own JSON (true, null, objects...)
            out[attr.name] = attr.json[0]
            continue
        out[attr.name] = encode_attribute(attr, typed=False)[0]
    return out


def _scope_depth(dataset: Dataset, group: Group, fqn: str) -> int:
    """How near ``fqn``'s group is to ``group`` in netCDF scoping (higher = nearer).

    netCDF resolves a dimension name in the group itself, then its ancestors; a
    dimension of any other group is never picked by name (-1).
    """
    dim_group = fqn.rpartition("/")[0] or "/"
    path = group.path.rstrip("/") or "/"
    if dim_group == path or dim_group == "/" or path.startswith(dim_group + "/"):
        return dim_group.count("/") if dim_group != "/" else 0
    return -1


def dimension_names(dataset: Dataset, group: Group) -> tuple[dict[str, str], list[str]]:
    """The ``_ARRAY_DIMENSIONS`` name of every dimension ``group``'s arrays use.

    Returns ``({dimension FQN: name}, warnings)``. Names are the plain dimension
    names, except where two dimensions with one name and different sizes meet in
    this group: the one netCDF scoping resolves keeps the name, the others get
    ``<name>_<n>`` (the lowest ``n`` free among this group's dimension and
    variable names).
    """
    used: dict[str, list[str]] = {}
    for var in group.variables.values():
        for fqn in var.dimensions:
            base = fqn.rsplit("/", 1)[-1]
            if fqn not in used.setdefault(base, []):
                used[base].append(fqn)
    names: dict[str, str] = {}
    warnings: list[str] = []
    taken = set(used) | set(group.variables)
    for base, fqns in used.items():
        sizes = {fqn: _size(dataset, fqn) for fqn in fqns}
        if len(set(sizes.values())) <= 1:
            names.update(dict.fromkeys(fqns, base))
            continue
        keeper = max(fqns, key=lambda f: _scope_depth(dataset, group, f))
        names[keeper] = base
        for fqn in fqns:
            if fqn == keeper or sizes[fqn] == sizes[keeper]:
                names.setdefault(fqn, base)
                continue
            n = 1
            while f"{base}_{n}" in taken:
                n += 1
            new = f"{base}_{n}"
            taken.add(new)
            names[fqn] = new
            warnings.append(
                f"group {group.path!r}: dimension {fqn!r} (size {sizes[fqn]}) is written as "
                f"{new!r} in _ARRAY_DIMENSIONS, because {keeper!r} (size {sizes[keeper]}) "
                f"is also used there and keeps the name {base!r}"
            )
    return names, warnings


def _size(dataset: Dataset, fqn: str) -> int | None:
    try:
        return dataset.find_dimension(fqn).size
    except KeyError:
        return None
