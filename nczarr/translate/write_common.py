"""Helpers both metadata writers share: JSON, ``_NCProperties``, ``.zmetadata``, ``.zarray``.

Why NCZarr objects are written as compact JSON: netcdf-c (4.10.1, file map)
rewrites *every* ``.zgroup``, ``.zattrs`` and ``.zarray`` of a store opened for
writing when it closes it, in place and **without truncating** the file
(``zmap_file.c`` computes ``O_TRUNC`` and then drops it). When its text is shorter
than what was there, the object ends in stale bytes and no longer parses
(NC_ENCZARR on the next open). netcdf-c separates dict entries with ``", "`` and
``": "``; writing ``","`` and ``":"`` makes its rewrite of an unchanged object
``2 * n - 1`` bytes longer per dict of ``n`` entries, and that slack absorbs what netcdf-c writes
shorter than we do (numbers it prints with 6 significant digits, char attributes
whose text is a JSON scalar). See :mod:`~nczarr.translate.write_nczarr` for the
exact limits. Pure Zarr keeps netcdf-c's spacing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from ..records import field, record
from .attrs import json_text, parse_json
from .conventions import (
    HIDDEN_ATTRIBUTES,
    NCPROPERTIES,
    NCZARR_FORMAT_VERSION,
    ZARR_METADATA_NAMES,
    ZMETADATA,
)
from .dtypes import nc_to_zarr_dtype
from .model import Dataset, Group, Variable

__all__ = [
    "WriteResult",
    "dumps",
    "ncproperties",
    "group_key",
    "walk",
    "consolidate",
    "zarray_document",
    "written_filters",
    "text_shuffle_warnings",
    "control_character_attribute_warnings",
    "user_attributes",
]


@record
class WriteResult:
    """What a writer produced (every writer returns one).

    Attributes
    ----------
    metadata : MutableMapping[str, bytes]
        Metadata objects by key, in writing order (parents before children); a
        :class:`~nczarr.translate.lazymeta.LazyMetadata` from the pure-Zarr v2 writer.
    warnings : tuple[str, ...]
        Changes the target format forced (each names the object and what changed).
    skipped : tuple[str, ...]
        Key prefixes (``"g/v"``) of arrays the target format cannot describe; they
        have no metadata, and their chunks must not be copied.
    """

    metadata: MutableMapping[str, bytes] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()


#: Written as ``_NCProperties`` when the model carries none (``version=2``, as netcdf-c
#: parses it; the ``nczarr`` entry is the NCZarr format version).
_NCPROPERTIES_TEMPLATE = "version=2,nczarr={nczarr},nczarr-python={version}"


def dumps(value: Any, *, compact: bool = False) -> bytes:
    """Serialise a metadata document as UTF-8 JSON.

    By default in netcdf-c's style: dict entries separated by ``", "`` and
    ``": "``, list items by ``","``. With ``compact`` there is no whitespace at all
    (``","`` and ``":"``): the NCZarr writer uses that so that netcdf-c's in-place,
    non-truncating rewrite of an object is longer than ours by ``2 * n - 1`` bytes
    per dict of ``n`` entries (see the module docstring). Non-ASCII text is written
    as UTF-8, never as ``\\u`` escapes (netcdf-c 4.10's parser does not decode
    those); bytes a reader kept undecoded (lone surrogates, see
    :func:`~nczarr.translate.attrs.parse_json`) are written back as those bytes;
    numbers are written as :func:`~nczarr.translate.attrs.json_text` writes
    them (a :class:`~nczarr.translate.attrs.JSONFloat` keeps its text, other floats
    use ``repr``, full precision); NaN and infinities are the bare tokens
    ``NaN``/``Infinity``/``-Infinity`` (callers wanting the strings, as Zarr v2 says
    for ``fill_value``, encode them beforehand).
    """
    text = _compact(value) if compact else json_text(value)
    return text.encode("utf-8", "surrogateescape")


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        items = (f"{json_text(str(k))}:{_compact(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_compact(v) for v in value) + "]"
    return json_text(value)


def ncproperties(dataset: Dataset) -> str:
    """The ``_NCProperties`` text to write: the model's own if it has one, else ours."""
    attr = dataset.root.attributes.get(NCPROPERTIES)
    if attr is not None and isinstance(attr.value, str) and attr.value:
        return attr.value
    from .._version import __version__

    return _NCPROPERTIES_TEMPLATE.format(nczarr=NCZARR_FORMAT_VERSION, version=__version__)


def group_key(group: Group) -> str:
    """The key prefix of a group (``""`` for the root, ``"g/h"`` below it)."""
    return group.path.strip("/")


def walk(group: Group) -> Iterator[Group]:
    """Groups depth first, parents before children (the writing order)."""
    return group.walk()


def consolidate(metadata: Mapping[str, bytes]) -> bytes:
    """The ``.zmetadata`` document for a set of metadata objects.

    Every ``.zgroup``/``.zarray``/``.zattrs`` object is included (parsed), in the
    order given, under ``"metadata"``, with ``"zarr_consolidated_format": 1``.
    Numbers keep their exact text (JSON-valued char attributes stay byte-identical).
    """
    inner: dict[str, Any] = {}
    for key, value in metadata.items():
        if key.rsplit("/", 1)[-1] in ZARR_METADATA_NAMES and key != ZMETADATA:
            inner[key] = parse_json(value, key=key, warnings=[])  # our own bytes
    return dumps({"metadata": inner, "zarr_consolidated_format": 1})


