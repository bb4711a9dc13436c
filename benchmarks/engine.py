"""Benchmark the xarray ``nczarr`` engine against the netcdf4 engine, xarray's zarr engine
and the decode floor; prints time ratios measured within one run.

Run (a few minutes on an idle 2-core machine)::

    python3 benchmarks/engine.py                    # everything
    python3 benchmarks/engine.py --quick            # 40 KB chunks, dir only, fewer repeats
    python3 benchmarks/engine.py --dir /dev/shm     # tmpfs (the default is a temp dir)
    python3 benchmarks/engine.py --cases 40KB --codecs blosc --where dir --callgrind

Every run ends with the issue's table in markdown (one row per case and place).
``--callgrind`` counts instructions instead of timing: see :func:`instructions`.

Data (stated, not tuned): 4 ``float32`` variables written by netcdf-c itself (netCDF4,
``file://...#mode=nczarr,file``), values ``round(N(0,1) * 10, 2)``, compressed with
zlib level 1 or blosc-lz4 (``compression="blosc_lz4"``, netcdf-c's default level), in

* 40 KB chunks: 1500 x 1500 per variable in 100 x 100 chunks (900 chunks);
* 4 MB chunks: 2000 x 2000 per variable in 1000 x 1000 chunks (16 chunks).

The same chunk objects are then stored in a zip archive (netcdf-c's layout: one
top-level folder, members stored) and in an S3 bucket on a moto server this script
starts on 127.0.0.1. netcdf-c (the netCDF4 wheel) has no zip and no S3 support, so
there the comparison is with xarray's zarr engine only.

Read contenders, each ``xr.open_dataset(...).load()``:

* ``netcdf4``: ``engine="netcdf4"`` on the ``file://...#mode=nczarr,file`` URL (libnetcdf),
  and ``netcdf4+dask`` with ``chunks={}``;
* ``zarr``: xarray's zarr engine (``engine="zarr"``; zip through ``zarr.storage.ZipStore``,
  S3 through fsspec);
* ``nczarr``: ``engine="nczarr"``, and ``nczarr+dask`` with ``chunks={}`` (``.load()`` on
  dask's threaded scheduler);
* ``floor``: a plain loop that reads each chunk object (``open().read()``,
  ``ZipFile.read``, all S3 GETs at once on s3fs's loop) and decodes it with numcodecs, no
  xarray, no zarr.

Write contenders (dir only, the same dataset in memory, 40 KB chunks, each codec of
``--write-codecs``, default zlib level 1): ``to_netcdf(url, engine="netcdf4")`` on
netcdf-c's NCZarr URL vs ``nczarr.to_nczarr``, with the same encoding.

``NCZARR_FAST_INFLATE=0`` in the environment runs nczarr without libdeflate (the
``fast`` extra) even where it is installed; the first line printed says which.

Timing: the machine is shared, so every contender runs ``--repeat`` times, interleaved
round-robin, and the minimum is kept, of wall time and of CPU time (user + system of
all threads of this process, which a loaded machine distorts less; parallel decoding
shows in wall time only); ratios are of minima from the same run. Ratios
are printed against the netcdf4 engine (where it can go), against the floor and, for
zip and S3, as throughput of nczarr over xarray's zarr engine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

NVARS = 4
CASES = {"40KB": (1500, 100), "4MB": (2000, 1000)}  # side, chunk edge
WHERES = ("dir", "zip", "s3")  # --where none: writes only
CODECS = {"zlib": {"zlib": True, "complevel": 1}, "blosc": {"compression": "blosc_lz4"}}


def make_dataset(side: int) -> Any:
    """The in-memory dataset every store holds."""
    import numpy as np
    import xarray as xr

    rng = np.random.default_rng(0)
    data = {
        f"v{i}": (("y", "x"), np.round(rng.normal(size=(side, side)) * 10, 2).astype("f4"))
        for i in range(NVARS)
    }
    return xr.Dataset(data)


def write_netcdf_c(path: Path, ds: Any, edge: int, codec: str) -> str:
    """Write ``ds`` with netcdf-c as NCZarr in directory ``path``; its URL."""
    import netCDF4

    url = f"file://{path}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as nc:
        for name, size in ds.sizes.items():
            nc.createDimension(name, size)
        for name, var in ds.data_vars.items():
            v = nc.createVariable(
                name, "f4", var.dims, chunksizes=(edge, edge), fill_value=False, **CODECS[codec]
            )
            v[:] = var.values
    return url


def chunk_files(root: Path) -> list[tuple[str, Path]]:
    """(key, path) of every object of the directory store ``root``."""
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = Path(dirpath) / name
            out.append((full.relative_to(root).as_posix(), full))
    return sorted(out)


def make_zip(root: Path, target: Path) -> str:
    """The store as a zip archive in netcdf-c's layout (one top folder, stored)."""
    top = root.name
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, full in chunk_files(root):
            zf.write(full, f"{top}/{key}")
    return top


