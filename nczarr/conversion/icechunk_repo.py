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
Everything that can be checked (the budget, NaN/infinite attributes Icechunk refuses
in metadata) is checked before the repository is created; a failure after that
removes what was created in a local directory (an ``icechunk.Storage`` given keeps
it: Icechunk cannot delete a repository), so a retry is not refused.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from ..errors import TargetExistsError, UnsupportedError, warn_all
from ..maps.base import ZMap
from ..readthrough import TranslatedView, view
from .references import DEFAULT_MAX_INLINED, Entries, check_limits

__all__ = ["to_icechunk"]

_ODD = re.compile(r"[^A-Za-z0-9._~/:-]")  # characters a container prefix must not hold


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
    """A chunk location as Icechunk names it: local paths become ``file://`` URLs, and
    an object URL's key is percent-encoded. A reference set holds keys as they are
    (fsspec reads ``s3://b/st%41/0`` as the key ``st%41/0``), while Icechunk decodes
    a location's percent escapes (that location would read the key ``stA/0``) and
    would take a ``#`` or ``?`` in a key for a URL's fragment or query."""
    scheme, sep, rest = location.partition("://")
    if not sep:
        return Path(location).resolve().as_uri()
    if scheme == "file":
        return location  # a URL already
    bucket, slash, key = rest.partition("/")
    return f"{scheme}://{bucket}{slash}{quote(key, safe='/')}"


def _container_prefix(urls: Sequence[str]) -> str:
    """The longest prefix ending in ``/`` shared by ``urls`` (a directory or bucket)
    whose characters are plain (letters, digits, ``-._~/:``).

    Icechunk matches a chunk's URL against its containers' prefixes as written, but
    compares percent-encoded characters (a space, non-ASCII, ``%`` itself, as
    ``Path.as_uri`` writes them) decoded: a container ``file:///d/with%20space/``
    handles no chunk (neither does ``file:///d/with space/``), while the container
    ``file:///d/`` reads ``file:///d/with%20space/f.nc`` (icechunk 1.1 and 2.3). So
    the prefix stops at the directory before the first such character."""
    common = os.path.commonprefix(list(urls))  # noqa: RUF071 (cut at the last "/" below)
    odd = _ODD.search(common, len(urlsplit(common).scheme) + 1)
    if odd is not None:
        common = common[: odd.start()]
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


def _storage(
    icechunk: Any, storage: Any, src: Any, options: Mapping[str, Any] | None
) -> tuple[Any, Path | None]:
    """An ``icechunk.Storage``, and the local directory it is when ``storage`` is a
    path (checked apart from ``src``, and absent or empty), else None."""
    if not isinstance(storage, str | os.PathLike):
        return storage, None
    from .overlap import check_distinct

    check_distinct(src, os.fspath(storage), src_options=options)
    path = Path(storage)
    if path.exists() and any(path.iterdir()):
        raise TargetExistsError(f"{path} exists and is not empty: nothing was written")
    return icechunk.local_filesystem_storage(str(path)), path


def _discard(path: Path | None, existed: bool) -> None:
    """Remove what a failed :func:`to_icechunk` created in the local directory ``path``
    (absent or empty before), so that a retry is not refused; nothing for a given
    ``icechunk.Storage``, which offers no way to delete a repository."""
    if path is None or not path.exists():
        return
    if not existed:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


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
        ``exclude=`` to pass); chunks live where Icechunk cannot read them; an
        attribute holds NaN or an infinity (named; before anything is written);
        Icechunk refused a key (named); icechunk is not installed.
    TargetExistsError
        A repository (or anything) is already at ``storage``.
    """
    icechunk = _import_icechunk()
    check_limits(0, max_inlined)
    options = dict(storage_options or {})
    storage, local = _storage(icechunk, storage, src, options)
    existed = local is not None and local.exists()
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
        objects, renamed = _default_keys(entries.metadata)
        _check_finite(objects)
        try:  # from here on a failure removes the repository made in a local directory
            repo = _create(icechunk, storage, prefix, options)
            session = repo.writable_session("main")
            _write(icechunk, session.store, objects, renamed, chunks)
            snapshot = session.commit(message or f"nczarr: {translated.source.describe()}")
        except BaseException:
            _discard(local, existed)
            raise
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
) -> tuple[list[tuple[str, bytes]], dict[str, tuple[int, str]]]:
    """The metadata objects as bytes, arrays with Zarr's ``default`` chunk key encoding
    (Icechunk knows chunk keys ``a/c/0/1`` only; the view names them ``a/0.1``, or
    ``a/0/1`` for a Zarr v2 source with the ``/`` separator); and, for each array whose
    keys change, its dimensionality and the view's separator."""
    out: list[tuple[str, bytes]] = []
    renamed: dict[str, tuple[int, str]] = {}
    for key, text in metadata:
        value = base64.b64decode(text[7:]) if text.startswith("base64:") else text.encode()
        if key == "zarr.json" or key.endswith("/zarr.json"):
            node = json.loads(value)
            encoding = node.get("chunk_key_encoding") or {}
            if node.get("node_type") == "array" and encoding.get("name") == "v2":
                node["chunk_key_encoding"] = {
                    "name": "default",
                    "configuration": {"separator": "/"},
                }
                value = json.dumps(node).encode()
                separator = (encoding.get("configuration") or {}).get("separator", ".")
                renamed[key[: -len("zarr.json")].rstrip("/")] = (len(node["shape"]), separator)
        out.append((key, value))
    return out, renamed


