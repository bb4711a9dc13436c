"""Readers of saved translations in a process without nczarr: fsspec reference sets
(JSON or Parquet) through xarray or zarr 3's ``FsspecStore``, and Icechunk
repositories through zarr and xarray. One reader process serves every read of a test
process, and several jobs share one read (imports cost seconds on a loaded machine)."""

from __future__ import annotations

import atexit
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np

# Each job: {"kind": "refs"|"icechunk", "how": "zarr"|"xarray", "groups": [...], ...}.
# Prints, per job, {"path": [values as floats, NaN as None]} of its numeric arrays.
READER = textwrap.dedent(
    """
    import json, sys, traceback
    import numpy as np
    def floats(a):
        return [None if v != v else v for v in np.asarray(a, dtype=float).ravel().tolist()]
    def walk_zarr(group, g, out):
        import zarr
        for name, arr in group.arrays():
            if arr.dtype.kind in "iuf":
                out[(g + "/" + name).strip("/")] = floats(arr[...])
    def walk_xarray(ds, g, out):
        for name, var in ds.variables.items():
            if var.dtype.kind in "iuf":
                out[(g + "/" + name).strip("/")] = floats(var.values)
    def refs_job(job):
        import fsspec, xarray as xr, zarr
        out = {}
        options = {"fo": job["fo"], "remote_protocol": job.get("remote_protocol")}
        if job.get("remote_options"):
            options["remote_options"] = {**job["remote_options"], "asynchronous": True}
        for g in job["groups"]:
            if job["how"] == "xarray":
                ds = xr.open_dataset("reference://" + g, engine="zarr",
                    backend_kwargs={"consolidated": False, "storage_options": options})
                walk_xarray(ds, g, out)
            else:
                fs = fsspec.filesystem("reference", asynchronous=True, **options)
                store = zarr.storage.FsspecStore(fs, read_only=True, path=g)
                walk_zarr(zarr.open_group(store=store, mode="r"), g, out)
        return out
    def icechunk_job(job):
        import icechunk, xarray as xr, zarr
        out = {}
        storage = icechunk.local_filesystem_storage(job["repo"])
        if job.get("s3"):
            s3 = job["s3"]
            storage = icechunk.s3_storage(bucket=s3["bucket"], prefix=s3["prefix"],
                endpoint_url=s3["endpoint_url"], allow_http=True, region="us-east-1",
                access_key_id="testing", secret_access_key="testing", force_path_style=True)
        credentials = None
        if job.get("containers"):
            credentials = icechunk.containers_credentials(
                {prefix: (icechunk.s3_credentials(access_key_id="testing",
                    secret_access_key="testing") if prefix.startswith("s3") else
                    getattr(icechunk.credentials, "LocalFileSystemAccess", None))
                 for prefix in job["containers"]})
        repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=credentials)
        session = repo.readonly_session(branch="main")
        for g in job["groups"]:
            if job["how"] == "xarray":
                ds = xr.open_zarr(session.store, group=g or None, consolidated=False,
                                  zarr_format=3)
                walk_xarray(ds, g, out)
            else:
                walk_zarr(zarr.open_group(session.store, path=g, mode="r"), g, out)
        return out
    def forget_filesystems():
        # every request builds its filesystems anew, as a process of its own did
        if "fsspec" in sys.modules:
            from fsspec.spec import AbstractFileSystem
            todo = [AbstractFileSystem]
            while todo:
                cls = todo.pop()
                todo.extend(cls.__subclasses__())
                cls.clear_instance_cache()
    # one request a line: {"jobs": [...], "out": path}; the results (or the error) go
    # to the file, then "DONE" to stdout (icechunk logs to stdout too)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            forget_filesystems()
            jobs = request["jobs"]
            results = [refs_job(j) if j["kind"] == "refs" else icechunk_job(j) for j in jobs]
            assert "nczarr" not in sys.modules
            reply = {"results": results}
        except Exception:
            reply = {"error": traceback.format_exc()}
        with open(request["out"], "w") as f:
            json.dump(reply, f)
        print("DONE", flush=True)
    """
)


