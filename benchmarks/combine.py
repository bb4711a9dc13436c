"""Combining many chunk-aligned daily sources into one store (issue 20).

365 daily NCZarr stores written by netcdf-c (netCDF4): ``time(1)``, ``lat``, ``lon``
and ``temp(time, lat, lon)`` in one zlib chunk per day. Three ways to one store:

* ``cp -r`` of every source into one directory (what copying the bytes costs; the
  result is 365 stores, not one dataset);
* ``nczarr.convert(sources, dst, concat_dim="time")``: every chunk copied verbatim
  under its shifted key (kernel copies), metadata once;
* ``xr.open_mfdataset(sources).to_zarr(dst)``: decode and encode everything.

Prints wall and CPU time of each (CPU: user + system of this process, or of the
waited-for child), the best of ``--repeat`` runs, and the ratios nczarr/cp and
xarray/nczarr. nczarr is measured twice: ``nczarr.convert`` in this warmed-up process
(the combine's own cost), and the CLI ``nczarr convert SRC... DST --concat-dim time``
in a fresh process (what a user pays: interpreter start and imports included; the
modules' ``.pyc`` are written first by a warm-up run). The issue's targets: <= 1.2x
cp, >= 10x faster than xarray.

With ``--memory 50,200,365`` it also combines the first N sources in a fresh process
for each N and prints that combine's peak RSS, and its growth over the process warmed
up by a combine of 2 sources (flat in N is the issue's target; Linux only). With
``--target-kind zip`` those combines write a zip archive (``dst.zip``) instead of a
directory: copies that are not kernel copies, run a few sources at a time. With
``--memory-sources nc`` the sources of those combines are the same days as netCDF-4
files (read through a view; parked between their check and their copies); it also
prints the most file descriptors open at a progress report of the combine.

With ``--baseline DIR`` (a tree of another nczarr, e.g. ``git archive 1551cfb``) the
combine (a fresh process warmed up by a 2-source combine, best of ``--repeat``) and the
CLI are also measured with ``PYTHONPATH=DIR``, alternating with this tree's in the same
minutes (the machine's load moves both alike), and so is ``--memory``.

With ``--cluster 1,2`` it also combines on a dask ``LocalCluster`` of 1, then 2 worker
processes (one thread each; warmed up by a small combine) and prints wall time, this
process's CPU, each worker's CPU and the combine's tasks.

With ``--callgrind`` it also counts the combine's instructions (valgrind's callgrind,
user space, a process warmed up by a 2-source combine; and the baseline's): a number
the machine's load does not move.

Usage::

    python3 benchmarks/combine.py                  # 365 days of 90 x 180
    python3 benchmarks/combine.py --days 30 --no-xarray   # quick
    python3 benchmarks/combine.py --dir /dev/shm   # tmpfs: no disk in the numbers
    python3 benchmarks/combine.py --no-xarray --memory 50,200,365
    python3 benchmarks/combine.py --no-xarray --memory 50,200,365 --target-kind zip
    python3 benchmarks/combine.py --no-xarray --cluster 1,2
    python3 benchmarks/combine.py --dir /dev/shm --repeat 5 --baseline /tmp/base
    python3 benchmarks/combine.py --dir /dev/shm --no-xarray --callgrind --baseline /tmp/base
"""

from __future__ import annotations

import argparse
import atexit
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import netCDF4
import numpy as np

#: Where child processes run: not a checkout, which ``-m``/``-c`` put first on sys.path
#: (before ``PYTHONPATH``: a ``--baseline`` run from the repository timed this tree).
_NEUTRAL = tempfile.mkdtemp(prefix="nczarr-bench-cwd-")  # empty: shadows nothing
atexit.register(shutil.rmtree, _NEUTRAL, ignore_errors=True)


