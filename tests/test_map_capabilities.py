"""What callers ask of a map (``nczarr.maps.base`` capabilities) and the backend registry.

Overlap checks, the cluster, resume's cleanup, the chunk copier and the zarr adapter
ask the map; these tests pin each backend's answers and show that a backend declared
outside ``nczarr.maps`` is honoured without an edit there.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from nczarr.conversion.apply import copy_chunks, server_side
from nczarr.conversion.cluster import copy_chunks_on_cluster
from nczarr.conversion.journal import remove_temporaries
from nczarr.conversion.overlap import check_distinct, location_of
from nczarr.errors import InvalidModeError, MissingDependencyError, ReadOnlyError
from nczarr.integrations.zarr_store import ZarrStore, blocking_io
from nczarr.maps.base import NOT_SUPPORTED, ZMap
from nczarr.maps.file import TEMP_PREFIX, FileMap
from nczarr.maps.location import Location
from nczarr.maps.memory import MemoryMap
from nczarr.maps.open import (
    Backend,
    backend_for,
    is_remote,
    known_backends,
    open_map,
    register_backend,
)
from nczarr.maps.url import parse_url

#: kind -> (shared writes, blocking I/O, location kind)
EXPECTED = {
    "memory": (False, False, "memory"),
    "file": (True, True, "local"),
    "zip": (False, False, "local"),
    "s3": (True, True, "s3"),
    "fsspec": (True, True, "local"),
    "fsspec-s3": (True, True, "s3"),
}


def test_each_backend_declares_its_capabilities(map_kind) -> None:
    zmap = map_kind.make("w")
    shared, blocking, where = EXPECTED[map_kind.kind]
    assert zmap.supports_shared_writes is shared
    assert zmap.blocking_io is blocking and blocking_io(zmap) is blocking
    assert zmap.location().kind == where
    assert isinstance(zmap.kind, str) and zmap.kind.startswith(("a ", "an "))
    assert zmap.describe() == zmap._describe()
    assert zmap.same_storage(zmap)
    zmap["a/b"] = b"x"
    assert zmap.remove_temporaries() == 0
    zmap.close()


def test_same_location_for_map_and_url(map_kind) -> None:
    zmap = map_kind.make("w")
    if map_kind.kind == "memory":  # no URL: the object itself is the place
        assert zmap.location() != MemoryMap().location() and zmap.location() == zmap.location()
        return
    options = {"endpoint_url": map_kind.endpoint} if "s3" in map_kind.kind else {}
    by_url = location_of(map_kind.url, options)
    assert zmap.location().kind == by_url.kind
    assert zmap.location().path.rstrip("/").endswith(by_url.path.rstrip("/").split("/")[-1])
    if map_kind.kind == "s3":
        assert zmap.location() == by_url
    zmap.close()


def test_default_capabilities_are_the_safe_ones() -> None:
    class Bare(ZMap):
        def __init__(self) -> None:
            super().__init__("w")
            self.data: dict[str, bytes] = {}

        def _load(self, key: str) -> bytes:
            return self.data[key]

        def _store(self, key: str, value: bytes) -> None:
            self.data[key] = value

        def _remove(self, key: str) -> None:
            del self.data[key]

        def _list(self, prefix: str):
            return iter([k for k in self.data if k == prefix or k.startswith(prefix)])

        def _describe(self):
            return "bare://x/", {}

    bare = Bare()
    assert bare.supports_shared_writes is False and bare.blocking_io is True
    assert bare.location() == Location("url", "bare://x")
    assert bare.copy_support(MemoryMap()) is None
    assert bare.copy_from(MemoryMap({"k": b"v"}), "k", "k") is NOT_SUPPORTED
    assert not NOT_SUPPORTED and pickle.loads(pickle.dumps(NOT_SUPPORTED)) is NOT_SUPPORTED
    assert bare.remove_temporaries() == 0
    stats = copy_chunks(MemoryMap({"a/0": b"12"}), bare, ["a/0"])  # bytes copied instead
    assert stats.copied == 1 and bare.data == {"a/0": b"12"}


def test_a_backend_declares_and_convert_asks(tmp_path: Path) -> None:
    """A map class defined here (not in nczarr.maps) steers overlap, cluster, cleanup,
    the copier and the zarr adapter through its declarations alone."""

    class Shared(MemoryMap):
        kind = "a shared test map"
        supports_shared_writes = True
        blocking_io = True

        def location(self) -> Location:
            return Location("test", "one/place")

        def copy_support(self, other: ZMap):
            return "server" if isinstance(other, Shared) else None

        def copy_from(self, other, src_key, dst_key, size=None, *, atomic=True):
            copied.append((src_key, atomic))
            self[dst_key] = other[src_key]
            return len(other[src_key])

        def remove_temporaries(self) -> int:
            return 7

    copied: list[tuple[str, bool]] = []
    a, b = Shared({"v/0": b"abc"}), Shared()
    with pytest.raises(InvalidModeError, match="overlap"):
        check_distinct(a, b)  # both declare one place
    assert server_side(a, b) and not server_side(MemoryMap(), b)
    assert copy_chunks(a, b, ["v/0"]).bytes == 3 and copied == [("v/0", False)]
    assert remove_temporaries(b) == 7
    assert ZarrStore(b).blocking
    with pytest.raises(InvalidModeError, match="an in-memory map cannot be written by"):
        copy_chunks_on_cluster(object(), MemoryMap({"k": b"v"}), MemoryMap(), ["k"])


def test_file_map_copies_file_to_file_and_cleans_its_temporaries(tmp_path: Path) -> None:
    src = FileMap(tmp_path / "s", mode="w")
    src["v/0"] = b"chunk"
    dst = FileMap(tmp_path / "d", mode="w")
    assert dst.copy_support(src) == "local" and dst.copy_support(MemoryMap()) is None
    assert dst.copy_from(src, "v/0", "w/1", atomic=False) == 5 and dst["w/1"] == b"chunk"
    assert dst.copy_from(MemoryMap({"k": b"v"}), "k", "k") is NOT_SUPPORTED
    with pytest.raises(KeyError, match="v/9"):
        dst.copy_from(src, "v/9", "w/9")

    class Custom(FileMap):
        def _load(self, key: str) -> bytes:
            return super()._load(key).upper()

    assert dst.copy_support(Custom(tmp_path / "s")) is None  # its own reads are honoured
    (tmp_path / "d" / "w" / f"{TEMP_PREFIX}left").write_bytes(b"")
    assert remove_temporaries(dst) == 1
    assert not any(n.startswith(TEMP_PREFIX) for n in os.listdir(tmp_path / "d" / "w"))


def test_memory_map_cannot_reopen_writable_and_others_can(tmp_path: Path) -> None:
    with pytest.raises(ReadOnlyError, match="cannot be reopened for writing"):
        MemoryMap({"k": b"v"}, mode="r").reopen("r+")
    ro = FileMap(tmp_path / "f", mode="a")
    ro["k"] = b"v"
    again = FileMap(tmp_path / "f", mode="r").reopen("r+")
    assert not again.read_only and again["k"] == b"v" and again.same_storage(ro)
    assert not MemoryMap().same_storage(MemoryMap())


# ------------------------------------------------------------------ registry
def test_the_registry_maps_storage_words_to_backends() -> None:
    assert backend_for("file").local and backend_for("zip").local
    assert backend_for("s3").extra == "s3" and not backend_for("s3").local
    assert backend_for("gcs").opener.startswith("nczarr.maps.fsspec:")
    assert is_remote("memory://x") and not is_remote("/tmp/x")


def test_a_registered_backend_opens_its_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(known_backends, "memory", Backend(f"{__name__}:_open_test_memory"))
    zmap = open_map("memory://bucket/x", "w", answer=42)
    assert isinstance(zmap, MemoryMap) and zmap["answer"] == b"42"
    with pytest.raises(ValueError, match="already registered"):
        register_backend("memory", "x:y")
    register_backend("memory", f"{__name__}:_open_test_memory", local=True, clobber=True)
    assert not is_remote("memory://x")


def test_a_missing_backend_dependency_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        known_backends, "memory", Backend("nczarr_no_such_module:open_url", extra="cloud")
    )
    with pytest.raises(MissingDependencyError, match=r"nczarr\[cloud\]"):
        open_map("memory://x")


def _open_test_memory(url, mode: str, options: dict) -> MemoryMap:
    assert url == parse_url("memory://bucket/x")
    return MemoryMap({key: str(value).encode() for key, value in options.items()}, mode=mode)


class _FailingFlush(MemoryMap):
    """A map that writes through and whose flush fails (a full disk, a lost network)."""

    def flush(self) -> None:
        raise OSError("flush failed")


def test_discard_closes_a_map_that_writes_through_even_if_flushing_fails() -> None:
    zmap = _FailingFlush(mode="w")
    zmap["a"] = b"1"
    with pytest.raises(OSError, match="flush failed"):
        zmap.flush()
    zmap.discard()
    assert zmap.closed
    with pytest.raises(ValueError, match="closed"):
        zmap["b"] = b"2"


def test_discard_drops_a_zip_archives_pending_writes(tmp_path: Path) -> None:
    from nczarr.maps.zip import ZipMap

    path = tmp_path / "s.zip"
    with ZipMap(str(path), mode="w") as zmap:
        zmap["old"] = b"1"
    before = path.read_bytes()
    zmap = ZipMap(str(path), mode="a")
    zmap["new"] = b"2"
    zmap.discard()
    assert zmap.closed and path.read_bytes() == before


def test_a_replacement_is_promoted_into_a_map_that_cannot_copy_server_side() -> None:
    """``to_nczarr``'s promotion of a staged store asks the target's ``copy_from`` and
    copies the bytes itself where the answer is NOT_SUPPORTED."""
    from nczarr.integrations.staging import WriteTarget

    stage = MemoryMap({".zgroup": b"{}", "v/.zarray": b"{}", "v/0": b"12"}, mode="a")
    target = MemoryMap({".zgroup": b"old", "w/0": b"gone"}, mode="a")
    assert target.copy_from(stage, "v/0", "v/0") is NOT_SUPPORTED
    WriteTarget(stage, owned=True, promote_into=target).commit()
    assert dict(target.items()) == {".zgroup": b"{}", "v/.zarray": b"{}", "v/0": b"12"}
