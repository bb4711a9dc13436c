"""Icechunk repositories of the translated view: chunks as virtual references.

``to_icechunk(src, storage)`` creates an Icechunk repository and commits, as one
snapshot on ``main``, the pure Zarr v3 view of ``src`` (the metadata
``nczarr.view(src, "zarr", zarr_format=3)`` shows) with every chunk a *virtual
reference* into the source: the same locations a reference set holds (whole objects,
byte ranges of zip archives and ``.nc`` files), so nothing is copied. With
``virtual=False`` the chunks are copied into the repository verbatim instead.

Icechunk reads virtual chunks only from *virtual chunk containers* the repository
declares, and only when the reader authorizes them: the repository gets one container,
the longest URL prefix (ending in ``/``) shared by every chunk location (a local
directory, ``s3://bucket/...``); :func:`to_icechunk` returns it, and readers pass it to
``icechunk.Repository.open(..., authorize_virtual_chunk_access={prefix: None})``.

Chunks that cannot be pointed at (arrays the view re-encodes, compressed zip members)
follow the rule of reference sets: copied into the repository (announced) within
``max_inlined`` bytes per array, refused above it unless ``exclude=`` names the array.
Everything is checked before the repository is created.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import TargetExistsError, UnsupportedError, warn_all
from ..maps.base import ZMap
from ..readthrough import TranslatedView, view
from .references import DEFAULT_MAX_INLINED, Entries, check_limits

__all__ = ["to_icechunk"]


def _import_icechunk() -> Any:
    try:
        import icechunk
    except ImportError as exc:
        raise UnsupportedError(
            "writing Icechunk repositories needs the icechunk package: "
            "pip install 'nczarr[icechunk]'"
        ) from exc
    return icechunk


def _url(location: str) -> str:
    """A chunk location as Icechunk names it: local paths become ``file://`` URLs."""
    if "://" in location:
        return location
    return Path(location).resolve().as_uri()


def _container_prefix(urls: Sequence[str]) -> str:
    """The longest prefix ending in ``/`` shared by ``urls`` (a directory or bucket)."""
    common = os.path.commonprefix(list(urls))  # noqa: RUF071 (cut at the last "/" below)
    prefix = common[: common.rfind("/") + 1]
    scheme = urlsplit(prefix).scheme
    if scheme == "s3" and prefix.count("/") < 3:
        raise UnsupportedError(f"chunk locations {urls[0]!r}...: no common S3 bucket")
    return prefix


def _container_store(icechunk: Any, prefix: str, options: Mapping[str, Any]) -> Any:
    """The object store Icechunk reads the container ``prefix`` from."""
    parts = urlsplit(prefix)
    if parts.scheme == "file":
        return icechunk.local_filesystem_store(str(_local_path(prefix)))
    if parts.scheme == "s3":
        endpoint = options.get("endpoint_url") or (options.get("client_kwargs") or {}).get(
            "endpoint_url"
        )
        region = (options.get("client_kwargs") or {}).get("region_name") or "us-east-1"
        kwargs: dict[str, Any] = {"region": region}
        if endpoint:
            kwargs.update(endpoint_url=endpoint, allow_http=endpoint.startswith("http://"))
            kwargs.update(s3_compatible=True, force_path_style=True)
        if options.get("anon"):
            kwargs["anonymous"] = True
        return icechunk.s3_store(**kwargs)
    raise UnsupportedError(
        f"Icechunk virtual chunks at {prefix!r}: only local files and S3 are supported; "
        "pass virtual=False to copy the chunks into the repository"
    )


def _local_path(url: str) -> Path:
    from urllib.request import url2pathname

    return Path(url2pathname(urlsplit(url).path))


def _plan(entries: Entries, translated: TranslatedView, virtual: bool) -> list[tuple]:
    """Every chunk as ``(key, url, offset, length)`` or ``(key, bytes)``, checked (the
    budget of chunks that cannot be pointed at) before anything is written."""
    if not virtual:
        return [(key, translated[key]) for key in entries.chunk_keys()]
    chunks: list[tuple] = []
    sizes: dict[str, int] | None = None
    for key, entry in entries.chunks():
        if isinstance(entry, list):
            url = _url(entry[0])
            if len(entry) == 3:
                chunks.append((key, url, entry[1], entry[2]))
            else:
                if sizes is None:  # one listing instead of a request per object
                    sizes = dict(translated.source.list_sizes(""))
                size = sizes.get(translated.source_key(key))
                chunks.append((key, url, 0, size if size is not None else translated.getsize(key)))
        else:
            chunks.append((key, base64.b64decode(entry[len("base64:") :])))
    return chunks


def _storage(icechunk: Any, storage: Any, src: Any, options: Mapping[str, Any] | None) -> Any:
    """An ``icechunk.Storage``; a path means local storage there (checked apart
    from ``src``, and absent or empty)."""
    if not isinstance(storage, str | os.PathLike):
        return storage
    from .overlap import check_distinct

    check_distinct(src, os.fspath(storage), src_options=options)
    path = Path(storage)
    if path.exists() and any(path.iterdir()):
        raise TargetExistsError(f"{path} exists and is not empty: nothing was written")
    return icechunk.local_filesystem_storage(str(path))


