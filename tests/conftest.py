"""Shared fixtures: one moto S3 server per test session, map factories for every backend."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "data"

# Credentials for the local moto server only; set before botocore is imported.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3 HTTP server (moto) on 127.0.0.1, an OS-chosen port, for the session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint: str) -> Iterator[str]:
    """A fresh, empty bucket on the session's moto server; its name."""
    import boto3

    name = f"test-{uuid.uuid4().hex[:16]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=name)
    yield name


@pytest.fixture
def s3_client(s3_endpoint: str):
    """A boto3 client for raw checks of what landed in the bucket."""
    import boto3

    return boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")


def fixture_path(name: str) -> Path:
    """Path of a file in tests/data."""
    return FIXTURES / name


@pytest.fixture
def copy_fixture(tmp_path: Path) -> Callable[[str], Path]:
    """Copy a tests/data file into tmp_path (tests never modify the originals)."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copy(FIXTURES / name, target)
        return target

    return copy
