"""Everything ``to_nczarr`` checks before it touches the target.

A write that fails half-way costs the user the store it replaces (``mode="w"``) or
leaves debris; a write that succeeds but cannot be read back is worse. So once the
dataset is a model and its metadata objects are built (in memory), this module
refuses, naming the offender, whatever nczarr (or netcdf-c) could not store or read
back:

* names: groups and variables must be node names (:func:`nczarr.keys.is_node_name`:
  not empty, no ``/``, not starting with ``.`` as ``.zarray``/``.zgroup`` do, no
  control characters), dimensions must be non-empty and free of ``/`` and control
  characters, and no name is longer than netCDF's ``NC_MAX_NAME`` (256 bytes; 255,
  the file-name limit of common file systems, here); every key fits in 1024 bytes;
* codecs: the compressor and filters of every array are the ones zarr-python builds
  (an unknown codec id is refused here, not after the old store is gone);
* sizes: no metadata object is larger than the readers' cap
  (:data:`nczarr.load.MAX_METADATA_SIZE`);
* reading back: the metadata objects, read by :func:`nczarr.read` from memory, give
  the same groups, variables, dimensions and attribute names (a backstop for any
  name the rules above do not foresee).

Out-of-range fill values are refused where fill values are typed
(:mod:`nczarr.integrations.xarray_model`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import (
    InvalidKeyError,
    InvalidNameError,
    MetadataError,
    NCZarrError,
    UnsupportedError,
)
from ..keys import FORBIDDEN_CHARACTERS, is_node_name, normalize_key
from ..translate.conventions import ZARRAY
from ..translate.model import Dataset, Group

__all__ = ["MAX_NAME_BYTES", "check_before_writing"]

#: Longest group, variable or dimension name, in UTF-8 bytes: one path segment on
#: common file systems (netCDF's NC_MAX_NAME is 256).
MAX_NAME_BYTES = 255


def check_before_writing(
    dataset: Dataset, metadata: Mapping[str, bytes], zarr_metadata: Mapping[str, bytes]
) -> None:
    """Raise an :class:`~nczarr.NCZarrError` naming the first thing ``to_nczarr`` could
    not store or read back. ``metadata`` is the NCZarr metadata to write; ``zarr_metadata``
    the pure-Zarr ``.zarray`` objects zarr-python encodes the chunks with."""
    check_names(dataset)
    check_keys(dataset, metadata)
    check_sizes(metadata)
    check_codecs(dataset, zarr_metadata)
    check_reads_back(dataset, metadata)


# ------------------------------------------------------------------ names
def _too_long(name: str) -> bool:
    return len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES


def _shown(name: str) -> str:
    return repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name)} characters)"


def check_names(dataset: Dataset) -> None:
    """Group, variable and dimension names every reader finds again."""
    for group in dataset.root.walk():
        if group.path != "/":
            _check_node_name("group", group.name, group.path)
        for name, variable in group.variables.items():
            _check_node_name("variable", name, variable.path)
        for name in group.dimensions:
            where = f"{group.path.rstrip('/')}/{name}"
            if not name or "/" in name or FORBIDDEN_CHARACTERS.search(name):
                raise InvalidNameError(
                    f"dimension {_shown(name)} (at {where!r}): a dimension name must not be "
                    "empty nor hold '/' or control characters"
                )
            if _too_long(name):
                raise InvalidNameError(
                    f"dimension {_shown(name)}: longer than {MAX_NAME_BYTES} UTF-8 bytes"
                )
        for attr in (
            *group.attributes,
            *(a for v in group.variables.values() for a in v.attributes),
        ):
            if not attr or FORBIDDEN_CHARACTERS.search(attr):
                raise InvalidNameError(
                    f"attribute {_shown(attr)} in group {group.path!r}: an attribute name "
                    "must not be empty nor hold control characters"
                )


def _check_node_name(kind: str, name: str, path: str) -> None:
    if not is_node_name(name):
        raise InvalidNameError(
            f"{kind} {_shown(name)} (at {_shown(path)}): a {kind} name must not be empty, "
            "hold '/' or control characters, or start with '.' (the names of metadata "
            "objects such as .zarray and .zgroup)"
        )
    if _too_long(name):
        raise InvalidNameError(f"{kind} {_shown(name)}: longer than {MAX_NAME_BYTES} UTF-8 bytes")


def check_keys(dataset: Dataset, metadata: Mapping[str, bytes]) -> None:
    """Every metadata key, and each array's chunk keys, are valid map keys."""
    keys = list(metadata)
    for variable in dataset.root.all_variables():
        chunk = ".".join("0" for _ in variable.shape) or "0"
        keys.append(f"{variable.path.strip('/')}/{chunk}")
    for key in keys:
        try:
            normalize_key(key)
        except InvalidKeyError as exc:
            raise InvalidNameError(f"cannot write key {_shown(key)}: {exc}") from None


