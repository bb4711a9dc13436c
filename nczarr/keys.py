"""Key rules shared by every map and every translator: one place for each.

A key is a ``/``-separated path relative to a store's root. :func:`normalize_key`
decides what is a valid key, :func:`join_key` builds one, :func:`parent_keys` walks
up, and :class:`KeyIndex` answers "which names lie below this prefix?" and the leaf
rule for maps that hold their key set in memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from .errors import InvalidKeyError, ObjectExistsError

__all__ = [
    "MAX_KEY_BYTES",
    "FORBIDDEN_CHARACTERS",
    "KeyIndex",
    "check_key_body",
    "is_node_name",
    "join_key",
    "normalize_key",
    "normalize_prefix",
    "parent_keys",
]

#: S3 limits keys to 1024 UTF-8 bytes (NCZarr spec, Appendix B); every map inherits it.
MAX_KEY_BYTES = 1024

#: Characters no key, name or URL part may hold: ASCII control characters and lone
#: surrogates (which no storage can encode as UTF-8).
FORBIDDEN_CHARACTERS = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def normalize_key(key: str) -> str:
    """Return the canonical form of a map key, or raise :class:`InvalidKeyError`.

    One leading ``/`` is dropped (``"/g/.zattrs"`` -> ``"g/.zattrs"``). Rejected,
    with the key named in the message: non-strings, the empty key (the root holds no
    content), empty segments (``"a//b"``, a trailing ``/``), ``.`` and ``..``
    segments, backslashes, control characters and keys longer than 1024 UTF-8 bytes.

    >>> normalize_key("/g/v/.zarray")
    'g/v/.zarray'
    """
    if not isinstance(key, str):
        raise InvalidKeyError(f"map keys are str, got {type(key).__name__}: {key!r}")
    body = key[1:] if key.startswith("/") else key
    if not body:
        raise InvalidKeyError(f"invalid key {key!r}: the root holds no content")
    check_key_body(key, body)
    return body


def normalize_prefix(prefix: str) -> str:
    """Canonical form of a search prefix: like :func:`normalize_key`, but ``""`` and
    ``"/"`` mean the root (returned as ``""``) and one trailing ``/`` is tolerated."""
    if not isinstance(prefix, str):
        raise InvalidKeyError(f"search prefixes are str, got {type(prefix).__name__}: {prefix!r}")
    body = prefix[1:] if prefix.startswith("/") else prefix
    if body.endswith("/"):
        body = body[:-1]
    if body:
        check_key_body(prefix, body)
    return body


def check_key_body(original: str, body: str) -> None:
    """Raise :class:`InvalidKeyError` naming ``original`` unless ``body`` is a valid key."""
    if "\\" in body:
        raise InvalidKeyError(f"invalid key {original!r}: backslashes are not allowed")
    if FORBIDDEN_CHARACTERS.search(body):
        raise InvalidKeyError(
            f"invalid key {original!r}: control characters and lone surrogates are not allowed"
        )
    if len(body.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise InvalidKeyError(
            f"invalid key {original[:60]!r}...: longer than {MAX_KEY_BYTES} UTF-8 bytes"
        )
    for segment in body.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidKeyError(
                f"invalid key {original!r}: empty, '.' and '..' segments are not allowed"
            )


def parent_keys(key: str) -> Iterator[str]:
    """The proper ancestors of a normalized key, nearest first: ``a/b/c`` -> ``a/b``, ``a``."""
    while "/" in key:
        key = key.rsplit("/", 1)[0]
        yield key


def is_node_name(name: object) -> bool:
    """Whether ``name`` can name a group or array: one key segment that is not a
    metadata object's name (no ``/``, not empty, no leading ``.``, no forbidden
    characters). NCZarr group lists (``vars``, ``groups``) are checked with this rule
    both when a store is crawled and when it is read.
    """
    return (
        isinstance(name, str)
        and bool(name)
        and "/" not in name
        and not name.startswith(".")
        and not FORBIDDEN_CHARACTERS.search(name)
    )


def join_key(*parts: str) -> str:
    """Join key segments with ``/``, skipping empty parts (the root is ``""``).

    >>> join_key("", ".zattrs"), join_key("g/v", ".zarray")
    ('.zattrs', 'g/v/.zarray')
    """
    return "/".join(p for p in parts if p)


class KeyIndex:
    """Child-name index over a set of normalized keys.

    Maps every proper prefix of a stored key to the names directly below it, with a
    count of the keys reached through each name. Adding or removing a key costs
    O(depth); ``children`` is one dict lookup, and "is this key a prefix of others?"
    (the leaf rule) is a membership test. Maps that hold their key set in memory
    (:class:`MemoryMap`, the zip map) use it so that ``search`` and the leaf-rule
    check never scan every key.

    The caller guarantees that :meth:`add` is only called for keys not yet present
    and :meth:`discard` only for keys that are.
    """

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._children: dict[str, dict[str, int]] = {}
        for key in keys:
            self.add(key)

    def add(self, key: str) -> None:
        """Record a new key."""
        prefix = ""
        for segment in key.split("/"):
            kids = self._children.setdefault(prefix, {})
            kids[segment] = kids.get(segment, 0) + 1
            prefix = f"{prefix}/{segment}" if prefix else segment

    def check_leaf_rule(self, key: str, holds: Callable[[str], bool]) -> None:
        """Raise ObjectExistsError if writing ``key`` would break the leaf rule.

        ``holds(k)`` says whether key ``k`` holds content (the index knows only which
        prefixes lead to keys); the caller holds its lock around check and store.
        """
        for parent in parent_keys(key):
            if holds(parent):
                raise ObjectExistsError(
                    f"cannot write {key!r}: {parent!r} holds content, and "
                    "content-bearing keys are leaves"
                )
        if self.is_prefix(key):
            example = next(self.below(key))
            raise ObjectExistsError(
                f"cannot write {key!r}: it is a prefix of existing keys (e.g. {example!r})"
            )

    def discard(self, key: str) -> None:
        """Forget a key; prefixes left with nothing below them disappear."""
        prefix = ""
        for segment in key.split("/"):
            kids = self._children.get(prefix)
            if kids is None:
                return
            count = kids.get(segment, 0) - 1
            if count > 0:
                kids[segment] = count
            else:
                kids.pop(segment, None)
                if not kids:
                    del self._children[prefix]
            prefix = f"{prefix}/{segment}" if prefix else segment

    def children(self, prefix: str) -> list[str]:
        """Names directly below ``prefix`` (``""`` = root) that lead to keys."""
        return list(self._children.get(prefix, ()))

    def is_prefix(self, key: str) -> bool:
        """Whether some stored key lies strictly below ``key``."""
        return key in self._children

    def below(self, prefix: str) -> Iterator[str]:
        """Every path strictly below ``prefix`` that is not itself a prefix (the leaves)."""
        stack = [prefix]
        while stack:
            node = stack.pop()
            for name in self._children.get(node, ()):
                path = f"{node}/{name}" if node else name
                if path in self._children:
                    stack.append(path)
                else:
                    yield path

    def clear(self) -> None:
        """Forget every key."""
        self._children.clear()