def zarray_document(
    var: Variable, *, nczarr: bool, fill_value: Any, netcdf_scalars: bool = False
) -> dict[str, Any]:
    """The ``.zarray`` of one variable in netcdf-c's key order, shared by both writers.

    NCZarr stores a scalar as shape/chunks ``[1]`` (what netcdf-c reads), pure Zarr
    as a 0-d array unless ``netcdf_scalars`` (then ``[1]`` too); ``dtype`` follows
    the format (``>S1`` vs ``|S1`` for char); a text variable's identity shuffle is
    left out (see :func:`written_filters`);
    ``fill_value`` is already encoded by the caller; ``dimension_separator`` is
    written only when it is ``"/"``.
    """
    scalar_shape: list[int] = [1] if nczarr or netcdf_scalars else []
    doc: dict[str, Any] = {
        "zarr_format": 2,
        "shape": scalar_shape if var.scalar else list(var.shape),
        "dtype": nc_to_zarr_dtype(
            var.type,
            var.endian,
            var.maxstrlen,
            nczarr=nczarr,
            text_storage=var.text_storage,
            logical=var.logical,
        ),
        "chunks": scalar_shape if var.scalar else list(var.chunks),
        "fill_value": fill_value,
        "order": var.order,
        "compressor": var.compressor,
        "filters": written_filters(var) or None,
    }
    if var.dimension_separator == "/":
        doc["dimension_separator"] = "/"
    return doc


def written_filters(var: Variable) -> list[dict[str, Any]]:
    """The filters to write: a text variable's identity byte shuffle is left out.

    A shuffle with ``elementsize`` 1 is the identity on the chunk bytes, so leaving it
    out changes no value for any reader. Kept, it breaks netcdf-c: netcdf-c ignores
    ``elementsize`` and shuffles with the size of the type *in memory*, which for a
    ``"|S1"`` array (a netCDF ``string`` in pure Zarr, what a char becomes there) is
    a pointer, 8 bytes: ``"hello world, abc"`` reads as ``"hlowrd bel ol,ac"``.
    """
    filters = list(var.filters)
    if var.type in ("char", "string"):
        filters = [
            f for f in filters if not (f.get("id") == "shuffle" and f.get("elementsize") == 1)
        ]
    return filters


def text_shuffle_warnings(dataset: Dataset) -> list[str]:
    """One warning per string variable whose chunks keep a real byte shuffle.

    netcdf-c un-shuffles a string array with its in-memory element size (8, a
    pointer), not the ``elementsize`` stored, and so reads scrambled text
    (``"abcd", "efgh"`` as ``"ambn", "codp"``); zarr-python and nczarr read it right.
    Leaving the filter out would need the chunks re-encoded.
    """
    return [
        f"variable {var.path}: a string array with a byte shuffle (elementsize "
        f"{f.get('elementsize')}); netcdf-c un-shuffles it with the wrong element size and "
        "reads scrambled text (zarr-python and nczarr read it right)"
        for var in dataset.root.all_variables()
        for f in written_filters(var)
        if var.type in ("char", "string") and f.get("id") == "shuffle"
    ]


#: Control characters JSON writes as ``\u00XX``, which netcdf-c 4.10 does not decode
#: (it decodes ``\b \f \n \r \t``): netCDF4 reads ``"a\x01b"`` back as ``"au0001b"``.
_UNDECODED = frozenset(chr(c) for c in range(0x20)) - set("\b\f\n\r\t")
#: Finds one of :data:`_UNDECODED` in a text (see :func:`_has_undecoded`).
_UNDECODED_RE = re.compile("[" + "".join(sorted(_UNDECODED)) + "]")


def _has_undecoded(text: str) -> bool:
    """Whether ``text`` holds one of :data:`_UNDECODED`: a printable text (most of them)
    in one C pass, the others by a regular expression. ``_UNDECODED.intersection(text)``
    hashed every character: 0.8 s for an 80 MB attribute, checked several times a write."""
    return not text.isprintable() and _UNDECODED_RE.search(text) is not None


def control_character_attribute_warnings(dataset: Dataset) -> list[str]:
    """One warning per text attribute holding a control character netcdf-c does not
    read back (see :data:`_UNDECODED`): valid JSON has to escape it, and netcdf-c's own
    raw byte would make the object unreadable by zarr-python's strict JSON parser.
    Said for NCZarr and Zarr v2 targets (netcdf-c reads both); found by a
    differential hunt: nothing said so before."""
    out = []
    for where, name, attr in user_attributes(dataset):
        if attr.type not in ("char", "string"):
            continue
        texts = [attr.value] if isinstance(attr.value, str) else attr.value
        if any(_has_undecoded(str(t)) for t in texts):
            out.append(
                f"attribute {name!r} of {where!r} holds control characters, written as "
                "JSON \\u escapes, which netcdf-c 4.10 reads as text ('\\x01' as "
                "'u0001'); zarr-python and nczarr read them back"
            )
    return out


def user_attributes(dataset: Dataset) -> Iterator[tuple[str, str, Any]]:
    """``(owner path, name, attribute)`` of every user attribute of every group and
    variable (netCDF's hidden attributes left out), as the writers' warnings walk them."""
    for group in dataset.root.walk():
        owners = [(group.path or "/", group.attributes)]
        owners += [(v.path, v.attributes) for v in group.variables.values()]
        for where, attributes in owners:
            for name, attr in attributes.items():
                if name not in HIDDEN_ATTRIBUTES:
                    yield where, name, attr
