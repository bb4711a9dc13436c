"""Benchmark ``convert``'s re-encoding path against xarray ``open_zarr().to_zarr()``; prints ratios.

Run (about a minute)::

    python3 benchmarks/reencode.py                 # 64 MB array, 128 chunks of 500 KB
    python3 benchmarks/reencode.py --side 2000     # 32 MB
    python3 benchmarks/reencode.py --dir /dev/shm  # tmpfs: software cost only

Measured, file -> file, on the same array in one run (best of ``--repeat``; wall time
and CPU time of the whole process, all threads):

1. gzip (level 5) f8 array written by zarr-python (Zarr v2) -> NCZarr: netcdf-c has no
   gzip filter, so ``nczarr.convert`` decodes every chunk and encodes it with zlib
   level 5. The alternative: xarray ``open_zarr(src).to_zarr(dst)`` with
   ``Zlib(level=5)``, the same decode + encode (xarray's default dask chunks = the Zarr
   chunks). Target: nczarr no slower than xarray (ratio <= 1).
2. Sharded Zarr v3 array (zstd inner chunks) -> Zarr v2: ``nczarr.convert`` vs xarray
   with the same zstd codec on the v2 side.
3. For scale: the verbatim path (zlib source -> NCZarr, chunks copied as bytes).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numcodecs
import numpy as np


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def timed(
    func: Callable[[], object], cleanup: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Best wall time and best CPU time (user + system, all threads) of ``repeat`` runs
    of ``func``; ``cleanup`` runs untimed before each. CPU time is what a shared,
    loaded machine distorts least."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        cleanup()
        os.sync()
        start, cpu = time.perf_counter(), _cpu()
        func()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, _cpu() - cpu)
    cleanup()
    return best, best_cpu


def line(title: str, ours: tuple[float, float], theirs: tuple[float, float]) -> str:
    return (
        f"{title}: nczarr {ours[0]:.2f} s wall / {ours[1]:.2f} s CPU, xarray {theirs[0]:.2f} s "
        f"wall / {theirs[1]:.2f} s CPU; ratio nczarr/xarray {ours[0] / theirs[0]:.2f} wall, "
        f"{ours[1] / theirs[1]:.2f} CPU"
    )


def sources(root: Path, side: int, chunk: int) -> dict[str, Path]:
    """The three source stores, each holding one ``side`` x ``side // 2`` f8 array ``v``."""
    import zarr
    from zarr.codecs import ZstdCodec

    rng = np.random.default_rng(0)
    values = np.round(rng.normal(size=(side, side // 2)), 3)  # compressible, like data
    out = {}
    for name, compressor in (("gzip", numcodecs.GZip(level=5)), ("zlib", numcodecs.Zlib(5))):
        path = root / f"{name}.zarr"
        group = zarr.open_group(path, mode="w", zarr_format=2)
        array = group.create_array(
            "v", shape=values.shape, chunks=(chunk, chunk), dtype="<f8", compressors=compressor
        )
        array[:] = values
        array.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
        out[name] = path
    path = root / "sharded.zarr"
    group = zarr.open_group(path, mode="w", zarr_format=3)
    array = group.create_array(
        "v",
        shape=values.shape,
        chunks=(chunk, chunk),
        shards=(chunk * 4, chunk * 2),
        dtype="<f8",
        compressors=[ZstdCodec(level=1)],
        dimension_names=["y", "x"],
    )
    array[:] = values
    out["sharded"] = path
    return out


def xarray_copy(src: Path, dst: Path, compressor: object, zarr_format: int) -> None:
    import xarray as xr

    ds = xr.open_zarr(src, zarr_format=zarr_format, consolidated=False)
    ds.to_zarr(dst, mode="w", zarr_format=2, encoding={"v": {"compressors": compressor}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=4000, help="rows (columns: side/2)")
    parser.add_argument("--chunk", type=int, default=250, help="chunk edge")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--dir", default=None, help="scratch directory (default: $TMPDIR)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import nczarr

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        src = sources(root, args.side, args.chunk)
        dst = root / "out"
        nc_dst = f"file://{dst}#mode=nczarr,file"

        def clean() -> None:
            shutil.rmtree(dst, ignore_errors=True)

        mb = args.side * (args.side // 2) * 8 / 1e6
        chunks = -(-args.side // args.chunk) * -(-(args.side // 2) // args.chunk)
        print(f"array {args.side} x {args.side // 2} f8 = {mb:.0f} MB, {chunks} chunks")

        report = nczarr.convert(src["gzip"], nc_dst, mode="nczarr", workers=args.workers)
        assert report.chunks_reencoded == chunks, report.summary()
        ours = timed(
            lambda: nczarr.convert(src["gzip"], nc_dst, mode="nczarr", workers=args.workers),
            clean,
            args.repeat,
        )
        theirs = timed(
            lambda: xarray_copy(src["gzip"], dst, numcodecs.Zlib(level=5), 2), clean, args.repeat
        )
        print(line("1. gzip -> NCZarr (zlib)", ours, theirs))

        report = nczarr.convert(src["sharded"], dst, mode="zarr", workers=args.workers)
        assert report.chunks_reencoded == chunks, report.summary()
        ours = timed(
            lambda: nczarr.convert(src["sharded"], dst, mode="zarr", workers=args.workers),
            clean,
            args.repeat,
        )
        theirs = timed(
            lambda: xarray_copy(src["sharded"], dst, numcodecs.Zstd(level=1), 3),
            clean,
            args.repeat,
        )
        print(line("2. sharded v3 -> Zarr v2 (zstd)", ours, theirs))

        verbatim = timed(
            lambda: nczarr.convert(src["zlib"], nc_dst, mode="nczarr", workers=args.workers),
            clean,
            args.repeat,
        )
        print(f"3. verbatim (zlib -> NCZarr, bytes copied): nczarr {verbatim[0]:.2f} s wall")


if __name__ == "__main__":
    main()
