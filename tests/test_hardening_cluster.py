"""Issue 16, defect 15: a dask worker killed in the middle of an atomic write leaves
its temporary file behind; the finished target must not keep it.

A real LocalCluster (2 worker processes under nannies): the map a worker writes with
dies (``os._exit``) once, half-way through a write, leaving a ``.~nczarr-tmp-*`` file
as a kill would. dask reruns the batch on a fresh worker and the convert finishes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nczarr
from nczarr.maps.file import TEMP_PREFIX, FileMap

from .clusters import local_client
from .sources import tree, zarr_source

# a real LocalCluster whose worker is killed: the newest-Python CI run leaves it to
# the floor run
pytestmark = pytest.mark.long


class DyingMap(FileMap):
    """A FileMap whose worker process dies while writing the key named by a marker
    file (once, across every process: the dying writer removes the marker), after
    creating the temporary file of that write."""

    def _store(self, key: str, value: bytes) -> None:
        marker = Path(self.root).parent / f"die-{key.replace('/', '_')}"
        try:
            os.remove(marker)
        except FileNotFoundError:
            return super()._store(key, value)
        parent = Path(self.root, *key.split("/")[:-1])
        parent.mkdir(parents=True, exist_ok=True)
        (parent / f"{TEMP_PREFIX}killed-{key.rsplit('/', 1)[-1]}").write_bytes(value[:1])
        os._exit(1)  # as SIGKILL would: no cleanup


@pytest.fixture
def by_value() -> Iterator[None]:
    """Ship this module's map class to the workers by value (they cannot import it)."""
    import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


@pytest.fixture
def client() -> Iterator[Any]:
    with local_client() as c:
        yield c


def test_defect_15_a_worker_killed_mid_write_leaves_no_temporary_in_the_target(
    client: Any, tmp_path: Path, by_value: None
) -> None:
    src, chunks = zarr_source(tmp_path / "src", 20)
    local = tmp_path / "local"
    nczarr.convert(str(src), str(local), mode="nczarr")
    out = tmp_path / "out"
    (tmp_path / "die-a_7.1").write_bytes(b"")
    report = nczarr.convert(
        str(src), DyingMap(str(out), mode="a"), mode="nczarr", client=client, batch_size=20
    )
    assert not (tmp_path / "die-a_7.1").exists()  # a worker did die writing it
    assert report.chunks_copied == chunks
    assert [p.name for p in out.rglob(f"{TEMP_PREFIX}*")] == []  # before: one left
    assert tree(out) == tree(local)
