"""Credentials: found in URLs, messages and storage options, and kept out of sight.

* URLs: ``user:password@`` may be written in any URL; :func:`redact` hides it before
  a URL is shown, :func:`redact_text` in every URL a message quotes (botocore quotes
  endpoints), and :func:`has_credentials` tells :func:`~nczarr.maps.url.parse_url` to
  refuse one (credentials belong in the environment or in storage options).
* Storage options: maps keep every option they were opened with (pickling must reopen
  them), but their ``repr``, ``url`` and ``_describe`` show only the public half of
  :func:`split_secrets`, one rule by option name for every backend.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["has_credentials", "public_options", "redact", "redact_text", "split_secrets"]

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


def redact(url: str) -> str:
    """``url`` with anything that may be ``user:password@`` replaced by ``***@``.

    Safe before any parsing: a password may hold ``#``, ``?``, ``/``, ``:`` or ``@``
    unescaped, so everything from ``scheme://`` to the *last* ``@`` is hidden. A URL
    with an ``@`` in its path or fragment is over-redacted, never under-redacted.

    >>> redact("https://user:hunter2#x@host/bucket/key")
    'https://***@host/bucket/key'
    >>> redact("s3://bucket/key")
    's3://bucket/key'
    """
    start = url.find("://")
    if start < 0:
        return url
    start += 3
    at = url.rfind("@", start)
    if at < 0:
        return url
    return url[:start] + "***@" + url[at + 1 :]


_URL_RUN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]*")


def redact_text(text: str) -> str:
    """``text`` (a message) with credentials removed from every URL in it.

    Each ``scheme://...`` run (up to white space or a quote) is passed through
    :func:`redact`; messages that quote an ``endpoint_url`` or a botocore error are
    made safe to print this way.

    >>> redact_text('could not connect to "http://ak:sk@127.0.0.1:9/b"')
    'could not connect to "http://***@127.0.0.1:9/b"'
    """
    if "@" not in text:
        return text
    return _URL_RUN.sub(lambda m: redact(m.group(0)), text)


def has_credentials(rest: str) -> bool:
    """Whether the text after ``scheme://`` may start with ``user[:password]@``.

    The authority ends at the first ``/``, ``?`` or ``#``; an ``@`` in it is a user
    part. A password may itself hold those characters, so a ``user:x`` authority
    whose ``x`` is not a port number is a user part when an ``@`` follows anywhere,
    and a ``host:port`` one when an ``@`` follows before the fragment. The last
    rule also refuses ``http://host:9000/bucket/a@b``: write ``@`` in a key as
    ``%40``.
    """
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority:
        return True
    host_end = authority.find("]") + 1 if authority.startswith("[") else 0
    if ":" not in authority[host_end:]:
        return False
    port = authority[host_end:].split(":", 1)[1]
    if not port.isdigit():
        return "@" in rest
    return "@" in rest.split("#", 1)[0]
