"""Benchmark: ``S3Map.search`` (one delimited listing) vs a full recursive listing.

Starts its own moto S3 server (a separate process on 127.0.0.1), writes ``--keys``
objects spread over ``--prefixes`` sub-prefixes of one prefix, then times

* ``S3Map.search(prefix)``: one ``ListObjectsV2`` with ``Delimiter="/"`` (what a zarr
  reader needs to find the children of a group), and
* ``s3fs.S3FileSystem.find(prefix)``: every key below the prefix, 1000 per request
  (what a search built on a recursive listing costs).

Run: ``python3 benchmarks/bench_s3_search.py`` (about 1.5 minutes on an idle 2-core
machine, nearly all of it moto storing the 20,000 keys; ``--keys 2000 --prefixes 20``
for a quick look).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid

os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    """A moto server in its own process, so it does not share our GIL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
            return proc, endpoint
        except OSError:
            if time.monotonic() > deadline:
                proc.terminate()
                raise
            time.sleep(0.1)


def timed(func, repeat: int) -> tuple[float, object]:
    """Median wall time of ``repeat`` calls of ``func`` and its last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--prefixes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from nczarr.maps.s3 import S3Map

    proc, endpoint = start_moto()
    try:
        bucket = f"bench-{uuid.uuid4().hex[:12]}"
        m = S3Map(f"s3://{bucket}/root", mode="w", endpoint_url=endpoint)
        per = args.keys // args.prefixes
        objects = {
            f"{bucket}/root/data/p{i:03d}/{j}.0": b"x"
            for i in range(args.prefixes)
            for j in range(per)
        }
        start = time.perf_counter()
        m.fs.pipe(objects, batch_size=64)  # concurrent PUTs, bypassing leaf checks
        written = time.perf_counter() - start
        print(
            f"wrote {len(objects)} keys under s3://{bucket}/root/data/ "
            f"({args.prefixes} sub-prefixes) in {written:.1f} s"
        )

        t_search, names = timed(lambda: m.search("data"), args.repeat)
        assert len(names) == args.prefixes, len(names)  # type: ignore[arg-type]

        def find() -> list[str]:
            m.fs.invalidate_cache()
            return m.fs.find(f"{bucket}/root/data")

        t_find, found = timed(find, args.repeat)
        assert len(found) == len(objects), len(found)  # type: ignore[arg-type]

        t_sub, sub = timed(lambda: m.search("data/p000"), args.repeat)
        assert len(sub) == per  # type: ignore[arg-type]

        print(
            f"S3Map.search('data')      : {t_search * 1000:8.1f} ms  "
            f"({args.prefixes} names, one delimited listing)"
        )
        print(f"s3fs find('data')         : {t_find * 1000:8.1f} ms  ({len(found)} keys)")
        print(f"ratio find / search       : {t_find / t_search:8.1f}x")
        print(f"S3Map.search('data/p000') : {t_sub * 1000:8.1f} ms  ({per} names)")
        print(f"(median of {args.repeat}; moto {endpoint}; python {sys.version.split()[0]})")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
