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
times, in interleaved rounds; kerchunk's and VirtualiZarr's sets of the same file
(and, with ``--baseline TREE``, the sets an older nczarr source tree writes) are read by
the same readers, so what differs between sets is told from what the readers cost.
``--breakdown`` (after ``--read-nc``, same ``--dir``) prints where that read's time goes
per chunk (zlib, shuffle, copy, ``pread``, fsspec's ``_cat_file``, zarr with and without
its thread hops) and each reader's system calls per chunk (``strace``). The NCZarr
store's read also reads kerchunk's ``single_zarr`` set of it. ``--nc-memory`` measures
the peak memory (``VmHWM``) of writing Parquet sets of ``.nc`` files of the given
chunk counts, each in a fresh process.

Usage::

    python3 benchmarks/references.py                      # 10,000 and 100,000 chunks
    python3 benchmarks/references.py --nczarr-chunks 20000 --repeat 1   # quicker
    python3 benchmarks/references.py --only-memory --memory 100000,1000000 --dir /tmp/x
    python3 benchmarks/references.py --read-nc --dir /tmp/x --repeat 3
    python3 benchmarks/references.py --read-nc --breakdown --baseline /tmp/base --dir /tmp/x
    python3 benchmarks/references.py --nc-memory 10000,100000,1000000 --dir /tmp/x
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import gc
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

        def kerchunk() -> Any:
            # collect here the cycles holding h5py objects: collected in zarr's loop
            # thread while kerchunk's h5py visititems holds h5py's lock, they deadlock
            gc.collect()
            return SingleHdf5ToZarr(str(path)).translate()

        wall, cpu, _ = best(repeat, kerchunk, warm=True)
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
    sets = {"the JSON references": work_dir / f"{name}.json"}
    sets["the Parquet references"] = work_dir / f"{name}.parq"
    if zarr_store is not None:
        sets |= kerchunk_zarr_set(zarr_store, work_dir)
    for label, fo in sets.items():
        with counted() as counts:
            wall, cpu, values = best(repeat, lambda fo=fo: read_refs(str(fo)))
        np.testing.assert_array_equal(values, direct)
        report(f"zarr through {label}", wall, cpu, base)
        print(
            f"    {counts['reads'] // repeat} byte-range reads, "
            f"{counts['opens'] // repeat} Python file opens per read"
        )
        # "reading through the references >= 0.9x reading the source directly"
        print(f"    speed vs netCDF4 on the source: {base[1] / cpu:.2f}x (target >= 0.9)")
        if direct_zarr is not None:
            print(f"    speed vs zarr on the source: {direct_zarr / cpu:.2f}x (target >= 0.9)")
    print(f"    (netCDF4 reads through libnetcdf: {c_direct['opens']} Python opens)")


def kerchunk_zarr_set(store: str, work_dir: Path) -> dict[str, Path]:
    """kerchunk's set of a Zarr v2 store (``kerchunk.zarr.single_zarr``, nothing
    inlined, as nczarr's), when kerchunk is installed: the same reader over another
    tool's set of the same chunks."""
    try:
        from kerchunk.zarr import single_zarr
    except ImportError:
        return {}
    out = work_dir / "kerchunk-zarr.json"
    out.write_text(json.dumps(single_zarr(store, inline_threshold=0)))  # a version 1 set
    return {"kerchunk's set (single_zarr)": out}


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no .zmetadata: xarray's fallback
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


def bench_read_nc(
    work_dir: Path, chunks: int, edge: int, repeat: int, baseline: str | None = None
) -> None:
    """Reading every value of a realistic netCDF-4 file: directly and through its
    reference sets (see the module doc)."""

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
    theirs = third_party_sets(path, work_dir)
    if baseline:
        theirs |= baseline_sets(path, work_dir, baseline)
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
    for name, theirs_fo in theirs.items():  # the same readers over their sets
        contenders[f"zarr through {name}"] = lambda f=theirs_fo: read_refs(f)
        if "JSON" in name:  # kerchunk's declares no fill value: xarray masks nothing
            contenders[f"xarray reference:// ({name})"] = lambda f=theirs_fo: read_xarray_refs(f)
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


