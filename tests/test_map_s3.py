"""S3Map against a real S3 server (moto on 127.0.0.1): requests issued, objects landed, errors."""

from __future__ import annotations

import pickle
import socket
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nczarr.errors import (
    InvalidURLError,
    ObjectExistsError,
    ReadOnlyError,
    StorageError,
    StorageNotFoundError,
    StoragePermissionError,
)
from nczarr.maps.memory import MemoryMap
from nczarr.maps.s3 import S3Map, parse_s3_url

from .motoiam import iam_server

FAST_FAIL = {"retries": {"max_attempts": 1}, "connect_timeout": 2}


class Calls:
    """Records every S3 API call a map's client makes (a botocore ``before-call`` hook)."""

    def __init__(self, m: S3Map) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []
        m.fs.s3.meta.events.register("before-call.s3", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.log.append((model.name, dict(params.get("query_string", {}))))

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.log]

    def clear(self) -> None:
        self.log.clear()


@pytest.fixture
def url(s3_bucket: str) -> str:
    return f"s3://{s3_bucket}/root/ds"


@pytest.fixture
def m(url: str, s3_endpoint: str) -> Iterator[S3Map]:
    with S3Map(url, mode="w", endpoint_url=s3_endpoint) as store:
        yield store


def raw_objects(client: Any, bucket: str) -> dict[str, bytes]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


# --------------------------------------------------------------------------- URLs, import
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("s3://bucket", ("bucket", "")),
        ("s3://bucket/", ("bucket", "")),
        ("s3://bucket/a/b/", ("bucket", "a/b")),
        ("s3://my.bucket-1/x", ("my.bucket-1", "x")),
    ],
)
def test_parse_s3_url(url: str, expected: tuple[str, str]) -> None:
    assert parse_s3_url(url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///tmp/x", "not an S3 URL"),
        ("s3://", "invalid bucket name ''"),
        ("s3://b/x", "invalid bucket name 'b'"),
        ("s3://bucket/a/../b", "invalid key prefix in S3 URL 's3://bucket/a/../b'"),
        ("s3://bucket/a//b", "invalid key prefix"),
    ],
)
def test_invalid_urls(url: str, message: str) -> None:
    with pytest.raises(InvalidURLError, match=message.replace(".", r"\.")):
        S3Map(url)


def test_missing_s3fs_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)
    with pytest.raises(ImportError, match=r"pip install nczarr\[s3\]"):
        S3Map("s3://bucket/x")


# --------------------------------------------------------------------------- round trips
def test_objects_land_under_the_root_prefix(m: S3Map, s3_client: Any, s3_bucket: str) -> None:
    m[".zgroup"] = b'{"zarr_format": 2}'
    m["/g/v/0.0"] = bytearray(b"\x00\x01")
    m["sp ace/ü+%20/x"] = memoryview(b"odd")
    s3_client.put_object(Bucket=s3_bucket, Key="root/dsX/outside", Body=b"no")
    assert raw_objects(s3_client, s3_bucket) == {
        "root/ds/.zgroup": b'{"zarr_format": 2}',
        "root/ds/g/v/0.0": b"\x00\x01",
        "root/ds/sp ace/ü+%20/x": b"odd",
        "root/dsX/outside": b"no",
    }
    assert sorted(m) == [".zgroup", "g/v/0.0", "sp ace/ü+%20/x"]
    assert len(m) == 3
    assert m.search("") == [".zgroup", "g", "sp ace"]
    assert m.search("sp ace") == ["ü+%20"]
    assert m["sp ace/ü+%20/x"] == b"odd"
    assert list(m.keys_below("g")) == ["g/v/0.0"]


def test_bucket_root_map(s3_bucket: str, s3_endpoint: str, s3_client: Any) -> None:
    with S3Map(f"s3://{s3_bucket}", mode="a", endpoint_url=s3_endpoint) as m:
        m["a/b"] = b"1"
        assert m.url == f"s3://{s3_bucket}"
        assert m.search("/") == ["a"]
    assert raw_objects(s3_client, s3_bucket) == {"a/b": b"1"}


def test_missing_key_is_keyerror_naming_the_key(m: S3Map) -> None:
    m["a/x"] = b"1"
    for action in (m.__getitem__, m.getsize, m.__delitem__, lambda k: m.getrange(k, 0, 1)):
        with pytest.raises(KeyError) as info:
            action("a/missing")
        assert info.value.args == ("a/missing",)
    assert "a/missing" not in m
    assert "a" not in m  # a "directory" holds no content