def upload(root: Path, fs: Any, prefix: str) -> None:
    fs.pipe({f"{prefix}/{key}": full.read_bytes() for key, full in chunk_files(root)})


def array_codecs(root: Path) -> dict[str, Any]:
    """numcodecs compressor (and filters) per variable, from the ``.zarray`` files."""
    import json

    import numcodecs

    out = {}
    for i in range(NVARS):
        meta = json.loads((root / f"v{i}" / ".zarray").read_text())
        comp = numcodecs.get_codec(meta["compressor"]) if meta["compressor"] else None
        filters = [numcodecs.get_codec(f) for f in meta.get("filters") or []]
        out[f"v{i}"] = (comp, filters, meta)
    return out


def floor_decode(items: list[tuple[str, bytes]], codecs: dict[str, Any]) -> int:
    """Decode every chunk like a plain loop would: numcodecs, one after another."""
    import numpy as np

    total = 0
    for key, data in items:
        var, _, name = key.partition("/")
        if name.startswith(".") or var not in codecs:
            continue
        comp, filters, meta = codecs[var]
        out = comp.decode(data) if comp else data
        for f in reversed(filters):
            out = f.decode(out)
        arr = np.frombuffer(out, dtype=meta["dtype"]).reshape(meta["chunks"])
        total += arr.size
    return total