class _Reader:
    """The reader process of this test process, started by the first :func:`read_saved`
    and serving every later one (its imports cost ~1 CPU-s a process, ~30 reads a run)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="nczarr-reader-"))
        self.stderr = self.dir / "stderr"
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-X", "faulthandler", "-c", READER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        self.count = 0

    def read(self, jobs: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str]:
        """The reply to ``jobs``, or None and its exit status and streams if it died."""
        self.count += 1
        out = self.dir / f"reply-{self.count}.json"
        printed: list[str] = []
        try:
            self.proc.stdin.write(json.dumps({"jobs": jobs, "out": str(out)}) + "\n")
            self.proc.stdin.flush()
            for line in self.proc.stdout:
                if line.rstrip("\n") == "DONE":
                    reply = json.loads(out.read_text())
                    out.unlink()
                    return reply, ""
                printed.append(line)
        except BrokenPipeError:
            pass
        status = self.proc.wait()
        return None, (
            f"reader exited with {status}\nstdout: {''.join(printed)[-2000:]}\n"
            f"stderr: {self.stderr.read_text(errors='replace')[-4000:]}"
        )

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_READERS: list[_Reader] = []
_LOCK = threading.Lock()


def _close_readers() -> None:
    while _READERS:
        _READERS.pop().close()


atexit.register(_close_readers)


def read_saved(*jobs: dict[str, Any]) -> list[dict[str, list]]:
    """Values of the numeric arrays each job opens, read in a process without nczarr.

    One reader process serves every call of a test process (each call builds its
    filesystems anew). A reader killed by a signal (a third-party crash: the newest CI
    run once saw this process die with nothing but icechunk's log line on stderr, not
    reproduced in 14 runs since) is started again and given the jobs once more, and
    their values must then come out; a job's error, or a second crash, fails the test
    with the error or the exit status and both streams (``-X faulthandler`` prints a
    crash's stacks)."""
    with _LOCK:
        for _ in range(2):
            if not _READERS:
                _READERS.append(_Reader())
            try:
                reply, died = _READERS[0].read(list(jobs))
            except BaseException:  # interrupted mid-read: its reply would come to the next
                _READERS[0].proc.kill()
                _close_readers()
                raise
            crashed = reply is None and _READERS[0].proc.returncode < 0
            if reply is not None or not crashed:
                break
            _close_readers()  # killed by a signal: a new process for the retry
        if reply is None:
            _close_readers()
        assert reply is not None, died
        if "error" in reply:  # a fresh reader for the next test: no state carried over
            _close_readers()
    assert "error" not in reply, reply.get("error")
    return reply["results"]


def refs_job(
    fo: str | Path,
    how: str,
    groups: tuple[str, ...] = ("",),
    *,
    remote_protocol: str | None = "file",
    remote_options: dict | None = None,
) -> dict[str, Any]:
    """A job reading reference set ``fo``; Parquet sets need ``remote_protocol``."""
    return {
        "kind": "refs",
        "fo": str(fo),
        "how": how,
        "groups": list(groups),
        "remote_protocol": remote_protocol,
        "remote_options": remote_options or {},
    }


def floats(values: Any) -> list:
    return [
        None if v != v else v
        for v in np.ma.filled(np.ma.asarray(values, dtype=float), np.nan).ravel().tolist()
    ]


def netcdf_values(url: str, masked: bool) -> dict[str, list]:
    """netCDF4's values of every numeric variable (masked as NaN when ``masked``)."""
    out: dict[str, list] = {}
    with netCDF4.Dataset(url) as ds:
        ds.set_auto_mask(masked)

        def walk(group: Any, prefix: str) -> None:
            for name, var in group.variables.items():
                if np.dtype(var.dtype).kind in "iuf":
                    out[(prefix + "/" + name).strip("/")] = floats(var[...])
            for name, sub in group.groups.items():
                walk(sub, prefix + "/" + name)

        walk(ds, "")
    return out


def tree_hash(path: Path) -> str:
    """A digest of every file's name and bytes under ``path`` (or of the file)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        digest.update(str(p.relative_to(path) if p != path else p.name).encode())
        digest.update(p.read_bytes())
    return digest.hexdigest()


def make_nczarr(path: Path, mode: str = "nczarr,file") -> str:
    """A netcdf-c store (numeric variables, a fill value, a group), written by netCDF4."""
    url = f"file://{path}#mode={mode}"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("x", 10)
        ds.createDimension("y", 6)
        v = ds.createVariable("t", "f4", ("x", "y"), chunksizes=(5, 3), zlib=True, shuffle=True)
        v[:] = np.arange(60, dtype="f4").reshape(10, 6)
        v[0, 0] = np.ma.masked
        g = ds.createGroup("g")
        w = g.createVariable("c", "i2", ("x",), chunksizes=(4,))
        w[:] = np.arange(10)
        s = ds.createVariable("s", "i4", ())
        s.assignValue(7)
    return url


def make_nc(path: Path, fmt: str) -> str:
    """A ``.nc`` file (netCDF-4 chunked and deflated, or netCDF-3), written by netCDF4."""
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("x", 10)
        ds.createDimension("y", 6)
        if fmt.startswith("NETCDF4"):
            v = ds.createVariable("t", "f4", ("x", "y"), chunksizes=(5, 3), zlib=True)
        else:
            v = ds.createVariable("t", "f4", ("x", "y"))
        v[:] = np.arange(60, dtype="f4").reshape(10, 6)
        w = ds.createVariable("c", "i2", ("x",))
        w[:] = np.arange(10)
    return str(path)


def xarray_of_references(refs: dict, path: Path) -> Any:
    """xarray's zarr engine on the reference set ``refs``, saved as JSON at ``path``
    (a context manager, as ``xr.open_dataset``)."""
    import xarray as xr

    path.write_text(json.dumps(refs))
    so = {"fo": str(path), "remote_protocol": "file", "skip_instance_cache": True}
    return xr.open_dataset("reference://", engine="zarr", backend_kwargs={"storage_options": so})


def s3_repository(bucket: str, endpoint: str) -> tuple[Any, dict[str, Any]]:
    """An Icechunk repository ``repo`` in (moto's) S3 ``bucket``, its storage and the
    ``storage_options`` a source in that bucket is opened with."""
    import icechunk

    storage = icechunk.s3_storage(
        bucket=bucket,
        prefix="repo",
        endpoint_url=endpoint,
        allow_http=True,
        region="us-east-1",
        access_key_id="testing",
        secret_access_key="testing",
        force_path_style=True,
    )
    return storage, {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}


def s3_repository_job(bucket: str, endpoint: str, container: str) -> dict[str, Any]:
    """A :func:`read_saved` job reading :func:`s3_repository`'s groups ``""`` and ``g``
    with zarr, the virtual chunks' ``container`` authorized."""
    return {
        "kind": "icechunk",
        "repo": "",
        "s3": {"bucket": bucket, "prefix": "repo", "endpoint_url": endpoint},
        "how": "zarr",
        "groups": ["", "g"],
        "containers": [container],
    }
