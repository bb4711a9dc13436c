"""Throughput of zarr-python through ZarrStore(map) against zarr's own stores.

One run writes then reads the same arrays through

* ``ZarrStore(FileMap)`` and zarr's ``LocalStore`` (a directory), and
* ``ZarrStore(ZipMap)`` and zarr's ``ZipStore`` (a zip archive; the write time includes
  closing the archive),

and prints MB/s for each plus the ratio ours/theirs (target: >= 0.9). Two cases: a large
array in 1 MB chunks (bandwidth) and a small array in 4 KB chunks (per-key overhead).
Chunks are uncompressed so the numbers measure the store, not a codec.

Usage::

    python3 benchmarks/bench_maps.py            # 256 MB + 4 MB, about a minute
    python3 benchmarks/bench_maps.py --big-mb 64 --small-mb 1 --repeat 1   # quick
    python3 benchmarks/bench_maps.py --dir /dev/shm  # tmpfs: store overhead, not the disk
    python3 benchmarks/bench_maps.py --offload  # also: each map with the other choice of
                                                # thread vs inline calls (blocking_io)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zarr
from zarr.abc.store import Store
from zarr.storage import LocalStore, ZipStore

from nczarr.integrations.zarr_store import ZarrStore, blocking_io
from nczarr.maps.base import ZMap


@dataclass(frozen=True)
class Case:
    name: str
    shape: tuple[int, ...]
    chunks: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * 4


@dataclass(frozen=True)
class Backend:
    """How to open one store for writing and, afterwards, for reading."""

    name: str
    writer: Callable[[Path], Store]
    reader: Callable[[Path], Store]
    suffix: str


def _cases(big_mb: int, small_mb: int) -> list[Case]:
    # 1 MB chunks = 512 x 512 float32; 4 KB chunks = 32 x 32 float32.
    return [
        Case(f"{big_mb} MB in 1 MB chunks", (big_mb, 512, 512), (1, 512, 512)),
        Case(f"{small_mb} MB in 4 KB chunks", (small_mb * 256, 32, 32), (1, 32, 32)),
    ]


def _backends(offload: bool) -> list[tuple[Backend, Backend]]:
    """(ours, theirs) pairs; a map module that is not importable is left out."""
    pairs: list[tuple[Backend, Backend]] = []
    try:
        from nczarr.maps.file import FileMap
    except ImportError as exc:
        print(f"skipping FileMap: {exc}")
    else:
        local = Backend(
            "LocalStore", lambda p: LocalStore(p), lambda p: LocalStore(p, read_only=True), ""
        )
        pairs.append((_ours("ZarrStore(FileMap)", FileMap, ""), local))
        if offload:
            pairs.append((_ours("ZarrStore(FileMap)", FileMap, "", flip=True), local))
    try:
        from nczarr.maps.zip import ZipMap
    except ImportError as exc:
        print(f"skipping ZipMap: {exc}")
    else:
        zips = Backend(
            "ZipStore",
            lambda p: ZipStore(p, mode="w"),
            lambda p: ZipStore(p, mode="r", read_only=True),
            ".zip",
        )
        pairs.append((_ours("ZarrStore(ZipMap)", ZipMap, ".zip"), zips))
        if offload:
            pairs.append((_ours("ZarrStore(ZipMap)", ZipMap, ".zip", flip=True), zips))
    return pairs


def _ours(name: str, cls: type[ZMap], suffix: str, flip: bool = False) -> Backend:
    """ZarrStore over ``cls``; ``flip`` inverts the thread/inline choice of blocking_io."""

    def open_map(path: Path, mode: str) -> Store:
        zmap = cls(str(path), mode=mode)  # type: ignore[call-arg]
        if flip:
            zmap.blocking_io = not blocking_io(zmap)  # type: ignore[attr-defined]
        return ZarrStore(zmap)

    label = f"{name} {'(flipped)' if flip else ''}".strip()
    return Backend(label, lambda p: open_map(p, "w"), lambda p: open_map(p, "r"), suffix)


def _write(backend: Backend, path: Path, case: Case, data: np.ndarray) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    store = backend.writer(path)
    array = zarr.create_array(
        store,
        name="a",
        shape=case.shape,
        chunks=case.chunks,
        dtype="f4",
        compressors=None,
        fill_value=0.0,
        zarr_format=3,
    )
    array[...] = data
    store.close()
    return time.perf_counter() - start, time.process_time() - cpu


def _read(backend: Backend, path: Path, data: np.ndarray) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    store = backend.reader(path)
    values = zarr.open_array(store, path="a", mode="r")[...]
    store.close()
    elapsed = time.perf_counter() - start, time.process_time() - cpu
    if not np.array_equal(values, data):
        raise AssertionError(f"{backend.name} read back different numbers from {path}")
    return elapsed


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def _scratch(backend: Backend, workdir: Path) -> Path:
    stem = "".join(c if c.isalnum() else "_" for c in backend.name)
    return workdir / f"{stem}{backend.suffix}"


def _measure_pair(
    pair: tuple[Backend, Backend], workdir: Path, case: Case, data: np.ndarray, repeat: int
) -> list[list[tuple[float, float]]]:
    """Per backend: best (wall, CPU) seconds of [write, read]; runs interleaved so that
    other load on the machine hits both alike."""
    inf = (float("inf"), float("inf"))
    best = [[inf, inf] for _ in pair]
    for _ in range(repeat):
        for i, backend in enumerate(pair):
            path = _scratch(backend, workdir)
            _remove(path)
            for j, timing in enumerate(
                (_write(backend, path, case, data), _read(backend, path, data))
            ):
                best[i][j] = (min(best[i][j][0], timing[0]), min(best[i][j][1], timing[1]))
            _remove(path)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big-mb", type=int, default=256, help="size of the 1 MB-chunk case")
    parser.add_argument("--small-mb", type=int, default=4, help="size of the 4 KB-chunk case")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    parser.add_argument("--dir", default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument(
        "--offload",
        action="store_true",
        help="also run our maps with the opposite thread/inline choice ('flipped')",
    )
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        workdir = Path(tmp)
        for case in _cases(args.big_mb, args.small_mb):
            data = rng.random(case.shape, dtype="f4")
            for ours, theirs in _backends(args.offload):
                mine, other = _measure_pair((ours, theirs), workdir, case, data, args.repeat)
                rows.append((case, ours.name, theirs.name, mine, other))

    mb_s = "MB/s ours/theirs"
    header = (
        f"{'case':<22} {'ours':<28} {'theirs':<10} | {'write ' + mb_s:>24} {'ratio':>5} "
        f"{'cpu':>5} | {'read ' + mb_s:>23} {'ratio':>5} {'cpu':>5}"
    )
    print(f"zarr {zarr.__version__}, numpy {np.__version__}, best of {args.repeat}")
    print("ratio: ours/theirs throughput (wall clock); cpu: theirs/ours CPU seconds")
    print(header)
    print("-" * len(header))
    worst = float("inf")
    for case, ours, theirs, mine, other in rows:
        mb = case.nbytes / 1e6
        cells = []
        for (wall, cpu), (their_wall, their_cpu) in zip(mine, other, strict=True):
            ratio = their_wall / wall
            if "flipped" not in ours:
                worst = min(worst, ratio)
            cells.append(
                f"{mb / wall:>11.0f}/{mb / their_wall:<12.0f} {ratio:>5.2f} {their_cpu / cpu:>5.2f}"
            )
        print(f"{case.name:<22} {ours:<28} {theirs:<10} | {cells[0]} | {cells[1]}")
    print(f"worst wall-clock ratio (ours/theirs): {worst:.2f} (target >= 0.9)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
