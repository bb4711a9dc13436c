"""Benchmark: S3 convert requests per chunk and time vs s3fs, and convert on dask workers.

Starts its own moto S3 server (a separate process on 127.0.0.1) and writes a Zarr v2
source of ``--chunks`` chunk objects (``f4``, 32 x 32 values, zarr's default
compressor) in a local directory, then:

1. **file -> S3**: ``nczarr.convert(dir, s3)`` vs ``s3fs.S3FileSystem.put(dir, ...,
   recursive=True)`` (the same files, no metadata rewriting);
2. **S3 -> S3** (same service): ``nczarr.convert(s3, s3)`` vs ``s3fs.copy(...,
   recursive=True)`` (server-side copies);

each timed once against moto directly, and run once more through a counting TCP
proxy (``tests/faultproxy.py``, no faults) for the requests per chunk.

3. **chunks/s, local threads vs 2 dask workers**: the file -> S3 and
   directory -> directory converts with ``workers=8`` in this process, then with
   ``client=`` a ``LocalCluster(n_workers=2, threads_per_worker=1)``.
4. **peak memory** (``VmHWM`` of a fresh process that plans and converts) for
   ``--memory`` chunk counts, file -> S3 and directory -> directory on dask.

Run: ``python3 benchmarks/bench_s3.py`` (900 chunks, as issue 11 measured; a few
minutes on an idle 2-core machine). ``--chunks 200 --memory 500,2000`` for a quick look.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from bench_s3_search import start_moto  # noqa: E402

os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def make_source(path: Path, chunks: int) -> Path:
    """A Zarr v2 group with one ``f4`` array of ``chunks`` chunks of 32 x 32 (4 KB raw)."""
    import numpy as np
    import zarr

    cols = 10
    rows = -(-chunks // cols)
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    a = root.create_array("v", shape=(32 * rows, 32 * cols), chunks=(32, 32), dtype="f4")
    rng = np.random.default_rng(0)
    a[:] = np.round(rng.normal(size=a.shape) * 10, 2).astype("f4")
    a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
    return path


def s3url(endpoint: str, bucket: str, prefix: str) -> str:
    return f"{endpoint}/{bucket}/{prefix}#mode=zarr,s3"


def once(func: Any) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def bench_requests(src: Path, endpoint: str, chunks: int, repeat: int) -> None:
    import s3fs
    from faultproxy import FaultProxy

    import nczarr

    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True)
    fs.mkdir(bucket)
    files = sum(1 for p in src.rglob("*") if p.is_file())

    # timed, directly against moto: contenders interleaved, best of ``repeat``
    best: dict[str, float] = {}

    def record(name: str, func: Any) -> None:
        best[name] = min(best.get(name, float("inf")), once(func))

    for i in range(repeat):
        record("s3fs put", lambda i=i: fs.put(str(src) + "/", f"{bucket}/put{i}", recursive=True))
        record(
            "nczarr file->S3",
            lambda i=i: nczarr.convert(str(src), s3url(endpoint, bucket, f"o{i}")),
        )
        record(
            "s3fs copy",
            lambda i=i: fs.copy(f"{bucket}/put{i}", f"{bucket}/copy{i}", recursive=True),
        )
        record(
            "nczarr S3->S3",
            lambda i=i: nczarr.convert(
                s3url(endpoint, bucket, f"o{i}"), s3url(endpoint, bucket, f"p{i}")
            ),
        )
    t_put, t_ours, t_copy, t_ours2 = (
        best[k] for k in ("s3fs put", "nczarr file->S3", "s3fs copy", "nczarr S3->S3")
    )

    # counted, through the proxy (separate targets)
    with FaultProxy(endpoint) as proxy:
        pfs = s3fs.S3FileSystem(endpoint_url=proxy.endpoint, skip_instance_cache=True)
        counts = {}
        proxy.reset_counts()
        pfs.put(str(src) + "/", f"{bucket}/cput", recursive=True)
        counts["s3fs put"] = dict(proxy.counts)
        proxy.reset_counts()
        nczarr.convert(str(src), s3url(proxy.endpoint, bucket, "c1"))
        counts["nczarr file->S3"] = dict(proxy.counts)
        proxy.reset_counts()
        pfs.copy(f"{bucket}/cput", f"{bucket}/ccopy", recursive=True)
        counts["s3fs copy"] = dict(proxy.counts)
        proxy.reset_counts()
        nczarr.convert(s3url(proxy.endpoint, bucket, "c1"), s3url(proxy.endpoint, bucket, "c2"))
        counts["nczarr S3->S3"] = dict(proxy.counts)

    print(
        f"\n## requests and time: {chunks} chunks ({files} files in the source), "
        f"best of {repeat} interleaved\n"
    )
    print("| operation | time | ratio vs s3fs | requests | per chunk | by kind |")
    print("|---|---:|---:|---:|---:|---|")
    for name, t, ref in (
        ("s3fs put", t_put, t_put),
        ("nczarr file->S3", t_ours, t_put),
        ("s3fs copy", t_copy, t_copy),
        ("nczarr S3->S3", t_ours2, t_copy),
    ):
        c = counts[name]
        total = sum(c.values())
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]))
        print(f"| {name} | {t:.2f} s | {t / ref:.2f}x | {total} | {total / chunks:.3f} | {kinds} |")


def bench_dask(src: Path, endpoint: str, chunks: int, work: Path) -> None:
    from distributed import Client, LocalCluster

    import nczarr

    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    import s3fs

    s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True).mkdir(bucket)
    rows = []
    t = once(lambda: nczarr.convert(str(src), s3url(endpoint, bucket, "local"), workers=8))
    rows.append(("file -> S3", "8 threads, this process", t))
    t = once(lambda: nczarr.convert(str(src), str(work / "local"), mode="zarr", workers=8))
    rows.append(("dir -> dir", "this process (kernel copies)", t))
    with (
        LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        # warm the workers (imports) before timing
        nczarr.convert(str(src), str(work / "warm"), mode="zarr", client=client)
        t = once(
            lambda: nczarr.convert(
                str(src), s3url(endpoint, bucket, "dask"), workers=8, client=client
            )
        )
        rows.append(("file -> S3", "2 dask workers x 8 threads", t))
        t = once(lambda: nczarr.convert(str(src), str(work / "dask"), mode="zarr", client=client))
        rows.append(("dir -> dir", "2 dask workers", t))
    print(f"\n## chunks/s, local vs dask: {chunks} chunks\n")
    print("| convert | where | time | chunks/s |")
    print("|---|---|---:|---:|")
    for what, where, t in rows:
        print(f"| {what} | {where} | {t:.2f} s | {chunks / t:,.0f} |")


def memory_child(argv: list[str]) -> int:
    """``--memory-child SRC DST [SCHEDULER]``: convert; print VmHWM before and after (kB)."""
    import nczarr

    def hwm() -> int:
        with open("/proc/self/status") as f:
            return int(next(line.split()[1] for line in f if line.startswith("VmHWM:")))

    src, dst = argv[0], argv[1]
    client = None
    if len(argv) > 2:
        from distributed import Client

        client = Client(argv[2])
    import nczarr.maps.s3
    import nczarr.readthrough

    before = hwm()
    report = nczarr.convert(src, dst, mode="zarr", client=client)
    print(before, hwm(), report.chunks_copied)
    return 0


def bench_memory(counts: list[int], endpoint: str, work: Path) -> None:
    from distributed import LocalCluster

    bucket = f"bench-{uuid.uuid4().hex[:10]}"
    import s3fs

    s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True).mkdir(bucket)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path[:2])}
    print("\n## peak memory of a convert (fresh process, VmHWM)\n")
    print("| chunks | path | after imports | peak | growth |")
    print("|---:|---|---:|---:|---:|")
    with LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0"
    ) as cluster:
        for n in counts:
            src = make_source(work / f"mem{n}", n)
            runs = [
                ("file -> S3", [str(src), s3url(endpoint, bucket, f"mem{n}")]),
                (
                    "dir -> dir on 2 dask workers",
                    [str(src), str(work / f"memout{n}"), cluster.scheduler_address],
                ),
            ]
            for label, args in runs:
                out = subprocess.run(
                    [sys.executable, __file__, "--memory-child", *args],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                )
                before, peak, copied = map(int, out.stdout.split()[-3:])
                assert copied == n, (copied, n)
                print(
                    f"| {n:,} | {label} | {before / 1024:.1f} MB | {peak / 1024:.1f} MB "
                    f"| {(peak - before) / 1024:.1f} MB |"
                )
            shutil.rmtree(src)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--memory-child":
        return memory_child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=900)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dask-chunks", type=int, default=5000)
    parser.add_argument("--memory", default="2500,20000", help="chunk counts, comma-separated")
    parser.add_argument("--only", choices=("requests", "dask", "memory"))
    args = parser.parse_args(argv)

    proc, endpoint = start_moto()
    work = Path(tempfile.mkdtemp(prefix="nczarr-bench-s3-"))
    try:
        print(f"moto {endpoint}; python {sys.version.split()[0]}; nproc {os.cpu_count()}")
        if args.only in (None, "requests"):
            src = make_source(work / "src", args.chunks)
            bench_requests(src, endpoint, args.chunks, args.repeat)
        if args.only in (None, "dask"):
            src = make_source(work / "dsrc", args.dask_chunks)
            bench_dask(src, endpoint, args.dask_chunks, work)
        if args.only in (None, "memory"):
            bench_memory([int(n) for n in args.memory.split(",")], endpoint, work)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
