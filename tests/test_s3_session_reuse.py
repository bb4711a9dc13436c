"""S3 maps with the same settings share one aiobotocore session and S3 client in a
process (``nczarr/maps/s3session.py``); other settings, credentials (explicit or from
the environment) or processes get their own; closing one map leaves the others
working. Against moto's server on 127.0.0.1; credentials are seen in the requests'
``Authorization`` headers, as the server receives them.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from nczarr.errors import StorageNotFoundError
from nczarr.maps.s3 import S3Map

from .faultproxy import FaultProxy


@pytest.fixture
def url(s3_bucket: str) -> str:
    return f"s3://{s3_bucket}/r{uuid.uuid4().hex[:6]}"


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_endpoint) as p:
        yield p


def _signed_keys(m: S3Map) -> list[str]:
    """Access key ids of every request ``m``'s client signs from now on."""
    seen: list[str] = []

    def hook(request: Any, **_: Any) -> None:
        auth = str(request.headers.get("Authorization", ""))
        seen.append(auth.split("Credential=", 1)[-1].split("/", 1)[0])

    m.fs.s3.meta.events.register("before-send.s3", hook)
    return seen


def test_maps_with_the_same_settings_share_one_session_and_client(
    url: str, s3_endpoint: str
) -> None:
    with S3Map(url, mode="w", endpoint_url=s3_endpoint) as first:
        first["k"] = b"v"
        second = S3Map(url, mode="r", endpoint_url=s3_endpoint)
        assert second["k"] == b"v"
        assert second.fs is first.fs
        assert second.fs.session is first.fs.session
        assert second.fs.s3 is first.fs.s3  # one client, one connection pool
        # a pickled map (what a dask worker gets) reopens onto the same client here
        third = pickle.loads(pickle.dumps(second))
        assert third.fs.s3 is first.fs.s3 and third["k"] == b"v"


def test_other_endpoint_or_credentials_get_another_client(
    url: str, s3_endpoint: str, proxy: FaultProxy
) -> None:
    base = S3Map(url, mode="w", endpoint_url=s3_endpoint)
    base["k"] = b"v"
    via_proxy = S3Map(url, mode="r", endpoint_url=proxy.endpoint)
    keyed = S3Map(url, mode="r", endpoint_url=s3_endpoint, key="other", secret="x")
    assert len({id(m.fs) for m in (base, via_proxy, keyed)}) == 3
    assert len({id(m.fs.session) for m in (base, via_proxy, keyed)}) == 3
    proxy.reset_counts()
    assert via_proxy["k"] == b"v"
    assert proxy.counts["GetObject"] == 1  # its own endpoint
    signed = _signed_keys(keyed)
    assert keyed["k"] == b"v"
    assert signed == ["other"]  # its own credentials


def test_credentials_from_the_environment_are_read_again_when_they_change(
    url: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = S3Map(url, mode="w", endpoint_url=s3_endpoint)
    before["k"] = b"v"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "rotated")
    after = S3Map(url, mode="r", endpoint_url=s3_endpoint)
    assert after.fs is not before.fs
    signed = _signed_keys(after)
    assert after["k"] == b"v"
    assert signed == ["rotated"]


def test_closing_one_map_leaves_the_others_working(url: str, s3_endpoint: str) -> None:
    writer = S3Map(url, mode="w", endpoint_url=s3_endpoint)
    writer["a/k"] = b"1"
    reader = S3Map(url, mode="r", endpoint_url=s3_endpoint)
    assert reader.fs is writer.fs
    writer.close()
    assert reader["a/k"] == b"1"
    assert reader.getitems(["a/k", "nope"]) == {"a/k": b"1"}
    assert reader.search("") == ["a"]
    reader.close()
    again = S3Map(url, mode="r", endpoint_url=s3_endpoint)
    assert again.fs is writer.fs and again["a/k"] == b"1"