def run_cli(cli: list[str], srcs: list[Path], out: Path, env: dict[str, str]) -> None:
    """The combine command of ``srcs`` into ``out`` in a fresh process (``env``: which
    nczarr tree)."""
    subprocess.run(
        [*cli, *map(str, srcs), str(out), "--concat-dim", "time"],
        check=True,
        capture_output=True,
        env=env,
        cwd=_NEUTRAL,
    )


def make_day(path: Path, day: int, ny: int, nx: int, nc: bool = False) -> None:
    """One daily NCZarr store (``nc``: netCDF-4 file) written by netcdf-c."""
    url = str(path) if nc else f"file://{path.resolve()}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w", format="NETCDF4") as ds:
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
import os, sys, time
import nczarr

def status(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field)) / 1024

fds = [0]

def progress(done, total):  # open descriptors, sampled (the first: after every check)
    if done % 16 == 1:
        fds[0] = max(fds[0], len(os.listdir("/proc/self/fd")))

srcs, dst = sys.argv[3:], sys.argv[1]
nczarr.convert(srcs[:2], sys.argv[2], concat_dim="time")  # imports, caches
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current RSS
before = status("VmRSS:")
c0 = time.process_time()
report = nczarr.convert(srcs, dst, concat_dim="time", progress=progress)
assert report.chunks_reencoded == 0
print(f"{before:.1f} {status('VmHWM:'):.1f} {time.process_time() - c0:.3f} {fds[0]}")
"""


def peak_rss(
    srcs: list[Path], dst: Path, env: dict[str, str] | None = None, kind: str = "dir"
) -> tuple[float, float, float, int]:
    """(RSS in MB after a warm-up combine of 2 sources, peak RSS during the combine of
    ``srcs``, CPU seconds of that combine, the most file descriptors open at a progress
    report of its copies) in a fresh process, into a directory or
    (``kind`` "zip") a zip archive. Linux only: the peak is reset through
    ``/proc/self/clear_refs`` after the warm-up."""
    warm = dst.with_name(dst.name + "-warm")
    if kind == "zip":
        dst, warm = dst.with_name(dst.name + ".zip"), warm.with_name(warm.name + ".zip")
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(dst), str(warm), *map(str, srcs)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=_NEUTRAL,
    ).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3])


_BEST = """
import resource, shutil, sys, time
import nczarr

def cpu():
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime

dst, repeat, srcs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
nczarr.convert(srcs[:2], dst + "-warm", concat_dim="time")  # imports, caches
shutil.rmtree(dst + "-warm")
runs = []
for run in range(repeat):
    c0, t0 = cpu(), time.perf_counter()
    report = nczarr.convert(srcs, dst, concat_dim="time")
    runs.append((time.perf_counter() - t0, cpu() - c0))
    assert report.chunks_reencoded == 0
    shutil.rmtree(dst)
