"""S3 under faults: a seeded fault-injecting TCP proxy in front of moto's server.

The proxy (``tests/faultproxy.py``) answers a share of requests with ``503 SlowDown``
or ``500``, resets connections before or after the server acted, and cuts response
bodies mid-stream. Reads, writes and converts must still give exactly the right
bytes, in bounded time; a fault that does not go away must end in a StorageError
naming the URL, not a hang or a wrong value. Counts of injected faults are asserted
so a test cannot pass by injecting nothing.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import nczarr
from nczarr.errors import StorageError
from nczarr.maps.s3 import S3Map

from .faultproxy import FaultProxy
from .sources import tree, zarr_source

#: Faster backoff than the default, same mechanism (botocore standard mode).
RETRIES = {"retries": {"mode": "standard", "max_attempts": 10}}


# fault injection through a proxy, seconds per test: the newest-Python CI run leaves
# these to the floor run
pytestmark = pytest.mark.long


@pytest.fixture
def objects(s3_endpoint: str, s3_bucket: str, s3_client: Any) -> dict[str, bytes]:
    """60 objects of 1-40 KB under ``root/`` (written without the proxy)."""
    rng = __import__("random").Random(7)
    out = {f"v/{i}.0": os.urandom(rng.randint(1000, 40_000)) for i in range(60)}
    for key, value in out.items():
        s3_client.put_object(Bucket=s3_bucket, Key=f"root/{key}", Body=value)
    return out


def _proxy(s3_endpoint: str, rate: float, seed: int, faults: tuple[str, ...] | None = None):
    kwargs = {} if faults is None else {"faults": faults}
    return FaultProxy(s3_endpoint, rate=rate, seed=seed, **kwargs)


def test_reads_survive_every_kind_of_fault(
    objects: dict[str, bytes], s3_endpoint: str, s3_bucket: str
) -> None:
    start = time.monotonic()
    with _proxy(s3_endpoint, 0.3, 1) as proxy:
        m = S3Map(f"s3://{s3_bucket}/root", endpoint_url=proxy.endpoint, config_kwargs=RETRIES)
        for key, value in objects.items():
            assert m[key] == value, key
        assert m.getitems(list(objects)) == objects
        assert m.getrange("v/3.0", 10, 100) == objects["v/3.0"][10:110]
        assert sorted(m) == sorted(objects)
        assert m.search("v") == sorted(k.split("/")[1] for k in objects)
        injected = sum(proxy.injected.values())
    assert injected >= 30, proxy.injected
    assert set(proxy.injected) == {"503", "500", "reset", "lost", "truncate"}
    assert time.monotonic() - start < 120


def test_truncated_bodies_are_retried(
    objects: dict[str, bytes], s3_endpoint: str, s3_bucket: str
) -> None:
    # issue 8, item 11: bodies cut mid-stream used to fail 22 of 50 GETs at 30%
    with _proxy(s3_endpoint, 0.3, 3, ("truncate",)) as proxy:
        m = S3Map(f"s3://{s3_bucket}/root", endpoint_url=proxy.endpoint, config_kwargs=RETRIES)
        for key, value in objects.items():
            assert m[key] == value, key
        assert m.getitems(list(objects)) == objects
    assert proxy.injected["truncate"] >= 20
    assert proxy.counts["GetObject"] == 120 + proxy.injected["truncate"]  # one retry each


def test_writes_survive_faults(s3_endpoint: str, s3_bucket: str, s3_client: Any) -> None:
    data = {f"w/{i}": os.urandom(5000 + i) for i in range(30)}
    with _proxy(s3_endpoint, 0.3, 4) as proxy:
        m = S3Map(
            f"s3://{s3_bucket}/out", mode="w", endpoint_url=proxy.endpoint, config_kwargs=RETRIES
        )
        for key, value in list(data.items())[:15]:
            m[key] = value
        m.setitems(dict(list(data.items())[15:]))
        del m["w/0"]
        m.clear()
        m.setitems(data)
    assert sum(proxy.injected.values()) >= 12, proxy.injected
    got = {
        o["Key"].removeprefix("out/"): s3_client.get_object(Bucket=s3_bucket, Key=o["Key"])[
            "Body"
        ].read()
        for o in s3_client.list_objects_v2(Bucket=s3_bucket, Prefix="out/")["Contents"]
    }
    assert got == data


def test_converts_survive_faults(tmp_path: Path, s3_endpoint: str, s3_bucket: str) -> None:
    src, _ = zarr_source(tmp_path / "src", 30, nested=4)
    expected = tmp_path / "expected"
    nczarr.convert(str(src), str(expected), mode="nczarr")
    options = {"config_kwargs": RETRIES}
    with _proxy(s3_endpoint, 0.1, 5) as proxy:
        on_s3 = f"{proxy.endpoint}/{s3_bucket}/c1#mode=zarr,s3"
        nczarr.convert(str(src), on_s3, target_options=options)  # file -> S3
        again = f"{proxy.endpoint}/{s3_bucket}/c2#mode=nczarr,s3"
        nczarr.convert(on_s3, again, source_options=options, target_options=options)  # S3 -> S3
        back = tmp_path / "back"
        nczarr.convert(again, str(back), source_options=options)  # S3 -> directory
    assert sum(proxy.injected.values()) >= 20, proxy.injected
    assert tree(back) == tree(expected)


def test_a_fault_that_persists_is_a_storage_error_in_bounded_time(
    objects: dict[str, bytes], s3_endpoint: str, s3_bucket: str
) -> None:
    start = time.monotonic()
    with _proxy(s3_endpoint, 0.0, 6, ("503",)) as proxy:
        m = S3Map(
            f"s3://{s3_bucket}/root",
            endpoint_url=proxy.endpoint,
            config_kwargs={"retries": {"mode": "standard", "max_attempts": 2}},
        )
        proxy.rate = 1.0  # from now on S3 throttles every request
        with pytest.raises(StorageError, match=rf"s3://{s3_bucket}/root/v/1\.0.*SlowDown"):
            m["v/1.0"]
    assert time.monotonic() - start < 30
    assert proxy.counts["GetObject"] >= 2  # retried, then gave up


def test_retry_configuration_is_botocore_s3fs_option(s3_endpoint: str, s3_bucket: str) -> None:
    m = S3Map(f"s3://{s3_bucket}/{uuid.uuid4().hex[:6]}", mode="a", endpoint_url=s3_endpoint)
    # botocore's max_attempts counts retries: 10 retries, 11 attempts in all
    assert m.fs.s3.meta.config.retries == {"mode": "standard", "total_max_attempts": 11}
    assert m.fs.retries == 10  # s3fs's own loop (cut bodies) tries as often
    adaptive = {"retries": {"mode": "adaptive", "max_attempts": 4}}
    m2 = S3Map(m.url, mode="r", endpoint_url=s3_endpoint, config_kwargs=adaptive)
    assert m2.fs.s3.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 5}
    assert m2._describe()[1]["config_kwargs"] == adaptive  # and it pickles with the map
