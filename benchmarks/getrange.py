"""CPU time of one ``FileMap.getrange`` call against a plain ``open``/``seek``/``read``.

A sharded Zarr v3 read makes two range reads per inner chunk (the shard index, then
the chunk), so the map's per-call cost shows in every sharded read. Each timing is
the CPU time (``time.process_time``: this machine is shared, wall clock is noise) of
``--calls`` calls, the minimum of ``--repeat`` rounds, reading 20 bytes at the end of
a 40 KB file two directories down (``x/c/0/0``, a shard's index).

Usage::

    python3 benchmarks/getrange.py --dir /dev/shm
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import timeit

from nczarr.maps.file import FileMap


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="where the scratch directory goes")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    root = tempfile.mkdtemp(dir=args.dir)
    try:
        os.makedirs(os.path.join(root, "x", "c", "0"))
        path = os.path.join(root, "x", "c", "0", "0")
        with open(path, "wb") as f:
            f.write(os.urandom(40_000))
        fmap = FileMap(root, mode="r")

        def plain() -> bytes:
            with open(path, "rb") as f:
                f.seek(39_980)
                return f.read(20)

        def ours() -> bytes:
            return fmap.getrange("x/c/0/0", 39_980, 20)

        assert plain() == ours()
        for name, call in (("open/seek/read", plain), ("FileMap.getrange", ours)):
            timer = timeit.Timer(call, timer=time.process_time)
            best = min(timer.repeat(args.repeat, args.calls))
            print(f"{name:>17}: {best / args.calls * 1e6:6.1f} us CPU a call")
    finally:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