print(" ".join(f"{w:.4f},{c:.4f}" for w, c in runs))
"""


def combines(
    srcs: list[Path], dst: Path, repeat: int, env: dict[str, str]
) -> list[tuple[float, float]]:
    """(wall, CPU) of ``repeat`` combines of ``srcs`` in one fresh process (with ``env``)
    warmed up by a combine of 2 sources."""
    out = subprocess.run(
        [sys.executable, "-c", _BEST, str(dst), str(repeat), *map(str, srcs)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=_NEUTRAL,
    ).stdout.split()
    return [(float(w), float(c)) for w, c in (x.split(",") for x in out)]


def on_cluster(srcs: list[Path], base: Path, workers: int, repeat: int) -> None:
    """Combine ``srcs`` on a fresh dask LocalCluster of ``workers`` processes (one
    thread each) ``repeat`` times; print the best wall time, its CPU times (the
    client's, each worker's) and the number of tasks the combine ran."""
    from distributed import Client, LocalCluster, get_task_stream

    import nczarr

    def cpu() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        return me.ru_utime + me.ru_stime

    with (
        LocalCluster(
            n_workers=workers,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        warm = base / f"cluster{workers}-warm"
        nczarr.convert(srcs[:4], warm, concat_dim="time", client=client)
        rows = []
        for run in range(repeat):
            dst = base / f"cluster{workers}-{run}"
            w0, c0, t0 = client.run(cpu), cpu(), time.perf_counter()
            with get_task_stream(client) as stream:
                report = nczarr.convert(srcs, dst, concat_dim="time", client=client)
            wall, mine = time.perf_counter() - t0, cpu() - c0
            theirs = {w: c - w0[w] for w, c in client.run(cpu).items()}
            tasks = sum(1 for t in stream.data if str(t["key"]).startswith("nczarr-"))
            assert report.chunks_reencoded == 0
            rows.append((wall, mine, sorted(theirs.values()), tasks))
            shutil.rmtree(dst)
    wall, mine, theirs, tasks = min(rows)
    print(
        f"dask LocalCluster, {workers} worker(s): wall {wall:6.2f} s, client cpu {mine:5.2f} s, "
        f"workers cpu {sum(theirs):5.2f} s ("
        + " + ".join(f"{c:.2f}" for c in theirs)
        + f"), {tasks} tasks (best of {repeat}; all walls "
        + ", ".join(f"{r[0]:.2f}" for r in rows)
        + ")"
    )


_CG_CHILD = """
import os, shutil, sys, warnings
import nczarr
warnings.simplefilter("ignore")
dst, srcs = sys.argv[1], sys.argv[2:]
nczarr.convert(srcs[:2], dst + "-warm", concat_dim="time")  # imports, caches
os.getppid()  # callgrind dumps here (the warm-up) ...
nczarr.convert(srcs, dst, concat_dim="time")
os.getpgrp()  # ... and here (the combine)
shutil.rmtree(dst)
shutil.rmtree(dst + "-warm")
"""


def instructions(srcs: list[Path], dst: Path, env: dict[str, str]) -> float:
    """Instructions (user space, valgrind ``--tool=callgrind``) of one combine of
    ``srcs`` in a process warmed up by a 2-source combine (the load does not move
    them): callgrind dumps its counters when ``getppid``/``getpgrp`` are entered, so
    the second dump holds the combine alone. ``PYTHONHASHSEED=0``."""
    out = dst.with_name(dst.name + "-cg")
    out.mkdir()
    try:
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=getppid",
            "--dump-before=getpgrp",
            "--dump-instr=no",
            f"--callgrind-out-file={out / 'cg.out'}",
            sys.executable,
            "-c",
            _CG_CHILD,
            str(dst),
            *map(str, srcs),
        ]
        subprocess.run(
            cmd, check=True, capture_output=True, env={**env, "PYTHONHASHSEED": "0"}, cwd=_NEUTRAL
        )
        text = (out / "cg.out.2").read_text()
        return float(next(x for x in text.splitlines() if x.startswith("summary:")).split()[1])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The run with the least CPU time (the machine is shared: less is less disturbed)."""
    return min(runs, key=lambda r: r[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--ny", type=int, default=90)
    parser.add_argument("--nx", type=int, default=180)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--no-xarray", action="store_true", help="skip open_mfdataset")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best is shown")
    parser.add_argument(
        "--memory", default="", help="comma-separated source counts: peak RSS of each"
    )
    parser.add_argument(
        "--target-kind",
        choices=("dir", "zip"),
        default="dir",
        help="what the --memory combines write: a directory or a zip archive",
    )
    parser.add_argument(
        "--memory-sources",
        choices=("nczarr", "nc"),
        default="nczarr",
        help="what the --memory combines read: the NCZarr stores or netCDF-4 files",
    )
    parser.add_argument(
        "--cluster", default="", help="comma-separated dask LocalCluster worker counts"
    )
    parser.add_argument(
        "--baseline", default=None, help="a tree of another nczarr, measured alternately"
    )
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="also count the combine's instructions (valgrind; and the baseline's)",
    )
    args = parser.parse_args()

    import warnings

    import nczarr

    # each combine says that netcdf-c's rounded double fill of `time` is written exactly
    warnings.simplefilter("ignore", nczarr.NCZarrWarning)
    base = Path(tempfile.mkdtemp(prefix="nczarr-combine-", dir=args.dir)).resolve()
    # children start here: run from a source tree, `python -c`/`-m` would import that
    # tree's nczarr before PYTHONPATH's (the baseline would be this tree)
    os.chdir(base)
    try:
        srcs = []
        for day in range(args.days):
            path = base / "src" / f"day{day:03d}"
            path.parent.mkdir(exist_ok=True)
            make_day(path, day, args.ny, args.nx)
            srcs.append(path)
        size = sum(p.stat().st_size for s in srcs for p in s.rglob("*") if p.is_file())
        print(f"{args.days} sources, {size / 1e6:.1f} MB, chunk {args.ny}x{args.nx} f4 zlib")
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")

        # warm up (imports, .pyc written for the CLI runs): not part of any measurement
        nczarr.convert(srcs[:2], base / "warm", concat_dim="time")
        cli = [sys.executable, "-m", "nczarr", "convert"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(
            [*cli, *map(str, srcs[:2]), str(base / "warm-cli"), "--concat-dim", "time"],
            check=True,
            capture_output=True,
            env=env,
            cwd=_NEUTRAL,
        )
        if not args.no_xarray:
            import xarray  # noqa: F401

        cps, ncs, clis, imports = [], [], [], []
        subs: list[tuple[float, float]] = []
        other_subs: list[tuple[float, float]] = []
        other_clis: list[tuple[float, float]] = []
        other = None if args.baseline is None else {**env, "PYTHONPATH": args.baseline}
        if other is not None:  # the baseline's .pyc written, as this tree's were above
            subprocess.run(
                [*cli, *map(str, srcs[:2]), str(base / "warm-base"), "--concat-dim", "time"],
                check=True,
                capture_output=True,
                env=other,
                cwd=_NEUTRAL,
            )
        report = None
        for run in range(args.repeat):
            dst = base / f"cp{run}"
            dst.mkdir()
            cps.append(
                timed(
                    lambda dst=dst: subprocess.run(
                        ["cp", "-r", *map(str, srcs), str(dst)], check=True
                    )
                )
            )
            # each copy removed before the next is timed: on tmpfs a write into memory
            # that two earlier copies still hold cost the third up to 2x the system time
            shutil.rmtree(dst)

            def combine(run: int = run) -> None:
                nonlocal report
                report = nczarr.convert(srcs, base / f"nczarr{run}", concat_dim="time")

            ncs.append(timed(combine))
            assert report is not None and report.chunks_reencoded == 0
            shutil.rmtree(base / f"nczarr{run}")
            out = base / f"cli{run}"
            clis.append(timed(lambda out=out: run_cli(cli, srcs, out, env)))
            shutil.rmtree(out)
            imports.append(
                timed(
                    lambda: subprocess.run(
                        [sys.executable, "-c", "import nczarr.cli.main, nczarr.conversion"],
                        check=True,
                        env=env,
                        cwd=_NEUTRAL,
                    )
                )
            )
            if other is not None:  # this tree and the baseline, alternately
                subs.extend(combines(srcs, base / "sub", 1, env))
                other_subs.extend(combines(srcs, base / "sub", 1, other))
                out = base / f"cli-base{run}"
                other_clis.append(timed(lambda out=out: run_cli(cli, srcs, out, other)))
                shutil.rmtree(out)
        cp, nc, fresh, imp = best(cps), best(ncs), best(clis), best(imports)
        rows = [
            ("cp -r", cp),
            ("nczarr.convert (in process)", nc),
            ("nczarr convert CLI (fresh)", fresh),
            ("  of which start + imports", imp),
        ]
        if other is not None:
            rows += [
                ("combine, fresh process, warmed", best(subs)),
                ("baseline: same", best(other_subs)),
                ("baseline: CLI (fresh)", best(other_clis)),
            ]
        if not args.no_xarray:
            import xarray as xr

            def mf() -> None:
                urls = [f"file://{s.resolve()}#mode=nczarr,file" for s in srcs]
                ds = xr.open_mfdataset(urls, engine="netcdf4", combine="nested", concat_dim="time")
                ds.to_zarr(base / "xarray.zarr", zarr_format=2, mode="w")

            rows.append(
                ("xr.open_mfdataset().to_zarr()", best([timed(mf) for _ in range(args.repeat)]))
            )
        print(f"best of {args.repeat} runs (least CPU) each:")
        for name, (wall, cpu) in rows:
            print(f"{name:32s} wall {wall:7.2f} s   cpu {cpu:7.2f} s")
        print(
            f"nczarr in process / cp: cpu {nc[1] / max(cp[1], 1e-9):.2f}x;  CLI (fresh) / cp: "
            f"cpu {fresh[1] / max(cp[1], 1e-9):.2f}x"
        )
        for i, what in ((0, "wall"), (1, "cpu")):
            print(
                f"all {what}: "
                + "; ".join(
                    f"{n} " + ", ".join(f"{r[i]:.2f}" for r in runs)
                    for n, runs in (("cp", cps), ("in-process", ncs), ("cli", clis))
                )
            )
        median = statistics.median
        print(
            "medians / cp's: wall in process "
            f"{median(r[0] for r in ncs) / median(r[0] for r in cps):.2f}x, CLI "
            f"{median(r[0] for r in clis) / median(r[0] for r in cps):.2f}x; cpu in process "
            f"{median(r[1] for r in ncs) / median(r[1] for r in cps):.2f}x, CLI "
            f"{median(r[1] for r in clis) / median(r[1] for r in cps):.2f}x"
        )
        if other is not None:
            print(
                "this tree / baseline: combine cpu "
                f"{best(subs)[1] / best(other_subs)[1]:.2f}x, CLI cpu "
                f"{fresh[1] / best(other_clis)[1]:.2f}x; all cpu: this "
                + ", ".join(f"{r[1]:.3f}" for r in subs)
                + "; baseline "
                + ", ".join(f"{r[1]:.3f}" for r in other_subs)
            )
        if not args.no_xarray:
            xa = rows[-1][1]
            print(
                f"xarray / nczarr in process: wall {xa[0] / nc[0]:.1f}x, cpu {xa[1] / nc[1]:.1f}x; "
                f"xarray / CLI (fresh): wall {xa[0] / fresh[0]:.1f}x, cpu {xa[1] / fresh[1]:.1f}x"
            )
        counts = [int(x) for x in args.memory.split(",") if x]
        mem_srcs = srcs
        if counts and args.memory_sources == "nc":
            (base / "nc").mkdir()
            mem_srcs = [base / "nc" / f"day{day:03d}.nc" for day in range(max(counts))]
            for day, path in enumerate(mem_srcs):
                make_day(path, day, args.ny, args.nx, nc=True)
        for n in counts:
            for label, with_env in (("", None), ("baseline: ", other))[: 1 + (other is not None)]:
                dst = base / f"peak{n}{'-base' if label else ''}"
                before, peak, cpu, fds = peak_rss(mem_srcs[:n], dst, with_env, args.target_kind)
                print(
                    f"{label}{n:4d} {args.memory_sources} ({args.target_kind}): "
                    f"peak RSS {peak:6.1f} MB ({peak - before:+.1f} MB over the warmed-up "
                    f"process's RSS), combine cpu {cpu:.2f} s, {fds} file descriptors"
                )
        if args.callgrind:
            for label, with_env in (("", env), ("baseline: ", other))[: 1 + (other is not None)]:
                count = instructions(srcs, base / "cg", with_env)  # type: ignore[arg-type]
                print(f"{label}instructions of the combine of {len(srcs)}: {count / 1e6:.1f} M")
        for workers in [int(x) for x in args.cluster.split(",") if x]:
            on_cluster(srcs, base, workers, args.repeat)
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
