"""Reference generation and reading through references: nczarr against kerchunk and
VirtualiZarr.

Sources, written once with netCDF4 in ``--dir``:

* a netCDF-4 file with ``--nc-chunks`` chunks (float32, deflate + shuffle, 16x16
  chunks of smooth noise), and
* an NCZarr directory store (netcdf-c's layout) with ``--nczarr-chunks`` chunk files,
  converted from a file like the first by ``nczarr.convert`` (one file per chunk).

Timed, best of ``--repeat`` (wall and CPU time of this process, user + system):

* build: ``nczarr.references`` (JSON dict) and ``nczarr.write_references`` to Parquet;
  on the ``.nc`` also kerchunk's ``SingleHdf5ToZarr(...).translate()`` and
  VirtualiZarr's ``open_virtual_dataset`` (HDFParser) when they are installed
  (neither reads NCZarr);
* read: every value through the reference set (zarr 3 over fsspec's ``reference://``)
  against reading the source directly (netCDF4 for both sources; zarr-python too for
  the NCZarr store, to show zarr's own cost per chunk), with the number of
  byte-range reads (``cat_file``/``_cat_file`` calls on the local filesystem) and
  file opens each makes.

It prints the CPU ratios against kerchunk and VirtualiZarr and the read speed through
the sets against the source's, and asserts that nczarr's sets copy no chunk byte (no
inlined entry in the JSON set, an empty ``raw`` column in every Parquet record) and
that the values read through them equal netCDF4's. ``--memory`` measures the peak
memory of writing Parquet sets of NCZarr stores of the given chunk counts.

``--read-nc`` times reading every value of a netCDF-4 file of realistic chunks
(``--read-chunks`` chunks of ``--read-edge`` squared float32, deflate + shuffle:
128 x 128 = 64 KB raw, ~50 KB stored) through its reference sets against reading the
file directly (netCDF4, and xarray's ``netcdf4`` engine), with, to say where the time
goes, zarr-python reading a Zarr copy of the same chunks (zarr's own cost, no
references) and the codecs alone (numcodecs' zlib and shuffle on every chunk, in one
loop: what zarr-python cannot go below); each contender best of ``--repeat`` CPU
times, in interleaved rounds. ``--nc-memory`` measures the peak memory (``VmHWM``)
of writing Parquet sets of ``.nc`` files of the given chunk counts, each in a fresh
process.

Usage::

    python3 benchmarks/references.py                      # 10,000 and 100,000 chunks
    python3 benchmarks/references.py --nczarr-chunks 20000 --repeat 1   # quicker
    python3 benchmarks/references.py --only-memory --memory 100000,1000000 --dir /tmp/x
    python3 benchmarks/references.py --read-nc --dir /tmp/x --repeat 3
    python3 benchmarks/references.py --nc-memory 10000,100000,1000000 --dir /tmp/x
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import json
import math
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import netCDF4
import numpy as np
import zarr

import nczarr

CHUNK = 16  # chunk edge: 16x16 float32 = 1 KiB


def build_nc(path: Path, chunks: int) -> None:
    """A netCDF-4 file of about ``chunks`` chunks of 16x16 float32 (deflate + shuffle)."""
    side = math.ceil(math.sqrt(chunks)) * CHUNK
    rows = math.ceil(chunks / (side // CHUNK)) * CHUNK
    rng = np.random.default_rng(0)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("y", rows)
        ds.createDimension("x", side)
        v = ds.createVariable(
            "v", "f4", ("y", "x"), chunksizes=(CHUNK, CHUNK), zlib=True, shuffle=True
        )
        v.units = "K"
        for start in range(0, rows, 256):
            stop = min(start + 256, rows)
            noise = np.cumsum(rng.normal(size=(stop - start, side)), axis=1) * 0.01
            v[start:stop] = noise.astype("f4")


@contextlib.contextmanager
def counted() -> Iterator[dict[str, int]]:
    """Counts of local byte-range reads (fsspec) and file opens during the block."""
    from fsspec.implementations.local import LocalFileSystem

    counts = {"reads": 0, "opens": 0}
    original_cat = LocalFileSystem.cat_file
    original_open = builtins.open

    def cat_file(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["reads"] += 1
        return original_cat(self, *args, **kwargs)

    def opener(*args: Any, **kwargs: Any) -> Any:
        counts["opens"] += 1
        return original_open(*args, **kwargs)

    LocalFileSystem.cat_file = cat_file
    builtins.open = opener
    try:
        yield counts
    finally:
        LocalFileSystem.cat_file = original_cat
        builtins.open = original_open


def best(repeat: int, work: Callable[[], Any], warm: bool = False) -> tuple[float, float, Any]:
    """Best wall and CPU seconds of ``repeat`` runs, and the last result; ``warm``:
    after one untimed run (imports and first-call caches of every contender alike)."""
    walls, cpus, result = [], [], None
    if warm:
        work()
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


def read_refs(fo: str, remote_protocol: str | None = None) -> np.ndarray:
    """Every value of ``v`` through a reference set (zarr 3 over fsspec)."""
    fs = fsspec.filesystem(
        "reference",
        fo=fo,
        asynchronous=True,
        remote_protocol=remote_protocol or "file",
        skip_instance_cache=True,
    )
    group = zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True, path=""), mode="r")
    return group["v"][...]


def read_netcdf(url: str) -> np.ndarray:
    with netCDF4.Dataset(url) as ds:
        ds.set_auto_mask(False)
        return ds["v"][...]


def no_inlined(refs: dict) -> None:
    """nczarr copied no chunk byte: every chunk entry is a pointer."""
    for key, value in refs["refs"].items():
        if not key.rsplit("/", 1)[-1].startswith((".z", "zarr.json")):
            assert isinstance(value, list), f"{key} was inlined"


def no_inlined_parquet(out: Path) -> int:
    """nczarr copied no chunk byte into a Parquet set: every record's ``raw`` column
    is empty. Returns the number of rows with a path (chunk pointers; the last
    record of an array is padded with empty rows)."""
    import pandas as pd

    rows = 0
    for record in sorted(out.rglob("refs.*.parq")):
        df = pd.read_parquet(record)
        assert df["raw"].isna().all(), f"{record} holds inlined bytes"
        rows += int(df["path"].notna().sum())
    return rows


def faster(name: str, theirs: float, ours: float) -> None:
    """The CPU ratio, read as "nczarr is N times faster" (target >= 1.3)."""
    print(f"    {name} / nczarr CPU: {theirs / ours:.2f}x (above 1: nczarr faster)")


def report(name: str, wall: float, cpu: float, base: tuple[float, float] | None) -> None:
    ratio = f"  (CPU {cpu / base[1]:6.2f}x the first's)" if base and base[1] else ""
    print(f"  {name:<44} wall {wall:8.3f} s   cpu {cpu:8.3f} s{ratio}")


def bench_nc(work_dir: Path, chunks: int, repeat: int, read: bool = True) -> None:
    path = work_dir / "src.nc"
    build_nc(path, chunks)
    with netCDF4.Dataset(path) as ds:
        n = math.prod(math.ceil(s / CHUNK) for s in ds["v"].shape)
    print(f"\nnetCDF-4 file, {n} chunks, {path.stat().st_size / 1e6:.1f} MB")
    print(" build")
    wall, cpu, refs = best(repeat, lambda: nczarr.references(str(path)), warm=True)
    no_inlined(refs)
    base = (wall, cpu)
    report("nczarr.references", wall, cpu, None)
    (work_dir / "nc.json").write_text(json.dumps(refs))
    parq = work_dir / "nc.parq"
    wall, cpu, _ = best(repeat, lambda: nczarr.write_references(str(path), parq), warm=True)
    report("nczarr.write_references (Parquet)", wall, cpu, base)
    assert no_inlined_parquet(parq) == n
    try:
        from kerchunk.hdf import SingleHdf5ToZarr
    except ImportError:
        print("  kerchunk: not installed")
    else:
        wall, cpu, _ = best(repeat, lambda: SingleHdf5ToZarr(str(path)).translate(), warm=True)
        report("kerchunk SingleHdf5ToZarr.translate", wall, cpu, base)
        faster("kerchunk", cpu, base[1])
    try:
        from obspec_utils.registry import ObjectStoreRegistry
        from obstore.store import LocalStore
        from virtualizarr import open_virtual_dataset
        from virtualizarr.parsers import HDFParser
    except ImportError:
        print("  VirtualiZarr: not installed")
    else:
        registry = ObjectStoreRegistry({"file://": LocalStore()})

        def virtualizarr() -> Any:
            return open_virtual_dataset(path.as_uri(), registry=registry, parser=HDFParser())

        wall, cpu, _ = best(repeat, virtualizarr, warm=True)
        report("VirtualiZarr open_virtual_dataset", wall, cpu, base)
        faster("VirtualiZarr", cpu, base[1])
    if read:
        read_all(work_dir, "nc", str(path), repeat)


def read_all(
    work_dir: Path, name: str, url: str, repeat: int, zarr_store: str | None = None
) -> None:
    print(" read every value")
    with counted() as c_direct:
        wall, cpu, direct = best(repeat, lambda: read_netcdf(url))
    report("netCDF4 on the source", wall, cpu, None)
    base = (wall, cpu)
    direct_zarr = None
    if zarr_store is not None:  # zarr-python's own cost per chunk, without references
        with counted() as counts:
            wall, cpu, values = best(
                repeat, lambda: zarr.open_group(zarr_store, mode="r")["v"][...]
            )
        np.testing.assert_array_equal(values, direct)
        report("zarr on the source directly", wall, cpu, base)
        direct_zarr = cpu
    for label, fo in (("JSON", work_dir / f"{name}.json"), ("Parquet", work_dir / f"{name}.parq")):
        with counted() as counts:
            wall, cpu, values = best(repeat, lambda fo=fo: read_refs(str(fo)))
        np.testing.assert_array_equal(values, direct)
        report(f"zarr through the {label} references", wall, cpu, base)
        print(
            f"    {counts['reads'] // repeat} byte-range reads, "
            f"{counts['opens'] // repeat} Python file opens per read"
        )
        # "reading through the references >= 0.9x reading the source directly"
        print(f"    speed vs netCDF4 on the source: {base[1] / cpu:.2f}x (target >= 0.9)")
        if direct_zarr is not None:
            print(f"    speed vs zarr on the source: {direct_zarr / cpu:.2f}x (target >= 0.9)")
    print(f"    (netCDF4 reads through libnetcdf: {c_direct['opens']} Python opens)")


def bench_nczarr(work_dir: Path, chunks: int, repeat: int, read: bool = True) -> None:
    store = nczarr_store(work_dir, chunks)
    n = sum(1 for p in store.rglob("*") if p.is_file() and not p.name.startswith(".z"))
    print(f"\nNCZarr directory store, {n} chunk files")
    print(" build")
    wall, cpu, refs = best(repeat, lambda: nczarr.references(str(store)))
    no_inlined(refs)
    report("nczarr.references", wall, cpu, None)
    (work_dir / "nczarr.json").write_text(json.dumps(refs))
    base = (wall, cpu)
    wall, cpu, _ = best(
        repeat, lambda: nczarr.write_references(str(store), work_dir / "nczarr.parq")
    )
    report("nczarr.write_references (Parquet)", wall, cpu, base)
    assert no_inlined_parquet(work_dir / "nczarr.parq") == n
    print("  kerchunk, VirtualiZarr: do not read NCZarr")
    if read:
        read_all(work_dir, "nczarr", f"file://{store}#mode=nczarr,file", repeat, str(store))


MEMORY_SCRIPT = """
import json, resource, sys, tempfile, warnings
import nczarr
warm, store, out = sys.argv[1:]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    nczarr.write_references(warm, tempfile.mkdtemp() + "/warm.parq")  # imports, caches
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
counts = nczarr.write_references(store, out)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"base_kib": base, "peak_kib": peak, "pointers": counts["pointers"]}))
"""


def nczarr_store(work_dir: Path, chunks: int) -> Path:
    """An NCZarr directory store of about ``chunks`` chunk files (made once per
    ``--dir``: the file system, not nczarr, decides how long making it takes)."""
    store = work_dir / f"nczarr-{chunks}.file"
    if not (store / ".zgroup").exists():
        nc = work_dir / f"nczarr-{chunks}.nc"
        build_nc(nc, chunks)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nczarr.convert(str(nc), f"file://{store}#mode=nczarr,file", mode="nczarr")
        nc.unlink()
    return store


def bench_memory(work_dir: Path, counts: list[int], repeat: int) -> None:
    """Peak RSS of ``write_references`` to Parquet, each in a fresh process, over
    the same process after writing a one-chunk set (imports and caches counted out);
    ``repeat`` processes per count, interleaved, least and most printed (the first
    process of a run has been seen to grow ~18 MB more whatever the count)."""
    import subprocess
    import sys

    print("\nParquet memory (fresh process, ru_maxrss over the warmed-up baseline)")
    warm = work_dir / "warm.nc"
    build_nc(warm, 1)
    grown: dict[int, list[float]] = {}
    chunks_of: dict[int, int] = {}
    for _ in range(repeat):
        for chunks in counts:
            store = nczarr_store(work_dir, chunks)
            out = work_dir / f"memory-{chunks}.parq"
            run = subprocess.run(
                [sys.executable, "-c", MEMORY_SCRIPT, str(warm), str(store), str(out)],
                capture_output=True,
                text=True,
                check=True,
            )
            got = json.loads(run.stdout.strip().splitlines()[-1])
            assert no_inlined_parquet(out) == got["pointers"]
            grown.setdefault(chunks, []).append((got["peak_kib"] - got["base_kib"]) / 1024)
            chunks_of[chunks] = got["pointers"]
            shutil.rmtree(out)
    for chunks, mbs in grown.items():
        print(
            f"  {chunks_of[chunks]:>9} chunks: +{min(mbs):6.1f} MB least, +{max(mbs):6.1f} MB "
            f"most of {len(mbs)} ({min(mbs) * 1024 * 1024 / chunks_of[chunks]:.1f} bytes "
            "per chunk at least)"
        )


def build_realistic_nc(path: Path, chunks: int, edge: int) -> None:
    """A netCDF-4 file of about ``chunks`` chunks of ``edge`` x ``edge`` float32,
    deflate level 4 + shuffle (netCDF4's defaults), smooth noise."""
    side = math.ceil(math.sqrt(chunks)) * edge
    rows = math.ceil(chunks / (side // edge)) * edge
    rng = np.random.default_rng(0)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("y", rows)
        ds.createDimension("x", side)
        v = ds.createVariable(
            "v", "f4", ("y", "x"), chunksizes=(edge, edge), zlib=True, shuffle=True
        )
        v.units = "K"
        for start in range(0, rows, edge):
            stop = min(start + edge, rows)
            noise = np.cumsum(rng.normal(size=(stop - start, side)), axis=1) * 0.01
            v[start:stop] = noise.astype("f4")


def read_xarray_refs(fo: str) -> np.ndarray:
    """Every value of ``v`` through xarray's ``reference://`` zarr engine, as the
    README shows (xarray's default ``consolidated``)."""
    import xarray as xr

    options = {"fo": fo, "remote_protocol": "file"}
    with xr.open_dataset(
        "reference://", engine="zarr", backend_kwargs={"storage_options": options}
    ) as ds:
        return ds["v"].values


def read_xarray_netcdf4(path: str) -> np.ndarray:
    import xarray as xr

    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds["v"].values


def codec_floor(path: str) -> Callable[[], int]:
    """numcodecs' zlib and shuffle on every stored chunk (bytes read beforehand): the
    decoding zarr-python does per chunk, without zarr."""
    import h5py
    import numcodecs

    with h5py.File(path, "r") as f:
        ds = f["v"]
        stored: list[bytes] = []
        ds.id.chunk_iter(lambda info: stored.append(ds.id.read_direct_chunk(info.chunk_offset)[1]))
    zlib, shuffle = numcodecs.Zlib(), numcodecs.Shuffle(elementsize=4)

    def decode() -> int:
        return sum(len(shuffle.decode(zlib.decode(b))) for b in stored)

    return decode


def bench_read_nc(work_dir: Path, chunks: int, edge: int, repeat: int) -> None:
    """Reading every value of a realistic netCDF-4 file: directly and through its
    reference sets (see the module doc)."""
    import gc

    path = work_dir / f"read-{chunks}-{edge}.nc"
    if not path.exists():
        build_realistic_nc(path, chunks, edge)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refs = nczarr.references(str(path))
        no_inlined(refs)
        (work_dir / "read.json").write_text(json.dumps(refs))
        nczarr.write_references(str(path), work_dir / "read.parq")
        copy = work_dir / f"read-{chunks}-{edge}.zarr"
        if not copy.exists():
            nczarr.convert(str(path), f"file://{copy}#mode=zarr,file")
    with netCDF4.Dataset(path) as ds:
        n = math.prod(math.ceil(s / edge) for s in ds["v"].shape)
    print(
        f"\nread every value: netCDF-4 file, {n} chunks of {edge}x{edge} float32 "
        f"({edge * edge * 4 // 1024} KB raw, {path.stat().st_size / n / 1024:.0f} KB stored)"
    )
    fo, parq = str(work_dir / "read.json"), str(work_dir / "read.parq")
    contenders: dict[str, Callable[[], Any]] = {
        "netCDF4 on the file": lambda: read_netcdf(str(path)),
        "xarray engine=netcdf4 on the file": lambda: read_xarray_netcdf4(str(path)),
        "zarr on a Zarr copy (no references)": lambda: zarr.open_group(str(copy), mode="r")["v"][
            ...
        ],
        "zarr through the JSON set": lambda: read_refs(fo),
        "zarr through the Parquet set": lambda: read_refs(parq),
        "xarray reference:// (JSON set)": lambda: read_xarray_refs(fo),
        "xarray reference:// (Parquet set)": lambda: read_xarray_refs(parq),
        "codecs alone (numcodecs zlib + shuffle)": codec_floor(str(path)),
    }
    expected = read_netcdf(str(path))
    cpus: dict[str, list[float]] = {name: [] for name in contenders}
    for round_ in range(repeat):
        for name, work in contenders.items():
            gc.collect()
            cpu = time.process_time()
            values = work()
            cpus[name].append(time.process_time() - cpu)
            if round_ == 0 and not isinstance(values, int):
                np.testing.assert_array_equal(values, expected)
            del values
    base = min(cpus["netCDF4 on the file"])
    zarr_copy = min(cpus["zarr on a Zarr copy (no references)"])
    for name, times in cpus.items():
        best_cpu = min(times)
        print(
            f"  {name:<42} cpu {best_cpu:7.3f} s  ({best_cpu / n * 1e6:5.0f} us/chunk)  "
            f"speed vs netCDF4 {base / best_cpu:5.2f}x  vs zarr on the copy "
            f"{zarr_copy / best_cpu:5.2f}x"
        )


NC_MEMORY_SCRIPT = """
import json, resource, shutil, sys, tempfile, warnings
warnings.simplefilter("ignore")
import nczarr
def hwm():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
warm, src = sys.argv[1:]
d = tempfile.mkdtemp()
nczarr.write_references(warm, d + "/warm.parq")  # imports, caches, one record written
base = hwm()
counts = nczarr.write_references(src, d + "/out.parq")
print(json.dumps({"base_kib": base, "peak_kib": hwm(), "pointers": counts["pointers"]}))
shutil.rmtree(d)
"""


def bench_nc_memory(work_dir: Path, counts: list[int], repeat: int) -> None:
    """Peak memory (``VmHWM``) of writing the Parquet set of a ``.nc`` file of 8x8
    float32 chunks, in a fresh process, over the same process after writing the set
    of a 10-chunk file (imports and caches counted out); least of ``repeat``."""
    import subprocess
    import sys

    def nc_file(chunks: int) -> Path:
        path = work_dir / f"mem-{chunks}.nc"
        if not path.exists():
            side = math.ceil(math.sqrt(chunks)) * 8
            rows = math.ceil(chunks / (side // 8)) * 8
            with netCDF4.Dataset(path, "w") as ds:
                ds.createDimension("y", rows)
                ds.createDimension("x", side)
                v = ds.createVariable("v", "f4", ("y", "x"), chunksizes=(8, 8))
                for start in range(0, rows, 512):
                    v[start : start + 512] = np.ones((min(512, rows - start), side), "f4")
        return path

    warm = nc_file(10)
    print("\nParquet sets of .nc files: peak memory (fresh process, VmHWM over the warm baseline)")
    for chunks in counts:
        src = nc_file(chunks)
        grown, pointers = [], 0
        for _ in range(repeat):
            run = subprocess.run(
                [sys.executable, "-c", NC_MEMORY_SCRIPT, str(warm), str(src)],
                capture_output=True,
                text=True,
                check=True,
            )
            got = json.loads(run.stdout.strip().splitlines()[-1])
            grown.append((got["peak_kib"] - got["base_kib"]) / 1024)
            pointers = got["pointers"]
        print(f"  {pointers:>9} chunks: +{min(grown):6.1f} MB least, +{max(grown):6.1f} MB most")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nc-chunks", type=int, default=10_000)
    parser.add_argument("--nczarr-chunks", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--memory",
        default="",
        help="comma-separated chunk counts of NCZarr stores whose Parquet sets' peak "
        "memory is measured (e.g. 100000,1000000; stores are kept in --dir)",
    )
    parser.add_argument("--only-memory", action="store_true")
    parser.add_argument(
        "--read-nc", action="store_true", help="only the realistic-chunk read of a .nc"
    )
    parser.add_argument("--read-chunks", type=int, default=10_000)
    parser.add_argument("--read-edge", type=int, default=128)
    parser.add_argument(
        "--nc-memory", default="", help="comma-separated chunk counts of .nc files (Parquet)"
    )
    parser.add_argument("--no-read", action="store_true", help="time reference generation only")
    parser.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    args = parser.parse_args()
    work_dir = Path(args.dir or tempfile.mkdtemp(prefix="nczarr-refs-bench-")).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    try:
        if args.read_nc or args.nc_memory:
            if args.read_nc:
                bench_read_nc(work_dir, args.read_chunks, args.read_edge, args.repeat)
            if args.nc_memory:
                bench_nc_memory(work_dir, [int(n) for n in args.nc_memory.split(",")], args.repeat)
            return
        if not args.only_memory:
            bench_nc(work_dir, args.nc_chunks, args.repeat, not args.no_read)
            bench_nczarr(work_dir, args.nczarr_chunks, args.repeat, not args.no_read)
        if args.memory:
            bench_memory(work_dir, [int(n) for n in args.memory.split(",")], args.repeat)
    finally:
        if args.dir is None:
            shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
