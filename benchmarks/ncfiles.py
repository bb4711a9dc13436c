"""Convert a netCDF file to NCZarr and Zarr v2: nczarr against cp, nccopy and xarray.

Sources, written once with netCDF4:

* a netCDF-4 file of ``--mb`` MB of raw values in four variables on ``(time, y, x)``
  (deflate level ``--level`` + shuffle, chunks of 1 MB raw): ``temperature`` (float32,
  a smooth field plus noise, two decimals, as measured data is stored),
  ``precipitation`` (float32, mostly zero, one decimal), ``pressure`` (float64, one
  decimal) and ``noise`` (float32 at full precision: the hard case for deflate); about
  40 % of the raw size is stored,
* a netCDF-3 (64-bit offset) file of about ``--mb`` / 3 MB with two record variables
  (one record of 1 MB per chunk),
* two small netCDF-4 files of 2,000 and 20,000 chunks (4 KB raw each) for the peak
  memory of a convert, each in a fresh process (``VmHWM``).

Each source is converted on ``--dir`` (tmpfs by default: the copy floor, not the disk) by

* ``cp`` of the ``.nc`` (``shutil.copyfile``; the floor: read and write every byte once),
* ``nczarr.convert`` to NCZarr and to Zarr v2 (chunks copied as byte ranges),
* ``nccopy -k nc4 -u SRC 'file://OUT#mode=nczarr,file'`` (Debian's netcdf-bin 4.9.0;
  ``-u``: 4.9.0 writes no unlimited dimension to NCZarr; it keeps the chunk shapes but
  writes the chunks *uncompressed* -- that build has no NCZarr filters -- so it only
  decodes, and its target is the raw size),
* ``xr.open_dataset(...).to_zarr()`` (decodes everything, encodes with zarr's default),

and the best of ``--repeat`` wall times and CPU times (user + system, threads and
waited-for child processes included) are printed with their ratio to ``cp``; on a
loaded machine the CPU time is the steadier number.

``--cli`` runs each case as a fresh process instead (``cp SRC DST`` against
``python -m nczarr convert --mode M SRC DST``): what a user pays, interpreter start
and imports included. Run it with byte-compiled modules (``PYTHONDONTWRITEBYTECODE``
unset, or ``PYTHONPYCACHEPREFIX`` set to a writable directory): without ``.pyc`` files
every nczarr module is compiled at each start, which costs more than the copy.
``--chunks 10000,100000`` sets the chunk counts of the peak-memory runs, which print
the peak RSS (``VmHWM``) and the peak of Python's own allocations (``tracemalloc``,
a second run) and their growth per chunk between the smallest and largest file.
``--baseline DIR`` alternates this tree with another (an export of an older commit,
put first on ``PYTHONPATH``) round by round, every run a fresh process: with
``--cli`` the whole command, else only the ``convert`` call timed inside the process.
``--sources DIR`` keeps the built sources in ``DIR`` and reuses them (run the script
again with ``PYTHONPATH`` at another commit to compare on the same files).

Usage::

    python3 benchmarks/ncfiles.py                      # 1000 MB raw (~400 MB file), minutes
    python3 benchmarks/ncfiles.py --mb 100 --repeat 1  # quick
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import netCDF4
import numpy as np

import nczarr

#: The netCDF-4 grid: one float32 field per time step is 1 MB raw.
NY, NX = 256, 1024


def _smooth(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    base = np.cumsum(rng.normal(size=(rows, cols)), axis=1) * 0.01
    return base.astype("f4")


def build_netcdf4(path: Path, mb: int, level: int = 4) -> None:
    """Four variables of 1 MB raw chunks, 5 MB raw per time step (see the module)."""
    steps = max(1, math.ceil(mb / 5))
    rng = np.random.default_rng(0)
    yy, xx = np.meshgrid(np.linspace(0, np.pi, NY), np.linspace(0, 2 * np.pi, NX), indexing="ij")
    codec = {"compression": "zlib", "complevel": level, "shuffle": True}
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("y", NY)
        ds.createDimension("x", NX)
        dims = ("time", "y", "x")
        f4 = (1, NY, NX)
        temperature = ds.createVariable("temperature", "f4", dims, chunksizes=f4, **codec)
        precipitation = ds.createVariable("precipitation", "f4", dims, chunksizes=f4, **codec)
        pressure = ds.createVariable("pressure", "f8", dims, chunksizes=(1, NY // 2, NX), **codec)
        noise = ds.createVariable("noise", "f4", dims, chunksizes=f4, **codec)
        for t in range(steps):
            phase = t * 0.05
            field = np.sin(yy + phase) * np.cos(xx - phase)
            temperature[t] = np.round(273.15 + 20 * field + rng.normal(0, 0.3, field.shape), 2)
            precipitation[t] = np.round(rng.gamma(0.5, 2.0, field.shape) * (field > 0.3), 1)
            pressure[t] = np.round(101325 + 800 * field + rng.normal(0, 5, field.shape), 1)
            noise[t] = _smooth(rng, NY, NX)


def build_many_chunks(path: Path, chunks: int, values: int = 1024) -> None:
    """One float32 variable of ``chunks`` deflate+shuffle chunks of ``values`` values
    (4 KB raw by default)."""
    rng = np.random.default_rng(2)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", chunks)
        ds.createDimension("x", values)
        v = ds.createVariable(
            "v",
            "f4",
            ("n", "x"),
            compression="zlib",
            complevel=4,
            shuffle=True,
            chunksizes=(1, values),
        )
        for start in range(0, chunks, 1000):
            n = min(1000, chunks - start)
            v[start : start + n] = _smooth(rng, n, values)


def build_netcdf3(path: Path, mb: int) -> None:
    rows = mb // 2
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 262144)
        a = ds.createVariable("a", "f4", ("time", "x"))
        b = ds.createVariable("b", "f4", ("time", "x"))
        for start in range(0, rows, 16):
            n = min(16, rows - start)
            a[start : start + n] = _smooth(rng, n, 262144)
            b[start : start + n] = _smooth(rng, n, 262144)


def _cpu() -> float:
    """CPU seconds (user + system) of this process (all its threads) and its
    finished children; ``getrusage`` where it exists (microseconds, where
    ``os.times`` counts 10 ms ticks)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _size(out: Path) -> int:
    """Bytes under a target (a file or a directory tree)."""
    if out.is_file():
        return out.stat().st_size
    return sum(f.stat().st_size for f in out.rglob("*") if f.is_file())