def test_skip_instance_cache_gives_a_map_its_own_client_closed_with_it(
    url: str, s3_endpoint: str
) -> None:
    shared = S3Map(url, mode="w", endpoint_url=s3_endpoint)
    shared["k"] = b"v"
    own = S3Map(url, mode="r", endpoint_url=s3_endpoint, skip_instance_cache=True)
    assert own.fs is not shared.fs and own["k"] == b"v"
    sessions = own.fs.s3._endpoint.http_session._sessions
    own.close()
    assert all(s.closed for s in sessions.values())
    assert shared["k"] == b"v"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_builds_its_own_client_and_reads(url: str, s3_endpoint: str) -> None:
    parent = S3Map(url, mode="w", endpoint_url=s3_endpoint)
    parent["k"] = b"from the parent"
    assert parent["k"] == b"from the parent"  # the parent's client is in use
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # 3.12+: fork of a process with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's cleanup
        try:
            child = S3Map(url, mode="r", endpoint_url=s3_endpoint)
            own = child.fs is not parent.fs and child.fs.s3 is not parent.fs._s3
            os.write(write_end, b"own " if own else b"shared ")
            os.write(write_end, child["k"])
        except BaseException as exc:  # the parent shows it
            os.write(write_end, f"error {exc!r}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        got = pipe.read()
    os.waitpid(pid, 0)
    assert got == b"own from the parent"
    assert parent["k"] == b"from the parent"  # the parent's client still works


_READ_UNPICKLED = (
    "import pickle, sys; m = pickle.loads(sys.stdin.buffer.read()); "
    "sys.stdout.buffer.write(m['k'] + repr(m.fs is pickle.loads(pickle.dumps(m)).fs).encode())"
)


def test_a_map_unpickled_in_a_new_process_reads(url: str, s3_endpoint: str) -> None:
    """What a dask worker (another process) does with a map it is sent: it builds a
    client there, which the worker's next maps with those settings share."""
    m = S3Map(url, mode="w", endpoint_url=s3_endpoint)
    m["k"] = b"sent"
    run = subprocess.run(
        [sys.executable, "-c", _READ_UNPICKLED],
        input=pickle.dumps(m),
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert run.stdout == b"sentTrue"
    assert m["k"] == b"sent"


def test_one_head_bucket_for_many_read_opens_in_one_bucket(
    s3_bucket: str, s3_endpoint: str, proxy: FaultProxy, s3_client: Any
) -> None:
    for i in range(3):
        s3_client.put_object(Bucket=s3_bucket, Key=f"p{i}/k", Body=b"v")
    proxy.reset_counts()
    maps = [S3Map(f"s3://{s3_bucket}/p{i}", endpoint_url=proxy.endpoint) for i in range(3)]
    assert [m["k"] for m in maps] == [b"v"] * 3
    assert proxy.counts["HeadBucket"] == 1  # 3 on 5d4ff84
    # a map of other settings asks again; a bucket missing is still refused at its open
    S3Map(f"s3://{s3_bucket}/p0", endpoint_url=proxy.endpoint, skip_instance_cache=True)
    assert proxy.counts["HeadBucket"] == 2
    with pytest.raises(StorageNotFoundError, match="no such bucket 'not-there'"):
        S3Map("s3://not-there/p", endpoint_url=proxy.endpoint)


def test_a_bucket_deleted_after_it_was_seen_is_named_by_the_first_read(
    s3_endpoint: str, s3_client: Any
) -> None:
    bucket = f"gone-{uuid.uuid4().hex[:8]}"
    s3_client.create_bucket(Bucket=bucket)
    s3_client.put_object(Bucket=bucket, Key="a/k", Body=b"v")
    assert S3Map(f"s3://{bucket}/a", endpoint_url=s3_endpoint)["k"] == b"v"
    s3_client.delete_object(Bucket=bucket, Key="a/k")
    s3_client.delete_bucket(Bucket=bucket)
    later = S3Map(f"s3://{bucket}/a", endpoint_url=s3_endpoint)  # no HeadBucket: known
    with pytest.raises(StorageNotFoundError, match=f"no such bucket '{bucket}'"):
        later["k"]