# --------------------------------------------------------------------------- request counts
def test_search_is_one_delimited_list_at_that_level(m: S3Map) -> None:
    m.setitems({f"g/v{i}/{j}.0": b"x" for i in range(4) for j in range(5)} | {"g/.zgroup": b"{}"})
    calls = Calls(m)
    assert m.search("g") == [".zgroup", "v0", "v1", "v2", "v3"]
    # one request, at that level only: nothing below g/ is listed
    assert calls.log == [
        ("ListObjectsV2", {"prefix": "root/ds/g/", "delimiter": "/", "encoding-type": "url"})
    ]


def test_search_follows_pagination(m: S3Map, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"c{i:02d}" for i in range(7)]
    m.setitems({f"{n}/k": b"" for n in names} | {"leaf": b"1"})
    monkeypatch.setenv("MOTO_S3_DEFAULT_MAX_KEYS", "3")  # the in-process server pages by 3
    calls = Calls(m)
    assert m.search("") == [*names, "leaf"]
    assert calls.names == ["ListObjectsV2"] * 3
    assert sorted(m) == sorted([f"{n}/k" for n in names] + ["leaf"])


def test_exists_is_a_head_and_getrange_a_ranged_get(m: S3Map) -> None:
    m["v/0"] = b"0123456789"
    ranges: list[str | None] = []
    m.fs.s3.meta.events.register(
        "provide-client-params.s3.GetObject", lambda params, **_: ranges.append(params.get("Range"))
    )
    calls = Calls(m)
    assert "v/0" in m
    assert m.getsize("v/0") == 10
    assert calls.names == ["HeadObject", "HeadObject"]
    calls.clear()
    assert m.getrange("v/0", 2, 3) == b"234"
    assert m.getrange("v/0", 7) == b"789"
    assert m.getrange("v/0", -4) == b"6789"
    assert m.getrange("v/0", 20) == b""
    assert ranges[:3] == ["bytes=2-4", "bytes=7-", "bytes=-4"]
    assert m.getrange("v/0", -4, 2) == b"67"
    assert m.getrange("v/0", 3, 0) == b""


def test_getitems_is_concurrent_and_omits_missing(m: S3Map) -> None:
    m.setitems({f"v/{i}": str(i).encode() for i in range(40)})
    calls = Calls(m)
    wanted = [f"v/{i}" for i in range(0, 45)]
    got = m.getitems(wanted)
    assert got == {f"v/{i}": str(i).encode() for i in range(40)}
    assert calls.names == ["GetObject"] * 45
    assert m.getitems([]) == {}


def test_chunk_writes_into_a_store_the_map_created_cost_one_put(m: S3Map) -> None:
    # m was opened with "w": every object under the root is one it wrote, so once the
    # array's directory is known a chunk costs its PUT and nothing else
    m["g/v/.zarray"] = b"{}"
    calls = Calls(m)
    m["g/v/0.1"] = b"x"
    m["g/v/0.2"] = b"y"
    assert calls.names == ["PutObject", "PutObject"]
    # ... but the leaf rule still holds against what it wrote
    with pytest.raises(ObjectExistsError, match=r"'g/v/0\.1' holds content"):
        m["g/v/0.1/x"] = b"z"
    with pytest.raises(ObjectExistsError, match="prefix of existing keys"):
        m["g/v"] = b"z"


def test_chunk_writes_into_an_existing_store_cost_one_list_and_one_put(m: S3Map) -> None:
    m["g/v/.zarray"] = b"{}"
    # a map opened on existing content does not know who wrote what: one LIST below
    # the key, and one HEAD per ancestor it has not seen yet, issued with the LIST
    other = S3Map(m.url, mode="r+", endpoint_url=m.fs.endpoint_url)
    calls = Calls(other)
    other["g/v/0.3"] = b"z"
    assert sorted(calls.names) == ["HeadObject", "HeadObject", "ListObjectsV2", "PutObject"]
    calls.clear()
    other["g/v/0.4"] = b"z"
    assert calls.names == ["ListObjectsV2", "PutObject"]
    # prefixes a search has seen are known too (a reader-writer walks the tree first)
    third = S3Map(m.url, mode="r+", endpoint_url=m.fs.endpoint_url)
    assert third.search("g") == ["v"]
    calls = Calls(third)
    third["g/v/0.5"] = b"z"
    assert calls.names == ["ListObjectsV2", "PutObject"]
    # a writer that vouches for its keys (a converter into a target it verified
    # empty) skips the probes
    calls.clear()
    with third.trusted_writes():
        third["g/v/0.6"] = b"z"
        third.setitems({"g/v/0.7": b"z", "g/v/0.8": b"z"})
    assert calls.names == ["PutObject"] * 3
    calls.clear()
    third["g/v/0.9"] = b"z"
    assert calls.names == ["ListObjectsV2", "PutObject"]