def load(ds: Any) -> None:
    ds.load()
    ds.close()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def best_of(
    contenders: dict[str, Callable[[], object]], repeat: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Minimum wall time and minimum CPU time (all threads of this process) per
    contender over ``repeat`` interleaved rounds, after one untimed warm-up round."""
    wall = {name: float("inf") for name in contenders}
    cpu = dict(wall)
    for func in contenders.values():  # warm-up (imports, caches), untimed
        func()
    for _ in range(repeat):
        for name, func in contenders.items():
            start, start_cpu = time.perf_counter(), _cpu()
            func()
            wall[name] = min(wall[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], _cpu() - start_cpu)
    return wall, cpu


def read_contenders(
    where: str, root: Path, zpath: Path, s3: tuple[Any, str, str] | None, dask: bool
) -> dict[str, Callable[[], object]]:
    import xarray as xr
    import zarr

    codecs = array_codecs(root)
    files = [(k, p) for k, p in chunk_files(root) if not k.split("/")[-1].startswith(".")]
    out: dict[str, Callable[[], object]] = {}
    if where == "dir":
        url = f"file://{root}#mode=nczarr,file"
        out["floor"] = lambda: floor_decode([(k, p.read_bytes()) for k, p in files], codecs)
        out["netcdf4"] = lambda: load(xr.open_dataset(url, engine="netcdf4"))
        out["zarr"] = lambda: load(xr.open_dataset(str(root), engine="zarr", consolidated=False))
        out["nczarr"] = lambda: load(xr.open_dataset(url, engine="nczarr"))
        if dask:
            out["netcdf4+dask"] = lambda: load(xr.open_dataset(url, engine="netcdf4", chunks={}))
            out["nczarr+dask"] = lambda: load(xr.open_dataset(url, engine="nczarr", chunks={}))
    elif where == "zip":
        top = root.name

        def zfloor() -> int:
            with zipfile.ZipFile(zpath) as zf:
                return floor_decode([(k, zf.read(f"{top}/{k}")) for k, _ in files], codecs)

        def zzarr() -> None:
            store = zarr.storage.ZipStore(zpath, mode="r")
            load(xr.open_dataset(store, engine="zarr", group=top, consolidated=False))
            store.close()

        out["floor"] = zfloor
        out["zarr"] = zzarr
        out["nczarr"] = lambda: load(xr.open_dataset(str(zpath), engine="nczarr"))
    else:
        assert s3 is not None
        fs, endpoint, prefix = s3
        keys = [f"{prefix}/{k}" for k, _ in files]
        so = {"endpoint_url": endpoint}

        def sfloor() -> int:
            # every GET at once on s3fs's loop (fs.cat(list) also asks for each key's
            # info first, which made it slower than both engines)
            from fsspec.asyn import sync

            async def fetch() -> list[bytes]:
                return await asyncio.gather(*(fs._cat_file(k) for k in keys))

            got = sync(fs.loop, fetch)
            return floor_decode(
                [(k[len(prefix) + 1 :], v) for k, v in zip(keys, got, strict=True)], codecs
            )

        out["floor"] = sfloor
        out["zarr"] = lambda: load(
            xr.open_dataset(f"s3://{prefix}", engine="zarr", consolidated=False, storage_options=so)
        )
        url = f"{endpoint}/{prefix}#mode=nczarr,s3"
        out["nczarr"] = lambda: load(xr.open_dataset(url, engine="nczarr"))
        if OPEN_ONLY:
            out["zarr open"] = lambda: xr.open_dataset(
                f"s3://{prefix}", engine="zarr", consolidated=False, storage_options=so
            ).close()
            out["nczarr open"] = lambda: xr.open_dataset(url, engine="nczarr").close()
    return out


#: ``--s3-open``: also time the S3 opens alone (``xr.open_dataset(...).close()``).
OPEN_ONLY = False


def s3_open_requests(endpoint: str, prefix: str) -> dict[str, dict[str, int]]:
    """Requests of one ``xr.open_dataset(...).close()`` per engine, by S3 operation,
    counted at the tests' request-counting proxy in front of the moto server (the
    engine's index variables are read by the open: xarray loads them)."""
    import xarray as xr

    sys.path.insert(0, str(HERE.parent / "tests"))
    from faultproxy import FaultProxy

    out: dict[str, dict[str, int]] = {}
    with FaultProxy(endpoint) as proxy:
        so = {"endpoint_url": proxy.endpoint}
        opens = {
            "zarr": lambda: xr.open_dataset(
                f"s3://{prefix}", engine="zarr", consolidated=False, storage_options=so
            ),
            "nczarr": lambda: xr.open_dataset(
                f"{proxy.endpoint}/{prefix}#mode=nczarr,s3", engine="nczarr"
            ),
        }
        for name, open_it in opens.items():
            open_it().close()  # first open: clients built, regions looked up
            proxy.reset_counts()
            open_it().close()
            out[name] = dict(sorted(proxy.counts.items()))
    return out


def write_contenders(tmp: Path, ds: Any, codec: str = "zlib") -> dict[str, Callable[[], object]]:
    import nczarr

    enc = {name: {**CODECS[codec], "chunksizes": (100, 100)} for name in ds}
    n = [0]

    def target(tag: str) -> Path:
        n[0] += 1
        path = tmp / f"w-{tag}-{n[0]}.file"
        return path

    def netcdf() -> None:
        path = target("nc")
        ds.to_netcdf(f"file://{path}#mode=nczarr,file", engine="netcdf4", encoding=enc)
        shutil.rmtree(path)

    def ours() -> None:
        path = target("nz")
        nczarr.to_nczarr(ds, f"file://{path}#mode=nczarr,file", encoding=enc)
        shutil.rmtree(path)

    return {"to_netcdf": netcdf, "to_nczarr": ours}


def _set_workers(workers: int | None) -> None:
    """``--workers``: zarr's ``threading.max_workers`` (nczarr's decode threads) for
    the rest of this process; None leaves the default (the number of CPUs)."""
    if workers:
        import zarr

        zarr.config.set({"threading.max_workers": workers})


def _only(contenders: dict[str, Callable[[], object]], only: str | None) -> dict[str, Any]:
    """The contenders ``--only`` names (comma-separated; all when None)."""
    if not only:
        return contenders
    names = set(only.split(","))
    return {k: v for k, v in contenders.items() if k in names}


# ------------------------------------------------------------------ instruction counts
#: callgrind dumps its counters (and resets them) when either libc function is entered:
#: the child calls ``os.getppid()`` / ``os.getpgrp()`` around each measured call
#: (nothing else in these runs calls them), so every second dump holds exactly one
#: contender's instructions, every thread of the process included. The first marker
#: is a dump, not ``--zero-before``: callgrind's zeroing there resets the calling
#: thread's counters only, so a pool thread's work in the untimed call before was
#: counted in the measured one (the decode threads' share of a second load; a
#: callgrind run of a 1-thread pool doing N warm-up jobs, then one job between the
#: markers: 95 M with N=0 and 389 M with N=3 under ``--zero-before``, 97 M for both
#: with two dumps).
_CG_ZERO, _CG_DUMP = "getppid", "getpgrp"


def _measure_child(spec: dict[str, Any]) -> None:
    """In the process valgrind runs: each contender once untimed (imports, caches), then
    once between the two markers; prints the contenders' names in dump order."""
    import json

    global OPEN_ONLY
    warnings.simplefilter("ignore")
    _set_workers(spec.get("workers"))
    OPEN_ONLY = bool(spec.get("s3_open"))
    if spec["kind"] == "write":
        contenders = write_contenders(
            Path(spec["tmp"]), make_dataset(spec["side"]), spec.get("codec", "zlib")
        )
    else:
        s3 = None
        if spec["endpoint"]:
            import s3fs

            fs = s3fs.S3FileSystem(endpoint_url=spec["endpoint"], skip_instance_cache=True)
            s3 = (fs, spec["endpoint"], spec["prefix"])
        contenders = read_contenders(
            spec["where"], Path(spec["root"]), Path(spec["zpath"]), s3, spec["dask"]
        )
    contenders = _only(contenders, spec.get("only"))
    for func in contenders.values():
        func()
        os.getppid()
        func()
        os.getpgrp()
    print("CONTENDERS " + json.dumps(list(contenders)))


def instructions(spec: dict[str, Any], scratch: Path) -> dict[str, float]:
    """Instructions (user space, all threads; kernel work is not counted) of one call of
    each contender described by ``spec``, from ``valgrind --tool=callgrind``."""
    import json
    import subprocess

    out = scratch / f"cg-{os.getpid()}-{time.monotonic_ns()}"
    out.mkdir()
    try:
        (out / "spec.json").write_text(json.dumps(spec))
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--dump-before={_CG_ZERO}",
            f"--dump-before={_CG_DUMP}",
            "--dump-instr=no",
            f"--callgrind-out-file={out / 'cg.out'}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--cg-child",
            str(out / "spec.json"),
        ]
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = [x for x in run.stdout.splitlines() if x.startswith("CONTENDERS ")]
        if run.returncode or not lines:
            raise RuntimeError(f"callgrind run failed ({run.returncode}):\n{run.stderr[-3000:]}")
        names = json.loads(lines[-1].partition(" ")[2])
        counts = []
        for i in range(1, len(names) + 1):
            # dump 2i - 1: everything before contender i's measured call (dropped)
            text = (out / f"cg.out.{2 * i}").read_text()
            summary = next(x for x in text.splitlines() if x.startswith("summary:"))
            counts.append(float(summary.split()[1]))
        return dict(zip(names, counts, strict=True))
    finally:
        shutil.rmtree(out, ignore_errors=True)


