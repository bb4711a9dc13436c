"""KnownTree: when the leaf rule may be settled without asking the store."""

from __future__ import annotations

from nczarr.maps.leafcache import KnownTree


def test_unknown_store_settles_nothing() -> None:
    tree = KnownTree()
    tree.wrote("g/v/0.0")
    # the directories are known, but someone else may have written below "g/v/0.1"
    assert tree.is_dir("g/v") and tree.is_dir("g")
    assert not tree.settled("g/v/0.1")
    assert tree.unknown_ancestors("g/w/0") == ["g/w"]


def test_owned_tree_settles_keys_below_known_directories() -> None:
    tree = KnownTree()
    tree.own_all()
    assert tree.settled("top")  # no ancestors to know
    assert not tree.settled("g/v/0.0")  # "g" and "g/v" might hold content
    tree.wrote("g/v/.zarray")
    assert tree.settled("g/v/0.0")
    assert not tree.settled("g/v")  # a directory: writing it as content breaks the rule
    assert not tree.settled("g")


def test_a_delete_makes_the_ancestors_doubtful() -> None:
    tree = KnownTree()
    tree.own_all()
    tree.wrote("a/b")
    tree.wrote("a/c")
    tree.deleted("a/b")
    # "a" may still hold a/c: writing "a" as content must be probed
    assert not tree.settled("a")
    assert not tree.is_dir("a")
    # ... and so must keys below it, whose ancestor "a" is no longer known
    assert not tree.settled("a/d")
    tree.wrote("a/d")
    assert tree.settled("a/e") and not tree.settled("a")
    # once "a" was probed empty and written as content, rewriting it is settled
    tree.deleted("a/c")
    tree.deleted("a/d")
    tree.wrote("a")
    assert tree.settled("a")


def test_a_prefix_found_empty_is_owned_below() -> None:
    tree = KnownTree()
    tree.own_below("arr")
    assert not tree.settled("arr/0")  # "arr" itself might be content
    tree.wrote("arr/.zarray")
    assert tree.settled("arr/0")
    assert not tree.settled("other/0")
    tree.own_all()  # clear(): everything forgotten, everything owned
    assert not tree.is_dir("arr")
