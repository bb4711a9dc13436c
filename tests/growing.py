"""Small daily datasets for growing stores (tests/test_combine.py, tests/test_append.py),
written by netcdf-c (netCDF4) as NCZarr stores or netCDF-4 files."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np

from .ncoracle import nc_url

#: Values of ``temp`` at day ``t``: ``t * 12 + (0..11)``, shape (3, 4).
CELLS = 12


def daily(
    path: Path,
    t0: int,
    n: int,
    *,
    chunk: int = 2,
    unlimited: bool = True,
    kind: str = "nczarr",
    lat: tuple[float, ...] = (1.0, 2.0, 3.0),
    title: str = "daily",
    extra: bool = False,
    lat_chunk: int | None = None,
) -> Path:
    """A dataset of days ``t0 .. t0+n-1``: ``time(time)``, ``lat(lat)`` and
    ``temp(time, lat, lon)`` (chunks ``(chunk, 3, 2)``, zlib, fill -999), written by
    netCDF4 as an NCZarr directory store (``kind="nczarr"``) or a netCDF-4 file
    (``kind="nc"``); with ``extra``, ``extra(time)`` too (``10 * t``, int32);
    ``lat_chunk``: ``lat`` in chunks of that many values (one chunk by default)."""
    url = nc_url(path) if kind == "nczarr" else str(path)
    with netCDF4.Dataset(url, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None if unlimited else n)
        ds.createDimension("lat", 3)
        ds.createDimension("lon", 4)
        t = ds.createVariable("time", "f8", ("time",), chunksizes=(chunk,))
        t.units = "days since 2000-01-01"
        chunked = {} if lat_chunk is None else {"chunksizes": (lat_chunk,)}
        la = ds.createVariable("lat", "f4", ("lat",), **chunked)
        la.units = "degrees_north"
        la[:] = lat
        v = ds.createVariable(
            "temp",
            "f4",
            ("time", "lat", "lon"),
            chunksizes=(chunk, 3, 2),
            zlib=True,
            fill_value=-999.0,
        )
        v.units = "K"
        t[:] = np.arange(t0, t0 + n)
        if extra:
            ds.createVariable("extra", "i4", ("time",))[:] = np.arange(t0, t0 + n) * 10
        v[:] = expected_temp(t0, n)
        ds.title = title
    return path


def expected_temp(t0: int, n: int) -> np.ndarray:
    """``temp`` of days ``t0 .. t0+n-1``."""
    return np.arange(t0 * CELLS, (t0 + n) * CELLS, dtype="f4").reshape(n, 3, 4)


def read_nc(path: Path) -> dict[str, object]:
    """What netcdf-c reads from the NCZarr store at ``path``: time, temp, lat, and the
    time dimension's size and unlimited flag."""
    with netCDF4.Dataset(nc_url(path)) as ds:
        dim = ds.dimensions["time"]
        return {
            "time": np.asarray(ds["time"][:]),
            "temp": np.ma.filled(ds["temp"][:], np.nan),
            "lat": np.asarray(ds["lat"][:]),
            "size": dim.size,
            "unlimited": dim.isunlimited(),
        }


