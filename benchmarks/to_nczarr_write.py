"""Benchmark ``nczarr.to_nczarr`` against ``to_netcdf`` on netcdf-c's NCZarr URL (issue 22).

Run::

    python3 benchmarks/to_nczarr_write.py --dir /dev/shm           # time and memory
    python3 benchmarks/to_nczarr_write.py --dir /dev/shm --no-memory
    NCZARR_SRC=/path/to/checkout python3 benchmarks/to_nczarr_write.py   # another commit

Time: 4 ``float32`` variables of 1500 x 1500 (values ``round(N(0,1) * 10, 2)``) in
memory, written with zlib level 1 and ``chunksizes=(100, 100)`` (900 chunks of 40 KB)
by ``ds.to_netcdf("file://...#mode=nczarr,file", engine="netcdf4")`` (libnetcdf) and by
``nczarr.to_nczarr`` to the same kind of URL. Contenders run interleaved ``--repeat``
times; the minimum of wall time and of CPU time (user + system of every thread of
this process) is kept, and the ratio to_nczarr / to_netcdf printed. The ``encode
floor`` is numcodecs' shuffle + zlib of the same 900 chunks in one loop, no I/O.

Memory: a dask-backed dataset that is never in memory (4 variables of 4000 x 4000
``float32``, 256 MB, then 8000 x 8000, 1 GB; generated chunk by chunk in 500 x 500
chunks of 1 MB) is written
by ``to_nczarr`` in a fresh child process; the child prints its peak resident set
(``ru_maxrss``) after building the dataset and after the write. Bounded means the
growth is a few chunks per dask worker, not the dataset.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = os.environ.get("NCZARR_SRC", str(HERE.parent))
sys.path.insert(0, SRC)

SIDE, EDGE, NVARS = 1500, 100, 4
ENC = {"zlib": True, "complevel": 1, "chunksizes": (EDGE, EDGE)}


def make_dataset() -> Any:
    import numpy as np
    import xarray as xr

    rng = np.random.default_rng(0)
    data = {
        f"v{i}": (("y", "x"), np.round(rng.standard_normal((SIDE, SIDE)) * 10, 2).astype("f4"))
        for i in range(NVARS)
    }
    return xr.Dataset(data)


def contenders(tmp: Path, ds: Any) -> dict[str, Callable[[], object]]:
    import numcodecs
    import numpy as np

    import nczarr

    enc = {name: dict(ENC) for name in ds}
    n = [0]

    def target(tag: str) -> Path:
        n[0] += 1
        return tmp / f"w-{tag}-{n[0]}.file"

    def netcdf() -> None:
        path = target("nc")
        ds.to_netcdf(f"file://{path}#mode=nczarr,file", engine="netcdf4", encoding=enc)
        shutil.rmtree(path)

    def ours() -> None:
        path = target("nz")
        nczarr.to_nczarr(ds, f"file://{path}#mode=nczarr,file", encoding=enc)
        shutil.rmtree(path)

    zlib, shuffle = numcodecs.Zlib(level=1), numcodecs.Shuffle(elementsize=4)
    arrays = [ds[name].values for name in ds]

    def floor() -> None:
        for values in arrays:
            for i in range(0, SIDE, EDGE):
                for j in range(0, SIDE, EDGE):
                    chunk = np.ascontiguousarray(values[i : i + EDGE, j : j + EDGE])
                    zlib.encode(shuffle.encode(chunk))

    return {"to_netcdf": netcdf, "to_nczarr": ours, "encode floor": floor}


def best_of(runs: dict[str, Callable[[], object]], repeat: int) -> tuple[dict, dict]:
    wall = dict.fromkeys(runs, float("inf"))
    cpu = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, run in runs.items():
            w, c = time.perf_counter(), time.process_time()
            run()
            wall[name] = min(wall[name], time.perf_counter() - w)
            cpu[name] = min(cpu[name], time.process_time() - c)
    return wall, cpu


_MEMORY_CHILD = """
import os, resource, sys, warnings
sys.path.insert(0, {src!r})
warnings.simplefilter("ignore")
import dask, dask.array as da, numpy as np, xarray as xr
import nczarr
side, edge = {side}, 500
rng = da.random.default_rng(0)
ds = xr.Dataset({{f"v{{i}}": (("y", "x"), da.round(rng.standard_normal((side, side),
     chunks=edge) * 10, 2).astype("f4")) for i in range(4)}})
enc = {{n: {{"zlib": True, "complevel": 1, "chunksizes": (edge, edge)}} for n in ds}}
mb = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
before = mb()
nczarr.to_nczarr(ds, {url!r}, encoding=enc)
after = mb()
print(f"dataset {{4 * side * side * 4 / 2**20:.0f}} MB in chunks of "
      f"{{edge * edge * 4 / 2**20:.2f}} MB, dask workers {{dask.system.CPU_COUNT}}: "
      f"peak RSS {{before:.0f}} MB before the write, {{after:.0f}} MB after "
      f"(+{{after - before:.0f}} MB)")
"""


def memory(tmp: Path, side: int) -> None:
    url = f"file://{tmp / 'mem.file'}#mode=nczarr,file"
    code = _MEMORY_CHILD.format(src=SRC, url=url, side=side)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print(out.stdout.strip() or out.stderr[-2000:])
    shutil.rmtree(tmp / "mem.file", ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--no-time", action="store_true")
    parser.add_argument(
        "--memory-sides", default="4000,8000", help="sides of the dask-backed variables"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import netCDF4
    import xarray as xr
    import zarr

    import nczarr

    print(
        f"nczarr {nczarr.__file__}\nzarr {zarr.__version__}, xarray {xr.__version__}, "
        f"libnetcdf {netCDF4.__netcdf4libversion__}, nproc {os.cpu_count()}, "
        f"load {os.getloadavg()[0]:.1f}; best of {args.repeat}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="nczarr-write-", dir=args.dir))
    try:
        if not args.no_time:
            wall, cpu = best_of(contenders(tmp, make_dataset()), args.repeat)
            for clock, best in (("wall", wall), ("cpu", cpu)):
                base = best["to_netcdf"]
                parts = " | ".join(f"{k} {v * 1e3:7.1f}" for k, v in best.items())
                print(
                    f"{clock:4s} ms: {parts}   to_nczarr/to_netcdf {best['to_nczarr'] / base:.3f}"
                )
        if not args.no_memory:
            for side in args.memory_sides.split(","):
                memory(tmp, int(side))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
