"""``list_reading``: a map's listing and some of its objects in one pass.

A combine reads each source's listing, its metadata objects and a few chunks; a
directory map reads the wanted files as its listing passes their directory, so no
directory is opened twice. The answer must be what ``keys_below("")`` and
``getitems``/``getitems_capped`` give, with the same confinement (no link out of the
root followed, temporary files never keys).
"""

from __future__ import annotations

from nczarr.maps.confined import ConfinedTree
from nczarr.maps.file import TEMP_PREFIX, FileMap
from nczarr.maps.memory import MemoryMap


def _store(m):
    m[".zgroup"] = b'{"zarr_format": 2}'
    m["temp/.zarray"] = b"{" + b" " * 500 + b"}"
    m["temp/0.0.0"] = b"chunk" * 100
    m["lat/0"] = b"lat"
    return m


WANTED = {".zgroup": 10, "temp/.zarray": 100, "lat/0": None, "missing/.zarray": 10}


def _expected(m):
    capped = {
        k: v[:cap] if cap is not None else v for k, cap in WANTED.items() if k in m for v in [m[k]]
    }
    return sorted(m.keys_below("")), capped


def test_a_directory_map_lists_and_reads_like_keys_below_and_getitems(tmp_path, strategy):
    m = _store(FileMap(tmp_path / "s", mode="w"))
    (tmp_path / "s" / "temp" / (TEMP_PREFIX + "x")).write_bytes(b"temporary")
    keys, got = m.list_reading(WANTED)
    assert (sorted(keys), got) == _expected(m)
    assert got["temp/.zarray"] == m["temp/.zarray"][:100] and got["lat/0"] == b"lat"


def test_the_default_lists_then_reads(tmp_path):
    m = _store(MemoryMap())
    keys, got = m.list_reading(WANTED)
    assert (sorted(keys), got) == _expected(m)


def test_each_directory_is_opened_once(tmp_path, monkeypatch):
    m = _store(FileMap(tmp_path / "s", mode="w"))
    opened = []
    real_child, real_verified = ConfinedTree.child, ConfinedTree.open_verified

    def child(self, parent, name, key, depth=0):
        opened.append(key)
        return real_child(self, parent, name, key, depth)

    def verified(self, prefix, key):
        opened.append(prefix)
        return real_verified(self, prefix, key)

    monkeypatch.setattr(ConfinedTree, "child", child)
    monkeypatch.setattr(ConfinedTree, "open_verified", verified)
    m.list_reading(WANTED)
    assert sorted(opened) == ["lat", "temp"]


def test_links_inside_the_root_are_read_and_links_out_are_not(tmp_path, strategy):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".zarray").write_bytes(b"secret")
    m = _store(FileMap(tmp_path / "s", mode="w"))
    (tmp_path / "s" / "escape").symlink_to(outside, target_is_directory=True)
    (tmp_path / "s" / "lat" / "1").symlink_to(tmp_path / "s" / "lat" / "0")
    keys, got = m.list_reading({"escape/.zarray": None, "lat/1": None})
    assert "escape/.zarray" not in keys and "escape/.zarray" not in got
    assert got == {"lat/1": b"lat"} and "lat/1" in keys


def test_an_object_store_listing_gives_each_key_s_size(s3_bucket, s3_endpoint):
    # S3's listing holds every object's size: list_reading passes them on, so a
    # combine's server-side copies of a later source ask none (a HEAD each before)
    from nczarr.maps.mapcore import ListedKeys
    from nczarr.maps.open import open_map

    m = _store(open_map(f"s3://{s3_bucket}/s", "w", endpoint_url=s3_endpoint))
    keys, got = m.list_reading(WANTED)
    assert (sorted(keys), got) == _expected(m)
    assert isinstance(keys, ListedKeys) and keys.sizes is not None
    assert keys.sizes == {k: m.getsize(k) for k in m.keys_below("")}
    m.close()


def test_a_directory_listing_gives_no_sizes(tmp_path):
    # its copies are kernel copies, which need no size: nothing is asked for them
    keys, _ = _store(FileMap(tmp_path / "s", mode="w")).list_reading(WANTED)
    assert getattr(keys, "sizes", None) is None
