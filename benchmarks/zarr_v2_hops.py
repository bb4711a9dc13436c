"""Upstream evidence (zarr-python, no nczarr code): reading a Zarr v2 array costs thread
hops and a task per chunk, whatever zarr's configuration says.

Run: ``python3 benchmarks/zarr_v2_hops.py [--dir /dev/shm] [--repeat 5]``

A Zarr v2 array written by zarr-python into its own ``LocalStore``: 1500 x 1500
``float32`` in 100 x 100 chunks (225 chunks of 40 KB), blosc-lz4. ``a[...]`` is timed
(minimum wall and CPU time of ``--repeat`` rounds) with the default configuration and
with ``codec_pipeline.batch_size`` / ``async.concurrency`` raised, against the floor:
a plain loop reading each chunk file and decoding it with the same numcodecs object.
``asyncio.to_thread`` calls and asyncio tasks are counted per chunk (``V2Codec`` runs
the compressor and every filter through ``asyncio.to_thread``, and ``LocalStore``
reads each chunk in a thread too). The batch size and the concurrency change how the
tasks are grouped, not how many thread hops each chunk costs.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import tempfile
import time
from pathlib import Path


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def best(func, repeat: int) -> tuple[float, float]:
    func()
    wall = cpu = float("inf")
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), _cpu()
        func()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, _cpu() - start_cpu)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import numcodecs
    import numpy as np
    import zarr

    tmp = Path(tempfile.mkdtemp(prefix="zarr-hops-", dir=args.dir))
    try:
        path = tmp / "a.zarr"
        blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)
        a = zarr.create_array(
            store=str(path),
            shape=(1500, 1500),
            chunks=(100, 100),
            dtype="<f4",
            zarr_format=2,
            compressors=blosc,
        )
        rng = np.random.default_rng(0)
        a[...] = np.round(rng.normal(size=a.shape) * 10, 2).astype("f4")
        files = sorted(p for p in path.iterdir() if not p.name.startswith("."))
        nchunks = len(files)

        def floor() -> None:
            for p in files:
                np.frombuffer(blosc.decode(p.read_bytes()), "<f4")

        counts = {"to_thread": 0, "tasks": 0}
        real_to_thread = asyncio.to_thread

        async def counting_to_thread(func, /, *a, **k):  # type: ignore[no-untyped-def]
            counts["to_thread"] += 1
            return await real_to_thread(func, *a, **k)

        def counted() -> None:
            loop = zarr.core.sync._get_loop()
            old = loop.get_task_factory()

            def factory(loop, coro, **kw):  # type: ignore[no-untyped-def]
                counts["tasks"] += 1
                return asyncio.Task(coro, loop=loop, **kw)

            loop.set_task_factory(factory)
            asyncio.to_thread = counting_to_thread  # type: ignore[assignment]
            try:
                zarr.open_array(str(path), mode="r")[...]
            finally:
                asyncio.to_thread = real_to_thread  # type: ignore[assignment]
                loop.set_task_factory(old)

        counted()
        print(
            f"zarr {zarr.__version__}, {nchunks} chunks: asyncio.to_thread calls per chunk "
            f"{counts['to_thread'] / nchunks:.2f}, tasks per chunk {counts['tasks'] / nchunks:.2f}"
        )
        f_wall, f_cpu = best(floor, args.repeat)
        print(f"floor (read + decode loop): wall {f_wall * 1e3:7.1f} ms, cpu {f_cpu * 1e3:7.1f} ms")
        for settings in (
            {},
            {"codec_pipeline.batch_size": 64},
            {"codec_pipeline.batch_size": nchunks},
            {"async.concurrency": 64},
        ):
            with zarr.config.set(settings):
                arr = zarr.open_array(str(path), mode="r")
                wall, cpu = best(lambda arr=arr: arr[...], args.repeat)
            print(
                f"zarr a[...] {settings or 'default config'}: wall {wall * 1e3:7.1f} ms "
                f"({wall / f_wall:.2f}x floor), cpu {cpu * 1e3:7.1f} ms ({cpu / f_cpu:.2f}x floor)"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