def test_leaf_rule(m: S3Map, s3_client: Any, s3_bucket: str) -> None:
    m["a/b"] = b"1"
    with pytest.raises(ObjectExistsError, match=r"cannot write 'a/b/c': 'a/b' holds content"):
        m["a/b/c"] = b"2"
    with pytest.raises(ObjectExistsError, match=r"cannot write 'a': it is a prefix .*'a/b'"):
        m["a"] = b"2"
    with pytest.raises(ObjectExistsError, match=r"'x/y' and 'x'"):
        m.setitems({"x": b"1", "x/y": b"2"})
    with pytest.raises(ObjectExistsError, match=r"'a/b' holds content"):
        m.setitems({"fine": b"1", "a/b/c": b"2"})
    assert raw_objects(s3_client, s3_bucket) == {"root/ds/a/b": b"1"}
    # once a/b is deleted, a may become content again (the memory of "directories" is dropped)
    del m["a/b"]
    m["a"] = b"3"
    with pytest.raises(ObjectExistsError, match=r"'a' holds content"):
        m["a/c"] = b"4"


def test_leaf_rule_holds_after_deletes_in_a_tree_the_map_wrote(m: S3Map) -> None:
    # m wrote everything under its root, but a delete leaves "a" with or without keys
    m["a/b"] = b"1"
    m["a/c"] = b"1"
    del m["a/b"]
    with pytest.raises(ObjectExistsError, match=r"cannot write 'a': it is a prefix .*'a/c'"):
        m["a"] = b"2"
    with pytest.raises(ObjectExistsError, match=r"cannot write 'a': it is a prefix .*'a/c'"):
        m.setitems({"a": b"2"})
    del m["a/c"]
    m["a"] = b"2"
    assert list(m) == ["a"]


# --------------------------------------------------------------------------- no stale listings
def test_listings_are_never_stale(m: S3Map, url: str, s3_endpoint: str) -> None:
    assert m.search("g") == []
    m["g/a"] = b"1"
    assert m.search("g") == ["a"]
    assert m.search("") == ["g"]
    m["g/b/c"] = b"2"
    assert m.search("g") == ["a", "b"]
    del m["g/a"]
    assert m.search("g") == ["b"]
    del m["g/b/c"]
    assert m.search("g") == []
    assert m.search("") == []
    assert list(m) == []
    # a second map on the same prefix sees the first one's writes and deletes at once
    other = S3Map(url, mode="r", endpoint_url=s3_endpoint)
    m["h/x"] = b"1"
    assert other.search("") == ["h"]
    del m["h/x"]
    assert other.search("") == []
    assert len(other) == 0


# --------------------------------------------------------------------------- modes
def test_modes(url: str, s3_endpoint: str, s3_client: Any, s3_bucket: str) -> None:
    s3_client.put_object(Bucket=s3_bucket, Key="root/ds/old", Body=b"1")
    s3_client.put_object(Bucket=s3_bucket, Key="root/dsX/keep", Body=b"2")
    with pytest.raises(ObjectExistsError, match=r"cannot create s3://.*/root/ds with mode 'w-'"):
        S3Map(url, mode="w-", endpoint_url=s3_endpoint)
    ro = S3Map(url, mode="r", endpoint_url=s3_endpoint)
    assert ro["old"] == b"1"
    with pytest.raises(ReadOnlyError, match=r"cannot write 'new' to S3Map\('s3://"):
        ro["new"] = b"x"
    with pytest.raises(ReadOnlyError):
        del ro["old"]
    with pytest.raises(ReadOnlyError):
        ro.clear()
    S3Map(url, mode="w", endpoint_url=s3_endpoint).close()
    assert raw_objects(s3_client, s3_bucket) == {"root/dsX/keep": b"2"}
    fresh = S3Map(f"s3://{s3_bucket}/other", mode="w-", endpoint_url=s3_endpoint)
    fresh["k"] = b"v"
    assert raw_objects(s3_client, s3_bucket)["other/k"] == b"v"


