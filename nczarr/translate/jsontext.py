"""JSON as netcdf-c writes and reads it: a lenient loader and netcdf-c's serialisation (pure).

:func:`parse_json` is the loader every reader uses: it accepts netcdf-c's ``NaN``
and ``[0.,1.]`` forms (saying so in ``warnings``), refuses documents nested deeper
than :data:`MAX_JSON_DEPTH`, and keeps the exact text of every real number
(:class:`JSONFloat`). :func:`json_text` serialises a JSON value the way netcdf-c
does, which is the text netCDF shows for a JSON-valued ``char`` attribute.
Typed attributes on top of these are :mod:`~nczarr.translate.attrs`'.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from typing import Any

from ..errors import MetadataError
from .conventions import V1_ARRAY_NAMES, V1_ATTR_NAMES, ZARR_JSON, ZARRAY, ZATTRS

__all__ = [
    "MAX_JSON_DEPTH",
    "InvalidJSON",
    "JSONFloat",
    "json_text",
    "kind_of",
    "parse_json",
    "parse_node_object",
]


class JSONFloat(float):
    """A float that remembers the exact JSON text it was parsed from.

    ``json_text`` writes that text back, so a JSON-valued char attribute written by
    netcdf-c as ``[1.0,0.0]`` is shown as ``[1.0,0.0]`` and not ``[1.0, 0.0]``.
    Everything else treats it as an ordinary float.
    """

    __slots__ = ("text",)

    def __new__(cls, text: str, original: str | None = None) -> JSONFloat:
        obj = super().__new__(cls, text)
        obj.text = text if original is None else original
        return obj


@functools.cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    """The patterns of :func:`_relax`, compiled when first needed: most metadata is RFC
    JSON, and compiling them costs ~10 M instructions, 3 % of a command's start."""
    return (
        # Non-RFC forms netcdf-c writes or accepts: "1." and ".5" numbers, nan/inf in any case.
        re.compile(r"(?<=\d)\.(?![0-9])"),
        re.compile(r"(?<![0-9A-Za-z_])\.(?=[0-9])"),
        re.compile(r"(?<![A-Za-z_])nan(?![A-Za-z_])", re.IGNORECASE),
        re.compile(r"(?<![A-Za-z_])inf(inity)?(?![A-Za-z_])", re.IGNORECASE),
        # ``-nan`` (C's printf of a NaN with the sign bit set): a NaN all the same.
        re.compile(r"-\s*NaN"),
        re.compile(r"(?<![A-Za-z_])-?(?:nan|inf(?:inity)?)(?![A-Za-z_])", re.IGNORECASE),
        re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+"),
    )


def _relax(text: str) -> tuple[str, list[str], list[str]]:
    """Rewrite non-RFC number forms outside string literals into RFC JSON.

    Also returns the original text of every real-number token and of every NaN or
    infinity token, each in document order (the order in which ``json.loads`` calls
    ``parse_float`` and ``parse_constant``): a char attribute netcdf-c wrote as the
    bare text ``Inf`` keeps that text.
    """
    trailing_dot, leading_dot, nan, inf, neg_nan, constant_token, float_token = _patterns()
    out: list[str] = []
    floats: list[str] = []
    constants: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        quote = text.find('"', i)
        chunk = text[i:] if quote < 0 else text[i:quote]
        floats.extend(float_token.findall(chunk))
        constants.extend(constant_token.findall(chunk))
        chunk = trailing_dot.sub(".0", chunk)
        chunk = leading_dot.sub("0.", chunk)
        chunk = neg_nan.sub("NaN", nan.sub("NaN", chunk))
        chunk = inf.sub("Infinity", chunk)
        out.append(chunk)
        if quote < 0:
            break
        j = quote + 1
        while j < n and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        out.append(text[quote : j + 1])
        i = j + 1
    return "".join(out), floats, constants


class InvalidJSON(str):
    """A node's own object below the root whose text is not valid JSON, as loaded
    leniently (:func:`parse_node_object`); the string says what is wrong.

    The readers meet it where they need a JSON object and say so, naming the key
    (:func:`kind_of`): that array is skipped with a warning (one odd array never
    fails a whole store, README "Read any layout"); a group's still fails the read.
    """

    __slots__ = ()


#: A node's own objects, whose invalid text makes that node odd, not the store.
_NODE_OBJECTS = frozenset({ZARRAY, ZATTRS, ZARR_JSON, *V1_ARRAY_NAMES, *V1_ATTR_NAMES})


