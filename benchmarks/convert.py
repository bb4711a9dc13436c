"""Benchmark ``nczarr convert`` / ``migrate`` against the alternatives; prints ratios.

Run (a few minutes without ``--big``; most of it is netCDF4 and xarray)::

    python3 benchmarks/convert.py            # 1,600 and 20,000 chunks, migrate, memory, S3
    python3 benchmarks/convert.py --big      # plus the peak memory of a 2 GB convert
    python3 benchmarks/convert.py --edge 10 --only-convert   # tiny (800-byte) chunks
    python3 benchmarks/convert.py --dir /dev/shm --only-convert  # tmpfs: software cost only
    python3 benchmarks/convert.py --dir /dev/shm --only-convert --only-cp --skip-20000 \
        --edge 512 --chunks 256   # 2 MiB chunks: copied in threads, one a core

Measured:

1. file -> file NCZarr -> Zarr of a zlib+shuffle f8 array in 64 x 64 chunks (32 KiB,
   ~20 KB stored; ``--edge`` changes it), at 1,600 and 20,000 chunk objects: the
   ``nczarr convert`` command in a fresh process vs a ``cp -r`` process, CPU time of
   each (user + system, ``RUSAGE_CHILDREN``), and the ``nczarr.convert`` call in this
   process (imports done) vs ``cp -r`` (issue 17's target: <= 1.1x; the command adds
   the interpreter's start and imports, ~0.15-0.2 s, what a user pays once per run),
   vs netCDF4 read + write (what ``nccopy`` does) and xarray ``open_zarr().to_zarr()``
   (target: >= 10x faster than both).
   ``PYTHONPATH=<checkout of another commit>`` times that commit instead.
2. ``migrate`` of the same metadata with 1,000 vs 100,000 chunks (target: within 1.2x).
3. Peak RSS of a convert in a fresh process (``VmHWM``), 200 MB by default,
   2 GB with ``--big``, against the RSS of the same process doing nothing.
4. S3 -> S3 on a local moto server: bytes read through the client vs the dataset size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def timed(
    func: Callable[[], object], repeat: int = 1, cleanup: Callable[[], object] | None = None
) -> float:
    """Best wall time of ``repeat`` runs of ``func``; ``cleanup`` runs untimed after each."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
        if cleanup is not None:
            cleanup()
    return best


def cpu_seconds() -> float:
    """CPU time of this process and its waited-for children (user + system): on a
    shared, loaded machine it moves far less than wall time."""
    import resource

    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def nczarr_command() -> list[str]:
    """The ``nczarr`` command as a user runs it: the console script next to this
    interpreter, else the same two lines it runs (``from nczarr.cli import main``)."""
    script = Path(sys.executable).with_name("nczarr")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from nczarr.cli import main; sys.exit(main())"]