def _chunk_key(key: str, renamed: dict[str, tuple[int, str]]) -> str:
    """``a/0.1`` (or ``a/0/1``) as ``a/c/0/1``, ``a/0`` of a 0-d array as ``a/c``, for
    renamed arrays. The array is the one prefix of ``key`` that names an array (arrays
    have no children), so a ``/`` separator is not taken for a level of groups."""
    parts = key.split("/")
    for cut in range(len(parts)):
        array = "/".join(parts[:cut])
        if array not in renamed:
            continue
        ndim, separator = renamed[array]
        index = parts[cut:] if separator == "/" else "/".join(parts[cut:]).split(".")
        chunk = ["c", *index] if ndim else ["c"]
        return "/".join([array, *chunk] if array else chunk)
    return key


class _NonFinite(Exception):
    """A bare NaN/Infinity met while parsing a metadata object strictly."""


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)


def _non_finite(value: Any, path: str) -> str | None:
    """The path (``name``, ``name[1]``, ``name/key``) of the first non-finite float in
    ``value``, an attribute value or an attribute mapping, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for k, item in items:
        where = f"{path}[{k}]" if isinstance(k, int) else f"{path}/{k}".lstrip("/")
        found = _non_finite(item, where)
        if found is not None:
            return found
    return None


def _check_finite(objects: Sequence[tuple[str, bytes]]) -> None:
    """Refuse, before the repository is created, metadata Icechunk refuses: bare
    ``NaN``/``Infinity`` in JSON (attributes holding NaN or infinities, as netCDF's
    ``missing_value = NaN`` or ``valid_max = inf``). zarr-python and xarray write them
    bare in Zarr v3 as in v2 (the v3 specification names ``"NaN"``/``"Infinity"``
    strings for ``fill_value`` only, and strings would read back as text), and
    Icechunk's parser rejects them, even when zarr-python writes them."""
    for key, value in objects:
        if not key.endswith("zarr.json"):
            continue
        try:
            json.loads(value, parse_constant=_reject_constant)
        except _NonFinite:
            node = json.loads(value)
            where = _non_finite(node.get("attributes") or {}, "")
            node_path = "/" + key[: -len("zarr.json")].rstrip("/")
            what = f"attribute {where!r} of {node_path}" if where else f"metadata {key!r}"
            raise UnsupportedError(
                f"{what} holds NaN or an infinity, which Icechunk cannot store in "
                "metadata (it accepts no NaN/Infinity JSON): nothing was written. "
                "Remove or change the attribute in the source, or save a reference set "
                "(nczarr.references) or a Zarr v3 copy (nczarr.convert), which keep it"
            ) from None


def _write(
    icechunk: Any,
    store: Any,
    objects: Sequence[tuple[str, bytes]],
    renamed: dict[str, tuple[int, str]],
    chunks: list[tuple],
) -> None:
    """Metadata objects, then chunks (virtual references or bytes), into ``store``;
    what Icechunk refuses is an ``UnsupportedError`` naming the key."""
    from zarr.core.buffer import cpu
    from zarr.core.sync import sync

    refusal = icechunk.IcechunkError
    for key, value in sorted(objects, key=lambda item: item[0].count("/")):  # parents first
        with _refused(key, refusal):
            sync(store.set(key, cpu.Buffer.from_bytes(value)))
    for chunk in chunks:
        key = _chunk_key(chunk[0], renamed)
        with _refused(key, refusal):
            if len(chunk) == 4:
                _, url, offset, length = chunk
                store.set_virtual_ref(key, url, offset=offset, length=length)
            else:
                sync(store.set(key, cpu.Buffer.from_bytes(chunk[1])))


@contextmanager
def _refused(key: str, refusal: type[BaseException]) -> Iterator[None]:
    """Icechunk's ``refusal`` of ``key`` as an ``UnsupportedError`` naming the key and
    Icechunk's reason (the last line of its report), the original as the cause."""
    try:
        yield
    except refusal as exc:
        last = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
        raise UnsupportedError(f"Icechunk refused {key!r}: {last[0].strip(' `->')}") from exc
