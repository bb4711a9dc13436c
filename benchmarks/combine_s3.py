"""Benchmark: combining daily sources that live on S3, at a cloud round trip (issue 20).

A combine reads every source before it writes anything (every refusal comes first),
then copies each source's chunks. On local disk that is CPU; on S3 every open, listing
and metadata read is a round trip, and what is done one source after another adds up
the round trips. moto (its own process) answers in a millisecond, so the requests go
through ``tests/faultproxy.py`` with ``--latency`` seconds added to each (20 ms: a
client in another region, or a busy bucket), which also counts them.

``--days`` daily NCZarr stores written by netcdf-c (``benchmarks/combine.py``'s
``make_day``) are uploaded, then combined, each run in a fresh process:

* ``nczarr``: ``nczarr.convert(sources, dst, concat_dim="time")`` into a local directory
  and into S3 (the same bucket: server-side copies where it can);
* ``--baseline DIR``: another nczarr tree, run alternately with this one;
* ``s3fs copy``: ``s3fs.S3FileSystem.copy`` of every source, recursively, into one
  prefix (the copy floor: no check, no metadata; fsspec's own concurrency);
* ``--cluster N,M``: the S3 -> S3 combine with ``client=`` a ``LocalCluster`` of N
  workers.

Printed: wall time (best of ``--repeat``), requests in all and per source, and the
ratio to the copy floor.

Run: ``python3 benchmarks/combine_s3.py --days 60`` (about a minute at 20 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from bench_s3_search import start_moto  # noqa: E402
from combine import make_day  # noqa: E402
from faultproxy import FaultProxy  # noqa: E402

BUCKET = "combine-bench"

_CHILD = """
import json, os, sys, time, warnings
import nczarr
warnings.simplefilter("ignore", nczarr.NCZarrWarning)  # netcdf-c's fill, said once per run
args = json.loads(sys.argv[1])
opts = {"endpoint_url": args["endpoint"]}
client = None
if args["workers"]:
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=args["workers"], threads_per_worker=1,
                           processes=True, host="127.0.0.1", dashboard_address=":0")
    client = Client(cluster)
print("READY", flush=True)
sys.stdin.readline()
start = time.perf_counter()
if args["kind"] == "s3fs":
    import s3fs
    fs = s3fs.S3FileSystem(endpoint_url=args["endpoint"], skip_instance_cache=True)
    fs.copy([s.removeprefix("s3://") for s in args["sources"]],
            args["dst"].removeprefix("s3://"), recursive=True)
else:
    remote = args["dst"].startswith("s3://")
    nczarr.convert(args["sources"], args["dst"], concat_dim="time", source_options=opts,
                   target_options=opts if remote else None, client=client)
print(json.dumps({"wall": time.perf_counter() - start}), flush=True)
"""


def upload(days: int, ny: int, nx: int, endpoint: str, scratch: Path) -> list[str]:
    """``days`` daily stores written by netcdf-c, uploaded under ``src/``; their URLs."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="x", aws_secret_access_key="x")
    s3.create_bucket(Bucket=BUCKET)
    urls = []
    for day in range(days):
        path = scratch / f"day{day:04d}.zarr"
        make_day(path, day, ny, nx)
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            s3.upload_file(str(f), BUCKET, f"src/{path.name}/{f.relative_to(path).as_posix()}")
        urls.append(f"s3://{BUCKET}/src/{path.name}")
    return urls


def run(tree: str | None, args: dict[str, object], proxy: FaultProxy) -> tuple[float, int]:
    """One timed run in a fresh process (``tree``: which nczarr, on ``PYTHONPATH``): its
    wall seconds (after the imports and any cluster start) and the requests it made."""
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    if tree:
        env["PYTHONPATH"] = tree
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),  # not this tree first on sys.path
    )
    assert child.stdout is not None and child.stdin is not None
    while child.stdout.readline().strip() != "READY":
        pass
    proxy.reset_counts()
    child.stdin.write("go\n")
    child.stdin.flush()
    result = json.loads(child.stdout.readline())
    requests = proxy.total
    if child.wait() != 0:
        raise RuntimeError(f"run failed: {args['kind']} -> {args['dst']}")
    return result["wall"], requests


def clear(endpoint: str, prefix: str) -> None:
    """Delete everything under ``prefix`` of the bucket (a run's target)."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="x", aws_secret_access_key="x")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=BUCKET, Delete={"Objects": keys})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--ny", type=int, default=90)
    parser.add_argument("--nx", type=int, default=180)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds a request")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline", help="another nczarr tree, run alternately")
    parser.add_argument("--cluster", default="", help="e.g. 1,2: LocalCluster workers")
    opts = parser.parse_args()

    moto, endpoint = start_moto()
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            FaultProxy(endpoint, latency=opts.latency) as proxy,
        ):
            scratch = Path(tmp)
            sources = upload(opts.days, opts.ny, opts.nx, endpoint, scratch)
            print(
                f"{opts.days} daily NCZarr sources ({opts.ny}x{opts.nx} float32, zlib) on "
                f"moto, {opts.latency * 1000:.0f} ms a request"
            )
            trees = [("nczarr", str(HERE.parent))]
            if opts.baseline:
                trees.append(("baseline", opts.baseline))
            cases = [(name, tree, "dir", 0) for name, tree in trees]
            cases += [(name, tree, "s3", 0) for name, tree in trees]
            cases += [("s3fs copy", None, "s3", 0)]
            for n in filter(None, opts.cluster.split(",")):
                cases += [(name, tree, "s3", int(n)) for name, tree in trees]
            best: dict[tuple[str, str, int], tuple[float, int]] = {}
            for _ in range(opts.repeat):
                for name, tree, where, workers in cases:
                    dst = str(scratch / "out.zarr") if where == "dir" else f"s3://{BUCKET}/out"
                    clear(endpoint, "out")
                    subprocess.run(["rm", "-rf", str(scratch / "out.zarr")], check=True)
                    kind = "s3fs" if name == "s3fs copy" else "nczarr"
                    args = {
                        "kind": kind,
                        "sources": sources,
                        "dst": dst,
                        "endpoint": proxy.endpoint,
                        "workers": workers,
                    }
                    wall, requests = run(tree, args, proxy)
                    key = (name, where, workers)
                    if key not in best or wall < best[key][0]:
                        best[key] = (wall, requests)
            floor = best[("s3fs copy", "s3", 0)][0]
            print(f"{'':28}{'wall':>9}{'x copy':>9}{'requests':>10}{'a source':>10}")
            for (name, where, workers), (wall, requests) in best.items():
                label = f"{name} -> {where}" + (f", {workers} workers" if workers else "")
                print(
                    f"{label:28}{wall:8.2f}s{wall / floor:8.2f}x{requests:10d}"
                    f"{requests / opts.days:10.1f}"
                )
    finally:
        moto.terminate()
        moto.wait()


if __name__ == "__main__":
    main()