def cli_environment(work: Path) -> dict[str, str]:
    """The environment of the timed ``nczarr`` processes: this one's (``PYTHONPATH``
    included, so ``PYTHONPATH=<checkout>`` times another commit), with bytecode cached
    under ``work``. An installed package has its ``.pyc`` files; a process that compiles
    every module from source each run (``PYTHONDONTWRITEBYTECODE``, as in CI) would time
    the compiler, not the command."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def make_source(path: Path, chunks: int, edge: int = 64) -> Path:
    """An NCZarr store written by libnetcdf: one f8 array of ``chunks`` chunks of
    ``edge`` x ``edge`` values, zlib level 4 with shuffle (netCDF4-python's
    ``zlib=True`` defaults, what most netCDF-4 files use). ``edge=64`` gives 32 KiB
    chunks in memory, ~20 KB stored; ``edge=10`` the 800-byte "tiny chunk" case."""
    import netCDF4

    side = round(chunks**0.5)
    rows, cols = side * edge, (chunks // side) * edge
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("y", rows)
        ds.createDimension("x", cols)
        v = ds.createVariable(
            "v", "f8", ("y", "x"), chunksizes=(edge, edge), zlib=True, complevel=4, shuffle=True
        )
        v.units = "K"
        # measurement-like values: compress, but not to nothing
        rng = np.random.default_rng(42)
        for start in range(0, rows, edge * 16):  # bounded memory for big sources
            block = rng.standard_normal((min(edge * 16, rows - start), cols)) * 10
            v[start : start + block.shape[0]] = np.round(block, 2)
    return path


def quiet() -> None:
    """Untimed: let the file system finish what the last run started.

    The scratch disk of the machine this was written on is mounted with ``discard``:
    deleting a tree queues work that otherwise lands in the next timed run, whoever
    it is. ``sync`` after every cleanup makes each run start from the same state.
    """
    os.sync()


def fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    return path


def bench_convert(
    work: Path, chunks: int, edge: int = 64, repeat: int = 5, alternatives: bool = True
) -> None:
    import netCDF4
    import xarray as xr

    import nczarr

    src = make_source(work / f"src{chunks}.file", chunks, edge)
    files = [p for p in src.rglob("*") if p.is_file()]
    nbytes = sum(p.stat().st_size for p in files)
    chunk_files = [p for p in files if not p.name.startswith(".")]
    mean_chunk = sum(p.stat().st_size for p in chunk_files) / max(1, len(chunk_files))
    out = work / "out"
    env = cli_environment(work)
    command = [*nczarr_command(), "convert", "--mode", "zarr", str(src), str(out)]

    def cli() -> None:
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)

    def ours() -> None:
        nczarr.convert(str(src), str(out), mode="zarr", workers=16)

    def cp() -> None:
        subprocess.run(["cp", "-r", str(src), str(out)], check=True)

    def netcdf() -> None:
        with (
            netCDF4.Dataset(f"file://{src}#mode=nczarr,file") as a,
            netCDF4.Dataset(f"file://{out}#mode=zarr,file", "w") as b,
        ):
            for name, dim in a.dimensions.items():
                b.createDimension(name, len(dim))
            for name, var in a.variables.items():
                filters = var.filters()
                w = b.createVariable(
                    name,
                    var.dtype,
                    var.dimensions,
                    chunksizes=var.chunking(),
                    zlib=bool(filters.get("zlib")),
                    complevel=filters.get("complevel") or 4,
                    shuffle=bool(filters.get("shuffle")),
                )
                w.setncatts({k: var.getncattr(k) for k in var.ncattrs()})
                w[:] = var[:]

    def xarray() -> None:
        with xr.open_zarr(str(src), consolidated=False) as ds:
            ds.to_zarr(str(out), mode="w", zarr_format=2, consolidated=False)

    def clean() -> None:
        shutil.rmtree(out, ignore_errors=True)
        quiet()

    clean()
    cli()  # untimed: compiles nczarr's and its imports' bytecode into the cache
    clean()
    # the three interleaved, best of ``repeat``: other load on the machine hits all
    runs = {"cli": cli, "cp": cp, "lib": ours}
    wall = dict.fromkeys(runs, float("inf"))
    cpu = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, func in runs.items():
            start = cpu_seconds()
            wall[name] = min(wall[name], timed(func, 1))
            cpu[name] = min(cpu[name], cpu_seconds() - start)
            clean()
    t_nc = timed(netcdf, 1, clean) if alternatives else float("nan")
    t_xr = timed(xarray, 1, clean) if alternatives else float("nan")
    print(
        f"convert NCZarr->Zarr, {chunks} chunks of {edge}x{edge} f8 zlib+shuffle "
        f"({len(files)} objects, {nbytes / 1e6:.1f} MB, mean chunk {mean_chunk / 1e3:.1f} KB, "
        f"file->file), best of {repeat}, wall and CPU (user + system):"
    )
    print(f"  `nczarr convert` process  {wall['cli']:7.3f} s wall  {cpu['cli']:7.3f} s CPU")
    print(f"  `cp -r` process           {wall['cp']:7.3f} s wall  {cpu['cp']:7.3f} s CPU")
    print(
        f"  nczarr.convert() call     {wall['lib']:7.3f} s wall  {cpu['lib']:7.3f} s CPU "
        "(in this process, imports done)"
    )
    print(
        f"  CPU ratio call/cp = {cpu['lib'] / cpu['cp']:.2f}x (target <= 1.1x), "
        f"command/cp = {cpu['cli'] / cpu['cp']:.2f}x; wall ratio command/cp = "
        f"{wall['cli'] / wall['cp']:.2f}x"
    )
    if alternatives:
        lib = wall["lib"]
        print(f"  netCDF4 read+write  {t_nc:8.3f} s   speed-up vs the call  = {t_nc / lib:6.1f}x")
        print(f"  xarray to_zarr      {t_xr:8.3f} s   speed-up vs the call  = {t_xr / lib:6.1f}x")
    shutil.rmtree(src)


def bench_migrate(work: Path) -> None:
    import nczarr

    template = make_source(work / "tmpl.file", 4, edge=10)
    meta = {p.relative_to(template).as_posix(): p.read_bytes() for p in template.rglob(".z*")}
    times = {}
    for n in (1_000, 100_000):
        store = fresh(work / f"mig{n}.file")
        for key, value in meta.items():
            (store / key).parent.mkdir(parents=True, exist_ok=True)
            (store / key).write_bytes(value)
        chunk = (template / "v" / "0.0").read_bytes()
        # the same metadata, n chunk objects (the .zarray does not bound what is stored)
        (store / "v" / "0.0").unlink(missing_ok=True)
        for i in range(n):
            (store / "v" / f"{i // 1000}.{i % 1000}").write_bytes(chunk)

        def once(store: Path = store) -> None:
            nczarr.migrate(str(store), to="zarr")
            nczarr.migrate(str(store), to="nczarr")

        times[n] = timed(once, 20) / 2
        shutil.rmtree(store)
    ratio = times[100_000] / times[1_000]
    print("migrate (same metadata):")
    print(f"  1,000 chunks        {times[1_000]:8.4f} s")
    print(f"  100,000 chunks      {times[100_000]:8.4f} s   ratio = {ratio:5.2f}x")


MEMORY_SCRIPT = textwrap.dedent(
    """
    import sys
    import nczarr
    mode = sys.argv[3]
    if mode == "convert":
        report = nczarr.convert(sys.argv[1], sys.argv[2], mode="zarr", workers=16)
        assert report.bytes_copied > 0, report
    # VmHWM (peak RSS of this image): unlike ru_maxrss it does not inherit the
    # parent's peak across fork+exec.
    with open("/proc/self/status") as f:
        print(next(line.split()[1] for line in f if line.startswith("VmHWM:")))
    """
)


def bench_memory(work: Path, megabytes: int) -> None:
    import zarr

    src = work / f"mem{megabytes}.zarr"
    side = 2048
    rows = megabytes * 1024 * 1024 // (side * 4)
    group = zarr.open_group(str(src), mode="w", zarr_format=2)
    arr = group.create_array(
        "a",
        shape=(rows, side),
        chunks=(256, side),
        dtype="f4",
        compressors=None,
        fill_value=0.0,
        attributes={"_ARRAY_DIMENSIONS": ["y", "x"]},
    )
    block = np.random.default_rng(0).random((256, side), dtype="f4")
    for start in range(0, rows, 256):
        arr[start : start + 256] = block[: min(256, rows - start)]
    out = work / "mem_out"
    script = work / "mem.py"
    script.write_text(MEMORY_SCRIPT)
    rss = {}
    for mode in ("idle", "convert"):
        fresh(out)
        done = subprocess.run(
            [sys.executable, str(script), str(src), str(out), mode],
            capture_output=True,
            text=True,
            check=True,
        )
        rss[mode] = int(done.stdout.split()[-1]) / 1024  # kB
    print(f"peak memory, {megabytes} MB convert (16 workers, chunks of 2 MB):")
    print(f"  python + nczarr imported  {rss['idle']:7.1f} MB")
    print(f"  during convert            {rss['convert']:7.1f} MB")
    print(f"  growth                    {rss['convert'] - rss['idle']:7.1f} MB")
    shutil.rmtree(src)
    shutil.rmtree(out, ignore_errors=True)


def bench_s3(work: Path) -> None:
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    import nczarr
    from nczarr.maps.s3 import S3Map

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
        local = make_source(work / "s3src.file", 400, edge=10)
        src = S3Map("s3://bench/src", mode="a", endpoint_url=endpoint)
        nczarr.convert(str(local), src, mode="nczarr")
        size = sum(src.getsize(k) for k in src)
        dst = S3Map("s3://bench/dst", mode="a", endpoint_url=endpoint)
        through = {"bytes": 0}
        for zmap in (src, dst):
            # every request of s3fs goes through ``_call_s3``; a GetObject answers with
            # the body's length, whichever read (whole, ranged, bulk) asked for it
            fs = zmap._fs
            call = fs._call_s3

            async def counting(method: str, *args: Any, call: Any = call, **kwargs: Any) -> Any:
                out = await call(method, *args, **kwargs)
                if method == "get_object":
                    through["bytes"] += int(out.get("ContentLength") or 0)
                return out

            fs._call_s3 = counting
        seconds = timed(lambda: nczarr.convert(src, dst, mode="zarr"))
        during = through["bytes"]
        src.getitems(list(src))  # control: reading every object counts the dataset size
        print("S3 -> S3 convert on moto (server-side CopyObject):")
        print(f"  dataset size              {size:10d} bytes in {len(src)} objects")
        print(f"  bytes read by the client  {during:10d} bytes ({seconds:.2f} s)")
        print(f"  control: read every object, counted {through['bytes'] - during:10d} bytes")
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", action="store_true", help="also measure a 2 GB convert")
    parser.add_argument("--skip-20000", action="store_true", help="only 1,600 chunks")
    parser.add_argument(
        "--edge",
        type=int,
        default=64,
        help="chunk edge: 64 (default) = 32 KiB chunks, ~20 KB stored; 10 = 800-byte chunks",
    )
    parser.add_argument(
        "--chunks",
        type=int,
        default=1_600,
        help="chunks of the first convert (default 1,600; with --edge 512: 2 MiB chunks)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="best of N for convert and cp")
    parser.add_argument("--dir", default=None, help="scratch directory (default: $TMPDIR)")
    parser.add_argument("--only-convert", action="store_true", help="skip migrate/memory/S3")
    parser.add_argument(
        "--only-cp", action="store_true", help="compare convert with cp -r only (no netCDF4/xarray)"
    )
    args = parser.parse_args(argv)
    import nczarr

    print(f"nczarr {nczarr.__version__} from {Path(nczarr.__file__).parent}")
    with tempfile.TemporaryDirectory(prefix="nczarr-bench-", dir=args.dir) as tmp:
        work = Path(tmp)
        alternatives = not args.only_cp
        bench_convert(work, args.chunks, args.edge, args.repeat, alternatives)
        if not args.skip_20000:
            bench_convert(work, 20_000, args.edge, args.repeat, alternatives)
        if args.only_convert:
            return 0
        bench_migrate(work)
        bench_memory(work, 200)
        if args.big:
            bench_memory(work, 2048)
        bench_s3(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
