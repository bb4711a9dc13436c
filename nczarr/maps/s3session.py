"""One s3fs filesystem (an aiobotocore session and its S3 client) per S3 settings in a
process, shared by every :class:`~nczarr.maps.s3.S3Map` opened with those settings.

Building them costs about 20 ms of CPU (the session, the client's endpoint and event
hooks) and, with an explicit endpoint, a TCP connection (the reachability check):
more than the requests of opening a small store. An engine open, a dask worker
unpickling a map, ``open_zarr`` after ``detect``: each built its own before.

Shared means:

* **Settings.** The key is every keyword the filesystem is built with (endpoint,
  profile, region, ``anon``, explicit ``key``/``secret``/``token``, ``client_kwargs``,
  ``config_kwargs``, any other s3fs option), the environment variables botocore reads
  credentials, profile, region and endpoint from (every ``AWS_*`` variable), and the
  process id. It is kept as a SHA-256 digest: no secret is held twice.
* **Credentials.** Explicit keys are part of the key: other keys, another client.
  Credentials from the environment are too (as botocore reads them when a client is
  built): after ``AWS_ACCESS_KEY_ID`` or ``AWS_PROFILE`` changes, the next map gets a
  new client, as before this cache; s3fs's own instance cache would keep handing out
  the old one (its key is the keywords only), which is why it is not used. Refreshable
  credentials (assume-role, SSO, IMDS, container, web identity) are refreshed by
  botocore inside the client, before they expire. What a profile's files say is read
  when a client is built: a map opened after editing ``~/.aws/credentials`` with the
  same settings and environment uses the client built before the edit;
  ``skip_instance_cache=True`` (or :func:`forget_filesystems`) builds a new one.
* **Closing.** A map's ``close`` leaves a shared client open (another map may be
  using it, or be about to); its connections close when the process ends or when the
  cache has dropped the filesystem (it keeps the :data:`MAX_FILESYSTEMS` most
  recently used) and no map uses it any more (s3fs closes a collected filesystem's
  client). A map opened with ``skip_instance_cache=True`` or its own ``session=`` has
  its own filesystem, closed with it.
* **Processes.** The process id is part of the key, so a forked child builds its own
  client on its own event loop (fsspec gives a forked child a new loop, and refuses a
  filesystem made before the fork); a dask worker unpickling a map builds (then
  shares) its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from .s3requests import install_timestamp_parser

__all__ = [
    "MAX_FILESYSTEMS",
    "forget_filesystems",
    "known_buckets",
    "new_session",
    "shared_filesystem",
]

#: Filesystems (one per distinct settings) the cache keeps.
MAX_FILESYSTEMS = 16

_LOADER: Any = None
#: settings digest -> (filesystem, the buckets maps on it found: :func:`known_buckets`)
_CACHE: OrderedDict[str, tuple[Any, set[str]]] = OrderedDict()
_LOCK = threading.Lock()


def new_session(profile: str | None) -> Any:
    """A fresh aiobotocore session (own credentials) sharing one botocore loader, which
    caches the parsed service models: a new session costs milliseconds instead of
    re-reading the S3 model. Its clients parse timestamps with
    :func:`~nczarr.maps.s3requests.parse_timestamp`."""
    global _LOADER
    from aiobotocore.session import AioSession
    from botocore.loaders import create_loader

    if _LOADER is None:
        _LOADER = create_loader()
    session = AioSession(profile=profile)
    session.register_component("data_loader", _LOADER)
    install_timestamp_parser(session)
    return session


def _key(options: Mapping[str, Any]) -> str:
    """The digest of ``options``, the ``AWS_*`` environment and the process id."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))
    parts = [os.getpid(), env, options]
    try:
        text = json.dumps(parts, sort_keys=True, default=repr)
    except TypeError:  # keys of mixed types somewhere in the options: as given
        text = json.dumps(parts, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shared_filesystem(options: Mapping[str, Any], build: Callable[[], Any]) -> Any:
    """The filesystem built for these ``options`` in this process, or ``build()``'s
    (kept for the next map with the same settings)."""
    key = _key(options)
    with _LOCK:
        entry = _CACHE.get(key)
        if entry is not None:
            _CACHE.move_to_end(key)
            return entry[0]
    fs = build()  # outside the lock: a slow endpoint check must not block other opens
    with _LOCK:
        entry = _CACHE.setdefault(key, (fs, set()))  # another thread's, if it was first
        _CACHE.move_to_end(key)
        while len(_CACHE) > MAX_FILESYSTEMS:
            _CACHE.popitem(last=False)
    return entry[0]


def known_buckets(fs: Any) -> set[str]:
    """The buckets a map on shared filesystem ``fs`` has found to exist (``HeadBucket``
    answered): a read-only open of another prefix of one of them asks no more (365
    sources in one bucket: one ``HeadBucket``, not 365). A bucket deleted since is then
    found by the first request, which names it (``NoSuchBucket``), not at the open."""
    with _LOCK:
        # dropped from the cache (or never in it): a set that remembers nothing
        return next((buckets for cached, buckets in _CACHE.values() if cached is fs), set())


def forget_filesystems() -> None:
    """Drop every shared filesystem: the next map builds a new session and client
    (after editing a profile's files, say). Maps already open keep theirs."""
    with _LOCK:
        _CACHE.clear()
