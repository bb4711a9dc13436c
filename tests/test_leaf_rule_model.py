"""The leaf rule under random writes and deletes, against MemoryMap as the model.

Remote maps skip leaf-rule probes where their :class:`~nczarr.maps.leafcache.KnownTree`
says the answer is known; a wrong "known" stores a key that is both content and a
prefix. Every sequence of writes, batch writes and deletes must succeed or fail exactly
as on a :class:`~nczarr.maps.memory.MemoryMap` (which checks against its full key
index) and leave the same keys.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nczarr.errors import ObjectExistsError
from nczarr.maps.fsspec import FsspecMap
from nczarr.maps.memory import MemoryMap
from nczarr.maps.s3 import S3Map

from .budget import examples

_KEYS = st.sampled_from(["a", "a/b", "a/c", "a/b/c", "e"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), _KEYS),
        st.tuples(st.just("del"), _KEYS),
        st.tuples(st.just("batch"), st.lists(_KEYS, min_size=1, max_size=3, unique=True)),
    ),
    max_size=14,
)


def _apply(m: Any, op: tuple[str, Any]) -> str:
    kind, arg = op
    try:
        if kind == "set":
            m[arg] = b"v"
        elif kind == "del":
            del m[arg]
        else:
            m.setitems({k: b"v" for k in arg})
    except ObjectExistsError:
        return "leaf rule"
    except KeyError:
        return "missing"
    return "ok"


def _apply_to_model(model: MemoryMap, op: tuple[str, Any]) -> str:
    """As :func:`_apply`, a batch all or nothing (as the remote maps write one)."""
    if op[0] != "batch":
        return _apply(model, op)
    trial = MemoryMap({k: model[k] for k in model}, mode="a")
    outcome = _apply(trial, op)
    if outcome == "ok":
        _apply(model, op)
    return outcome


def _check(m: Any, ops: list[tuple[str, Any]]) -> None:
    model = MemoryMap(mode="w")
    for op in ops:
        assert _apply(m, op) == _apply_to_model(model, op), (op, sorted(model))
        assert sorted(m) == sorted(model), (op, sorted(model))


@pytest.mark.generated
@settings(max_examples=examples(150), deadline=None)
@given(ops=_OPS)
def test_fsspec_map_keeps_the_leaf_rule_like_the_model(ops: list[tuple[str, Any]]) -> None:
    m = FsspecMap(f"memory://leaf-{uuid.uuid4().hex[:12]}", mode="w")
    try:
        _check(m, ops)
    finally:
        m.clear()


@pytest.mark.generated
@pytest.mark.parametrize("mode", ["w", "a"])
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=_OPS)
def test_s3_map_keeps_the_leaf_rule_like_the_model(
    ops: list[tuple[str, Any]], mode: str, s3_bucket: str, s3_endpoint: str
) -> None:
    # "w": the map owns its tree (the probe-free path); "a": it knows nothing at first
    m = S3Map(f"s3://{s3_bucket}/{uuid.uuid4().hex[:12]}", mode=mode, endpoint_url=s3_endpoint)
    with m:
        _check(m, ops)
