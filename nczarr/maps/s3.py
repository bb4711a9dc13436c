"""A zmap over an S3 bucket (AWS or any S3-compatible service): an FsspecMap on s3fs.

Reads, writes, ranges, sizes, concurrent ``getitems``/``setitems`` and the leaf-rule
cache are :class:`~nczarr.maps.fsspec.FsspecMap`'s, over s3fs's async API; paging,
multipart uploads, retries and error translation are s3fs's and botocore's. What is
S3's own here:

* opening: the bucket is checked (readers refused ``HeadBucket`` defer to the object
  requests) and created by the write modes, as netcdf-c does;
* streaming listings (``list``, ``list_sizes``, ``clear``) one page at a time, so
  memory stays flat in the number of keys; ``clear`` reports objects a
  ``DeleteObjects`` call could not delete (s3fs ignores them);
* server-side copies between maps of one service (:meth:`S3Map.copy_from`);
* a level listed once where a reader looks for several optional objects in it (the
  metadata at a store's root): :mod:`nczarr.maps.s3level`;
* errors that tell a missing bucket from a missing key, and name URL and endpoint;
* credentials kept out of ``repr``/``url`` but pickled with the map;
* one aiobotocore session and S3 client for every map with the same settings in a
  process (:mod:`nczarr.maps.s3session`, which says when credentials are read again);
  per-request work of botocore's whose result never changes (the User-Agent, the
  parsing of timestamps) done once (:mod:`nczarr.maps.s3requests`).

Request budget (``tests/test_map_s3.py``, ``tests/test_s3_requests.py``): a read is
one GET (s3fs is asked not to HEAD first); a write is one PUT plus leaf-rule probes
where the map does not know the tree (:mod:`nczarr.maps.leafcache`); a copy is one
CopyObject when the size is known from a listing. s3fs's listing cache is off, so a
listing is never stale after a write or delete through this map.

Retries: botocore retries throttling (503 ``SlowDown``), 5xx and connection errors
with backoff; ``config_kwargs={"retries": {...}}`` sets mode and attempts (default
:data:`DEFAULT_RETRIES`). A response body cut mid-stream is retried by s3fs's read
loop, as many times as ``max_attempts`` says.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ..errors import (
    ObjectExistsError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
)
from ..keys import normalize_key
from .base import CopySupport, ZMap
from .credentials import redact, redact_text, split_secrets
from .fsspec import FsspecMap
from .location import Location, norm_endpoint
from .reach import CONNECT_TIMEOUT, check_reachable
from .s3level import PAGE, LevelReads
from .s3requests import user_agent_config
from .s3session import known_buckets, new_session, shared_filesystem
from .url import NCZarrURL, parse_s3_url

__all__ = ["S3Map", "parse_s3_url", "open_url", "DEFAULT_RETRIES", "COPY_LIMIT"]

#: botocore retry configuration used unless ``config_kwargs["retries"]`` is given:
#: exponential backoff with jitter on throttling, 5xx and connection errors.
DEFAULT_RETRIES: dict[str, Any] = {"mode": "standard", "max_attempts": 10}

#: Largest object one ``CopyObject`` can copy; larger ones use a multipart copy.
COPY_LIMIT = 5 * 2**30


def _error_info(exc: BaseException | None) -> tuple[str, int | None, str]:
    """``(code, HTTP status, message)`` of the botocore error behind ``exc`` (s3fs keeps
    it as the cause of the error it raises); ``("", None, "")`` if there is none."""
    from botocore.exceptions import ClientError

    for _ in range(5):
        if exc is None:
            break
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return code, status, str(error.get("Message") or code)
        exc = exc.__cause__ or exc.__context__
    return "", None, ""


class S3Map(LevelReads, FsspecMap):
    """A zmap whose keys are objects ``<root>/<key>`` of one S3 bucket.

    Parameters
    ----------
    url
        ``s3://bucket`` or ``s3://bucket/root/prefix`` (no credentials in it).
    mode
        ``"r"`` and ``"r+"`` need the bucket to exist (else
        :class:`~nczarr.errors.StorageNotFoundError`); ``"a"``, ``"w"`` and ``"w-"``
        create it if missing. ``"w"`` deletes every object under the root; ``"w-"``
        raises :class:`~nczarr.errors.ObjectExistsError` if there is one.
    endpoint_url
        An S3-compatible service (MinIO, moto, Ceph ...); ``None`` means AWS.
    profile, region
        AWS profile and region (netcdf-c's ``aws.profile=``/``aws.region=``).
    anon
        Send unsigned requests (public buckets); no credentials are looked up.
    **s3fs_options
        Any other ``s3fs.S3FileSystem`` keyword (``config_kwargs``, ``client_kwargs``,
        ``requester_pays``, ``key``/``secret``/``token`` ...), so a ``storage_options``
        dict passes through unchanged. ``config_kwargs["retries"]`` is botocore's retry
        configuration, e.g. ``{"mode": "adaptive", "max_attempts": 20}`` to also
        rate-limit the client when S3 throttles.
    """

    kind = "an S3 prefix"

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
        try:
            import s3fs
        except ImportError as exc:
            from ..errors import MissingDependencyError

            raise MissingDependencyError(
                "S3Map needs s3fs, which is not installed: pip install nczarr[s3]"
            ) from exc
        self._bucket, self._root = parse_s3_url(url)
        self._named = {"endpoint_url": endpoint_url, "profile": profile, "region": region}
        self._anon = bool(anon)
        # Everything else goes to s3fs, and with the map when it is pickled (secrets
        # included); an injected aiobotocore session is used but not pickled.
        self._options = dict(s3fs_options)
        injected = self._options.pop("session", None)
        # the credentials, compared by same_service on every chunk of a copy
        self._credentials = split_secrets(self._options)[1]
        client_kwargs = dict(self._options.get("client_kwargs") or {})
        if region is not None:
            client_kwargs["region_name"] = region
        user_config = self._options.get("config_kwargs") or {}
        config = {
            "retries": dict(DEFAULT_RETRIES),
            "connect_timeout": CONNECT_TIMEOUT,
            **user_agent_config(user_config),  # built once, not per request
            **user_config,
        }
        passed = {
            k: v for k, v in self._options.items() if k not in ("client_kwargs", "config_kwargs")
        }
        # a filesystem of its own with its own session or skip_instance_cache=True; else
        # the one of every map with these settings (maps/s3session.py)
        self._shared = injected is None and not passed.pop("skip_instance_cache", False)
        settings = {
            **passed,  # max_concurrency=1: a whole-object read is one GET, not HEAD + GETs
            "max_concurrency": passed.get("max_concurrency", 1),
            "anon": self._anon,
            "endpoint_url": endpoint_url,
            "client_kwargs": client_kwargs,
            "config_kwargs": config,
            "profile": profile,
        }

        def build() -> Any:
            # an endpoint where nothing listens fails in seconds, not after every retry
            check_reachable(endpoint_url, user_config)
            options = {k: v for k, v in settings.items() if k != "profile"}
            fs = s3fs.S3FileSystem(
                **options,
                skip_instance_cache=True,
                session=injected or new_session(profile),
                use_listings_cache=False,
            )
            # s3fs retries a read whose body was cut mid-stream (and other transient
            # errors botocore does not see) up to ``fs.retries`` times: as botocore.
            fs.retries = max(1, int(config["retries"].get("max_attempts", 5)))
            return fs

        fs = shared_filesystem(settings, build) if self._shared else build()
        super().__init__(fs, f"{self._bucket}/{self._root}".rstrip("/"), mode)

    @property
    def bucket(self) -> str:
        """The bucket name."""
        return self._bucket

    @property
    def root(self) -> str:
        """The key prefix inside the bucket under which the map's keys live (may be ``""``)."""
        return self._root

    def location(self) -> Location:
        """The service (normalized endpoint), the bucket and the key prefix."""
        endpoint = getattr(self._fs, "endpoint_url", None)
        return Location("s3", self._root, norm_endpoint(endpoint), self._bucket)

    # ------------------------------------------------------------------ errors
    def _where(self, key: str = "") -> str:
        return f"s3://{self._full(key)}"

    def _at(self) -> str:
        endpoint = self._named["endpoint_url"]
        return f" at {redact(endpoint)}" if endpoint else ""  # may carry user:password@

    def _failure(
        self, exc: BaseException, action: str, key: str, missing: bool = True
    ) -> Exception:
        """s3fs has sorted botocore's errors into ``FileNotFoundError`` and
        ``PermissionError``; a missing bucket (also a ``FileNotFoundError``) and missing
        credentials (no HTTP error at all) are told apart here."""
        from botocore.exceptions import NoCredentialsError

        code, status, message = _error_info(exc)
        where = f"{self._where(key)}{self._at()}"
        if code == "NoSuchBucket":
            return StorageNotFoundError(
                f"no such bucket {self._bucket!r}{self._at()} (to {action} {self._where(key)})"
            )
        if missing and (isinstance(exc, FileNotFoundError) or status == 404):
            return KeyError(key)
        if isinstance(exc, NoCredentialsError) or isinstance(exc.__cause__, NoCredentialsError):
            return StoragePermissionError(
                f"no AWS credentials found for {where}; configure the AWS environment or a "
                "profile, or pass anon=True for a public bucket"
            )
        if isinstance(exc, PermissionError) or status == 403:
            return StoragePermissionError(f"access denied to {where} ({action}: {code}: {message})")
        if code:
            return StorageError(f"cannot {action} {where}: {code}: {message}")
        # botocore quotes the endpoint URL in its errors
        return StorageError(redact_text(f"cannot {action} {where}: {type(exc).__name__}: {exc}"))

    # ------------------------------------------------------------------ opening
    def _open(self) -> None:
        if not self._bucket_exists():
            if self.mode in ("r", "r+"):
                raise StorageNotFoundError(
                    f"no such bucket {self._bucket!r}{self._at()}: cannot open "
                    f"{self._where()} with mode {self.mode!r}"
                )
            params: dict[str, Any] = {"Bucket": self._bucket}
            region = self._named["region"]
            if region and region != "us-east-1":  # AWS refuses us-east-1 as a constraint
                params["CreateBucketConfiguration"] = {"LocationConstraint": region}
            with contextlib.suppress(FileExistsError):  # created meanwhile by someone else
                self._call("create", "", self._run, self._fs._call_s3, "create_bucket", params)
        if self.mode == "w":
            self._clear_all()
        elif self.mode == "w-":
            for name, _ in self._stream(limit=1):
                raise ObjectExistsError(
                    f"cannot create {self._where()} with mode 'w-': it already holds keys "
                    f"(e.g. {name!r})"
                )
            self._tree.own_all()

    def _bucket_exists(self) -> bool:
        known = known_buckets(self._fs) if self._shared else set()
        if self.read_only and self._bucket in known:
            return True  # found by a map of these settings (maps/s3session.py)
        try:
            self._run(self._fs._call_s3, "head_bucket", {"Bucket": self._bucket})
        except Exception as exc:
            code, status, _ = _error_info(exc)
            if status == 404 or code == "NoSuchBucket":
                return False
            if (status == 403 or isinstance(exc, PermissionError)) and self.read_only:
                # Readers of public data may be allowed GetObject but not ListBucket:
                # let the object requests themselves succeed or fail.
                return True
            raise self._failure(exc, "open", "", missing=False) from exc
        known.add(self._bucket)
        return True

    # --------------------------------------------------------------- requests
    def _exists(self, key: str) -> bool:
        """One HEAD (s3fs's ``isfile`` would also LIST, and hide errors)."""
        return self._head(key) is not None

    def _remove_if_present(self, key: str) -> None:
        """One ``DeleteObject``: S3 answers it alike whether the object exists or not."""
        with contextlib.suppress(KeyError):
            self._delete(key)

    def getsize(self, key: str) -> int:
        """Size of ``key`` in bytes, from one HEAD."""
        nkey = normalize_key(key)
        head = self._head(nkey)
        if head is None:
            raise KeyError(nkey)
        return int(head["ContentLength"])

    def _head(self, key: str) -> dict[str, Any] | None:
        params = {"Bucket": self._bucket, "Key": self._full(key)[len(self._bucket) + 1 :]}
        try:
            return self._call("stat", key, self._run, self._fs._call_s3, "head_object", params)
        except KeyError:
            return None

    def _ls(self, path: str) -> list[dict[str, Any]]:
        # One delimited listing of that level; s3fs's ls would list the parent too
        # when the level is empty.
        return self._call("list", "", self._run, self._fs._lsdir, path, True)

    async def _objects(self, below: str, limit: int | None) -> AsyncIterator[tuple[str, int]]:
        """``(map key, size)`` of every object strictly below map prefix ``below``."""
        prefix = self._full(below)[len(self._bucket) + 1 :]
        prefix = f"{prefix}/" if prefix else ""
        cut = len(self._path) + 1
        listing = self._fs._iterdir(self._bucket, delimiter="", prefix=prefix, max_items=limit)
        async for entry in listing:
            name = entry["name"][cut:]
            if name and not name.endswith("/"):  # skip "directory marker" objects
                yield name, int(entry["size"])

    def _stream(self, below: str = "", limit: int | None = None) -> Iterator[tuple[str, int]]:
        """Drive :meth:`_objects` from synchronous code, one listing page per call."""
        agen = self._objects(below, limit).__aiter__()

        async def page() -> list[tuple[str, int]]:
            out: list[tuple[str, int]] = []
            try:
                while len(out) < PAGE:
                    out.append(await agen.__anext__())
            except StopAsyncIteration:
                pass
            except Exception as exc:
                raise self._failure(exc, "list", below, missing=False) from exc
            return out

        try:
            while True:
                batch = self._run(page)
                yield from batch
                if len(batch) < PAGE:
                    return
        finally:
            with contextlib.suppress(Exception):  # abandoned early: release the listing
                self._run(agen.aclose)

    def _entries(self, prefix: str) -> Iterator[tuple[str, int]]:
        """The listing below ``prefix``, page by page; then, only if it was empty (a key
        with keys below it holds no content), the object ``prefix`` itself (a HEAD)."""
        empty = True
        for entry in self._stream(prefix):
            empty = False
            yield entry
        head = self._head(prefix) if prefix and empty else None
        if head is not None:
            yield prefix, int(head["ContentLength"])

    def _has_children(self, key: str) -> bool:
        return any(True for _ in self._stream(key, limit=1))  # one LIST, MaxKeys=1

    def _clear_all(self) -> None:
        """Delete every object under the root, a listing page per ``DeleteObjects``."""
        while paths := [self._full(name) for name, _ in self._stream(limit=PAGE)]:
            deleted = self._call("delete", "", self._run, self._fs._bulk_delete, paths)
            if len(deleted) < len(paths):  # s3fs reports successes only
                left = sorted(set(paths) - set(deleted))
                raise StorageError(
                    f"could not delete s3://{left[0]}{self._at()} "
                    f"({len(left)} of {len(paths)} objects in one DeleteObjects call)"
                )
        self._tree.own_all()

    # ------------------------------------------------------------- server-side copy
    def copy_support(self, other: ZMap) -> CopySupport | None:
        """``"server"`` from an S3 map of the same service (:meth:`same_service`)."""
        return "server" if self.same_service(other) else None

    def same_service(self, other: object) -> bool:
        """Whether ``other`` is an S3Map on the same endpoint with the same credentials.

        Then :meth:`copy_from` can copy objects server-side (``CopyObject``).
        """
        return (
            isinstance(other, S3Map)
            and self._named == other._named
            and self._anon == other._anon
            and self._credentials == other._credentials
        )

    def copy_from(
        self,
        other: ZMap,
        src_key: str,
        dst_key: str,
        size: int | None = None,
        *,
        atomic: bool = True,
    ) -> int | None:
        """Copy ``other[src_key]`` to ``self[dst_key]``; return the bytes copied if known.

        One server-side ``CopyObject`` (no bytes through this process) when
        :meth:`same_service` holds and ``size`` (from a listing) is at most 5 GB; s3fs's
        own copy (a HEAD, then a single or multipart copy) when ``size`` is unknown or
        larger. Otherwise a GET from ``other`` and a PUT here. Missing ``src_key`` raises
        ``KeyError(src_key)``. Every copy is atomic (``atomic`` changes nothing).
        """
        src, dst = normalize_key(src_key), normalize_key(dst_key)
        self._check_writable(dst)
        if not isinstance(other, S3Map) or not self.same_service(other):
            data = other[src]
            self[dst] = data
            return len(data)
        if not self._trusted:
            self._check_leaf_rule(dst)
        basic = size is not None and size <= COPY_LIMIT
        copy = self._fs._copy_basic if basic else self._fs._cp_file
        try:
            self._run(copy, other._full(src), self._full(dst))
        except Exception as exc:
            failure = self._failure(exc, "copy", dst)
            if isinstance(failure, KeyError):
                raise KeyError(src) from None
            raise failure from exc
        self._tree.wrote(dst)
        return size

    # ------------------------------------------------------------- identity & lifecycle
    def _settings(self) -> dict[str, Any]:
        """Every constructor keyword that reopens this map (credentials included)."""
        named = {**self._named, "anon": self._anon}
        return {**{k: v for k, v in named.items() if v not in (None, False)}, **self._options}

    def _describe(self) -> tuple[str, dict[str, Any]]:
        return self._where(), split_secrets(self._settings())[0]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, S3Map):
            return NotImplemented
        return ZMap.__eq__(self, other) and self.same_service(other)

    __hash__ = ZMap.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        mode = "r+" if self._mode in ("w", "w-") else self._mode
        return (_reopen_s3, (self._where(), mode, self._settings()))

    def close(self) -> None:
        """Close the map, and its HTTP connections unless other maps share them
        (:mod:`nczarr.maps.s3session`)."""
        if self._closed:
            return
        super().close()
        if self._shared:
            return
        with contextlib.suppress(Exception):  # closing a pool must not mask the caller's work
            self._run(self._fs.s3.close)


def _reopen_s3(location: str, mode: str, settings: dict[str, Any]) -> S3Map:
    return S3Map(location, mode=mode, **settings)


def open_url(url: NCZarrURL, mode: str, storage_options: dict[str, Any]) -> S3Map:
    """The map an ``s3`` URL names (the registry's opener, :mod:`nczarr.maps.open`):
    the URL's endpoint, region and profile, overridden by ``storage_options``."""
    location = f"s3://{url.bucket}/{url.path}" if url.path else f"s3://{url.bucket}"
    options: dict[str, Any] = {
        name: value
        for name, value in (
            ("endpoint_url", url.endpoint),
            ("region", url.region),
            ("profile", url.profile),
        )
        if value is not None
    }
    options.update(storage_options)
    return S3Map(location, mode, **options)
