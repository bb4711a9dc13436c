"""A zmap over an S3 bucket (AWS or any S3-compatible service), built on s3fs.

Every operation is one call of s3fs's async API (``_cat_file``, ``_pipe_file``,
``_lsdir``/``_iterdir``, ``_copy_basic``, ``_bulk_delete``, ``_call_s3``), so paging,
multipart uploads, copies over 5 GB and retries are s3fs's and botocore's, not ours.
s3fs's listing cache is off, so a listing is never stale after a write or delete
through this map. ``search`` is one ``ListObjectsV2`` with ``Delimiter="/"`` per page:
its cost grows with the number of children of a prefix, not with the keys below it.

Request budget (``tests/test_map_s3.py``, ``tests/test_s3_requests.py``): a read is
one GET (s3fs's whole-file read is asked not to HEAD first); a write is one PUT,
plus the leaf-rule probes unless the map knows the tree (see :meth:`S3Map._check_leaf_rule`
and :meth:`~nczarr.maps.base.ZMap.trusted_writes`); a server-side copy is one
CopyObject when the size is known from a listing.

Retries: botocore retries throttling (503 ``SlowDown``), 5xx and connection errors
with backoff; the mode and attempts are ``config_kwargs={"retries": {...}}``
(default :data:`DEFAULT_RETRIES`, botocore's "standard" mode). A response body cut
mid-stream (fewer bytes than ``Content-Length``) is retried by s3fs's read loop like
any other transient error, as many times as ``max_attempts`` says.

Errors (the zmap contract) come from s3fs's translation of botocore's: a missing
object is ``KeyError(key)``; a missing bucket :class:`StorageNotFoundError`; denied
access or missing credentials :class:`StoragePermissionError`; anything else
:class:`StorageError`, each naming the ``s3://`` URL and the endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from ..errors import (
    InvalidURLError,
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
)
from ..keys import normalize_key, normalize_prefix, parent_keys
from .base import ZMap, as_bytes

__all__ = ["S3Map", "parse_s3_url", "DEFAULT_RETRIES", "COPY_LIMIT"]

T = TypeVar("T")

#: Concurrent requests issued by ``getitems``/``setitems``.
MAX_CONCURRENCY = 32

#: botocore retry configuration used unless ``config_kwargs["retries"]`` is given:
#: exponential backoff with jitter on throttling, 5xx and connection errors.
DEFAULT_RETRIES: dict[str, Any] = {"mode": "standard", "max_attempts": 10}

#: Largest object one ``CopyObject`` can copy; larger ones use a multipart copy.
COPY_LIMIT = 5 * 2**30

#: Listing page size used when streaming keys (S3's maximum).
PAGE = 1000

#: Option names that carry credentials: passed to s3fs and through pickling, never
#: shown by ``repr``, ``url`` or ``_describe``.
SECRET_OPTIONS = frozenset(
    {
        "key",
        "secret",
        "token",
        "username",
        "password",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
    }
)

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-_]{1,253}[a-z0-9]$", re.I)
_LOADER: Any = None


def _new_session(profile: str | None) -> Any:
    """A fresh aiobotocore session (own credentials) reading botocore's service models
    through one shared loader, which caches the parsed JSON: opening a map then costs
    milliseconds instead of re-reading the S3 model each time."""
    global _LOADER
    from aiobotocore.session import AioSession
    from botocore.loaders import create_loader

    if _LOADER is None:
        _LOADER = create_loader()
    session = AioSession(profile=profile)
    session.register_component("data_loader", _LOADER)
    return session


def _import_s3fs() -> Any:
    try:
        import s3fs
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        from ..errors import MissingDependencyError

        raise MissingDependencyError(
            "S3Map needs s3fs, which is not installed: pip install nczarr[s3]"
        ) from exc
    return s3fs


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket/root/prefix`` into ``(bucket, root)``; ``root`` may be ``""``.

    Raises :class:`InvalidURLError` naming the URL for another scheme, a missing or
    malformed bucket name, or a root with empty, ``.`` or ``..`` segments.

    >>> parse_s3_url("s3://bucket/a/b/")
    ('bucket', 'a/b')
    """
    if not isinstance(url, str) or not url.startswith("s3://"):
        raise InvalidURLError(f"not an S3 URL (expected s3://bucket/prefix): {url!r}")
    bucket, _, root = url[len("s3://") :].partition("/")
    if not _BUCKET.match(bucket):
        raise InvalidURLError(f"invalid bucket name {bucket!r} in S3 URL {url!r}")
    try:
        return bucket, normalize_prefix(root)
    except ValueError as exc:
        raise InvalidURLError(f"invalid key prefix in S3 URL {url!r}: {exc}") from None


