"""Every request of one S3 -> S3 combine (or append), in order, with its time (issue 20).

``--days`` daily NCZarr sources written by netcdf-c (``benchmarks/combine.py``'s
``make_day``) are uploaded to moto's server (its own process), then combined into
``s3://combine-trace/out`` through ``tests/faultproxy.py`` with ``--latency`` seconds
added to each request; with ``--append``, the first ``days - 1`` are combined first
and the last is appended (what is traced). Printed: the wall time, the requests by
operation and a source, and with ``--spans`` each request's start and end (seconds from
the call), operation and target: which requests wait for which.

Run: ``python3 benchmarks/combine_s3_trace.py --days 8`` (the request counts),
``python3 benchmarks/combine_s3_trace.py --days 3 --latency 0.2 --spans`` (the first
source's round trips), ``... --days 3 --latency 0.2 --append --spans``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

import s3fs  # noqa: E402
from bench_s3_search import start_moto  # noqa: E402
from combine import make_day  # noqa: E402
from faultproxy import FaultProxy  # noqa: E402

import nczarr  # noqa: E402

BUCKET = "combine-trace"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds a request")
    parser.add_argument("--append", action="store_true", help="trace an append of the last")
    parser.add_argument("--spans", action="store_true", help="print every request")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    os.environ.update(AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s")
    proc, endpoint = start_moto()
    try:
        fs = s3fs.S3FileSystem(key="k", secret="s", client_kwargs={"endpoint_url": endpoint})
        fs.mkdir(BUCKET)
        urls = []
        with tempfile.TemporaryDirectory() as tmp:
            for day in range(args.days):
                path = Path(tmp) / f"d{day:03d}.file"
                make_day(path, day, 90, 180)
                fs.put(str(path), f"{BUCKET}/src/d{day:03d}", recursive=True)
                urls.append(f"s3://{BUCKET}/src/d{day:03d}")
        trace(urls, endpoint, args)
    finally:
        proc.terminate()


def trace(urls: list[str], endpoint: str, args: argparse.Namespace) -> None:
    """Combine (or append) ``urls`` through the proxy and print what reached it."""
    with FaultProxy(endpoint, latency=args.latency) as proxy:
        via = {"source_options": {"endpoint_url": proxy.endpoint}}
        via["target_options"] = via["source_options"]
        # the S3 client, its bucket check and the imports, before the count
        nczarr.convert(urls[:2], f"s3://{BUCKET}/warm", concat_dim="time", **via)
        dst = f"s3://{BUCKET}/out"
        if args.append:
            nczarr.convert(urls[:-1], dst, concat_dim="time", **via)
        proxy.reset_counts()
        start = time.monotonic()
        if args.append:
            nczarr.convert(urls[-1], dst, append_dim="time", **via)
        else:
            nczarr.convert(urls, dst, concat_dim="time", **via)
        wall = time.monotonic() - start
        spans = sorted(proxy.spans)
    traced = 1 if args.append else len(urls)
    ops = Counter(op for _, _, op, _ in spans)
    print(
        f"{'append of 1' if args.append else f'combine of {traced}'} sources, "
        f"{args.latency * 1000:.0f} ms a request: {wall:.2f} s, {len(spans)} requests, "
        f"{len(spans) / traced:.1f} a source"
    )
    print("  " + ", ".join(f"{op} {n}" for op, n in ops.most_common()))
    if args.spans:
        for begin, end, op, target in spans:
            print(f"  {begin - start:6.2f} {end - start:6.2f} {op:14s} {unquote(target)[:90]}")


if __name__ == "__main__":
    main()
