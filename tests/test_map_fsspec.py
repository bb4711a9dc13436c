"""FsspecMap over real fsspec filesystems: memory://, file://, s3:// (moto), http:// (read-only)."""

from __future__ import annotations

import functools
import http.server
import os
import pickle
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from nczarr.errors import (
    ObjectExistsError,
    ReadOnlyError,
    StorageNotFoundError,
    StoragePermissionError,
)
from nczarr.maps.fsspec import FsspecMap


@pytest.fixture(params=["memory", "file"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "file":
        yield f"file://{tmp_path / 'store'}"
        return
    name = f"memory://nczarr-test-{uuid.uuid4().hex[:12]}"
    yield name
    fs = fsspec.filesystem("memory")
    if fs.exists(name):
        fs.rm(name, recursive=True)


def physical(url: str) -> dict[str, bytes]:
    """What the filesystem holds below ``url``, read with fsspec itself (files only)."""
    fs, root = fsspec.core.url_to_fs(url)
    if not fs.exists(root):
        return {}
    return {p[len(root) + 1 :]: fs.cat_file(p) for p in fs.find(root)}


def directories(url: str) -> list[str]:
    fs, root = fsspec.core.url_to_fs(url)
    found = fs.find(root, withdirs=True, detail=True)
    return sorted(
        p[len(root) + 1 :]
        for p, i in found.items()
        if i["type"] == "directory" and p.rstrip("/") != root
    )


def test_round_trip_and_what_landed(where: str) -> None:
    m = FsspecMap(where, mode="w")
    m[".zgroup"] = b"{}"
    m["/g/v/0.0"] = bytearray(b"\x01\x02")
    m["g/v/.zarray"] = memoryview(b"[]")
    assert physical(where) == {".zgroup": b"{}", "g/v/0.0": b"\x01\x02", "g/v/.zarray": b"[]"}
    assert m["g/v/0.0"] == b"\x01\x02"
    assert sorted(m) == [".zgroup", "g/v/.zarray", "g/v/0.0"]
    assert len(m) == 3
    assert m.search("") == [".zgroup", "g"]
    assert m.search("/g/") == ["v"]
    assert m.search("g/v") == [".zarray", "0.0"]
    assert m.search("g/v/0.0") == []  # a leaf has no children
    assert m.search("nope") == []
    assert sorted(m.keys_below("g")) == ["g/v/.zarray", "g/v/0.0"]
    assert m.getsize("g/v/0.0") == 2
    assert m.getitems(["g/v/0.0", "missing", ".zgroup"]) == {
        "g/v/0.0": b"\x01\x02",
        ".zgroup": b"{}",
    }


def test_ranges(where: str) -> None:
    m = FsspecMap(where, mode="w")
    m["k"] = b"0123456789"
    assert m.getrange("k", 2, 3) == b"234"
    assert m.getrange("k", 7) == b"789"
    assert m.getrange("k", -4) == b"6789"
    assert m.getrange("k", -4, 2) == b"67"
    assert m.getrange("k", 20) == b""
    assert m.getrange("k", 3, 0) == b""
    with pytest.raises(KeyError) as info:
        m.getrange("nope", 0, 1)
    assert info.value.args == ("nope",)


def test_missing_keys_and_directories_are_keyerror(where: str) -> None:
    m = FsspecMap(where, mode="w")
    m["g/v/0.0"] = b"x"
    for missing in ("nope", "g", "g/v", "g/v/0.0/below"):
        for action in (m.__getitem__, m.getsize, m.__delitem__):
            with pytest.raises(KeyError) as info:
                action(missing)
            assert info.value.args == (missing,)
        assert missing not in m


def test_leaf_rule(where: str) -> None:
    m = FsspecMap(where, mode="w")
    m["a/b"] = b"1"
    with pytest.raises(ObjectExistsError, match=r"cannot write 'a/b/c': 'a/b' holds content"):
        m["a/b/c"] = b"2"
    with pytest.raises(ObjectExistsError, match=r"cannot write 'a': it is a prefix .*'a/b'"):
        m["a"] = b"2"
    assert physical(where) == {"a/b": b"1"}


def test_leaf_rule_holds_after_deletes_in_a_tree_the_map_wrote(where: str) -> None:
    m = FsspecMap(where, mode="w")
    m["a/b"] = b"1"
    m["a/c"] = b"1"
    del m["a/b"]
    with pytest.raises(ObjectExistsError, match=r"cannot write 'a': it is a prefix .*'a/c'"):
        m["a"] = b"2"
    del m["a/c"]
    m["a"] = b"2"
    assert physical(where) == {"a": b"2"}


def test_deletes_leave_no_empty_directories(where: str) -> None:
    m = FsspecMap(where, mode="w")
    m["g/v/0.0"] = b"x"
    m["g/w"] = b"y"
    del m["g/v/0.0"]
    assert m.search("g") == ["w"]
    assert directories(where) == ["g"]
    del m["g/w"]
    assert m.search("") == []
    assert directories(where) == []
    m["g"] = b"now a leaf"  # nothing left below g, so g may hold content
    assert m.search("") == ["g"]


def test_modes(where: str) -> None:
    with pytest.raises(StorageNotFoundError, match=r"cannot open .* with mode 'r': no such store"):
        FsspecMap(where, mode="r")
    with pytest.raises(StorageNotFoundError):
        FsspecMap(where, mode="r+")
    FsspecMap(where, mode="a")["old/k"] = b"1"
    with pytest.raises(ObjectExistsError, match=r"with mode 'w-': it already holds keys.*'old/k'"):
        FsspecMap(where, mode="w-")
    ro = FsspecMap(where, mode="r")
    assert ro["old/k"] == b"1"
    with pytest.raises(ReadOnlyError, match=r"cannot write 'x' to FsspecMap\("):
        ro["x"] = b"1"
    with pytest.raises(ReadOnlyError):
        del ro["old/k"]
    FsspecMap(where, mode="w")
    assert physical(where) == {}
    assert list(ro) == []


def test_pickle_and_describe(where: str) -> None:
    m = FsspecMap(where, mode="w")
    m["a/b"] = b"1"
    location, options = m._describe()
    assert location.startswith(where.split("://")[0] + "://")
    assert location.endswith(where.split("://")[1])
    assert options == {}
    assert repr(m) == f"FsspecMap({location!r}, mode='w')"
    back = pickle.loads(pickle.dumps(m))
    assert back.mode == "r+"  # never truncates on unpickle
    assert back["a/b"] == b"1"
    assert back.url == m.url


def test_filesystem_instance_with_root() -> None:
    fs = fsspec.filesystem("memory")
    root = f"/nczarr-{uuid.uuid4().hex[:12]}/root"
    m = FsspecMap(fs, root, mode="w")
    m["x/y"] = b"1"
    assert fs.cat_file(f"{root}/x/y") == b"1"
    assert m.url == f"memory://{root}"
    assert m.fs is fs
    with pytest.raises(TypeError, match="storage options are given to the filesystem instance"):
        FsspecMap(fs, root, mode="r", auto_mkdir=True)
    with pytest.raises(TypeError, match="needs a URL or an fsspec filesystem, got int"):
        FsspecMap(3)
    with pytest.raises(ValueError, match=r"'\.\.'"):
        FsspecMap(fs, "/a/../b", mode="a")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_permission_denied_is_storage_permission_error(tmp_path: Path) -> None:
    m = FsspecMap(f"file://{tmp_path / 's'}", mode="w")
    m["k"] = b"1"
    (tmp_path / "s" / "k").chmod(0)
    with pytest.raises(StoragePermissionError, match=r"permission denied to read .*/s/k"):
        m["k"]


# --------------------------------------------------------------------------- s3fs (caches)
def test_s3fs_listing_cache_never_stale_and_secrets_hidden(
    s3_bucket: str, s3_endpoint: str
) -> None:
    url = f"s3://{s3_bucket}/root"
    m = FsspecMap(url, mode="w", endpoint_url=s3_endpoint, key="testing", secret="testing")
    assert m.fs.dircache.use_listings_cache  # s3fs caches listings: the map must invalidate them
    assert m.search("") == []
    m["g/a"] = b"1"
    assert m.search("") == ["g"]
    assert m.search("g") == ["a"]
    m["g/b"] = b"2"
    assert m.search("g") == ["a", "b"]
    del m["g/a"]
    assert m.search("g") == ["b"]
    del m["g/b"]
    assert m.search("") == []
    location, options = m._describe()
    assert location == f"s3://{s3_bucket}/root"
    assert options["endpoint_url"] == s3_endpoint
    assert "key" not in options and "secret" not in options
    assert "testing" not in repr(m)
    m["z"] = b"3"
    assert pickle.loads(pickle.dumps(m))["z"] == b"3"


# --------------------------------------------------------------------------- http (read-only)
@pytest.fixture
def http_root(tmp_path: Path) -> Iterator[str]:
    site = tmp_path / "site"
    (site / "ds" / "g").mkdir(parents=True)
    (site / "ds" / ".zgroup").write_bytes(b"{}")
    (site / "ds" / "g" / "0.0").write_bytes(b"0123")
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ds"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def test_http_is_read_only(http_root: str) -> None:
    m = FsspecMap(http_root, mode="r")
    assert m[".zgroup"] == b"{}"
    assert m.getrange("g/0.0", 1, 2) == b"12"
    with pytest.raises(KeyError) as info:
        m["g/missing"]
    assert info.value.args == ("g/missing",)
    with pytest.raises(ReadOnlyError, match=r"cannot write 'x' to FsspecMap\('http://"):
        m["x"] = b"1"
    for mode in ("r+", "a", "w", "w-"):
        with pytest.raises(ReadOnlyError, match=re.escape(f"with mode {mode!r}: http(s)")):
            FsspecMap(http_root, mode=mode)


# --------------------------------------------------------------------------- async filesystems
def test_async_filesystem_is_one_request_per_chunk_and_concurrent(
    s3_bucket: str, s3_endpoint: str
) -> None:
    """Any async fsspec filesystem (s3fs standing in for gcsfs/adlfs): a fresh array is
    one PUT per chunk, ``getitems`` one GET per key, both issued concurrently.

    (s3fs's default ``max_concurrency=10`` HEADs before a whole-object read to split
    big objects into ranged GETs; S3Map sets it to 1, as here.)"""
    m = FsspecMap(f"s3://{s3_bucket}/fs", mode="w", endpoint_url=s3_endpoint, max_concurrency=1)
    m["v/.zarray"] = b"{}"
    calls: list[str] = []
    in_flight = [0, 0]  # now, most at once

    def before(model: Any, **_: Any) -> None:
        calls.append(model.name)
        in_flight[0] += 1
        in_flight[1] = max(in_flight)

    m.fs.s3.meta.events.register("before-call.s3", before)
    m.fs.s3.meta.events.register(
        "after-call.s3", lambda **_: in_flight.__setitem__(0, in_flight[0] - 1)
    )
    m.setitems({f"v/{i}": bytes([i]) for i in range(40)})
    assert calls == ["PutObject"] * 40
    assert in_flight[1] > 1
    calls.clear()
    in_flight[1] = 0
    got = m.getitems([f"v/{i}" for i in range(45)])
    assert got == {f"v/{i}": bytes([i]) for i in range(40)}
    assert calls == ["GetObject"] * 45
    assert in_flight[1] > 1
    # and the leaf rule still holds in a batch
    with pytest.raises(ObjectExistsError, match=r"'v/3' holds content"):
        m.setitems({"v/3/x": b"1", "w": b"2"})
    assert "w" not in m