def best(fn: Callable[[Path], None], work: Path, repeat: int) -> tuple[float, float, int]:
    """Best wall time and best CPU time (user + system, children included) of
    ``repeat`` runs, and the target's size: on a loaded machine the CPU time is the
    steadier of the two."""
    times, cpus, size = [], [], 0
    for i in range(repeat):
        out = work / f"out{i}"
        shutil.rmtree(out, ignore_errors=True)
        cpu = _cpu()
        start = time.perf_counter()
        fn(out)
        times.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
        size = _size(out.with_suffix(".nc")) if out.with_suffix(".nc").exists() else _size(out)
        shutil.rmtree(out, ignore_errors=True)
        if out.with_suffix(".nc").exists():
            out.with_suffix(".nc").unlink()
    return min(times), min(cpus), size


def run(
    src: Path, work: Path, repeat: int, peer_repeat: int | None = None
) -> dict[str, tuple[float, float, int]]:
    import xarray as xr

    def cp(out: Path) -> None:
        shutil.copyfile(src, out.with_suffix(".nc"))

    def to_nczarr(out: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nczarr.convert(str(src), str(out), "nczarr")

    def to_zarr(out: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nczarr.convert(str(src), str(out), "zarr")

    def nccopy(out: Path) -> None:
        subprocess.run(
            ["nccopy", "-k", "nc4", "-u", str(src), f"file://{out}#mode=nczarr,file"],
            check=True,
        )

    def xarray(out: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with xr.open_dataset(src) as ds:
                ds.to_zarr(str(out), zarr_format=2, consolidated=False)

    cases = {
        "cp": cp,
        "nczarr -> NCZarr": to_nczarr,
        "nczarr -> Zarr v2": to_zarr,
        "nccopy -> NCZarr": nccopy,
        "xarray to_zarr": xarray,
    }
    peers = ("nccopy -> NCZarr", "xarray to_zarr")
    slow = peer_repeat or repeat
    if peer_repeat == 0:
        cases = {k: v for k, v in cases.items() if k not in peers}
    return {name: best(fn, work, slow if name in peers else repeat) for name, fn in cases.items()}


CALL_SCRIPT = textwrap.dedent(
    """
    import os, resource, shutil, sys, time, warnings
    import nczarr
    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    warnings.simplefilter("ignore")
    c, t = cpu(), time.perf_counter()
    if sys.argv[3] == "cp":
        shutil.copyfile(sys.argv[1], sys.argv[2])
    else:
        workers = {"workers": int(sys.argv[4])} if sys.argv[4:] else {}
        nczarr.convert(sys.argv[1], sys.argv[2], sys.argv[3], **workers)
    print(time.perf_counter() - t, cpu() - c)
    """
)


def compare(
    src: Path, work: Path, repeat: int, baseline: str, cli: bool, workers: int | None = None
) -> dict[str, tuple[float, float, int]]:
    """This tree against ``baseline`` (a directory put first on ``PYTHONPATH``), each
    run a fresh process and the cases alternated round by round (a loaded machine
    weighs on all alike). ``cli``: ``cp`` and ``python -m nczarr convert`` whole
    (CPU of the child); else only the call (``shutil.copyfile`` / ``nczarr.convert``
    timed inside the process, imports excluded). Best of ``repeat``. ``workers``:
    the convert's ``workers`` (``--workers`` of the command), else its default."""
    script = work / "call.py"
    script.write_text(CALL_SCRIPT)
    # both trees first on PYTHONPATH: an editable install's import hook is not timed
    here = str(Path(nczarr.__file__).resolve().parent.parent)
    envs = {
        "": {**os.environ, "PYTHONPATH": here},
        "baseline ": {**os.environ, "PYTHONPATH": baseline},
    }

    given = [] if workers is None else [str(workers)]

    def argv(fmt: str, out: Path) -> list[str]:
        if not cli:
            return [sys.executable, str(script), str(src), str(out), fmt, *given]
        if fmt == "cp":
            return ["cp", str(src), str(out)]
        flag = ["--workers", *given] if given else []
        return [sys.executable, "-m", "nczarr", "convert", "--mode", fmt, *flag, str(src), str(out)]

    cases = {"cp": ("", "cp")}
    for tag in envs:
        cases[f"{tag}nczarr -> NCZarr"] = (tag, "nczarr")
        cases[f"{tag}nczarr -> Zarr v2"] = (tag, "zarr")
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    sizes: dict[str, int] = {}
    for _ in range(repeat):
        for name, (tag, fmt) in cases.items():
            out = work / "cmp_out"
            shutil.rmtree(out, ignore_errors=True)
            before, start = _cpu(), time.perf_counter()
            done = subprocess.run(
                argv(fmt, out),
                env=envs[tag],
                check=True,
                capture_output=True,
                text=True,
                cwd=work,  # not a checkout: ``-m`` puts the directory first on sys.path
            )
            wall, cpu = time.perf_counter() - start, _cpu() - before
            if not cli:
                wall, cpu = map(float, done.stdout.split()[-2:])
            seen[name].append((wall, cpu))
            sizes[name] = _size(out)
            shutil.rmtree(out, ignore_errors=True)
            if out.is_file():
                out.unlink()
    return {
        name: (min(w for w, _ in runs), min(c for _, c in runs), sizes[name])
        for name, runs in seen.items()
    }


def run_cli(
    src: Path, work: Path, repeat: int, peer_repeat: int | None = None
) -> dict[str, tuple[float, float, int]]:
    """:func:`run` with ``cp`` and ``nczarr convert`` as fresh processes."""

    def proc(*argv: str, suffix: str = "") -> Callable[[Path], None]:
        def go(out: Path) -> None:
            target = out.with_suffix(suffix) if suffix else out
            subprocess.run(
                [*argv, str(src), str(target)],
                check=True,
                stdout=subprocess.DEVNULL,
                cwd=work,  # not a checkout: ``-m`` puts the directory first on sys.path
            )

        return go

    nczarr_cli = (sys.executable, "-m", "nczarr", "convert", "--mode")
    cases = {
        "cp": proc("cp", suffix=".nc"),
        "nczarr -> NCZarr": proc(*nczarr_cli, "nczarr"),
        "nczarr -> Zarr v2": proc(*nczarr_cli, "zarr"),
    }
    return {name: best(fn, work, repeat) for name, fn in cases.items()}


def report(label: str, src: Path, where: str, results: dict[str, tuple[float, float, int]]) -> None:
    size = src.stat().st_size / 2**20
    print(f"\n{label}: {size:.0f} MB on {where}")
    floor, cpu_floor, _ = results["cp"]
    print(f"  {'':20s} {'wall':>9s} {'':7s} {'CPU':>9s} {'':10s} {'target':>8s}")
    for name, (seconds, cpu, out) in results.items():
        print(
            f"  {name:20s} {seconds:7.2f} s {seconds / floor:6.2f}x "
            f"{cpu:7.2f} s {cpu / cpu_floor:6.2f}x cp {out / 2**20:6.0f} MB"
        )
    for peer in ("nccopy -> NCZarr", "xarray to_zarr") if "nccopy -> NCZarr" in results else ():
        for ours in ("nczarr -> NCZarr", "nczarr -> Zarr v2"):
            print(
                f"  {peer} / {ours}: wall {results[peer][0] / results[ours][0]:5.1f}x, "
                f"CPU {results[peer][1] / results[ours][1]:5.1f}x"
            )


MEMORY_SCRIPT = textwrap.dedent(
    """
    import sys, tracemalloc, warnings
    import nczarr
    if sys.argv[5:] == ["trace"]:  # what the convert allocates, not the imports it makes
        import h5py, numpy
        tracemalloc.start()
    if sys.argv[3] == "convert":
        warnings.simplefilter("ignore")
        nczarr.convert(sys.argv[1], sys.argv[2], sys.argv[4])
    traced = tracemalloc.get_traced_memory()[1] // 1024
    # VmHWM: the peak RSS of this image (ru_maxrss would inherit the parent's peak)
    with open("/proc/self/status") as f:
        print(next(line.split()[1] for line in f if line.startswith("VmHWM:")), traced)
    """
)


def memory(
    work: Path,
    counts: tuple[int, ...] = (2_000, 20_000),
    values: int = 1024,
    sources: Path | None = None,
) -> None:
    """Peak RSS of a convert in a fresh process, for files of ``counts`` chunks
    (kept in ``sources`` when given, and reused)."""
    script = work / "mem.py"
    script.write_text(MEMORY_SCRIPT)

    def peak(src: Path, mode: str, fmt: str = "nczarr", trace: bool = False) -> float:
        out = work / "mem_out"
        shutil.rmtree(out, ignore_errors=True)
        done = subprocess.run(
            [sys.executable, str(script), str(src), str(out), mode, fmt, *["trace"][:trace]],
            capture_output=True,
            text=True,
            check=True,
        )
        shutil.rmtree(out, ignore_errors=True)
        return int(done.stdout.split()[-2 if not trace else -1]) * 1024  # bytes

    print("\npeak RSS (VmHWM) and traced Python peak of a convert in a fresh process:")
    print(f"  python + nczarr imported      {peak(script, 'idle') / 2**20:7.1f} MB")
    seen: dict[str, list[tuple[int, float, float]]] = {"nczarr": [], "zarr": []}
    for n in counts:
        src = (sources or work) / f"chunks{n}x{values}.nc"
        if not src.exists():
            build_many_chunks(src, n, values)
        size = src.stat().st_size / 2**20
        for fmt in ("nczarr", "zarr"):
            rss, traced = peak(src, "convert", fmt), peak(src, "convert", fmt, trace=True)
            seen[fmt].append((n, rss, traced))
            print(
                f"  {n:7,d} chunks ({size:5.1f} MB) -> {fmt:6s} RSS {rss / 2**20:7.1f} MB, "
                f"traced {traced / 2**20:6.1f} MB"
            )
        if sources is None:
            src.unlink()
    for fmt, rows in seen.items():
        (n0, rss0, tr0), (n1, rss1, tr1) = rows[0], rows[-1]
        if n1 > n0:
            per = (rss1 - rss0) / (n1 - n0), (tr1 - tr0) / (n1 - n0)
            print(f"  -> {fmt}: {per[0]:6.1f} B of RSS, {per[1]:6.1f} B traced a chunk")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1000, help="netCDF-4 raw size in MB")
    parser.add_argument("--level", type=int, default=4, help="deflate level of the netCDF-4 file")
    parser.add_argument("--dir", default="/dev/shm", help="work directory (tmpfs by default)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip", default="", help="comma-separated: nc4, nc3, memory")
    parser.add_argument("--cli", action="store_true", help="fresh processes: cp vs the CLI")
    parser.add_argument("--chunks", default="2000,20000", help="chunk counts of the memory runs")
    parser.add_argument("--chunk-values", type=int, default=1024, help="float32s a memory chunk")
    parser.add_argument(
        "--peer-repeat", type=int, default=None, help="runs of nccopy and xarray (0: none)"
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help="another tree (PYTHONPATH) to alternate with, fresh processes (no peers)",
    )
    parser.add_argument("--sources", default=None, help="keep and reuse the sources here")
    parser.add_argument(
        "--workers", type=int, default=None, help="the convert's workers (with --baseline)"
    )
    args = parser.parse_args()
    sources = Path(args.sources) if args.sources else None
    if sources is not None:
        sources.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    work = Path(tempfile.mkdtemp(prefix="nczarr-ncfiles-", dir=args.dir))
    print(f"nczarr {nczarr.__version__}, netCDF4 {netCDF4.__version__}, {os.cpu_count()} CPUs")
    try:
        cases = (
            ("nc4", f"netCDF-4 deflate {args.level}+shuffle", build_netcdf4, args.mb),
            ("nc3", "netCDF-3 64-bit offset, records", build_netcdf3, args.mb // 3),
        )
        for key, label, build, mb in cases:
            if key in skip:
                continue
            src = (sources or work) / f"{key}-{mb}-{args.level}.nc"
            start = time.perf_counter()
            if not src.exists():
                build(src, mb, args.level) if key == "nc4" else build(src, mb)
                print(f"\n(built {src.name} in {time.perf_counter() - start:.0f} s)")
            if args.baseline:
                results = compare(src, work, args.repeat, args.baseline, args.cli, args.workers)
            else:
                runner = run_cli if args.cli else run
                results = runner(src, work, args.repeat, args.peer_repeat)
            report(label, src, args.dir, results)
            if sources is None:
                src.unlink()
        if "memory" not in skip:
            counts = tuple(int(n) for n in args.chunks.split(","))
            memory(work, counts, args.chunk_values, sources)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
