"""Whether an explicit S3 endpoint answers at all, decided in seconds.

botocore retries a refused or timed-out connection like any transient fault: with
the default retry budget (:data:`nczarr.maps.s3.DEFAULT_RETRIES`, sized for
throttling) a request to an endpoint where nothing listens takes a minute or more to
fail. Before the first request, :func:`check_reachable` opens (and closes) one TCP
connection to the endpoint, a few times over a few seconds; an endpoint that refuses
or never answers is a :class:`~nczarr.errors.StorageError` naming it. A proxy
between us and the endpoint (environment or ``config_kwargs["proxies"]``), or a
user's own ``connect_timeout``/``retries``, leaves the decision to botocore.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from ..errors import StorageError
from .credentials import redact

__all__ = ["CONNECT_TIMEOUT", "check_reachable"]

#: Seconds to wait for a TCP connection to an explicit endpoint (also the default
#: ``connect_timeout`` given to botocore).
CONNECT_TIMEOUT = 5.0

#: Connection attempts before an endpoint that refuses is declared unreachable.
_ATTEMPTS = 3


def _address(endpoint: str) -> tuple[str, int] | None:
    parts = urlsplit(endpoint)
    try:
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.scheme not in ("http", "https"):
        return None
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _proxied(scheme: str, host: str, config: Mapping[str, Any]) -> bool:
    if config.get("proxies"):
        return True
    return bool(getproxies().get(scheme)) and not proxy_bypass(host)


def check_reachable(endpoint: str | None, config: Mapping[str, Any]) -> None:
    """Refuse an explicit ``endpoint`` where nothing accepts a TCP connection.

    Raises
    ------
    StorageError
        Every attempt was refused or timed out; the message names the endpoint.
    """
    if not endpoint or "connect_timeout" in config or "retries" in config:
        return
    address = _address(endpoint)
    if address is None or _proxied(urlsplit(endpoint).scheme, address[0], config):
        return
    start = time.monotonic()
    failure: OSError | None = None
    for attempt in range(_ATTEMPTS):
        try:
            socket.create_connection(address, timeout=CONNECT_TIMEOUT).close()
            return
        except TimeoutError as exc:
            failure = exc
            break  # already waited CONNECT_TIMEOUT seconds
        except OSError as exc:
            failure = exc
            if attempt + 1 < _ATTEMPTS:
                time.sleep(0.2 * 2**attempt)
    raise StorageError(
        f"cannot connect to the S3 endpoint {redact(endpoint)}: {failure or 'no answer'} "
        f"(gave up after {time.monotonic() - start:.1f} s; pass "
        "config_kwargs={'connect_timeout': ..., 'retries': ...} to wait longer)"
    )
