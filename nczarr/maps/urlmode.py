"""The fragment of a dataset URL: netcdf-c's mode words, their implications, and
the other ``key=value`` pairs (see the :mod:`nczarr.maps.url` docstring). Pure."""

from __future__ import annotations

from ..errors import InvalidURLError

__all__ = ["FORMAT_WORDS", "MACROS", "MODE_WORDS", "STORAGE_WORDS", "imply", "parse_fragment"]

#: Format words of the fragment's ``mode=`` list.
FORMAT_WORDS = ("nczarr", "zarr", "xarray", "noxarray")
#: Storage words; at most one may be present.
STORAGE_WORDS = ("file", "zip", "s3")
#: Every accepted mode word, in the order :func:`str` writes them.
MODE_WORDS = (*FORMAT_WORDS, *STORAGE_WORDS, "consolidated", "v2", "v3")

#: Bare fragment words are mode words (``#zarr`` = ``#mode=zarr``), except that, as in
#: netcdf-c's macro table, a bare ``#s3`` also selects the NCZarr format.
MACROS = {"s3": ("s3", "nczarr")}


def parse_fragment(fragment: str, shown: str) -> tuple[frozenset[str], dict[str, str]]:
    """``(mode words after the implications, other pairs)`` of a URL's fragment."""
    words: set[str] = set()
    params: dict[str, str] = {}
    for item in fragment.split("&"):
        if not item:
            continue
        from urllib.parse import unquote  # with ipaddress: only a URL with a fragment needs it

        key, eq, value = item.partition("=")
        key = unquote(key).lower()
        value = unquote(value)
        if not key:
            raise InvalidURLError(f"empty key in fragment of {shown!r}")
        if key == "mode":
            for word in value.split(","):
                word = word.strip().lower()
                if word:
                    words.add(_check_word(word, shown))
        elif not eq and key in MACROS:
            words.update(MACROS[key])
        elif not eq and key in MODE_WORDS:
            words.add(key)
        else:
            params[key] = value
    return imply(frozenset(words), f"fragment of {shown!r}"), params


def _check_word(word: str, shown: str) -> str:
    if word not in MODE_WORDS:
        raise InvalidURLError(f"unknown mode word {word!r} in fragment of {shown!r}")
    return word


def imply(mode: frozenset[str], where: str) -> frozenset[str]:
    """Apply netcdf-c's mode implications and check for conflicts."""
    unknown = sorted(w for w in mode if w not in MODE_WORDS)
    if unknown:
        raise InvalidURLError(f"unknown mode word {unknown[0]!r} in {where}")
    words = set(mode)
    if "noxarray" in words:
        words.discard("xarray")
        words.add("zarr")
    if "xarray" in words:
        words.add("zarr")
    if "zarr" in words:
        words.add("nczarr")
    storage = [w for w in STORAGE_WORDS if w in words]
    if len(storage) > 1:
        raise InvalidURLError(
            f"conflicting storage words {storage[0]!r} and {storage[1]!r} in {where}"
        )
    if "v2" in words and "v3" in words:
        raise InvalidURLError(f"conflicting mode words 'v2' and 'v3' in {where}")
    return frozenset(words)