def parse_node_object(data: bytes | str, *, key: str, warnings: list[str] | None) -> Any:
    """:func:`parse_json` of the metadata object at ``key``; read leniently (with a
    ``warnings`` list), a node's own object below the root (``.zarray``, ``.zattrs``,
    ``zarr.json``, NCZarr V1 ``.nczarray``/``.nczattrs``) that is not valid JSON is an
    :class:`InvalidJSON` instead of an error."""
    try:
        return parse_json(data, key=key, warnings=warnings)
    except MetadataError as exc:
        prefix, _, base = key.rpartition("/")
        if warnings is None or not prefix or base not in _NODE_OBJECTS:
            raise
        return InvalidJSON(str(exc).removeprefix(f"{key!r}: "))


def kind_of(value: Any) -> str:
    """What ``value`` is, for a message saying it is not the JSON object expected:
    its type, or what makes an :class:`InvalidJSON` invalid."""
    return str(value) if isinstance(value, InvalidJSON) else type(value).__name__


def parse_json(data: bytes | str, *, key: str = "", warnings: list[str] | None = None) -> Any:
    """Parse a metadata object leniently; raise :class:`MetadataError` naming ``key``.

    Real numbers become :class:`JSONFloat` (plain floats that keep their text).
    ``NaN``/``Infinity`` (any case), ``1.`` and ``.5`` are accepted, as netcdf-c's
    own parser does.

    Bytes that are not UTF-8 (netcdf-c 4.9 writes a char attribute ``"\200"`` as that
    raw byte, and netcdf-c reads it back as that byte) raise :class:`MetadataError`,
    unless a ``warnings`` list is given: then they are kept as lone surrogates
    (``"surrogateescape"``, so ``text.encode("utf-8", "surrogateescape")`` gives the
    stored bytes back) and a warning naming ``key`` is appended to it.
    """
    where = f"{key!r}: " if key else ""
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if warnings is None:
                raise MetadataError(f"{where}metadata is not UTF-8 text ({exc})") from None
            text = raw.decode("utf-8", "surrogateescape")
            warnings.append(
                f"{where}metadata is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                f"{exc.start}); read as netcdf-c reads it, keeping the undecodable bytes"
            )
    else:
        text = data
    try:
        value = _loads(text)
    except json.JSONDecodeError as exc:
        relaxed, originals, constants = _relax(text)
        if relaxed != text:
            tokens, names = iter(originals), iter(constants)
            try:
                value = _loads(
                    relaxed,
                    lambda t: JSONFloat(t, next(tokens, t)),
                    lambda t: JSONFloat(t, next(names, t)),
                )
            except json.JSONDecodeError:
                raise MetadataError(f"{where}invalid JSON: {exc}") from None
            except (ValueError, RecursionError) as other:
                raise MetadataError(f"{where}invalid JSON: {_reason(other)}") from None
        else:
            raise MetadataError(f"{where}invalid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise MetadataError(f"{where}invalid JSON: {_reason(exc)}") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise MetadataError(
            f"{where}invalid JSON: arrays and objects nested more than {MAX_JSON_DEPTH} levels deep"
        )
    return value


#: Deepest nesting of arrays and objects accepted in a metadata object. Zarr and NCZarr
#: metadata nest a few levels; the limit keeps every recursive consumer (attribute
#: decoding, ``json_text``, ``copy.deepcopy``) far from Python's recursion limit.
MAX_JSON_DEPTH = 128


def _loads(text: str, parse_float: Any = JSONFloat, parse_constant: Any = JSONFloat) -> Any:
    return json.loads(text, parse_float=parse_float, parse_constant=parse_constant)


def _reason(exc: BaseException) -> str:
    """A one-line reason for a parse failure that is not a JSONDecodeError."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = str(exc)
    if "digits" in text:  # int() refuses huge literals (sys.get_int_max_str_digits)
        return f"an integer has more than {sys.get_int_max_str_digits()} digits"
    return text.splitlines()[0] if text else type(exc).__name__


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (iterative: never recurses)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_JSON_DEPTH:
            return level
        stack.extend((child, level + 1) for child in children)
    return deepest


def json_text(value: Any) -> str:
    """Serialise a JSON value as netcdf-c does (the text of a JSON-valued char attribute).

    Dict entries are separated by ``", "`` and ``": "``, list items by ``","``;
    numbers keep the text they were parsed from (:class:`JSONFloat`); NaN and
    infinities are written ``NaN``/``Infinity``/``-Infinity``.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, JSONFloat):
        return value.text
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = (f"{json_text(str(k))}: {json_text(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {value!r}")
