"""Storage options on the command line: ``--storage-option KEY=VALUE`` and ``--anon``.

Every command takes them; they apply to every *remote* location the command opens
(S3, any fsspec protocol, a chained ``zip::`` URL), never to a local directory or zip,
which take none. Values are read the way a user types them: JSON when they parse as
JSON (``true``/``false``, integers, floats, ``null``, ``{"region_name": "x"}`` for a
nested option such as ``client_kwargs``), else the text itself
(``endpoint_url=http://127.0.0.1:9000``). ``--anon`` is ``anon=true`` (s3fs's
anonymous access to public buckets).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["add_storage_arguments", "parse_storage_option", "storage_options"]


def parse_storage_option(text: str) -> tuple[str, Any]:
    """``"KEY=VALUE"`` -> ``(key, value)``, the value parsed as JSON when it is JSON.

    >>> parse_storage_option("anon=true"), parse_storage_option("max_concurrency=4")
    (('anon', True), ('max_concurrency', 4))
    >>> parse_storage_option("endpoint_url=http://127.0.0.1:9000")
    ('endpoint_url', 'http://127.0.0.1:9000')

    Raises
    ------
    argparse.ArgumentTypeError
        No ``=``, or an empty key (a usage error: exit status 2).
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE (e.g. endpoint_url=http://host:9000), got {text!r}"
        )
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return key, value


def add_storage_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--storage-option`` (repeatable) and ``--anon`` to a subcommand."""
    parser.add_argument(
        "--storage-option",
        dest="storage_option",
        action="append",
        type=parse_storage_option,
        default=[],
        metavar="KEY=VALUE",
        help="an fsspec/s3fs option for every remote location (repeatable; JSON values)",
    )
    parser.add_argument(
        "--anon", action="store_true", help="anonymous access (public S3 buckets): anon=true"
    )


def storage_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options ``args`` asks for (``{}`` when none).

    Raises
    ------
    argparse.ArgumentTypeError
        A key given twice with different values.
    """
    out: dict[str, Any] = {}
    pairs: Sequence[tuple[str, Any]] = getattr(args, "storage_option", None) or []
    if getattr(args, "anon", False):
        pairs = [*pairs, ("anon", True)]
    for key, value in pairs:
        if key in out and out[key] != value:
            raise argparse.ArgumentTypeError(
                f"storage option {key!r} given twice ({out[key]!r} and {value!r})"
            )
        out[key] = value
    return out
