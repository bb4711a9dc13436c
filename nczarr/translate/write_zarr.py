"""Write pure Zarr v2 that zarr-python 3, xarray and netcdf-c all read correctly.

Differences from the NCZarr writer (``docs/netcdf-c-layouts.md``
sections 2.3-2.6 and ``zarr-xarray-vs-netcdf-c.md``):

* no ``_nczarr_*`` key anywhere; ``_NCProperties`` stays in the root ``.zattrs``;
* char is ``"|S1"`` (zarr-python rejects ``">S1"``), 1-byte numbers ``"|u1"``/``"|i1"``;
* text fill values are base64 of the UTF-8 bytes, as the Zarr v2 spec says;
* scalars are 0-d arrays (shape ``[]``, chunks ``[]``, ``_ARRAY_DIMENSIONS: []``);
* attributes are untyped JSON chosen so that a reader's type inference gives the
  type back where JSON can say it: char -> JSON string, string -> list of strings,
  numbers -> a scalar (one value) or a list, NaN/Inf -> ``"NaN"``/``"Infinity"``;
* ``_ARRAY_DIMENSIONS`` holds plain names. xarray and netcdf-c resolve a name in the
  array's own group, so when one group's arrays use two different dimensions with
  the same name and different sizes (a root ``x`` and the group's own ``x``), the
  one that netCDF scoping would *not* pick is renamed ``<name>_<n>`` and a warning
  says so.

Lost by design (a reader gives them back differently): unlimited dimensions
become fixed; dimensions no array uses disappear; attribute types are re-inferred
(byte/short/ubyte/ushort integers come back as int, float as double).
"""

from __future__ import annotations

from typing import Any

from ..keys import join_key
from .attrs import encode_attribute
from .conventions import ARRAY_DIMENSIONS, HIDDEN_ATTRIBUTES, NCPROPERTIES, ZARRAY, ZATTRS, ZGROUP
from .dtypes import encode_fill_value
from .model import Dataset, Group, Variable
from .write_common import dumps, group_key, ncproperties, zarray_document

__all__ = ["write_zarr", "zarray_zarr", "dimension_names"]


def write_zarr(dataset: Dataset, *, noxarray: bool = False) -> tuple[dict[str, bytes], list[str]]:
    """Every metadata object of ``dataset`` as pure Zarr v2, and the warnings.

    Parameters
    ----------
    dataset : Dataset
        The model to write.
    noxarray : bool
        Omit ``_ARRAY_DIMENSIONS`` (readers then see anonymous dimensions).

    Returns
    -------
    (dict[str, bytes], list[str])
        The objects (parents before children) and one warning per renamed
        dimension.
    """
    out: dict[str, bytes] = {}
    warnings: list[str] = []
    for group in dataset.root.walk():
        prefix = group_key(group)
        out[join_key(prefix, ZGROUP)] = dumps({"zarr_format": 2})
        attrs = _attributes(group.attributes.values())
        if group.path in ("", "/"):
            attrs[NCPROPERTIES] = ncproperties(dataset)
        out[join_key(prefix, ZATTRS)] = dumps(attrs)
        names, group_warnings = dimension_names(dataset, group)
        warnings.extend(group_warnings)
        for var in group.variables.values():
            vprefix = join_key(prefix, var.name)
            out[join_key(vprefix, ZARRAY)] = dumps(zarray_zarr(var))
            vattrs = _attributes(var.attributes.values())
            if not noxarray:
                vattrs[ARRAY_DIMENSIONS] = [names[d] for d in var.dimensions]
            out[join_key(vprefix, ZATTRS)] = dumps(vattrs)
    return out, warnings


def zarray_zarr(var: Variable) -> dict[str, Any]:
    """The pure-Zarr ``.zarray`` document of one variable (scalars are 0-d)."""
    # zarr-python keeps the fill value of "<U" and "|O" arrays as text (base64 is for "|S").
    fill = encode_fill_value(var.fill_value, var.type, nczarr=var.text_storage is not None)
    return zarray_document(var, nczarr=False, fill_value=fill)


def _attributes(attributes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr in attributes:
        if attr.name in HIDDEN_ATTRIBUTES:
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
