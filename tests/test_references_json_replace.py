"""A JSON reference set replaces what is at ``out`` only once it is whole: a write that
fails (a full disk, a file-size limit, a kill) leaves the earlier set as it was and no
temporary file beside it; a remote ``out`` is one upload. Before, ``fsspec.open(out,
"w")`` truncated the earlier set first and a failure left half a document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fsspec
import pytest
import xarray as xr

import nczarr

from .refreaders import make_nc

OLD = b'{"version": 1, "refs": {".zgroup": "{\\"zarr_format\\": 2}"}}'


def _earlier_set(tmp_path: Path) -> Path:
    out = tmp_path / "refs.json"
    out.write_bytes(OLD)
    os.chmod(out, 0o640)
    return out


def test_a_failed_write_leaves_the_earlier_set(tmp_path, monkeypatch):
    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    out = _earlier_set(tmp_path)

    def full_disk(fd):
        raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="injected"):
        nczarr.write_references(src, str(out))
    assert out.read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.nc", "refs.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_file_size_limit_leaves_the_earlier_set(tmp_path):
    """The kernel refuses the write past the limit (EFBIG): a real failure mid-write."""
    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    out = _earlier_set(tmp_path)
    code = textwrap.dedent(
        f"""
        import resource, signal, nczarr
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))
        try:
            nczarr.write_references({str(src)!r}, {str(out)!r})
        except OSError as exc:
            print("refused", exc.errno)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "refused 27" in done.stdout, (done.stdout, done.stderr)  # EFBIG
    assert out.read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.nc", "refs.json"]


def test_a_whole_set_replaces_the_earlier_one_keeping_its_mode(tmp_path):
    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    out = _earlier_set(tmp_path)
    nczarr.write_references(src, str(out))
    assert (os.stat(out).st_mode & 0o777) == 0o640 or sys.platform == "win32"
    refs = json.loads(out.read_text())
    assert refs["version"] == 1 and refs["refs"] == nczarr.references(src)["refs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.nc", "refs.json"]
    with (
        xr.open_dataset(src) as a,
        xr.open_dataset(
            "reference://",
            engine="zarr",
            backend_kwargs={
                "consolidated": False,
                "storage_options": {"fo": str(out)},
            },
        ) as b,
    ):
        xr.testing.assert_equal(a.load(), b.load())


def test_a_symlinked_set_is_replaced_through_the_link(tmp_path):
    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    real = _earlier_set(tmp_path)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    nczarr.write_references(src, str(link))
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text())["refs"] == nczarr.references(src)["refs"]


def test_a_missing_parent_directory_is_made(tmp_path):
    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    out = tmp_path / "new" / "sub" / "refs.json"
    nczarr.write_references(src, str(out))
    assert json.loads(out.read_text())["refs"] == nczarr.references(src)["refs"]
    assert os.listdir(out.parent) == ["refs.json"]


def test_compression_is_applied_as_fsspec_open_does(tmp_path):
    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    out = tmp_path / "refs.json.gz"
    nczarr.write_references(src, str(out), target_options={"compression": "infer"})
    with fsspec.open(str(out), "rt", compression="gzip") as f:
        assert json.load(f)["refs"] == nczarr.references(src)["refs"]


def test_a_writable_file_in_a_read_only_directory_is_rewritten(tmp_path, monkeypatch):
    """Where no file can be made beside it (the directory is not writable), the file
    is rewritten in place, as before."""
    from nczarr.conversion import outputfile

    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    out = _earlier_set(tmp_path)

    def no_new_file(folder):
        raise PermissionError(13, "Permission denied (injected)", folder)

    monkeypatch.setattr(outputfile, "_new_beside", no_new_file)
    nczarr.write_references(src, str(out))
    assert json.loads(out.read_text())["refs"] == nczarr.references(src)["refs"]
    with pytest.raises(PermissionError):
        nczarr.write_references(src, str(tmp_path / "absent.json"))


def test_a_new_file_gets_the_umask_mode(tmp_path):
    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    out = tmp_path / "new.json"
    old = os.umask(0o027)
    try:
        nczarr.write_references(src, str(out))
    finally:
        os.umask(old)
    assert (os.stat(out).st_mode & 0o777) == 0o640 or sys.platform == "win32"


def test_a_remote_set_is_one_upload(tmp_path, s3_endpoint, s3_bucket, s3_client, monkeypatch):
    import s3fs

    src = make_nc(tmp_path / "a.nc", "NETCDF4")
    url = f"s3://{s3_bucket}/refs.json"
    s3_client.put_object(Bucket=s3_bucket, Key="refs.json", Body=OLD)
    options = {"client_kwargs": {"endpoint_url": s3_endpoint}, "anon": False}
    real = s3fs.S3FileSystem.pipe_file
    uploads: list[tuple[str, int]] = []

    def failing(self, path, value, **kwargs):
        raise OSError(5, "upload failed (injected)")

    monkeypatch.setattr(s3fs.S3FileSystem, "pipe_file", failing)
    with pytest.raises(OSError, match="injected"):
        nczarr.write_references(src, url, target_options=options)
    assert s3_client.get_object(Bucket=s3_bucket, Key="refs.json")["Body"].read() == OLD

    def counted(self, path, value, **kwargs):
        uploads.append((path, len(value)))
        return real(self, path, value, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "pipe_file", counted)
    nczarr.write_references(src, url, target_options=options)
    assert [p for p, _ in uploads] == [f"{s3_bucket}/refs.json"]  # the whole set at once
    with fsspec.open(url, "rb", **options) as f:
        assert json.load(f)["refs"] == nczarr.references(src)["refs"]
    listed = s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["refs.json"]
