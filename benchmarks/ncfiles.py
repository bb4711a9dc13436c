"""Convert a netCDF file to NCZarr and Zarr v2: nczarr against cp, nccopy and xarray.

Two sources, written once with netCDF4:

* a netCDF-4 file of ``--mb`` MB (float32, deflate level 4 + shuffle, 1 MB chunks of
  smooth noise that compress to about half), and
* a netCDF-3 (64-bit offset) file of about the same size with record variables.

Each is converted on ``--dir`` (tmpfs by default: the copy floor, not the disk) by

* ``cp`` of the ``.nc`` (the floor: read and write every byte once),
* ``nczarr.convert`` to NCZarr and to Zarr v2 (chunks copied as byte ranges),
* ``nccopy`` to a ``#mode=nczarr,file`` URL (Debian's netcdf-bin; decodes and
  re-encodes every chunk; netCDF-3 input gets no compression; ``-u``: netcdf-c 4.9.0
  writes no unlimited dimension to NCZarr; ``-c``: one record per chunk, as nczarr does),
* ``xr.open_dataset(...).to_zarr()`` (decodes everything, encodes with zarr's default).

and the best of ``--repeat`` wall times and CPU times (user + system, the child
processes' included) are printed with their ratio to ``cp``; on a loaded machine the
CPU time is the steadier number.

Usage::

    python3 benchmarks/ncfiles.py                 # 300 MB, about two minutes
    python3 benchmarks/ncfiles.py --mb 50 --repeat 1   # quick
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import netCDF4
import numpy as np

import nczarr


def _smooth(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    base = np.cumsum(rng.normal(size=(rows, cols)), axis=1) * 0.01
    return base.astype("f4")


def build_netcdf4(path: Path, mb: int) -> None:
    rows = mb  # 1 MB per row: 262144 float32
    rng = np.random.default_rng(0)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 262144)
        v = ds.createVariable(
            "v",
            "f4",
            ("time", "x"),
            compression="zlib",
            complevel=4,
            shuffle=True,
            chunksizes=(1, 262144),
        )
        for start in range(0, rows, 16):
            n = min(16, rows - start)
            v[start : start + n] = _smooth(rng, n, 262144)


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
    """CPU seconds (user + system) of this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def best(fn: Callable[[Path], None], work: Path, repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + system, children included) of
    ``repeat`` runs: on a loaded machine the CPU time is the steadier of the two."""
    times, cpus = [], []
    for i in range(repeat):
        out = work / f"out{i}"
        shutil.rmtree(out, ignore_errors=True)
        cpu = _cpu()
        start = time.perf_counter()
        fn(out)
        times.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
        shutil.rmtree(out, ignore_errors=True)
        if out.with_suffix(".nc").exists():
            out.with_suffix(".nc").unlink()
    return min(times), min(cpus)


def run(src: Path, work: Path, repeat: int) -> dict[str, tuple[float, float]]:
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
            ["nccopy", "-u", "-c", "time/1,x/262144", str(src), f"file://{out}#mode=nczarr,file"],
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
    return {name: best(fn, work, repeat) for name, fn in cases.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300, help="source size in MB (raw values)")
    parser.add_argument("--dir", default="/dev/shm", help="work directory (tmpfs by default)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nczarr-ncfiles-", dir=args.dir))
    try:
        for label, build in (
            ("netCDF-4 deflate+shuffle", build_netcdf4),
            ("netCDF-3", build_netcdf3),
        ):
            src = work / f"{label.split()[0]}.nc"
            build(src, args.mb)
            size = src.stat().st_size / 2**20
            print(f"\n{label}: {size:.0f} MB on {args.dir}")
            results = run(src, work, args.repeat)
            floor, cpu_floor = results["cp"]
            print(f"  {'':20s} {'wall':>9s} {'':8s} {'CPU':>9s}")
            for name, (seconds, cpu) in results.items():
                print(
                    f"  {name:20s} {seconds:7.2f} s {seconds / floor:6.2f}x "
                    f"{cpu:7.2f} s {cpu / cpu_floor:6.2f}x cp"
                )
            src.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