def to_icechunk(
    src: str | os.PathLike[str] | ZMap,
    storage: Any,
    *,
    virtual: bool = True,
    storage_options: Mapping[str, Any] | None = None,
    exclude: Sequence[str] | None = None,
    max_inlined: int = DEFAULT_MAX_INLINED,
    message: str | None = None,
) -> dict[str, Any]:
    """Create an Icechunk repository showing ``src`` as ``view(src, "zarr",
    zarr_format=3)`` and commit it as one snapshot on ``main``.

    Parameters
    ----------
    src : str, path-like or ZMap
        Any source :func:`nczarr.view` accepts.
    storage : icechunk.Storage, str or path-like
        Where the repository goes (``icechunk.local_filesystem_storage(...)``,
        ``icechunk.s3_storage(...)``), or a local directory (absent or empty). A
        repository already there is refused.
    virtual : bool
        ``True``: chunks are virtual references into ``src``; ``False``: copied.
    storage_options : mapping, optional
        Options for opening ``src`` from a URL; an S3 endpoint given here is also
        the virtual chunk container's.
    exclude, max_inlined
        As :func:`nczarr.references`.
    message : str, optional
        The commit message.

    Returns
    -------
    dict
        ``{"snapshot": id, "container": url prefix or None, "virtual": n, "copied": n}``.
        Readers authorize ``container``:
        ``icechunk.Repository.open(storage, authorize_virtual_chunk_access={container: None})``.

    Raises
    ------
    UnsupportedError
        An array cannot be referenced and exceeds ``max_inlined`` (named, with the
        ``exclude=`` to pass); chunks live where Icechunk cannot read them; icechunk
        is not installed.
    TargetExistsError
        A repository (or anything) is already at ``storage``.
    """
    icechunk = _import_icechunk()
    check_limits(0, max_inlined)
    options = dict(storage_options or {})
    storage = _storage(icechunk, storage, src, options)
    with view(src, "zarr", zarr_format=3, storage_options=options) as translated:
        entries = Entries(
            translated,
            inline_threshold=0,
            exclude=exclude,
            max_inlined=max_inlined,
            into="the repository",
        )
        chunks = _plan(entries, translated, virtual)
        urls = [c[1] for c in chunks if len(c) == 4]
        prefix = _container_prefix(urls) if urls else None
        repo = _create(icechunk, storage, prefix, options)
        session = repo.writable_session("main")
        _write(session.store, entries.metadata, chunks)
        snapshot = session.commit(message or f"nczarr: {translated.source.describe()}")
    warn_all(entries.warnings())
    return {
        "snapshot": snapshot,
        "container": prefix,
        "virtual": len(urls),
        "copied": len(chunks) - len(urls),
    }


def _create(icechunk: Any, storage: Any, prefix: str | None, options: Mapping) -> Any:
    config = icechunk.RepositoryConfig.default()
    authorize = None
    if prefix is not None:
        container = icechunk.VirtualChunkContainer(
            prefix, _container_store(icechunk, prefix, options)
        )
        config.set_virtual_chunk_container(container)
        authorize = icechunk.containers_credentials(
            {prefix: _credentials(icechunk, prefix, options)}
        )
    if icechunk.Repository.exists(storage):
        raise TargetExistsError("an Icechunk repository exists there already: nothing was written")
    return icechunk.Repository.create(
        storage, config=config, authorize_virtual_chunk_access=authorize
    )


def _credentials(icechunk: Any, prefix: str, options: Mapping[str, Any]) -> Any:
    """The writer's credentials for the container: S3 keys given in the options,
    anonymous with ``anon``, else the environment's; local files: icechunk 2's explicit
    no-auth value (``None`` in icechunk 1)."""
    if prefix.startswith("s3://"):
        key, secret = options.get("key"), options.get("secret")
        if key and secret:
            return icechunk.s3_credentials(access_key_id=key, secret_access_key=secret)
        if options.get("anon"):
            return icechunk.s3_anonymous_credentials()
        return icechunk.s3_from_env_credentials()
    return getattr(icechunk.credentials, "LocalFileSystemAccess", None)


def _default_keys(
    metadata: Sequence[tuple[str, str]],
) -> tuple[list[tuple[str, bytes]], dict[str, int]]:
    """The metadata objects as bytes, arrays with Zarr's ``default`` chunk key encoding
    (Icechunk knows chunk keys ``a/c/0/1`` only; the view names them ``a/0.1``); and
    the dimensionality of each array whose keys change."""
    out: list[tuple[str, bytes]] = []
    renamed: dict[str, int] = {}
    for key, text in metadata:
        value = base64.b64decode(text[7:]) if text.startswith("base64:") else text.encode()
        if key == "zarr.json" or key.endswith("/zarr.json"):
            node = json.loads(value)
            if node.get("node_type") == "array" and node["chunk_key_encoding"]["name"] == "v2":
                node["chunk_key_encoding"] = {
                    "name": "default",
                    "configuration": {"separator": "/"},
                }
                value = json.dumps(node).encode()
                renamed[key[: -len("zarr.json")].rstrip("/")] = len(node["shape"])
        out.append((key, value))
    return out, renamed


def _chunk_key(key: str, renamed: dict[str, int]) -> str:
    """``a/0.1`` as ``a/c/0/1`` (``a/0`` of a 0-d array as ``a/c``) for renamed arrays."""
    array, _, index = key.rpartition("/")
    if array not in renamed:
        return key
    if renamed[array] == 0:
        return f"{array}/c"
    return f"{array}/c/" + index.replace(".", "/")


def _write(store: Any, metadata: Sequence[tuple[str, str]], chunks: list[tuple]) -> None:
    """Metadata objects, then chunks (virtual references or bytes), into ``store``."""
    from zarr.core.buffer import cpu
    from zarr.core.sync import sync

    objects, renamed = _default_keys(metadata)
    for key, value in sorted(objects, key=lambda item: item[0].count("/")):  # parents first
        sync(store.set(key, cpu.Buffer.from_bytes(value)))
    for chunk in chunks:
        key = _chunk_key(chunk[0], renamed)
        if len(chunk) == 4:
            _, url, offset, length = chunk
            store.set_virtual_ref(key, url, offset=offset, length=length)
        else:
            sync(store.set(key, cpu.Buffer.from_bytes(chunk[1])))