def _error_info(exc: BaseException) -> tuple[str, int | None, str]:
    """``(code, HTTP status, message)`` of the botocore error behind ``exc`` (s3fs keeps
    it as the cause of the error it raises); ``("", None, "")`` if there is none."""
    from botocore.exceptions import ClientError

    for _ in range(5):
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return code, status, str(error.get("Message") or code)
        if exc is None:
            break
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return "", None, ""


class S3Map(ZMap):
    """A zmap whose keys are objects ``<root>/<key>`` of one S3 bucket.

    Parameters
    ----------
    url
        ``s3://bucket`` or ``s3://bucket/root/prefix`` (no credentials in it).
    mode
        ``"r"`` and ``"r+"`` need the bucket to exist (else
        :class:`~nczarr.errors.StorageNotFoundError`); ``"a"``, ``"w"`` and ``"w-"``
        create it if missing, as netcdf-c does. ``"w"`` deletes every object under the
        root; ``"w-"`` raises :class:`~nczarr.errors.ObjectExistsError` if there is one.
    endpoint_url
        An S3-compatible service (MinIO, moto, Ceph ...); ``None`` means AWS.
    profile
        AWS profile name (netcdf-c's ``aws.profile=`` fragment key).
    region
        AWS region (netcdf-c's ``aws.region=``).
    anon
        Send unsigned requests (public buckets); no credentials are looked up.
    **s3fs_options
        Any other ``s3fs.S3FileSystem`` keyword (``config_kwargs``, ``client_kwargs``,
        ``requester_pays``, ``s3_additional_kwargs`` ...), so a ``storage_options``
        dict can be passed through unchanged. ``config_kwargs["retries"]`` is
        botocore's retry configuration (default :data:`DEFAULT_RETRIES`), e.g.
        ``{"mode": "adaptive", "max_attempts": 20}`` to also rate-limit the client
        when S3 throttles. Credentials (``key``, ``secret``, ``token``) are accepted
        and kept out of ``repr``/``url``/``_describe``.
    """

    def __init__(
        self,
        url: str,
        mode: str = "r",
        *,
        endpoint_url: str | None = None,
        profile: str | None = None,
        region: str | None = None,
        anon: bool = False,
        **s3fs_options: Any,
    ) -> None:
        super().__init__(mode)
        s3fs = _import_s3fs()
        self._bucket, self._root = parse_s3_url(url)
        self._endpoint_url = endpoint_url
        self._profile = profile
        self._region = region
        self._anon = bool(anon)
        # Everything else goes to s3fs, and with the map when it is pickled (secrets
        # included); an injected aiobotocore session is used but not pickled.
        self._options = dict(s3fs_options)
        session = self._options.pop("session", None) or _new_session(profile)
        client_kwargs = dict(self._options.get("client_kwargs") or {})
        if region is not None:
            client_kwargs["region_name"] = region
        config = {"retries": dict(DEFAULT_RETRIES), **(self._options.get("config_kwargs") or {})}
        passed = {
            k: v for k, v in self._options.items() if k not in ("client_kwargs", "config_kwargs")
        }
        self._fs = s3fs.S3FileSystem(
            **{"skip_instance_cache": True, **passed},
            anon=self._anon,
            session=session,
            endpoint_url=endpoint_url,
            client_kwargs=client_kwargs,
            config_kwargs=config,
            use_listings_cache=False,
        )
        # s3fs retries a read whose body was cut mid-stream (and other transient errors
        # botocore does not see) up to ``fs.retries`` times: as many as botocore tries.
        self._fs.retries = max(1, int(config["retries"].get("max_attempts", 5)))
        # Prefixes known to be "directories" (ancestors of stored keys): they hold no
        # content, so writing below them needs no HEAD. Bounded by the number of
        # groups and arrays, not chunks.
        self._known_dirs: set[str] = set()
        # True while every object under the root was written through this map (it was
        # verified empty, by "w"/"w-" or clear()): then a key that is not a known
        # directory and whose ancestors are known directories cannot break the leaf rule.
        self._owned = False
        # Prefixes this map found empty (a listing below them gave nothing) and has
        # written below since: e.g. an array zarr recreated (``delete_dir``, then writes).
        self._owned_prefixes: set[str] = set()
        self._open()

    # ------------------------------------------------------------------ plumbing
    @property
    def bucket(self) -> str:
        """The bucket name."""
        return self._bucket

    @property
    def fs(self) -> Any:
        """The map's own ``s3fs.S3FileSystem`` (its ``.s3`` client accepts botocore hooks)."""
        return self._fs

    @property
    def root(self) -> str:
        """The key prefix inside the bucket under which the map's keys live (may be ``""``)."""
        return self._root

    def _full(self, key: str) -> str:
        return f"{self._root}/{key}" if self._root and key else (self._root or key)

    def _path(self, key: str = "") -> str:
        """The s3fs path (``bucket/root/key``) of a map key."""
        full = self._full(key)
        return f"{self._bucket}/{full}" if full else self._bucket

    def _below(self, prefix: str) -> str:
        """The S3 ``Prefix`` selecting everything strictly below map prefix ``prefix``."""
        full = self._full(prefix)
        return f"{full}/" if full else ""

    def _where(self) -> str:
        from .url import redact  # an endpoint_url may carry user:password@

        return f" at {redact(self._endpoint_url)}" if self._endpoint_url else ""

    def _s3url(self, key: str = "") -> str:
        return f"s3://{self._path(key)}"

    def _run(self, coro: Awaitable[T]) -> T:
        from fsspec.asyn import sync

        async def run() -> T:
            return await coro

        return sync(self._fs.loop, run)

    def _translate(self, exc: BaseException, op: str, what: str, key: str | None) -> BaseException:
        """The zmap error for a failure of ``op`` on ``what`` (``key``: not-found is KeyError).

        s3fs has already sorted botocore's errors into ``FileNotFoundError`` and
        ``PermissionError``; only a missing bucket (also a ``FileNotFoundError``) and
        missing credentials (not an HTTP error) need telling apart here.
        """
        from botocore.exceptions import NoCredentialsError

        code, status, message = _error_info(exc)
        where = f"{what}{self._where()}"
        if code == "NoSuchBucket":
            return StorageNotFoundError(
                f"no such bucket {self._bucket!r}{self._where()} (while reading {what})"
            )
        if key is not None and (isinstance(exc, FileNotFoundError) or status == 404):
            return KeyError(key)
        if isinstance(exc, NoCredentialsError) or isinstance(exc.__cause__, NoCredentialsError):
            return StoragePermissionError(
                f"no AWS credentials found for {where}; configure the AWS environment or a "
                "profile, or pass anon=True for a public bucket"
            )
        if isinstance(exc, PermissionError) or status == 403:
            return StoragePermissionError(f"access denied to {where} ({op}: {code}: {message})")
        if code:
            return StorageError(f"S3 {op} of {where} failed: {code}: {message}")
        from .url import redact_text  # botocore quotes the endpoint URL in its errors

        return StorageError(redact_text(f"S3 {op} of {where} failed: {type(exc).__name__}: {exc}"))

    async def _do(self, op: str, key: str | None, coro: Awaitable[T], what: str = "") -> T:
        """Await one s3fs call, translating its failure (see :meth:`_translate`)."""
        try:
            return await coro
        except (KeyError, NotImplementedError, asyncio.CancelledError):
            raise
        except Exception as exc:
            where = what or self._s3url(key or "")
            raise self._translate(exc, op, where, key) from exc

    # ------------------------------------------------------------------ opening
    def _open(self) -> None:
        self._run(self._open_async())

    async def _open_async(self) -> None:
        if not await self._bucket_exists():
            if self.mode in ("r", "r+"):
                raise StorageNotFoundError(
                    f"no such bucket {self._bucket!r}{self._where()}: cannot open "
                    f"{self._s3url()} with mode {self.mode!r}"
                )
            params: dict[str, Any] = {"Bucket": self._bucket}
            if self._region and self._region != "us-east-1":
                params["CreateBucketConfiguration"] = {"LocationConstraint": self._region}
            with contextlib.suppress(FileExistsError):  # created meanwhile by someone else
                await self._do("CreateBucket", None, self._fs._call_s3("create_bucket", **params))
        if self.mode == "w":
            await self._clear_async()
        elif self.mode == "w-":
            async for name, _ in self._objects(self._below(""), limit=1):
                raise ObjectExistsError(
                    f"cannot create {self._s3url()} with mode 'w-': it already holds keys "
                    f"(e.g. {name!r})"
                )
            self._owned = True

    async def _bucket_exists(self) -> bool:
        try:
            await self._fs._call_s3("head_bucket", Bucket=self._bucket)
        except Exception as exc:
            code, status, _ = _error_info(exc)
            if status == 404 or code == "NoSuchBucket":
                return False
            if (status == 403 or isinstance(exc, PermissionError)) and self.read_only:
                # Readers of public data may be allowed GetObject but not ListBucket:
                # let the object requests themselves succeed or fail.
                return True
            raise self._translate(exc, "HeadBucket", self._s3url(), None) from exc
        return True

    # --------------------------------------------------------------- primitives
    async def _get(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        # max_concurrency=1: one GET, without the HEAD s3fs issues to split big reads.
        return await self._do(
            "GetObject",
            key,
            self._fs._cat_file(self._path(key), start=start, end=end, max_concurrency=1),
        )

    async def _head(self, key: str) -> dict[str, Any] | None:
        try:
            return await self._do(
                "HeadObject",
                key,
                self._fs._call_s3("head_object", Bucket=self._bucket, Key=self._full(key)),
            )
        except KeyError:
            return None

    async def _put(self, key: str, value: bytes) -> None:
        await self._do(
            "PutObject", None, self._fs._pipe_file(self._path(key), value), self._s3url(key)
        )
        self._known_dirs.update(parent_keys(key))

    def _load(self, key: str) -> bytes:
        return self._run(self._get(key))

    def _exists(self, key: str) -> bool:
        return self._run(self._head(key)) is not None

    def _store(self, key: str, value: bytes) -> None:
        self._run(self._put(key, value))

    def _remove(self, key: str) -> None:
        self._run(self._delete(key))

    async def _delete(self, key: str) -> None:
        if await self._head(key) is None:  # S3 deletes missing keys silently
            raise KeyError(key)
        await self._do("DeleteObject", None, self._fs._rm_file(self._path(key)), self._s3url(key))
        self._known_dirs.difference_update(parent_keys(key))

    async def _objects(
        self, s3_prefix: str, limit: int | None = None
    ) -> AsyncIterator[tuple[str, int]]:
        """``(map key, size)`` of every object whose S3 key starts with ``s3_prefix``."""
        cut = len(self._below(""))
        listing = self._fs._iterdir(self._bucket, delimiter="", prefix=s3_prefix, max_items=limit)
        try:
            async for entry in listing:
                name = entry["name"].split("/", 1)[1][cut:]
                if name and not name.endswith("/"):  # skip "directory marker" objects
                    yield name, int(entry["size"])
        except Exception as exc:
            raise self._translate(exc, "ListObjectsV2", self._s3url(), None) from exc

    def _stream(self, s3_prefix: str) -> Iterator[tuple[str, int]]:
        """Drive :meth:`_objects` from synchronous code, one listing page per call."""
        agen = self._objects(s3_prefix).__aiter__()

        async def page() -> list[tuple[str, int]]:
            out: list[tuple[str, int]] = []
            with contextlib.suppress(StopAsyncIteration):
                while len(out) < PAGE:
                    out.append(await agen.__anext__())
            return out

        try:
            while True:
                batch = self._run(page())
                yield from batch
                if len(batch) < PAGE:
                    return
        finally:
            with contextlib.suppress(Exception):  # abandoned early: release the listing
                self._run(agen.aclose())

    def _list(self, prefix: str) -> Iterator[str]:
        if prefix and self._exists(prefix):
            yield prefix
        empty = True
        for key, _ in self._stream(self._below(prefix)):
            empty = False
            yield key
        if empty and prefix:
            self._owned_prefixes.add(prefix)

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """``(key, size)`` below ``prefix`` from ``ListObjectsV2`` pages (no HEAD per key)."""
        nprefix = normalize_prefix(prefix)
        if nprefix:
            head = self._run(self._head(nprefix))
            if head is not None:
                yield nprefix, int(head["ContentLength"])
        yield from self._stream(self._below(nprefix))

    def _search(self, prefix: str) -> Iterable[str]:
        below = self._below(prefix)
        entries = self._run(
            self._do(
                "ListObjectsV2",
                None,
                self._fs._lsdir(self._path(prefix), delimiter="/", refresh=True),
                self._s3url(prefix),
            )
        )
        cut = len(self._bucket) + 1 + len(below)
        names: list[str] = []
        for entry in entries:
            name = entry["name"].rstrip("/")[cut:]
            if not name:
                continue
            names.append(name)
            if entry["type"] == "directory":
                self._known_dirs.add(f"{prefix}/{name}" if prefix else name)
        if names and prefix:
            self._known_dirs.add(prefix)
            self._known_dirs.update(parent_keys(prefix))
        return names

    def _settings(self) -> dict[str, Any]:
        """Every constructor keyword that reopens this map (credentials included)."""
        named = {
            "endpoint_url": self._endpoint_url,
            "profile": self._profile,
            "region": self._region,
            "anon": self._anon,
        }
        return {**{k: v for k, v in named.items() if v not in (None, False)}, **self._options}

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return self._s3url(), _split_secrets(self._settings())[0]

    # ------------------------------------------------------------- leaf rule
    def _tree_known(self, key: str) -> bool:
        """Whether this map alone wrote the store (or the prefix ``key`` is below, since
        it found it empty) and ``key`` fits its known tree."""
        if key in self._known_dirs or not all(p in self._known_dirs for p in parent_keys(key)):
            return False
        return self._owned or any(p in self._owned_prefixes for p in parent_keys(key))

    async def _leaf_conflict(self, key: str) -> str | None:
        """A message if writing ``key`` would break the leaf rule, else ``None``.

        The LIST below ``key`` and the HEADs of its unknown ancestors run concurrently.
        """
        ancestors = [p for p in parent_keys(key) if p not in self._known_dirs]
        results = await asyncio.gather(
            self._children_conflict(key), *(self._head(p) for p in ancestors)
        )
        for parent, head in zip(ancestors, results[1:], strict=True):
            if head is not None:
                return (
                    f"cannot write {key!r}: {parent!r} holds content, and content-bearing "
                    "keys are leaves"
                )
        self._known_dirs.update(ancestors)
        return results[0]

    async def _children_conflict(self, key: str) -> str | None:
        """A message if some stored key lies below ``key`` (one LIST, ``MaxKeys`` small)."""
        async for name, _ in self._objects(self._below(key), limit=1):
            return f"cannot write {key!r}: it is a prefix of existing keys (e.g. {name!r})"
        return None

    def _check_leaf_rule(self, key: str) -> None:
        """Probe S3 only for what the map does not know.

        Ancestors that are known directories need no HEAD. When every object under the
        root was written through this map (opened ``"w"``/``"w-"`` or cleared), or under
        a prefix it listed and found empty (zarr's ``delete_dir`` before it recreates an
        array), a key below known directories needs no LIST either: a fresh array costs
        one PUT per chunk. Otherwise one LIST below the key (``MaxKeys``) and a HEAD per unknown
        ancestor, issued concurrently. Writers that bypass this map and break the leaf
        rule behind its back can make that knowledge wrong; the contract assumes they
        do not.
        """
        if self._tree_known(key):
            return
        message = self._run(self._leaf_conflict(key))
        if message:
            raise ObjectExistsError(message)

    # ------------------------------------------------------------- bulk & fast paths
    def getitems(self, keys: Iterable[str]) -> dict[str, bytes]:
        """Read many keys concurrently (GETs gathered on the event loop); missing omitted."""
        wanted = list(keys)
        normalized = [normalize_key(k) for k in wanted]

        async def gather() -> list[bytes | None]:
            limit = asyncio.Semaphore(MAX_CONCURRENCY)

            async def one(nkey: str) -> bytes | None:
                async with limit:
                    try:
                        return await self._get(nkey)
                    except KeyError:
                        return None

            return await asyncio.gather(*(one(k) for k in normalized))

        values = self._run(gather()) if normalized else []
        return {k: v for k, v in zip(wanted, values, strict=True) if v is not None}

    def setitems(self, items: Mapping[str, bytes]) -> None:
        """Write many keys concurrently, after checking the leaf rule for all of them.

        Nothing is written if any key conflicts with a stored key or with another key
        of ``items``. Inside :meth:`trusted_writes` only the batch itself is checked.
        """
        batch = {normalize_key(k): v for k, v in items.items()}
        for nkey in batch:
            self._check_writable(nkey)
        data = {k: as_bytes(v, k) for k, v in batch.items()}
        for nkey in data:
            for parent in parent_keys(nkey):
                if parent in data:
                    raise ObjectExistsError(
                        f"cannot write {nkey!r} and {parent!r} together: content-bearing "
                        "keys are leaves"
                    )
        probe = [] if self._trusted else [k for k in data if not self._tree_known(k)]

        async def run() -> None:
            limit = asyncio.Semaphore(MAX_CONCURRENCY)

            async def check(nkey: str) -> str | None:
                async with limit:
                    return await self._leaf_conflict(nkey)

            for message in await asyncio.gather(*(check(k) for k in probe)):
                if message:
                    raise ObjectExistsError(message)

            async def put(nkey: str, value: bytes) -> None:
                async with limit:
                    await self._put(nkey, value)

            await asyncio.gather(*(put(k, v) for k, v in data.items()))

        if data:
            self._run(run())

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key`` with one ranged GET."""
        nkey = normalize_key(key)
        if length is not None and (length <= 0 or start < 0):
            # A window counted from the end, or an empty one: resolve it against the size
            # exactly as Python slicing does, then read just that window.
            first, stop, _ = slice(start, start + length).indices(self.getsize(nkey))
            if stop <= first:
                return b""
            start, length = first, stop - first
        end = None if length is None else start + length
        try:
            return self._run(self._get(nkey, start, end))
        except StorageError as exc:
            if "InvalidRange" in str(exc):  # start at or past the end: an empty slice
                self.getsize(nkey)  # KeyError if the key is gone
                return b""
            raise

    def getsize(self, key: str) -> int:
        """Size of ``key`` in bytes, from one HEAD."""
        nkey = normalize_key(key)
        head = self._run(self._head(nkey))
        if head is None:
            raise KeyError(nkey)
        return int(head["ContentLength"])

    def clear(self) -> None:
        """Delete every object under the root with batched ``DeleteObjects`` calls."""
        self._check_writable()
        self._run(self._clear_async())

    async def _clear_async(self) -> None:
        while True:
            paths = [
                f"{self._bucket}/{self._full(name)}"
                async for name, _ in self._objects(self._below(""), limit=PAGE)
            ]
            if not paths:
                break
            deleted = await self._do(
                "DeleteObjects", None, self._fs._bulk_delete(paths), self._s3url()
            )
            if len(deleted) < len(paths):  # s3fs reports successes only
                left = sorted(set(paths) - set(deleted))
                raise StorageError(
                    f"could not delete s3://{left[0]}{self._where()} "
                    f"({len(left)} of {len(paths)} objects in one DeleteObjects call)"
                )
        self._known_dirs.clear()
        self._owned_prefixes.clear()
        self._owned = True

    # ------------------------------------------------------------- server-side copy
    def same_service(self, other: object) -> bool:
        """Whether ``other`` is an S3Map on the same endpoint with the same credentials.

        Then :meth:`copy_from` can copy objects server-side (``CopyObject``).
        """
        return (
            isinstance(other, S3Map)
            and self._endpoint_url == other._endpoint_url
            and self._profile == other._profile
            and self._region == other._region
            and self._anon == other._anon
            and _split_secrets(self._options)[1] == _split_secrets(other._options)[1]
        )

    def copy_from(
        self, other: ZMap, src_key: str, dst_key: str, size: int | None = None
    ) -> int | None:
        """Copy ``other[src_key]`` to ``self[dst_key]``; return the bytes copied if known.

        One server-side ``CopyObject`` (no bytes through this process) when
        :meth:`same_service` holds and ``size`` (from a listing) is unknown or at most
        5 GB; a multipart copy for larger objects. Otherwise a GET from ``other`` and
        a PUT here. Missing ``src_key`` raises ``KeyError(src_key)``.
        """
        src = normalize_key(src_key)
        dst = normalize_key(dst_key)
        self._check_writable(dst)
        if not self.same_service(other):
            data = other[src]
            self[dst] = data
            return len(data)
        assert isinstance(other, S3Map)
        if not self._trusted:
            self._check_leaf_rule(dst)
        self._run(self._copy(other, src, dst, size))
        return size

    async def _copy(self, other: S3Map, src: str, dst: str, size: int | None) -> None:
        source, target = other._path(src), self._path(dst)
        try:
            if size is not None and size > COPY_LIMIT:
                await self._fs._copy_managed(source, target, size)
            else:
                await self._fs._copy_basic(source, target)
        except Exception as exc:
            code, status, _ = _error_info(exc)
            if code != "NoSuchBucket" and (isinstance(exc, FileNotFoundError) or status == 404):
                raise KeyError(src) from None
            if size is None and "copy source is larger" in str(exc):
                await self._do(
                    "CopyObject", None, self._fs._cp_file(source, target), self._s3url(dst)
                )
            else:
                raise self._translate(exc, "CopyObject", self._s3url(dst), None) from exc
        self._known_dirs.update(parent_keys(dst))

    # ------------------------------------------------------------- identity & lifecycle
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, S3Map):
            return NotImplemented
        return super().__eq__(other) and self.same_service(other)

    __hash__ = ZMap.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        mode = "r+" if self._mode in ("w", "w-") else self._mode
        return (_reopen_s3, (self._s3url(), mode, self._settings()))

    def close(self) -> None:
        """Close the map and its HTTP connections."""
        if self._closed:
            return
        super().close()
        # Closing a connection pool must not mask the caller's work.
        with contextlib.suppress(Exception):
            self._run(self._fs.s3.close())


def _reopen_s3(location: str, mode: str, settings: dict[str, Any]) -> S3Map:
    return S3Map(location, mode=mode, **settings)


def _split_secrets(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(public, secret)`` halves of s3fs options, by name, recursing into dicts
    (``client_kwargs``); dicts left empty on the public side are dropped."""
    public: dict[str, Any] = {}
    secret: dict[str, Any] = {}
    for name, value in options.items():
        if name in SECRET_OPTIONS:
            secret[name] = value
        elif isinstance(value, dict):
            inner_public, inner_secret = _split_secrets(value)
            if inner_public or not value:
                public[name] = inner_public
            if inner_secret:
                secret[name] = inner_secret
        else:
            public[name] = value
    return public, secret
