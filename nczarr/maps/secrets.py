"""Credentials in storage options: told apart by name, kept out of what is shown.

Maps keep every option they were opened with (pickling must reopen them), but their
``repr``, ``url`` and ``_describe`` show only the public half. One rule, by option
name and recursing into nested dicts (``client_kwargs``, ``credentials`` ...), serves
every backend.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["public_options", "split_secrets"]

#: Option names that carry credentials (s3fs, gcsfs, adlfs, fsspec's http, sftp ...).
SECRET_NAME = re.compile(
    r"secret|password|passwd|token|credential|^key$|^username$|access_key|auth", re.I
)


def split_secrets(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(public, secret)`` halves of ``options``, recursing into nested dicts.

    A nested dict left empty on the public side by its secrets is dropped from it.

    >>> split_secrets({"key": "AK", "client_kwargs": {"region_name": "x", "token": "t"}})
    ({'client_kwargs': {'region_name': 'x'}}, {'key': 'AK', 'client_kwargs': {'token': 't'}})
    """
    public: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for name, value in options.items():
        if SECRET_NAME.search(name):
            secret[name] = value
        elif isinstance(value, dict):
            inner_public, inner_secret = split_secrets(value)
            if inner_public or not value:
                public[name] = inner_public
            if inner_secret:
                secret[name] = inner_secret
        else:
            public[name] = value
    return public, secret


def public_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without credential-looking entries (see :func:`split_secrets`)."""
    return split_secrets(options)[0]