def baseline_sets(path: Path, work_dir: Path, baseline: str) -> dict[str, str]:
    """The JSON and Parquet sets of ``path`` written by the nczarr in ``baseline`` (a
    source tree, e.g. an older commit unpacked with ``git archive``), in a subprocess
    with it first on ``PYTHONPATH``; whether each equals the current one's."""
    import subprocess
    import sys

    code = (
        "import json, sys, warnings; warnings.simplefilter('ignore'); import nczarr; "
        "assert nczarr.__file__.startswith(sys.argv[3]), nczarr.__file__; "
        "json.dump(nczarr.references(sys.argv[1]), open(sys.argv[2] + '.json', 'w')); "
        "nczarr.write_references(sys.argv[1], sys.argv[2] + '.parq')"
    )
    out = work_dir / "baseline"
    if Path(f"{out}.parq").is_dir():
        shutil.rmtree(f"{out}.parq")
    env = dict(os.environ, PYTHONPATH=baseline)
    subprocess.run(
        [sys.executable, "-c", code, str(path), str(out), str(Path(baseline).resolve())],
        check=True,
        env=env,
        cwd=work_dir,  # not a checkout's directory, which -c would put first
    )
    same = json.loads(Path(f"{out}.json").read_text()) == json.loads(
        (work_dir / "read.json").read_text()
    )
    print(f"  baseline {baseline}: its JSON set {'equals' if same else 'differs from'} this one")
    return {"the baseline's JSON set": f"{out}.json", "the baseline's Parquet set": f"{out}.parq"}