def test_w_clears_more_than_one_page(
    url: str, s3_endpoint: str, s3_client: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = S3Map(url, mode="a", endpoint_url=s3_endpoint)
    m.setitems({f"k{i}": b"" for i in range(7)})
    monkeypatch.setenv("MOTO_S3_DEFAULT_MAX_KEYS", "3")
    S3Map(url, mode="w", endpoint_url=s3_endpoint)
    assert raw_objects(s3_client, s3_bucket) == {}


def test_write_modes_create_a_missing_bucket(s3_endpoint: str, s3_client: Any) -> None:
    bucket = f"new-{uuid.uuid4().hex[:12]}"
    with S3Map(f"s3://{bucket}/r", mode="a", endpoint_url=s3_endpoint) as m:
        m["k"] = b"v"
    assert raw_objects(s3_client, bucket) == {"r/k": b"v"}


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("mode", ["r", "r+"])
def test_missing_bucket_is_storage_not_found(s3_endpoint: str, mode: str) -> None:
    bucket = f"absent-{uuid.uuid4().hex[:12]}"
    with pytest.raises(StorageNotFoundError, match=rf"no such bucket '{bucket}'") as info:
        S3Map(f"s3://{bucket}/x", mode=mode, endpoint_url=s3_endpoint)
    assert isinstance(info.value, FileNotFoundError)
    assert not isinstance(info.value, KeyError)


def test_bucket_deleted_after_open(s3_endpoint: str, s3_client: Any) -> None:
    bucket = f"gone-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=bucket)
    m = S3Map(f"s3://{bucket}/x", mode="r", endpoint_url=s3_endpoint)
    s3_client.delete_bucket(Bucket=bucket)
    with pytest.raises(StorageNotFoundError, match=rf"no such bucket '{bucket}'"):
        m["k"]
    with pytest.raises(StorageNotFoundError, match=rf"no such bucket '{bucket}'"):
        m.search("")
    with pytest.raises(StorageNotFoundError):
        m.getitems(["a", "b"])


def test_refused_connection_is_storage_error(url: str) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StorageError, match=rf"127\.0\.0\.1:{port}") as info:
        S3Map(url, endpoint_url=f"http://127.0.0.1:{port}", config_kwargs=FAST_FAIL)
    assert not isinstance(info.value, KeyError | PermissionError | FileNotFoundError)