# ------------------------------------------------------------------ report
def ratio(a: float, b: float) -> str:
    return f"{a / b:5.2f}x" if b else "  n/a"


def report(title: str, best: dict[str, float], unit: str, scale: float) -> None:
    """Print one measurement (``best``: contender -> value) and its ratios."""
    floor = best.get("floor")
    base = best.get("netcdf4")
    parts = [f"{name} {t * scale:8.1f}" for name, t in best.items()]
    print(f"{title:26s} {unit:7s}: " + " | ".join(parts))
    for name, t in best.items():
        if name in ("floor", "netcdf4", "to_netcdf"):
            continue
        line = f"{'':35s} {name:12s}"
        if floor:
            line += f" /floor {ratio(t, floor)}"
        if base:
            line += f"  /netcdf4 {ratio(t, base)}"
        if name == "nczarr+dask" and "netcdf4+dask" in best:
            line += f"  /netcdf4+dask {ratio(t, best['netcdf4+dask'])}"
        if name == "nczarr" and "zarr" in best:
            line += f"  throughput vs zarr engine {ratio(best['zarr'], t)}"
        if name == "to_nczarr" and "to_netcdf" in best:
            line += f"  /to_netcdf {ratio(t, best['to_netcdf'])}"
        print(line)
    sys.stdout.flush()


