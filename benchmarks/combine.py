"""Combining many chunk-aligned daily sources into one store (issue 20).

365 daily NCZarr stores written by netcdf-c (netCDF4): ``time(1)``, ``lat``, ``lon``
and ``temp(time, lat, lon)`` in one zlib chunk per day. Three ways to one store:

* ``cp -r`` of every source into one directory (what copying the bytes costs; the
  result is 365 stores, not one dataset);
* ``nczarr.convert(sources, dst, concat_dim="time")``: every chunk copied verbatim
  under its shifted key (kernel copies), metadata once;
* ``xr.open_mfdataset(sources).to_zarr(dst)``: decode and encode everything.

Prints wall and CPU time of each (CPU: this process, or the ``cp`` child), and the
ratios nczarr/cp and xarray/nczarr. The issue's targets: <= 1.2x cp, >= 10x faster
than xarray.

With ``--memory 50,200,365`` it also combines the first N sources in a fresh process
for each N and prints that combine's peak RSS, and its growth over the process warmed
up by a combine of 2 sources (flat in N is the issue's target; Linux only).

Usage::

    python3 benchmarks/combine.py                  # 365 days of 90 x 180
    python3 benchmarks/combine.py --days 30 --no-xarray   # quick
    python3 benchmarks/combine.py --dir /dev/shm   # tmpfs: no disk in the numbers
    python3 benchmarks/combine.py --no-xarray --memory 50,200,365
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import netCDF4
import numpy as np


def make_day(path: Path, day: int, ny: int, nx: int) -> None:
    """One daily NCZarr store written by netcdf-c."""
    with netCDF4.Dataset(f"file://{path.resolve()}#mode=nczarr,file", "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", ny)
        ds.createDimension("lon", nx)
        t = ds.createVariable("time", "f8", ("time",), chunksizes=(1,))
        t.units = "days since 2001-01-01"
        t[:] = [day]
        ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-89, 89, ny)
        ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 358, nx)
        v = ds.createVariable(
            "temp", "f4", ("time", "lat", "lon"), chunksizes=(1, ny, nx), zlib=True, complevel=1
        )
        v.units = "K"
        rng = np.random.default_rng(day)
        v[:] = (280 + rng.standard_normal((1, ny, nx))).astype("f4")
        ds.title = "daily"


def timed(run: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its waited-for children)."""

    def cpu() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    c0, t0 = cpu(), time.perf_counter()
    run()
    return time.perf_counter() - t0, cpu() - c0


_PEAK = """
import sys, time
import nczarr

def status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field)) / 1024

srcs, dst = sys.argv[3:], sys.argv[1]
nczarr.convert(srcs[:2], sys.argv[2], concat_dim="time")  # imports, caches
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current RSS
before = status("VmRSS:")
c0 = time.process_time()
report = nczarr.convert(srcs, dst, concat_dim="time")
assert report.chunks_reencoded == 0
print(f"{before:.1f} {status('VmHWM:'):.1f} {time.process_time() - c0:.3f}")
"""


def peak_rss(srcs: list[Path], dst: Path) -> tuple[float, float, float]:
    """(RSS in MB after a warm-up combine of 2 sources, peak RSS during the combine of
    ``srcs``, CPU seconds of that combine) in a fresh process. Linux only: the peak is
    reset through ``/proc/self/clear_refs`` after the warm-up."""
    warm = dst.with_name(dst.name + "-warm")
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(dst), str(warm), *map(str, srcs)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--ny", type=int, default=90)
    parser.add_argument("--nx", type=int, default=180)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--no-xarray", action="store_true", help="skip open_mfdataset")
    parser.add_argument(
        "--memory", default="", help="comma-separated source counts: peak RSS of each"
    )
    args = parser.parse_args()

    import nczarr

    base = Path(tempfile.mkdtemp(prefix="nczarr-combine-", dir=args.dir))
    try:
        srcs = []
        for day in range(args.days):
            path = base / "src" / f"day{day:03d}"
            path.parent.mkdir(exist_ok=True)
            make_day(path, day, args.ny, args.nx)
            srcs.append(path)
        size = sum(p.stat().st_size for s in srcs for p in s.rglob("*") if p.is_file())
        print(f"{args.days} sources, {size / 1e6:.1f} MB, chunk {args.ny}x{args.nx} f4 zlib")

        # warm up (imports, .pyc): not part of any measurement
        nczarr.convert(srcs[:2], base / "warm", concat_dim="time")
        if not args.no_xarray:
            import xarray  # noqa: F401

        (base / "cp").mkdir()
        cp = timed(
            lambda: subprocess.run(["cp", "-r", *map(str, srcs), str(base / "cp")], check=True)
        )
        report = None

        def combine() -> None:
            nonlocal report
            report = nczarr.convert(srcs, base / "nczarr", concat_dim="time")

        nc = timed(combine)
        assert report is not None and report.chunks_reencoded == 0
        rows = [("cp -r", cp), ("nczarr.convert concat_dim", nc)]
        if not args.no_xarray:
            import xarray as xr

            def mf() -> None:
                urls = [f"file://{s.resolve()}#mode=nczarr,file" for s in srcs]
                ds = xr.open_mfdataset(urls, engine="netcdf4", combine="nested", concat_dim="time")
                ds.to_zarr(base / "xarray.zarr", zarr_format=2)

            rows.append(("xr.open_mfdataset().to_zarr()", timed(mf)))
        for name, (wall, cpu) in rows:
            print(f"{name:32s} wall {wall:7.2f} s   cpu {cpu:7.2f} s")
        print(f"nczarr / cp: wall {nc[0] / cp[0]:.2f}x, cpu {nc[1] / max(cp[1], 1e-9):.2f}x")
        if not args.no_xarray:
            xa = rows[-1][1]
            print(f"xarray / nczarr: wall {xa[0] / nc[0]:.1f}x, cpu {xa[1] / nc[1]:.1f}x")
        for n in [int(x) for x in args.memory.split(",") if x]:
            before, peak, cpu = peak_rss(srcs[:n], base / f"peak{n}")
            print(
                f"{n:4d} sources: peak RSS {peak:6.1f} MB ({peak - before:+.1f} MB over the "
                f"warmed-up process's RSS), combine cpu {cpu:.2f} s"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