def third_party_sets(path: Path, work_dir: Path) -> dict[str, str]:
    """kerchunk's JSON set and VirtualiZarr's JSON and Parquet sets (its kerchunk
    writer) of ``path``, for those installed: name -> set path. Read by the same
    readers as nczarr's, they say how much of the read time is the set's."""
    sets: dict[str, str] = {}
    try:
        from kerchunk.hdf import SingleHdf5ToZarr
    except ImportError:
        print("  kerchunk: not installed")
    else:
        gc.collect()  # see bench_nc
        out = work_dir / "kerchunk.json"
        out.write_text(json.dumps(SingleHdf5ToZarr(str(path)).translate()))
        sets["kerchunk's JSON set"] = str(out)
    try:
        from obspec_utils.registry import ObjectStoreRegistry
        from obstore.store import LocalStore
        from virtualizarr import open_virtual_dataset
        from virtualizarr.parsers import HDFParser
    except ImportError:
        print("  VirtualiZarr: not installed")
    else:
        registry = ObjectStoreRegistry({"file://": LocalStore()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vds = open_virtual_dataset(path.as_uri(), registry=registry, parser=HDFParser())
            for fmt, name in (("json", "vz.json"), ("parquet", "vz.parq")):
                out = work_dir / name
                if out.is_dir():
                    shutil.rmtree(out)
                vds.vz.to_kerchunk(str(out), format=fmt)
                sets[f"VirtualiZarr's {'JSON' if fmt == 'json' else 'Parquet'} set"] = str(out)
    return sets


def stored_chunks(path: Path) -> list[tuple[int, int]]:
    """(byte offset, size) of every stored chunk of ``v``, in the walk's order."""
    import h5py

    with h5py.File(path, "r") as f:
        out: list[tuple[int, int]] = []
        f["v"].id.chunk_iter(lambda info: out.append((info.byte_offset, info.size)))
    return out


def fs_reads(fo: str) -> Callable[[], int]:
    """Every chunk's bytes through the reference filesystem as zarr 3 asks for them
    (``_cat_file`` on the asynchronous filesystem, ``async.concurrency`` at a time),
    without zarr's codecs."""
    import asyncio

    keys = [k for k, v in json.loads(Path(fo).read_text())["refs"].items() if isinstance(v, list)]

    def run() -> int:
        async def main() -> int:
            fs = fsspec.filesystem(
                "reference",
                fo=fo,
                asynchronous=True,
                remote_protocol="file",
                skip_instance_cache=True,
            )
            sem = asyncio.Semaphore(zarr.config.get("async.concurrency"))

            async def one(key: str) -> int:
                async with sem:
                    return len(await fs._cat_file(key))

            return sum(await asyncio.gather(*(one(k) for k in keys)))

        return asyncio.run(main())

    return run


@contextlib.contextmanager
def no_thread_hops() -> Iterator[None]:
    """``asyncio.to_thread`` run inline (zarr's codecs and fsspec's wrapper of the
    local filesystem each hop to a worker thread per chunk): what the hops cost."""
    import asyncio

    real = asyncio.to_thread

    async def inline(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    asyncio.to_thread = inline  # type: ignore[assignment]
    try:
        yield
    finally:
        asyncio.to_thread = real


def syscalls(work: str) -> dict[str, int] | None:
    """System calls of a fresh process doing ``work`` (Python source) minus those of
    one doing only the imports (``strace -f -c``), or None without strace."""
    import subprocess
    import sys

    if shutil.which("strace") is None:
        return None
    prelude = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import references as B\n"
    )
    counts: list[dict[str, int]] = []
    for code in (prelude, prelude + work):
        with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
            subprocess.run(
                ["strace", "-f", "-c", "-o", out.name, sys.executable, "-c", code],
                check=True,
                capture_output=True,
            )
            table: dict[str, int] = {}
            for line in out.read().splitlines():
                parts = line.split()
                if len(parts) >= 5 and parts[3].isdigit():
                    table[parts[-1]] = int(parts[3])
            counts.append(table)
    return {k: v - counts[0].get(k, 0) for k, v in counts[1].items()}


def bench_breakdown(work_dir: Path, chunks: int, edge: int, repeat: int) -> None:
    """Where the time of reading through a set goes, per chunk (run after --read-nc:
    it uses that run's files)."""
    import os
    import zlib

    import numcodecs

    path = work_dir / f"read-{chunks}-{edge}.nc"
    copy = work_dir / f"read-{chunks}-{edge}.zarr"
    fo = str(work_dir / "read.json")
    theirs = {"kerchunk": work_dir / "kerchunk.json", "VirtualiZarr": work_dir / "vz.json"}
    locations = stored_chunks(path)
    n = len(locations)
    with open(path, "rb") as f:
        stored = [os.pread(f.fileno(), size, offset) for offset, size in locations]
    raw = [zlib.decompress(b) for b in stored]
    shuffle = numcodecs.Shuffle(elementsize=4)
    out = np.empty((edge * 8, edge * 8), "f4")

    def preads() -> int:
        with open(path, "rb") as f:
            return sum(len(os.pread(f.fileno(), s, o)) for o, s in locations)

    def copies() -> None:
        for b in raw:
            out[:edge, :edge] = np.frombuffer(b, "f4").reshape(edge, edge)

    def inline(work: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with no_thread_hops():
                return work()

        return run

    zarr_copy = lambda: zarr.open_group(str(copy), mode="r")["v"][...]  # noqa: E731
    contenders: dict[str, Callable[[], Any]] = {
        "netCDF4 on the file": lambda: read_netcdf(str(path)),
        "zlib.decompress alone": lambda: [zlib.decompress(b) for b in stored],
        "numcodecs Shuffle.decode alone": lambda: [shuffle.decode(b) for b in raw],
        "copy of each chunk into the output": copies,
        "os.pread of each chunk (one open file)": preads,
        "fsspec reference _cat_file of each chunk": fs_reads(fo),
        "zarr on a Zarr copy": zarr_copy,
        "zarr on a Zarr copy, no thread hops": inline(zarr_copy),
        "zarr through the JSON set": lambda: read_refs(fo),
        "zarr through the JSON set, no thread hops": inline(lambda: read_refs(fo)),
    }
    cpus: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, work in contenders.items():
            gc.collect()
            cpu = time.process_time()
            work()
            cpus[name].append(time.process_time() - cpu)
    print(f"\nwhere the time goes, {n} chunks (CPU, best of {repeat}, per chunk)")
    for name, times in cpus.items():
        print(f"  {name:<44} {min(times) / n * 1e6:6.0f} us")
    readers = {
        "netCDF4 on the file": f"B.read_netcdf({str(path)!r})",
        "zarr on a Zarr copy": f"import zarr; zarr.open_group({str(copy)!r}, mode='r')['v'][...]",
        "zarr through nczarr's JSON set": f"B.read_refs({fo!r})",
    } | {
        f"zarr through {name}'s JSON set": f"B.read_refs({str(p)!r})"
        for name, p in theirs.items()
        if p.exists()
    }
    calls = {name: syscalls(code) for name, code in readers.items()}
    if any(c is None for c in calls.values()):
        print("  (strace not installed: no system call counts)")
        return
    names = ("openat", "read", "pread64", "lseek", "newfstatat", "close", "futex")
    print("  system calls per chunk (strace -f -c, over the imports alone)")
    print(f"  {'':<34}" + "".join(f"{s:>11}" for s in names))
    for name, table in calls.items():
        print(f"  {name:<34}" + "".join(f"{table.get(s, 0) / n:11.2f}" for s in names))


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
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="where the time of a read through a set goes, per chunk (after --read-nc, same --dir)",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help="with --read-nc: a source tree of an older nczarr whose sets are read too",
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
        if args.read_nc or args.nc_memory or args.breakdown:
            if args.read_nc:
                bench_read_nc(
                    work_dir, args.read_chunks, args.read_edge, args.repeat, args.baseline
                )
            if args.breakdown:
                bench_breakdown(work_dir, args.read_chunks, args.read_edge, args.repeat)
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
