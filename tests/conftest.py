"""Shared fixtures: one moto S3 server per test session, map factories for every backend."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Generated-input tests judge behaviour, not speed: a loaded machine (CI on 2 cores)
# must not fail them for slow input generation or slow examples.
settings.register_profile("nczarr", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nczarr")

FIXTURES = Path(__file__).parent / "data"

# Credentials for the local moto server only; set before botocore is imported.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3 HTTP server (moto) on 127.0.0.1, an OS-chosen port, for the session."""
    import moto.backends
    from moto.server import ThreadedMotoServer

    # moto's server finds the service of each request among its modules by listing its
    # package directory (a stat per module, ~30% of a request's CPU): list it once.
    modules = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: modules
    # werkzeug logs every request at INFO (a formatted record per request, ~8% of the
    # server's CPU, captured by pytest and never read); its errors still show.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _fresh_s3_clients() -> Iterator[None]:
    """Each test's S3 maps share clients among themselves only (``maps/s3session.py``):
    the hooks a test registers on its maps' client (request recorders, a server that
    "goes away") leave with it."""
    yield
    from nczarr.maps.s3session import forget_filesystems

    forget_filesystems()


@pytest.fixture(scope="session")
def _s3_session_client(s3_endpoint: str):
    """One boto3 client for the fixtures' own requests (a new client costs ~16 ms CPU)."""
    import boto3

    return boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")


@pytest.fixture
def s3_bucket(_s3_session_client) -> Iterator[str]:
    """A fresh, empty bucket on the session's moto server; its name."""
    name = f"test-{uuid.uuid4().hex[:16]}"
    _s3_session_client.create_bucket(Bucket=name)
    yield name


@pytest.fixture
def s3_client(_s3_session_client):
    """A boto3 client for raw checks of what landed in the bucket (tests only call it)."""
    return _s3_session_client


@pytest.fixture
def copy_fixture(tmp_path: Path) -> Callable[[str], Path]:
    """Copy a tests/data file into tmp_path (tests never modify the originals)."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copy(FIXTURES / name, target)
        return target

    return copy


# --------------------------------------------------------------------------- map factories
MAP_KINDS = ["memory", "file", "zip", "s3", "fsspec", "fsspec-s3"]


class MapKind:
    """How to make a fresh, empty map of one backend and read back what it really stored.

    ``make(mode)`` opens (and on first call creates) the same store each time, so a
    test can write, close, and reopen read-only. ``raw()`` returns the objects
    physically present (files on disk, archive members, bucket objects) as a dict of
    key -> bytes, bypassing the map, after the map under test has been closed.
    """

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.request = request
        self._memory = None
        if kind in ("s3", "fsspec-s3"):
            self.endpoint = request.getfixturevalue("s3_endpoint")
            self.bucket = request.getfixturevalue("s3_bucket")
            self.url = f"s3://{self.bucket}/root/ds"
        elif kind == "zip":
            self.url = str(tmp_path / "ds.zip")
        elif kind == "file":
            self.url = str(tmp_path / "ds.file")
        elif kind == "fsspec":
            self.url = f"file://{tmp_path / 'ds.fsspec'}"

    def make(self, mode: str = "a"):
        if self.kind == "memory":
            from nczarr.maps.memory import MemoryMap

            if self._memory is None or mode == "w":
                self._memory = MemoryMap(mode="w")
            if mode == "r":  # a read-only snapshot, like reopening a file read-only
                return MemoryMap({k: self._memory[k] for k in self._memory}, mode="r")
            return self._memory
        if self.kind == "file":
            from nczarr.maps.file import FileMap

            return FileMap(self.url, mode=mode)
        if self.kind == "zip":
            from nczarr.maps.zip import ZipMap

            return ZipMap(self.url, mode=mode)
        if self.kind == "s3":
            from nczarr.maps.s3 import S3Map

            return S3Map(self.url, mode=mode, endpoint_url=self.endpoint)
        if self.kind == "fsspec":
            from nczarr.maps.fsspec import FsspecMap

            return FsspecMap(self.url, mode=mode)
        if self.kind == "fsspec-s3":  # FsspecMap's own paths on an async filesystem
            from nczarr.maps.fsspec import FsspecMap

            return FsspecMap(
                self.url, mode=mode, endpoint_url=self.endpoint, skip_instance_cache=True
            )
        raise AssertionError(self.kind)

    def raw(self) -> dict[str, bytes]:
        if self.kind == "memory":
            return dict(self._memory._data) if self._memory is not None else {}
        if self.kind in ("file", "fsspec"):
            root = Path(self.url.removeprefix("file://"))
            if not root.exists():
                return {}
            return {
                p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*"))
                if p.is_file()
            }
        if self.kind == "zip":
            import zipfile

            if not Path(self.url).exists():
                return {}
            with zipfile.ZipFile(self.url) as zf:
                return {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}
        if self.kind in ("s3", "fsspec-s3"):
            client = self.request.getfixturevalue("_s3_session_client")
            out = {}
            for page in client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix="root/ds/"
            ):
                for obj in page.get("Contents", []):
                    body = client.get_object(Bucket=self.bucket, Key=obj["Key"])["Body"].read()
                    out[obj["Key"].removeprefix("root/ds/")] = body
            return out
        raise AssertionError(self.kind)


@pytest.fixture
def scratch_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in a scratch directory (``ncoracle.open_append`` creates placeholders there)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


@pytest.fixture(params=MAP_KINDS)
def map_kind(request: pytest.FixtureRequest, tmp_path: Path) -> MapKind:
    """Parametrised over every backend: a factory for a fresh store of that kind."""
    return MapKind(request.param, tmp_path, request)


def pytest_report_header(config: pytest.Config) -> str:
    """Say the budget of the long generated runs (see tests/budget.py)."""
    from .budget import BUDGET

    return (
        f"nczarr: generated runs (marker 'generated') at x{BUDGET:g} of their examples "
        "(NCZARR_GENERATED_BUDGET)"
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Under a reduced budget, say so at the end too (``-q`` hides the header)."""
    from .budget import BUDGET

    if BUDGET != 1:
        ran = sum(
            1
            for reports in terminalreporter.stats.values()
            for r in reports
            if getattr(r, "when", None) == "call" and "generated" in getattr(r, "keywords", {})
        )
        terminalreporter.write_line(
            f"nczarr: {ran} generated tests ran at x{BUDGET:g} of their examples "
            "(NCZARR_GENERATED_BUDGET; unset it for the full runs)"
        )


@pytest.fixture(params=["kernel-path", "dir-fd-walk", "realpath"])
def strategy(request, monkeypatch) -> str:
    """Every way FileMap checks paths at use: the kernel's name of the open directory
    (Linux /proc, macOS F_GETPATH), the O_NOFOLLOW walk by dir_fd, and the realpath
    fallback of platforms without dir_fd (Windows)."""
    from nczarr.maps import localfs

    if request.param != "kernel-path":
        monkeypatch.setattr(localfs, "PROC_FD", None)
        monkeypatch.delitem(sys.modules, "fcntl", raising=False)
    if request.param == "realpath":
        monkeypatch.setattr(os, "supports_dir_fd", set())
    return request.param


@pytest.fixture(params=["pure", "h5py"])
def hdf5_reader(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which reader reads a netCDF-4 file's metadata: the numpy-free one (h5py opens
    nothing), or h5py (the numpy-free one declines)."""
    if request.param == "h5py":
        from .ncfiles import force_h5py

        force_h5py(monkeypatch)
    return request.param