def files(path: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file below ``path``: ``key -> (inode, mtime_ns, bytes)``."""
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            st = os.stat(p)
            out[p.relative_to(path).as_posix()] = (st.st_ino, st.st_mtime_ns, p.read_bytes())
    return out


def days(tmp_path: Path, count: int) -> list[Path]:
    """``count`` daily NCZarr sources of two days each under ``tmp_path/src``."""
    (tmp_path / "src").mkdir(exist_ok=True)
    return [daily(tmp_path / "src" / f"d{i:02d}", 2 * i, 2) for i in range(count)]


def s3_days(
    tmp_path: Path,
    bucket: str,
    endpoint: str,
    count: int,
    days: int = 2,
    chunk: int = 2,
    convert_options: dict[str, Any] | None = None,
    **options: Any,
) -> list[str]:
    """``count`` daily NCZarr sources of ``days`` days each (chunks of ``chunk`` days;
    ``options``: more of :func:`daily`'s), uploaded to ``s3://bucket/src/dNN`` (built
    under ``tmp_path``; ``convert_options``: how, e.g. as Zarr v3)."""
    import nczarr

    opts = {"endpoint_url": endpoint}
    urls = []
    for i in range(count):
        url = f"s3://{bucket}/src/d{i:02d}"
        local = daily(tmp_path / f"d{i:02d}", days * i, days, chunk=chunk, **options)
        nczarr.convert(local, url, target_options=opts, **(convert_options or {}))
        urls.append(url)
    return urls


def _source_of(target: str) -> str | None:
    """The source a request is about (``d07``), from its path or its listing prefix."""
    for piece in target.replace("%2F", "/").split("/"):
        if len(piece) == 3 and piece[0] == "d" and piece[1:].isdigit():
            return piece
    return None


def most_sources_listed_at_once(spans: list[tuple[float, float, str, str]]) -> int:
    """The most sources that were being listed at one moment (the check reads each
    source's listing; the copies, which overlap anyway, list nothing)."""
    events = []
    for start, end, op, target in spans:
        source = _source_of(target)
        if source is not None and op == "ListObjectsV2":
            events += [(start, 1, source), (end, -1, source)]
    live: dict[str, int] = {}
    most = 0
    for _, step, source in sorted(events, key=lambda e: (e[0], e[1])):
        live[source] = live.get(source, 0) + step
        most = max(most, sum(1 for n in live.values() if n > 0))
    return most


def most_sources_read_at_once(spans: list[tuple[float, float, str, str]]) -> int:
    """The most sources whose first-pass read (from the start of their listing to the
    end of their last metadata read: a read task's whole work on a source, several
    round trips) was under way at one moment. Steadier than the listings alone, which
    are one short round trip each: two workers' tasks started a few tens of
    milliseconds apart overlap in their reads but not always in their listings."""
    windows: dict[str, list[float]] = {}
    for start, end, op, target in spans:
        source = _source_of(target)
        name = target.rsplit("/", 1)[-1]
        first_pass = op == "ListObjectsV2" or (
            op == "GetObject" and (name.startswith(".z") or name == "zarr.json")
        )
        if source is None or not first_pass:
            continue
        window = windows.setdefault(source, [start, end])
        window[0], window[1] = min(window[0], start), max(window[1], end)
    return most_overlapping([(a, b) for a, b in windows.values()])


def most_at_once(spans: list[tuple[float, float, str, str]], op: str) -> int:
    """The most ``op`` requests in flight at one moment."""
    return most_overlapping([(start, end) for start, end, o, _ in spans if o == op])


_TWO_KEYS = re.compile(r"max-keys=2(&|$)")  # not a clear's listing of 2000 keys a page


def leaf_probes(spans: list[tuple[float, float, str, str]], bucket: str, prefix: str) -> list[str]:
    """The leaf-rule probes among ``spans`` of keys below ``bucket/prefix``: a listing
    of a key's own prefix (``max-keys=2``: is it a directory?) or a ``HeadObject`` of a
    node's path (is it an object?) before a write."""
    from urllib.parse import unquote

    out = []
    for _, _, op, target in spans:
        where = unquote(target)
        if op == "ListObjectsV2" and f"prefix={prefix}/" in where and _TWO_KEYS.search(where):
            out.append(where)
        elif op == "HeadObject" and where.startswith(f"/{bucket}/{prefix}/"):
            name = where.rsplit("/", 1)[-1]
            if not name.startswith(".") and not name[:1].isdigit():  # a node, not a chunk
                out.append(where)
    return out


def most_overlapping(intervals: list[tuple[float, float]]) -> int:
    """The most of ``intervals`` (start, end) overlapping at one moment."""
    events = sorted((t, step) for start, end in intervals for t, step in ((start, 1), (end, -1)))
    most = live = 0
    for _, step in events:
        live += step
        most = max(most, live)
    return most


class OpenMaps:
    """The maps of class ``cls`` whose location starts with ``prefix`` open at each
    moment, the most at once, and how often each location was opened (``monkeypatch``
    wraps the class's ``__init__`` and ``close`` for the test)."""

    def __init__(self, monkeypatch: Any, cls: type, prefix: str) -> None:
        self.open: set[int] = set()
        self.most = 0
        self.opened: Counter[str] = Counter()
        init, close = cls.__init__, cls.close
        tracker = self

        def tracked_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            where = self.location().path
            if where.startswith(prefix):
                tracker.open.add(id(self))
                tracker.opened[where] += 1
                tracker.most = max(tracker.most, len(tracker.open))

        def tracked_close(self: Any) -> None:
            tracker.open.discard(id(self))
            return close(self)

        monkeypatch.setattr(cls, "__init__", tracked_init)
        monkeypatch.setattr(cls, "close", tracked_close)
