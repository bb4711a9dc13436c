"""Benchmark ``nczarr.migrate``: is its cost flat in the number of chunks?

``migrate`` reads, writes and deletes metadata objects only, so a store with the same
metadata and 100x the chunk objects should migrate in about the same time. One NCZarr
store (an f8 array written by libnetcdf, 10 x 10 chunks) is copied with ``n`` chunk
objects under the array (the ``.zarray`` does not bound what is stored), then migrated
to pure Zarr and back, best of ``--repeat``, wall and CPU time (user + system)::

    python3 benchmarks/migrate.py --dir /dev/shm                 # 1,000, 10,000, 100,000
    python3 benchmarks/migrate.py --dir /dev/shm --profile 100000  # where the time goes
    PYTHONPATH=/tmp/base benchmarks/migrate.py ...               # another checkout

Chunk keys use ``.`` (one directory of ``n`` files) or, with ``--nested``, ``/``
(``n / 1000`` directories of 1,000 files).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def template(path: Path) -> dict[str, bytes]:
    """The metadata objects of a small NCZarr store written by libnetcdf."""
    import netCDF4

    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("y", 100)
        ds.createDimension("x", 100)
        v = ds.createVariable("v", "f8", ("y", "x"), chunksizes=(10, 10), zlib=True)
        v.units = "K"
        v[:] = np.arange(10_000.0).reshape(100, 100)
    meta = {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob(".z*")}
    shutil.rmtree(path)
    return meta


def build(path: Path, meta: dict[str, bytes], n: int, nested: bool) -> None:
    for key, value in meta.items():
        (path / key).parent.mkdir(parents=True, exist_ok=True)
        (path / key).write_bytes(value)
    chunk = os.urandom(800)
    array = path / "v"
    for i in range(n):
        if nested:
            (array / str(i // 1000)).mkdir(exist_ok=True)
        (array / (f"{i // 1000}/{i % 1000}" if nested else f"{i // 1000}.{i % 1000}")).write_bytes(
            chunk
        )


def cpu() -> float:
    """CPU time of this process, user + system."""
    return time.process_time()


def once(store: Path) -> None:
    import nczarr

    # the template's f8 array has netcdf-c's rounded default fill: told once, not timed
    warnings.simplefilter("ignore", nczarr.NCZarrWarning)
    nczarr.migrate(str(store), to="zarr")
    nczarr.migrate(str(store), to="nczarr")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--nested", action="store_true", help="'/' chunk keys")
    parser.add_argument("--profile", type=int, default=None, help="profile one size")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nczarr-bench-migrate-", dir=args.dir))
    try:
        meta = template(work / "tmpl")
        sizes = [args.profile] if args.profile else [int(s) for s in args.sizes.split(",")]
        stores = {}
        for n in sizes:
            stores[n] = work / f"mig{n}"
            build(stores[n], meta, n, args.nested)
        if args.profile:
            once(stores[args.profile])  # warm
            profile = cProfile.Profile()
            profile.runcall(once, stores[args.profile])
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
            return
        best = {n: (float("inf"), float("inf")) for n in sizes}
        for _ in range(args.repeat):  # sizes alternate within each round
            for n in sizes:
                wall, c = time.perf_counter(), cpu()
                once(stores[n])
                wall, c = (time.perf_counter() - wall) / 2, (cpu() - c) / 2
                best[n] = (min(best[n][0], wall), min(best[n][1], c))
        base = best[sizes[0]]
        print(f"migrate to zarr and back, per migrate, best of {args.repeat}:")
        for n in sizes:
            wall, c = best[n]
            print(
                f"  {n:>7,} chunks  {wall * 1e3:8.2f} ms wall  {c * 1e3:8.2f} ms CPU   "
                f"ratio to {sizes[0]:,}: {wall / base[0]:6.2f}x wall {c / base[1]:6.2f}x CPU"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
