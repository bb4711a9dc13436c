"""Benchmark the xarray ``nczarr`` engine against xarray's own zarr engine on pure Zarr
stores (v2, v3, sharded v3); prints throughput ratios measured within one run.

Run (about a minute on an idle 2-core machine)::

    python3 benchmarks/engine_pure_zarr.py                 # everything
    python3 benchmarks/engine_pure_zarr.py --repeat 15     # more rounds on a loaded machine
    python3 benchmarks/engine_pure_zarr.py --dir /dev/shm  # tmpfs (default: a temp dir)
    python3 benchmarks/engine_pure_zarr.py --s3            # also from a moto S3 bucket

Data (stated, not tuned): 4 ``float32`` variables of 1500 x 1500, values
``round(N(0,1) * 10, 2)``, in 100 x 100 chunks (40 KB, 225 per variable), written by
zarr-python 3 itself (``xr.Dataset.to_zarr``) as

* ``v2``: Zarr v2, zarr-python's default compressor (zstd);
* ``v3``: Zarr v3, zarr-python's defaults (``c/`` keys, ``bytes`` + zstd);
* ``v3-sharded``: Zarr v3, shards of 500 x 500 (25 inner chunks each, 9 shards per
  variable), inner codecs zarr-python's defaults.

Read contenders, each ``xr.open_dataset(path, ...).load()`` on the same directory:
``zarr`` (``engine="zarr"``, ``consolidated=False``) and ``nczarr`` (``engine="nczarr"``);
with ``--dask`` also both with ``chunks={}``. With ``--s3`` each store is also copied
into a bucket of a moto server (its own process, so its CPU is not counted) and read by
both engines from ``s3://bench/<store>.zarr`` with the same ``storage_options``
(``--s3-stores``, default the sharded one; ``--s3-repeat`` rounds; with dask only
with ``--s3-dask``: two dask threads make two requests at a time, a minute a round).
Then zarr-python itself reads every array there through its own ``FsspecStore``
("zarr") and through nczarr's ``ZarrStore`` over an ``S3Map`` ("nczarr"): the store
adapter alone, without either engine.

Timing: the machine is shared, so every contender runs ``--repeat`` times, interleaved
round-robin after one untimed warm-up, and the minimum is kept of wall time and of CPU
time (user + system of all threads of this process; a loaded machine distorts it less).
The ratio printed is throughput of nczarr over xarray's zarr engine (``zarr`` time /
``nczarr`` time): >= 1.0 means the nczarr engine is at least as fast.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from engine import best_of, load, make_dataset, ratio  # noqa: E402 - after the path

SIDE, EDGE, SHARD = 1500, 100, 500
STORES = ("v2", "v3", "v3-sharded")


def write_store(path: Path, ds: Any, kind: str) -> None:
    """``ds`` written by zarr-python (through xarray) as store ``kind``."""
    fmt = 2 if kind == "v2" else 3
    encoding: dict[str, dict[str, Any]] = {name: {"chunks": (EDGE, EDGE)} for name in ds}
    if kind == "v3-sharded":
        for enc in encoding.values():
            enc["shards"] = (SHARD, SHARD)
    ds.to_zarr(path, mode="w", zarr_format=fmt, consolidated=False, encoding=encoding)


def contenders(
    path: Path | str, dask: bool, storage_options: dict[str, Any] | None = None
) -> dict[str, Callable[[], object]]:
    """Both engines on ``path`` (a directory, or an ``s3://`` URL with ``storage_options``)."""
    import xarray as xr

    zkw: dict[str, Any] = {"consolidated": False}
    nkw: dict[str, Any] = {}
    if storage_options is not None:
        zkw["storage_options"] = nkw["storage_options"] = storage_options
    out: dict[str, Callable[[], object]] = {
        "zarr": lambda: load(xr.open_dataset(path, engine="zarr", **zkw)),
        "nczarr": lambda: load(xr.open_dataset(path, engine="nczarr", **nkw)),
    }
    if dask:
        out["zarr+dask"] = lambda: load(xr.open_dataset(path, engine="zarr", chunks={}, **zkw))
        out["nczarr+dask"] = lambda: load(xr.open_dataset(path, engine="nczarr", chunks={}, **nkw))
    return out


def store_contenders(url: str, endpoint: str) -> dict[str, Callable[[], object]]:
    """zarr-python itself reading every array of ``url``, through its own ``FsspecStore``
    (s3fs, asynchronous) and through nczarr's ``ZarrStore`` over an ``S3Map``."""
    import zarr

    from nczarr.integrations.zarr_store import ZarrStore
    from nczarr.maps.s3 import S3Map

    def read(group: Any) -> None:
        for _, array in group.arrays():
            array[...]

    def ours() -> None:
        zmap = S3Map(url, mode="r", endpoint_url=endpoint)
        read(zarr.open_group(ZarrStore(zmap), mode="r"))
        zmap.close()

    opts = {"endpoint_url": endpoint}
    return {
        "zarr": lambda: read(zarr.open_group(url, mode="r", storage_options=opts)),
        "nczarr": ours,
    }


def start_s3() -> tuple[Any, str, Any]:
    """A moto S3 server in its own process (its CPU is not counted) and an s3fs
    filesystem on it; fake credentials for the local server only."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import s3fs
    from bench_s3_search import start_moto

    proc, endpoint = start_moto()
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True)
    fs.mkdir("bench")
    return proc, endpoint, fs


def report(title: str, times: tuple[dict[str, float], dict[str, float]]) -> None:
    """Minima per contender and nczarr's throughput over the zarr engine."""
    for clock, best in zip(("wall", "cpu"), times, strict=True):
        parts = " | ".join(f"{name} {t * 1e3:7.1f}" for name, t in best.items())
        line = f"{title:22s} {clock:4s} ms: {parts}"
        line += f"   nczarr/zarr throughput {ratio(best['zarr'], best['nczarr'])}"
        if "nczarr+dask" in best:
            line += f"  (+dask {ratio(best['zarr+dask'], best['nczarr+dask'])})"
        print(line)
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--dask", action="store_true", help="also chunks={} (dask) reads")
    parser.add_argument("--stores", default=",".join(STORES), help="e.g. v3-sharded")
    parser.add_argument(
        "--s3", action="store_true", help="also each store in a bucket of a moto server"
    )
    parser.add_argument("--s3-repeat", type=int, default=3, help="rounds on S3")
    parser.add_argument("--s3-stores", default="v3-sharded", help="stores read from S3")
    parser.add_argument("--s3-dask", action="store_true", help="also chunks={} on S3 (slow)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    import numcodecs
    import xarray as xr
    import zarr

    import nczarr

    print(
        f"nczarr {nczarr.__file__}\nzarr {zarr.__version__}, xarray {xr.__version__}, "
        f"numcodecs {numcodecs.__version__}, nproc {os.cpu_count()}, "
        f"load {os.getloadavg()[0]:.1f}; best of {args.repeat}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="nczarr-pure-", dir=args.dir))
    proc, endpoint, fs = start_s3() if args.s3 else (None, "", None)
    try:
        ds = make_dataset(SIDE)
        for kind in args.stores.split(","):
            path = tmp / f"{kind}.zarr"
            write_store(path, ds, kind)
            report(f"read {kind}", best_of(contenders(path, args.dask), args.repeat))
            if fs is not None and kind in args.s3_stores.split(","):
                fs.put(str(path), f"bench/{kind}.zarr", recursive=True)
                url, options = f"s3://bench/{kind}.zarr", {"endpoint_url": endpoint}
                times = best_of(contenders(url, args.s3_dask, options), args.s3_repeat)
                report(f"read {kind} S3", times)
                times = best_of(store_contenders(url, endpoint), args.s3_repeat)
                report(f"zarr-python {kind} S3", times)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if proc is not None:
            proc.terminate()
            proc.wait()
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
