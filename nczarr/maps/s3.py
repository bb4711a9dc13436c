"""A zmap over an S3 bucket (AWS or any S3-compatible service), through s3fs/aiobotocore.

Every operation is one S3 request (or a few issued concurrently) on the aiobotocore
client that s3fs manages; s3fs's path-level helpers and their directory listing cache
are bypassed, so a listing is never served stale after a write or delete through this
map. ``search`` is one ``ListObjectsV2`` with ``Delimiter="/"`` per page, so its cost
grows with the number of children of a prefix, not with the number of keys below it.

Error mapping (the zmap contract): ``NoSuchBucket`` -> :class:`StorageNotFoundError`,
``AccessDenied``/403 -> :class:`StoragePermissionError`, network failures and any other
service error -> :class:`StorageError`; only a not-found on an object is ``KeyError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
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

__all__ = ["S3Map"]

T = TypeVar("T")

#: Concurrent requests issued by ``getitems``/``setitems``/``clear``.
MAX_CONCURRENCY = 32

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
_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
_DENIED = frozenset(
    {
        "AccessDenied",
        "403",
        "Forbidden",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "AllAccessDisabled",
        "ExpiredToken",
        "InvalidToken",
        "AccountProblem",
    }
)


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
        Passed to ``s3fs.S3FileSystem`` (``config_kwargs``, ``client_kwargs``,
        ``requester_pays`` ...). Credentials (``key``, ``secret``, ``token``) are
        accepted and kept out of ``repr``/``url``/``_describe``; otherwise they come
        from the usual AWS environment, files and instance metadata.

    Notes
    -----
    The leaf rule is checked with one ``ListObjectsV2`` (``MaxKeys=1``) below the key,
    plus a ``HEAD`` of each ancestor not already known to be a "directory", all issued
    concurrently. Ancestors of keys written, and prefixes seen by ``search``, are
    remembered as directories, so a chunk write in a known array costs one LIST and one
    PUT. Writers that bypass this map and break the leaf rule behind its back can make
    that memory wrong; the contract assumes they do not.
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
        options = dict(s3fs_options)
        # An injected aiobotocore session is used but neither described nor pickled.
        session = options.pop("session", None) or _new_session(profile)
        self._secrets = {k: options.pop(k) for k in list(options) if k in SECRET_OPTIONS}
        client_kwargs = dict(options.pop("client_kwargs", None) or {})
        client_secrets = {
            k: client_kwargs.pop(k) for k in list(client_kwargs) if k in SECRET_OPTIONS
        }
        if client_secrets:
            self._secrets["client_kwargs"] = client_secrets
        self._options = options
        self._client_kwargs = client_kwargs
        fs_client_kwargs = {**client_kwargs, **client_secrets}
        if region is not None:
            fs_client_kwargs["region_name"] = region
        fs_kwargs: dict[str, Any] = {
            **options,
            **{k: v for k, v in self._secrets.items() if k != "client_kwargs"},
        }
        self._fs = s3fs.S3FileSystem(
            anon=self._anon,
            session=session,
            endpoint_url=endpoint_url,
            client_kwargs=fs_client_kwargs,
            skip_instance_cache=True,
            use_listings_cache=False,
            **fs_kwargs,
        )
        self._known_dirs: set[str] = set()
        self._open()

    # ------------------------------------------------------------------ plumbing
    @property
    def bucket(self) -> str:
        """The bucket name."""
        return self._bucket

    @property
    def fs(self) -> Any:
        """The private ``s3fs.S3FileSystem`` (its ``.s3`` client accepts botocore event hooks)."""
        return self._fs

    @property
    def root(self) -> str:
        """The key prefix inside the bucket under which the map's keys live (may be ``""``)."""
        return self._root

    def _full(self, key: str) -> str:
        return f"{self._root}/{key}" if self._root and key else (self._root or key)

    def _below(self, prefix: str) -> str:
        """The S3 ``Prefix`` selecting everything strictly below map prefix ``prefix``."""
        full = self._full(prefix)
        return f"{full}/" if full else ""

    def _where(self) -> str:
        from .url import redact  # an endpoint_url may carry user:password@

        return f" at {redact(self._endpoint_url)}" if self._endpoint_url else ""

    def _run(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        from fsspec.asyn import sync

        return sync(self._fs.loop, func, *args)

    async def _call(self, op: str, what: str, key: str | None = None, **params: Any) -> Any:
        """Issue one S3 call; translate its failure. ``key`` set: not-found is KeyError(key)."""
        from botocore.exceptions import ClientError

        try:
            await self._fs.set_session()
            client = await self._fs.get_s3(self._bucket)
            return await getattr(client, op)(**params)
        except ClientError as exc:
            raise self._translate(exc, op, what, key) from exc
        except (KeyError, NotImplementedError):
            raise
        except Exception as exc:
            raise self._translate(exc, op, what, key) from exc

    def _translate(self, exc: Exception, op: str, what: str, key: str | None) -> BaseException:
        from botocore.exceptions import ClientError, NoCredentialsError

        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            message = error.get("Message") or code
            if code == "NoSuchBucket":
                return StorageNotFoundError(
                    f"no such bucket {self._bucket!r}{self._where()} (while reading {what})"
                )
            if key is not None and (code in _NOT_FOUND or status == 404):
                return KeyError(key)
            if code in _DENIED or status == 403:
                return StoragePermissionError(
                    f"access denied to {what}{self._where()} ({op}: {code}: {message})"
                )
            return StorageError(f"S3 {op} of {what}{self._where()} failed: {code}: {message}")
        if isinstance(exc, NoCredentialsError):
            return StoragePermissionError(
                f"no AWS credentials found for {what}{self._where()}; configure the AWS "
                "environment or a profile, or pass anon=True for a public bucket"
            )
        from .url import redact_text  # botocore quotes the endpoint URL in its errors

        return StorageError(
            redact_text(f"S3 {op} of {what}{self._where()} failed: {type(exc).__name__}: {exc}")
        )

    def _s3url(self, key: str = "") -> str:
        full = self._full(key)
        return f"s3://{self._bucket}/{full}" if full else f"s3://{self._bucket}"

    # ------------------------------------------------------------------ opening
    def _open(self) -> None:
        self._run(self._open_async)

    async def _open_async(self) -> None:
        exists = await self._bucket_exists()
        if not exists:
            if self.mode in ("r", "r+"):
                raise StorageNotFoundError(
                    f"no such bucket {self._bucket!r}{self._where()}: cannot open "
                    f"{self._s3url()} with mode {self.mode!r}"
                )
            params: dict[str, Any] = {"Bucket": self._bucket}
            if self._region and self._region != "us-east-1":
                params["CreateBucketConfiguration"] = {"LocationConstraint": self._region}
            await self._call("create_bucket", self._s3url(), **params)
        if self.mode == "w":
            await self._clear_async()
        elif self.mode == "w-":
            page = await self._call(
                "list_objects_v2",
                self._s3url(),
                Bucket=self._bucket,
                Prefix=self._below(""),
                MaxKeys=1,
            )
            if page.get("KeyCount", len(page.get("Contents", []))):
                raise ObjectExistsError(
                    f"cannot create {self._s3url()} with mode 'w-': it already holds keys "
                    f"(e.g. {page['Contents'][0]['Key']!r})"
                )

    async def _bucket_exists(self) -> bool:
        from botocore.exceptions import ClientError

        try:
            await self._fs.set_session()
            client = await self._fs.get_s3(self._bucket)
            await client.head_bucket(Bucket=self._bucket)
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if status == 404 or code in ("404", "NoSuchBucket", "NotFound"):
                return False
            if (status == 403 or code in _DENIED) and self.read_only:
                # Readers of public data may be allowed GetObject but not ListBucket:
                # let the object requests themselves succeed or fail.
                return True
            raise self._translate(exc, "HeadBucket", self._s3url(), None) from exc
        except Exception as exc:
            raise self._translate(exc, "HeadBucket", self._s3url(), None) from exc
        return True

    # --------------------------------------------------------------- primitives
    async def _get(self, key: str, range_header: str | None = None) -> bytes:
        params: dict[str, Any] = {"Bucket": self._bucket, "Key": self._full(key)}
        if range_header is not None:
            params["Range"] = range_header
        response = await self._call("get_object", self._s3url(key), key, **params)
        try:
            async with response["Body"] as body:
                return await body.read()
        except Exception as exc:
            raise self._translate(exc, "GetObject", self._s3url(key), key) from exc

    async def _head(self, key: str) -> dict[str, Any] | None:
        try:
            return await self._call(
                "head_object", self._s3url(key), key, Bucket=self._bucket, Key=self._full(key)
            )
        except KeyError:
            return None

    async def _put(self, key: str, value: bytes) -> None:
        await self._call(
            "put_object", self._s3url(key), Bucket=self._bucket, Key=self._full(key), Body=value
        )
        self._known_dirs.update(parent_keys(key))

    def _load(self, key: str) -> bytes:
        return self._run(self._get, key)

    def _exists(self, key: str) -> bool:
        return self._run(self._head, key) is not None

    def _store(self, key: str, value: bytes) -> None:
        self._run(self._put, key, value)

    def _remove(self, key: str) -> None:
        self._run(self._delete, key)

    async def _delete(self, key: str) -> None:
        if await self._head(key) is None:
            raise KeyError(key)
        await self._call(
            "delete_object", self._s3url(key), Bucket=self._bucket, Key=self._full(key)
        )
        self._known_dirs.difference_update(parent_keys(key))

    async def _list_page(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self._call("list_objects_v2", self._s3url(), Bucket=self._bucket, **params)

    def _pages(self, s3_prefix: str, **extra: Any) -> Iterator[dict[str, Any]]:
        """Lazily yield ``ListObjectsV2`` pages for ``s3_prefix`` (one request each)."""
        params: dict[str, Any] = {"Prefix": s3_prefix, **extra}
        while True:
            page = self._run(self._list_page, params)
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            params = {**params, "ContinuationToken": token}

    def _list(self, prefix: str) -> Iterator[str]:
        if prefix and self._exists(prefix):
            yield prefix
        below = self._below(prefix)
        cut = len(self._below(""))
        for page in self._pages(below):
            for obj in page.get("Contents", []):
                key = obj["Key"][cut:]
                if key and not key.endswith("/"):  # skip "directory marker" objects
                    yield key

    def _search(self, prefix: str) -> Iterable[str]:
        below = self._below(prefix)
        names: list[str] = []
        for page in self._pages(below, Delimiter="/"):
            for common in page.get("CommonPrefixes", []):
                name = common["Prefix"][len(below) : -1]
                if name:
                    names.append(name)
                    self._known_dirs.add(f"{prefix}/{name}" if prefix else name)
            for obj in page.get("Contents", []):
                name = obj["Key"][len(below) :]
                if name:
                    names.append(name)
        if names and prefix:
            self._known_dirs.add(prefix)
            self._known_dirs.update(parent_keys(prefix))
        return names

    def _describe(self) -> tuple[str, dict[str, Any]]:
        options: dict[str, Any] = {
            "endpoint_url": self._endpoint_url,
            "profile": self._profile,
            "region": self._region,
            "anon": self._anon,
        }
        options = {k: v for k, v in options.items() if v not in (None, False)}
        options.update(self._options)
        if self._client_kwargs:
            options["client_kwargs"] = dict(self._client_kwargs)
        return self._s3url(), options

    # ------------------------------------------------------------- leaf rule
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
        """A message if some stored key lies below ``key`` (one LIST, ``MaxKeys=1``)."""
        page = await self._call(
            "list_objects_v2",
            self._s3url(key),
            Bucket=self._bucket,
            Prefix=self._below(key),
            MaxKeys=1,
        )
        contents = page.get("Contents", [])
        if contents:
            example = contents[0]["Key"][len(self._below("")) :]
            return f"cannot write {key!r}: it is a prefix of existing keys (e.g. {example!r})"
        return None

    def _check_leaf_rule(self, key: str) -> None:
        message = self._run(self._leaf_conflict, key)
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

        values = self._run(gather) if normalized else []
        return {k: v for k, v in zip(wanted, values, strict=True) if v is not None}

    def setitems(self, items: Mapping[str, bytes]) -> None:
        """Write many keys concurrently, after checking the leaf rule for all of them.

        Nothing is written if any key conflicts with a stored key or with another key
        of ``items``.
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

        async def run() -> None:
            limit = asyncio.Semaphore(MAX_CONCURRENCY)
            ancestors = sorted(
                {p for k in data for p in parent_keys(k)} - self._known_dirs - data.keys()
            )

            async def head(parent: str) -> str | None:
                async with limit:
                    if await self._head(parent) is None:
                        return None
                child = next(k for k in data if k.startswith(parent + "/"))
                return (
                    f"cannot write {child!r}: {parent!r} holds content, and "
                    "content-bearing keys are leaves"
                )

            async def below(nkey: str) -> str | None:
                async with limit:
                    return await self._children_conflict(nkey)

            checks = [head(p) for p in ancestors] + [below(k) for k in data]
            for message in await asyncio.gather(*checks):
                if message:
                    raise ObjectExistsError(message)
            self._known_dirs.update(ancestors)

            async def put(nkey: str, value: bytes) -> None:
                async with limit:
                    await self._put(nkey, value)

            await asyncio.gather(*(put(k, v) for k, v in data.items()))

        if data:
            self._run(run)

    def getrange(self, key: str, start: int, length: int | None = None) -> bytes:
        """Bytes ``start:start+length`` of ``key`` with one ranged GET."""
        nkey = normalize_key(key)
        if length is not None and (length <= 0 or start < 0):
            # A window counted from the end, or an empty one: resolve it against the size
            # exactly as Python slicing does, then read just that window.
            first, stop, _ = slice(start, start + length).indices(self.getsize(nkey))
            if stop <= first:
                return b""
            return self._run(self._get_range, nkey, f"bytes={first}-{stop - 1}")
        if start < 0:
            return self._run(self._get_range, nkey, f"bytes={start}")
        end = "" if length is None else str(start + length - 1)
        return self._run(self._get_range, nkey, f"bytes={start}-{end}")

    async def _get_range(self, key: str, range_header: str) -> bytes:
        try:
            return await self._get(key, range_header)
        except StorageError as exc:
            if "InvalidRange" in str(exc):  # start at or past the end: an empty slice
                if await self._head(key) is None:
                    raise KeyError(key) from None
                return b""
            raise

    def getsize(self, key: str) -> int:
        """Size of ``key`` in bytes, from one HEAD."""
        nkey = normalize_key(key)
        head = self._run(self._head, nkey)
        if head is None:
            raise KeyError(nkey)
        return int(head["ContentLength"])

    def clear(self) -> None:
        """Delete every object under the root with batched ``DeleteObjects`` calls."""
        self._check_writable()
        self._run(self._clear_async)

    async def _clear_async(self) -> None:
        cut = self._below("")
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Bucket": self._bucket, "Prefix": cut}
            if token:
                params["ContinuationToken"] = token
            page = await self._call("list_objects_v2", self._s3url(), **params)
            objects = [{"Key": obj["Key"]} for obj in page.get("Contents", [])]
            if objects:
                result = await self._call(
                    "delete_objects",
                    self._s3url(),
                    Bucket=self._bucket,
                    Delete={"Objects": objects, "Quiet": True},
                )
                if result.get("Errors"):
                    first = result["Errors"][0]
                    raise StorageError(
                        f"could not delete s3://{self._bucket}/{first.get('Key')}"
                        f"{self._where()}: {first.get('Code')}: {first.get('Message')}"
                    )
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                break
        self._known_dirs.clear()

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
            and self._secrets == other._secrets
        )

    def copy_from(self, other: ZMap, src_key: str, dst_key: str) -> None:
        """Copy ``other[src_key]`` to ``self[dst_key]``.

        One server-side ``CopyObject`` (no bytes through this process) when
        :meth:`same_service` holds; otherwise a GET from ``other`` and a PUT here.
        Missing ``src_key`` raises ``KeyError(src_key)``. Objects above 5 GB (S3's
        CopyObject limit, far above any chunk) are not supported server-side.
        """
        src = normalize_key(src_key)
        dst = normalize_key(dst_key)
        self._check_writable(dst)
        if not self.same_service(other):
            self[dst] = other[src]
            return
        assert isinstance(other, S3Map)
        self._check_leaf_rule(dst)
        self._run(self._copy, other, src, dst)

    async def _copy(self, other: S3Map, src: str, dst: str) -> None:
        from botocore.exceptions import ClientError

        source = {"Bucket": other._bucket, "Key": other._full(src)}
        try:
            await self._fs.set_session()
            client = await self._fs.get_s3(self._bucket)
            await client.copy_object(CopySource=source, Bucket=self._bucket, Key=self._full(dst))
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code == "NoSuchKey" or (code == "404"):
                raise KeyError(src) from None
            if code == "NoSuchBucket":
                raise other._translate(exc, "CopyObject", other._s3url(src), src) from exc
            raise self._translate(exc, "CopyObject", self._s3url(dst), None) from exc
        except Exception as exc:
            raise self._translate(exc, "CopyObject", self._s3url(dst), None) from exc
        self._known_dirs.update(parent_keys(dst))

    # ------------------------------------------------------------- identity & lifecycle
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, S3Map):
            return NotImplemented
        return super().__eq__(other) and self._secrets == other._secrets

    __hash__ = ZMap.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        location, options = self._describe()
        mode = "r+" if self._mode in ("w", "w-") else self._mode
        return (_reopen_s3, (location, mode, options, dict(self._secrets)))

    def close(self) -> None:
        """Close the map and its HTTP connections."""
        if self._closed:
            return
        super().close()
        creator = getattr(self._fs, "_s3creator", None)
        if creator is not None and getattr(self._fs, "_s3", None) is not None:
            # Closing a connection pool must not mask the caller's work.
            with contextlib.suppress(Exception):
                self._run(creator.__aexit__, None, None, None)


def _reopen_s3(location: str, mode: str, options: dict[str, Any], secrets: dict[str, Any]) -> S3Map:
    secrets = dict(secrets)
    client_secrets = secrets.pop("client_kwargs", None)
    if client_secrets:
        options = {
            **options,
            "client_kwargs": {**options.get("client_kwargs", {}), **client_secrets},
        }
    return S3Map(location, mode=mode, **options, **secrets)