def test_network_error_after_open_is_storage_error_not_keyerror(url: str, s3_endpoint: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = S3Map(url, mode="r", endpoint_url=s3_endpoint, config_kwargs=FAST_FAIL)
    m.fs.s3.meta.events.register(  # the server "goes away": requests now hit a dead port
        "before-sign.s3",
        lambda request, **_: setattr(
            request, "url", request.url.replace(s3_endpoint, f"http://127.0.0.1:{port}")
        ),
    )
    for action in (lambda: m["k"], lambda: "k" in m, lambda: m.search("")):
        with pytest.raises(StorageError, match="Could not connect"):
            action()


@pytest.fixture(scope="module")
def locked_server() -> Iterator[dict[str, str]]:
    """A separate moto server (own process) enforcing IAM: a user denied s3:GetObject on
    ``locked/root/secret/*``, plus the bucket's objects. Returns endpoint and the user's keys."""

    def setup(s3: Any) -> None:
        s3.create_bucket(Bucket="locked")
        s3.put_object(Bucket="locked", Key="root/secret/x", Body=b"1")
        s3.put_object(Bucket="locked", Key="root/open", Body=b"2")

    secret = {
        "Effect": "Deny",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::locked/root/secret/*",
    }
    with iam_server(setup, secret) as server:
        yield server


def test_access_denied_is_storage_permission_error(locked_server: dict[str, str]) -> None:
    m = S3Map(
        "s3://locked/root",
        endpoint_url=locked_server["endpoint"],
        key=locked_server["key"],
        secret=locked_server["secret"],
    )
    assert m["open"] == b"2"
    with pytest.raises(StoragePermissionError, match=r"s3://locked/root/secret/x.*AccessDenied"):
        m["secret/x"]
    with pytest.raises(StoragePermissionError, match=r"s3://locked/root/secret/x"):
        m.getitems(["open", "secret/x"])
    assert locked_server["secret"] not in repr(m) + m.url + str(m._describe())


def test_unknown_credentials_are_storage_permission_error(locked_server: dict[str, str]) -> None:
    with pytest.raises(StoragePermissionError, match=r"access denied to s3://locked/root .*403"):
        S3Map(
            "s3://locked/root",
            mode="a",
            endpoint_url=locked_server["endpoint"],
            key="AKIANOTAREALKEY",
            secret="nope",
        )
    m = S3Map(
        "s3://locked/root",
        mode="r",  # readers defer a refused HeadBucket to the object requests
        endpoint_url=locked_server["endpoint"],
        key="AKIANOTAREALKEY",
        secret="nope",
    )
    with pytest.raises(StoragePermissionError, match=r"s3://locked/root/open.*InvalidAccessKeyId"):
        m["open"]
    with pytest.raises(StoragePermissionError, match=r"access denied to s3://locked/root/open"):
        m.getsize("open")  # a HEAD: a 403 without a body is still not a KeyError


# --------------------------------------------------------------------------- identity
def test_describe_and_repr_never_hold_secrets(s3_bucket: str, s3_endpoint: str) -> None:
    m = S3Map(
        f"s3://{s3_bucket}/p",
        mode="w",
        endpoint_url=s3_endpoint,
        region="us-east-1",
        key="testing",
        secret="testing-secret-value",
        client_kwargs={"aws_session_token": "tok-value"},
        config_kwargs=FAST_FAIL,
    )
    location, options = m._describe()
    assert location == f"s3://{s3_bucket}/p"
    assert options == {
        "endpoint_url": s3_endpoint,
        "region": "us-east-1",
        "config_kwargs": FAST_FAIL,
    }
    shown = repr(m) + m.url + repr(options)
    assert "testing-secret-value" not in shown
    assert "tok-value" not in shown
    assert repr(m) == f"S3Map('s3://{s3_bucket}/p', mode='w')"


def test_pickle_reopens_with_options_and_credentials(url: str, s3_endpoint: str) -> None:
    m = S3Map(url, mode="w", endpoint_url=s3_endpoint, key="testing", secret="testing")
    m["a/b"] = b"1"
    back = pickle.loads(pickle.dumps(m))
    assert back.mode == "r+"  # unpickling never truncates
    assert back["a/b"] == b"1"
    assert back._describe() == m._describe()
    assert back.same_service(m)
    ro = pickle.loads(pickle.dumps(S3Map(url, mode="r", endpoint_url=s3_endpoint)))
    assert ro.read_only and ro == S3Map(url, mode="r", endpoint_url=s3_endpoint)
    assert ro.search("") == ["a"]


def test_profile_and_region_are_passed_on(url: str, s3_endpoint: str) -> None:
    m = S3Map(url, mode="r", endpoint_url=s3_endpoint, region="eu-west-3")
    assert m.fs.s3.meta.region_name == "eu-west-3"
    assert m._describe()[1]["region"] == "eu-west-3"
    with pytest.raises(StorageError, match="nosuchprofile"):
        S3Map(url, mode="r", endpoint_url=s3_endpoint, profile="nosuchprofile")


def test_anonymous_reader(m: S3Map, s3_endpoint: str, s3_client: Any) -> None:
    m["public"] = b"for all"
    m["private"] = b"for owners"
    s3_client.put_object_acl(Bucket=m.bucket, Key="root/ds/public", ACL="public-read")
    # unsigned requests: HeadBucket is refused, which a reader defers to the objects
    anon = S3Map(m.url, mode="r", endpoint_url=s3_endpoint, anon=True)
    assert anon["public"] == b"for all"
    with pytest.raises(StoragePermissionError, match=r"access denied to s3://.*/root/ds/private"):
        anon["private"]
    assert anon._describe()[1] == {"endpoint_url": s3_endpoint, "anon": True}
    assert not anon.same_service(m)


# --------------------------------------------------------------------------- server-side copy
def test_copy_from_same_service_is_a_copy_object(
    m: S3Map, s3_endpoint: str, s3_client: Any
) -> None:
    bucket2 = f"dst-{uuid.uuid4().hex[:12]}"
    m["src/v/0"] = b"chunk"
    dst = S3Map(f"s3://{bucket2}/out", mode="w", endpoint_url=s3_endpoint)
    assert dst.same_service(m) and m.same_service(dst)
    calls = Calls(dst)
    dst.copy_from(m, "src/v/0", "v/0")
    assert "CopyObject" in calls.names and "GetObject" not in calls.names
    assert raw_objects(s3_client, bucket2) == {"out/v/0": b"chunk"}
    with pytest.raises(KeyError) as info:
        dst.copy_from(m, "src/missing", "v/1")
    assert info.value.args == ("src/missing",)
    with pytest.raises(ObjectExistsError, match="'v/0' holds content"):
        dst.copy_from(m, "src/v/0", "v/0/x")


def test_copy_from_above_the_copy_limit_or_of_unknown_size_is_s3fs_copy(
    m: S3Map, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Objects over CopyObject's 5 GB limit (here: a limit of 3 bytes), or of unknown
    size, go through s3fs's own copy: a HEAD for the size, then a single or multipart
    copy; a size known to fit is one CopyObject."""
    import nczarr.maps.s3 as s3_module

    monkeypatch.setattr(s3_module, "COPY_LIMIT", 3)
    m["src/big"] = b"12345"
    m["src/small"] = b"12"
    calls = Calls(m)
    with m.trusted_writes():  # no leaf probes: only the copies' own requests
        assert m.copy_from(m, "src/big", "dst/big", 5) == 5
        assert calls.names == ["HeadObject", "CopyObject"]
        calls.clear()
        m.copy_from(m, "src/big", "dst/unknown")
        assert calls.names == ["HeadObject", "CopyObject"]
        calls.clear()
        m.copy_from(m, "src/small", "dst/small", 2)
        assert calls.names == ["CopyObject"]
    assert (m["dst/big"], m["dst/unknown"], m["dst/small"]) == (b"12345", b"12345", b"12")
    with pytest.raises(KeyError) as info:
        m.copy_from(m, "src/missing", "dst/x")
    assert info.value.args == ("src/missing",)


def test_copy_from_another_service_reads_and_writes(m: S3Map, s3_endpoint: str) -> None:
    source = MemoryMap({"a": b"1"})
    assert not m.same_service(source)
    assert not m.same_service(S3Map(m.url, endpoint_url=s3_endpoint, key="k2", secret="s2"))
    calls = Calls(m)
    m.copy_from(source, "a", "b/a")
    assert m["b/a"] == b"1"
    assert "PutObject" in calls.names and "CopyObject" not in calls.names
    ro = S3Map(m.url, mode="r", endpoint_url=s3_endpoint)
    with pytest.raises(ReadOnlyError):
        ro.copy_from(m, "b/a", "c")


# --------------------------------------------------------------------------- property
_segment = st.sampled_from(["a", "b", "c0", ".zarray", "0.1", "é"])
_keys = st.lists(st.lists(_segment, min_size=1, max_size=4).map("/".join), max_size=12)


def _leaf_consistent(keys: list[str]) -> dict[str, bytes]:
    chosen: dict[str, bytes] = {}
    for key in keys:
        clash = any(key == k or k.startswith(key + "/") or key.startswith(k + "/") for k in chosen)
        if not clash:
            chosen[key] = key.encode()
    return chosen


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keys=_keys)
def test_search_matches_a_model(keys: list[str], s3_bucket: str, s3_endpoint: str) -> None:
    content = _leaf_consistent(keys)
    m = S3Map(f"s3://{s3_bucket}/{uuid.uuid4().hex[:8]}", mode="w", endpoint_url=s3_endpoint)
    m.setitems(content)
    prefixes = {""} | {k.rsplit("/", i)[0] for k in content for i in range(1, 4) if "/" in k}
    for prefix in prefixes | set(content):
        below = prefix + "/" if prefix else ""
        expected = sorted({k[len(below) :].split("/")[0] for k in content if k.startswith(below)})
        assert m.search(prefix) == expected, prefix
    assert sorted(m) == sorted(content)
    assert m.getitems(list(content)) == content