def _cell(best: dict[str, float], name: str, scale: float) -> str:
    return f"{best[name] * scale:.1f}" if name in best else "cannot"


def summary_table(rows: list[tuple[str, dict[str, float]]], unit: str, scale: float) -> str:
    """The issue's table (markdown): one row per case, values in ``unit``, ratios of
    nczarr to the netcdf4 engine and to the floor, and nczarr's throughput over xarray's
    zarr engine."""
    head = (
        f"| case | floor | netcdf4 engine | xarray zarr engine | nczarr engine | "
        f"nczarr / netcdf4 | nczarr / floor | zarr engine / nczarr |\n"
        f"|---|---:|---:|---:|---:|---:|---:|---:|  ({unit})"
    )
    out = [head]
    for title, best in rows:
        if "to_nczarr" in best and "to_netcdf" in best:
            us, nc = best["to_nczarr"], best["to_netcdf"]
            out.append(
                f"| {title} | | to_netcdf {nc * scale:.1f} | | to_nczarr {us * scale:.1f} | "
                f"**{ratio(us, nc).strip()}** | | |"
            )
            continue
        if "nczarr+dask" in best:
            us, nc = best["nczarr+dask"], best.get("netcdf4+dask")
            out.append(
                f"| {title}, chunks={{}} | | {_cell(best, 'netcdf4+dask', scale)} | | "
                f"{us * scale:.1f} | **{ratio(us, nc).strip() if nc else '-'}** | | |"
            )
        if "nczarr" not in best:
            continue
        us = best["nczarr"]
        nc = best.get("netcdf4")
        out.append(
            f"| {title} | {_cell(best, 'floor', scale)} | {_cell(best, 'netcdf4', scale)} | "
            f"{_cell(best, 'zarr', scale)} | {us * scale:.1f} | "
            f"{'**' + ratio(us, nc).strip() + '**' if nc else '-'} | "
            f"{ratio(us, best['floor']).strip() if 'floor' in best else '-'} | "
            f"**{ratio(best['zarr'], us).strip() if 'zarr' in best else '-'}** |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="40 KB chunks, dir only")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="count instructions with valgrind --tool=callgrind instead of timing (stable "
        "under load; slow: each (case, place) runs in its own valgrind process)",
    )
    parser.add_argument("--cg-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--no-dask", action="store_true", help="leave out the chunks={} runs")
    parser.add_argument("--cases", default=",".join(CASES), help="e.g. 40KB or 4MB")
    parser.add_argument("--codecs", default=",".join(CODECS), help="e.g. blosc or zlib")
    parser.add_argument("--where", default="dir,zip,s3", help="e.g. dir,zip")
    parser.add_argument(
        "--write-codecs", default="zlib", help="codecs of the 40 KB writes, e.g. zlib,blosc"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="zarr's threading.max_workers, i.e. nczarr's decode threads (default: CPUs)",
    )
    parser.add_argument(
        "--only", default=None, help="contenders to run, e.g. netcdf4,nczarr (default: all)"
    )
    parser.add_argument(
        "--s3-open",
        action="store_true",
        help="S3: also time the opens alone and count each engine's requests of an open",
    )
    args = parser.parse_args()
    global OPEN_ONLY
    OPEN_ONLY = args.s3_open
    if args.cg_child:
        import json

        _measure_child(json.loads(Path(args.cg_child).read_text()))
        return
    warnings.simplefilter("ignore")
    _set_workers(args.workers)

    import netCDF4
    import numcodecs
    import xarray as xr
    import zarr

    import nczarr

    repeat = 3 if args.quick else args.repeat
    wheres = ["dir"] if args.quick else [w for w in args.where.split(",") if w in WHERES]
    if args.no_s3 and "s3" in wheres:
        wheres.remove("s3")
    cases = {"40KB": CASES["40KB"]} if args.quick else {c: CASES[c] for c in args.cases.split(",")}
    codecs = args.codecs.split(",")
    how = "instructions (callgrind), one call each" if args.callgrind else f"best of {repeat}"
    try:
        from nczarr.inflate import fast_available

        fast = "yes" if fast_available() else "no"
    except ImportError:  # a version before the fast extra
        fast = "no (not in this version)"
    print(
        f"nczarr {nczarr.__file__} (libdeflate: {fast})\n"
        f"zarr {zarr.__version__}, xarray {xr.__version__}, "
        f"numcodecs {numcodecs.__version__}, libnetcdf {netCDF4.__netcdf4libversion__}, "
        f"nproc {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; {how}"
    )
    proc = None
    s3fs_fs = None
    endpoint = ""
    if "s3" in wheres:
        import s3fs
        from bench_s3_search import start_moto

        proc, endpoint = start_moto()
        s3fs_fs = s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True)
        s3fs_fs.mkdir("bench")
    tmp = Path(tempfile.mkdtemp(prefix="nczarr-engine-", dir=args.dir))
    rows: list[tuple[str, dict[str, float]]] = []  # (case, contender -> CPU s or instructions)

    def measure(title: str, spec: dict[str, Any], contenders: Callable[[], dict]) -> None:
        if args.callgrind:
            best = instructions(spec, tmp)
            report(title, best, "M instr", 1e-6)
        else:
            wall, cpu = best_of(_only(contenders(), args.only), repeat)
            report(title, wall, "wall ms", 1e3)
            report(title, cpu, "cpu ms", 1e3)
            if "nczarr open" in cpu:
                for what, best_t in (("wall", wall), ("cpu", cpu)):
                    r = ratio(best_t["nczarr open"], best_t["zarr open"])
                    print(f"{'':35s} open alone, nczarr / zarr engine ({what}): {r}")
            best = cpu
        rows.append((title, best))

    try:
        for case, (side, edge) in cases.items():
            ds = make_dataset(side)
            for codec in codecs:
                root = tmp / f"{case}-{codec}.file"
                write_netcdf_c(root, ds, edge, codec)
                zpath = tmp / f"{case}-{codec}.zip"
                if "zip" in wheres:
                    make_zip(root, zpath)
                s3 = None
                prefix = f"bench/{case}-{codec}"
                if s3fs_fs is not None:
                    upload(root, s3fs_fs, prefix)
                    s3 = (s3fs_fs, endpoint, prefix)
                if s3 is not None and args.s3_open:
                    for name, counts in s3_open_requests(endpoint, prefix).items():
                        total = sum(counts.values())
                        print(f"{case} {codec} s3: requests of one {name} open: {total} {counts}")
                for where in wheres:
                    dask = where == "dir" and not args.no_dask
                    spec = {
                        "workers": args.workers,
                        "only": args.only,
                        "kind": "read",
                        "where": where,
                        "root": str(root),
                        "zpath": str(zpath),
                        "endpoint": endpoint if where == "s3" else "",
                        "prefix": prefix,
                        "dask": dask,
                        "s3_open": args.s3_open,
                    }
                    measure(
                        f"{case} {codec} {where}",
                        spec,
                        lambda w=where, r=root, z=zpath, s=s3, d=dask: read_contenders(
                            w, r, z, s, d
                        ),
                    )
            for wcodec in args.write_codecs.split(",") if not args.no_write else ():
                if case != "40KB":
                    break
                spec = {
                    "kind": "write",
                    "tmp": str(tmp),
                    "side": side,
                    "codec": wcodec,
                    "only": args.only,
                    "workers": args.workers,
                }
                measure(
                    f"write 40KB {wcodec} dir",
                    spec,
                    lambda ds=ds, c=wcodec: write_contenders(tmp, ds, c),
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if proc is not None:
            proc.terminate()
            proc.wait()
    unit = "M instructions" if args.callgrind else "CPU ms, minimum"
    print()
    print(summary_table(rows, unit, 1e-6 if args.callgrind else 1e3))
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
