"""A moto S3 server of its own (a separate process) that enforces IAM, for tests of
what a user with limited rights gets: the shared session server answers everyone.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["iam_server"]

ALLOW_ALL = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}


@contextmanager
def iam_server(setup: Callable[[Any], object], *denied: dict[str, Any]) -> Iterator[dict[str, str]]:
    """A moto server on 127.0.0.1: ``setup(s3)`` fills it with an administrator's boto3
    client, then a user ``reader`` is allowed everything but the ``denied`` statements
    and every request is authorized from then on. Yields the endpoint and the user's
    ``key`` and ``secret``."""
    import boto3

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_for(endpoint)
        admin = {
            "endpoint_url": endpoint,
            "region_name": "us-east-1",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        setup(boto3.client("s3", **admin))
        iam = boto3.client("iam", **admin)
        iam.create_user(UserName="reader")
        policy = {"Version": "2012-10-17", "Statement": [ALLOW_ALL, *denied]}
        iam.put_user_policy(UserName="reader", PolicyName="p", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        request = urllib.request.Request(
            f"{endpoint}/moto-api/reset-auth",
            data=b"0",  # from now on every request is authenticated and authorized
            method="POST",
            headers={"Content-Type": "application/octet-stream"},
        )
        urllib.request.urlopen(request, timeout=5).close()
        yield {"endpoint": endpoint, "key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_for(endpoint: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
