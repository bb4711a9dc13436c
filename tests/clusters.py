"""Real dask LocalClusters for the tests, set up one way.

Worker processes (``processes=True``) so that maps and sources really travel by pickle,
bound to 127.0.0.1, and ``dashboard_address=":0"``: ``None`` still binds port 8787
(distributed 2026.8), which two test runs on one machine would share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["local_client", "local_cluster"]


def local_cluster(n_workers: int = 2, threads_per_worker: int = 1) -> Any:
    """A started ``LocalCluster``; use it as a context manager (or close it)."""
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers,
        processes=True,
        threads_per_worker=threads_per_worker,
        host="127.0.0.1",
        dashboard_address=":0",
    )


@contextmanager
def local_client(n_workers: int = 2, threads_per_worker: int = 1) -> Iterator[Any]:
    """A ``Client`` of a fresh :func:`local_cluster`, both closed on exit."""
    from distributed import Client

    with local_cluster(n_workers, threads_per_worker) as cluster, Client(cluster) as client:
        yield client