# ------------------------------------------------------------------ sizes and codecs
def check_sizes(metadata: Mapping[str, bytes]) -> None:
    """No metadata object larger than the cap every nczarr reader applies."""
    from .. import load

    cap = load.MAX_METADATA_SIZE
    for key, value in metadata.items():
        if len(value) > cap:
            raise MetadataError(
                f"metadata object {key!r} would be {len(value)} bytes, over the "
                f"{cap}-byte limit nczarr's readers accept{_largest_attribute(value)}; "
                "store large values as variables"
            )


def _largest_attribute(value: bytes) -> str:
    try:
        doc = json.loads(value)
    except ValueError:
        return ""
    if not isinstance(doc, dict) or not doc:
        return ""
    name = max(doc, key=lambda k: len(json.dumps(doc[k])))
    return f" (attribute {_shown(name)} is the largest)"


def check_codecs(dataset: Dataset, zarr_metadata: Mapping[str, bytes]) -> None:
    """zarr-python can build every array's codecs (no unknown codec id)."""
    import zarr

    from ..maps.memory import MemoryMap
    from .zarr_store import ZarrStore

    store = ZarrStore(MemoryMap(dict(zarr_metadata), mode="r"), read_only=True)
    for variable in dataset.root.all_variables():
        if f"{variable.path.strip('/')}/{ZARRAY}" not in zarr_metadata:
            continue
        try:
            zarr.open_array(store=store, path=variable.path.strip("/"), mode="r", zarr_format=2)
        except Exception as exc:
            codecs = [variable.compressor, *variable.filters]
            raise UnsupportedError(
                f"variable {variable.path!r}: zarr cannot build its codecs "
                f"{[c for c in codecs if c]!r}: {type(exc).__name__}: {exc}"
            ) from None


# ------------------------------------------------------------------ reading back
def check_reads_back(dataset: Dataset, metadata: Mapping[str, bytes]) -> None:
    """The metadata, read back by nczarr, has every group, variable, dimension and
    attribute of the model."""
    from ..load import read
    from ..maps.memory import MemoryMap

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = read(MemoryMap(dict(metadata), mode="r"))
    except NCZarrError as exc:
        raise UnsupportedError(
            f"nczarr could not read back the store it would write: {exc}"
        ) from None
    _compare(dataset.root, back)


def _compare(group: Group, back: Dataset) -> None:
    try:
        other = back.find_group(group.path)
    except KeyError:
        raise InvalidNameError(f"group {_shown(group.path)} would not read back") from None
    _same_names("dimension", group.path, group.dimensions, other.dimensions)
    _same_names("attribute", group.path, group.attributes, other.attributes)
    _same_names("variable", group.path, group.variables, other.variables)
    for name, variable in group.variables.items():
        _same_names(
            "attribute", variable.path, variable.attributes, other.variables[name].attributes
        )
    for child in group.groups.values():
        _compare(child, back)


def _same_names(kind: str, where: str, mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> None:
    missing = [n for n in mine if n not in theirs]
    if missing:
        raise InvalidNameError(
            f"{kind} {_shown(missing[0])} of {_shown(where)} would not read back "
            f"(nczarr reads {sorted(theirs)[:10]!r})"
        )
