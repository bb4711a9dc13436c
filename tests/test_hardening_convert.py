"""Issue 8, conversion side: the source is never touched, resume only trusts its own
work, credentials never printed, malformed metadata and missing backends are one-line
errors, lenient fill values are announced.

The overlap and resume tests run the real ``nczarr`` command in a subprocess and
compare every byte of the source directory (and its siblings) before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.conversion.journal import JOURNAL_KEY
from nczarr.conversion.overlap import Location, overlap
from nczarr.errors import (
    InvalidModeError,
    InvalidURLError,
    MetadataError,
    MissingDependencyError,
    NCZarrError,
    NCZarrWarning,
    StorageError,
    TargetExistsError,
)
from nczarr.maps.file import TEMP_PREFIX, FileMap
from nczarr.maps.memory import MemoryMap
from nczarr.maps.url import parse_url

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- helpers
def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the real ``nczarr`` command (this checkout) in a subprocess."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "nczarr.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` (links not followed), with its bytes."""
    out: dict[str, bytes] = {}
    for directory, dirs, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            if not path.is_symlink():
                out[str(path.relative_to(root))] = path.read_bytes()
        dirs.sort()
    return out


def tree(root: Path) -> dict[str, bytes]:
    """What nczarr's FileMap sees (temporaries excluded)."""
    with FileMap(root, mode="r") as m:
        return {k: m[k] for k in m}


def write_store(path: Path, offset: int, *, records: int = 6, note: str = "same") -> Path:
    """An NCZarr store by libnetcdf: uncompressed int32 chunks, so two stores with other
    values (``offset``) have chunks of the same size and identical metadata."""
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("t", records)
        ds.createDimension("x", 4)
        v = ds.createVariable("v", "i4", ("t", "x"), chunksizes=(1, 2))
        v[:] = np.arange(records * 4).reshape(records, 4) + offset
        v.note = note
        g = ds.createGroup("g")
        w = g.createVariable("w", "i4", ("x",), chunksizes=(1,))
        w[:] = np.arange(4) * 3 + offset
    return path


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("stores")
    a = write_store(base / "a.file", 0)
    b = write_store(base / "b.file", 1000)
    c = write_store(base / "c.file", 7, note="another dataset")
    out = {"a": a, "b": b, "c": c}
    for name in ("a", "b"):
        dst = base / f"{name}.zarr"
        nczarr.convert(str(out[name]), str(dst), mode="zarr")
        out[f"{name}.zarr"] = dst
    return out


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


@pytest.fixture
def data_dir(tmp_path, stores) -> Path:
    """``tmp/data`` holding a source store, a zip of it and an unrelated sibling file."""
    data = tmp_path / "data"
    data.mkdir()
    _copy(stores["a"], data / "src.file")
    nczarr.convert(str(data / "src.file"), str(data / "src.zip"), mode="nczarr")
    (data / "sibling.txt").write_bytes(b"precious sibling\n")
    (data / "sub").mkdir()
    (data / "sub" / "deep.txt").write_bytes(b"deeper\n")
    return data


def assert_refused(proc: subprocess.CompletedProcess, word: str = "overlap") -> None:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nczarr: error: "), proc.stderr
    assert word in lines[0]
    assert "Traceback" not in proc.stderr


# ====================================================================== item 1: overlap
@pytest.mark.parametrize("flag", ["--overwrite", "--resume", None])
def test_cli_refuses_target_that_is_a_symlink_to_the_source_parent(tmp_path, data_dir, flag):
    (tmp_path / "alias").symlink_to(data_dir)
    before = snapshot(data_dir)
    args = ["convert", "data/src.file", "alias", *([flag] if flag else [])]
    assert_refused(cli(*args, cwd=tmp_path))
    assert snapshot(data_dir) == before


@pytest.mark.parametrize(
    "target",
    [
        "data/src.file/..",  # the parent, spelled with '..'
        "data/sub/../src.file",  # the source itself
        "./data/./src.file",
        "data/src.file/v/../inner",  # inside the source
        "srclink/inner",  # inside the source through a symlink
        "srclink",  # the source through a symlink
        "uplink/..",  # '..' after a symlink: lexically the parent of data
    ],
)
def test_cli_refuses_dotdot_and_symlink_spellings(tmp_path, data_dir, target):
    (tmp_path / "srclink").symlink_to(data_dir / "src.file")
    (tmp_path / "uplink").symlink_to(data_dir / "sub")
    before = snapshot(data_dir)
    assert_refused(cli("convert", "data/src.file", target, "--overwrite", cwd=tmp_path))
    assert snapshot(data_dir) == before
    assert not (data_dir / "src.file" / "inner").exists()


def test_cli_refuses_source_inside_target_through_alias(tmp_path, data_dir):
    (tmp_path / "alias").symlink_to(data_dir)
    before = snapshot(data_dir)
    assert_refused(cli("convert", "alias/src.file", "data", "--overwrite", cwd=tmp_path))
    assert_refused(cli("convert", "alias/src.zip", "data", "--overwrite", cwd=tmp_path))
    assert snapshot(data_dir) == before


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "dotdot"])
def test_cli_refuses_zip_alias(tmp_path, data_dir, kind):
    alias = tmp_path / "alias.zip"
    if kind == "symlink":
        alias.symlink_to(data_dir / "src.zip")
        target = "alias.zip"
    elif kind == "hardlink":
        os.link(data_dir / "src.zip", alias)
        target = "alias.zip"
    else:
        target = "data/sub/../src.zip"
    before = snapshot(data_dir)
    for mode in ("zarr", "nczarr"):
        args = ("convert", "data/src.zip", target, "--overwrite", "--mode", mode)
        assert_refused(cli(*args, cwd=tmp_path))
        args = ("convert", "data/src.file", f"data/src.zip/x{mode}", "--overwrite")
        assert cli(*args, cwd=tmp_path).returncode != 0
    assert snapshot(data_dir) == before


def test_bind_mount_alias_refused(tmp_path, data_dir):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["mount", "--bind", str(data_dir), str(mnt)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {proc.stderr.decode().strip() or proc.returncode}")
    try:
        before = snapshot(data_dir)
        assert_refused(cli("convert", "data/src.file", "mnt", "--overwrite", cwd=tmp_path))
        assert_refused(cli("convert", "mnt/src.file", "data", "--overwrite", cwd=tmp_path))
        assert snapshot(data_dir) == before
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_siblings_with_a_common_name_prefix_are_not_an_overlap(tmp_path, data_dir):
    proc = cli("convert", "data/src.file", "data/src.file2", "--mode", "zarr", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (data_dir / "src.file2" / ".zgroup").exists()


def test_library_refuses_open_maps_that_alias(tmp_path, data_dir):
    (tmp_path / "alias").symlink_to(data_dir)
    before = snapshot(data_dir)
    with FileMap(data_dir / "src.file", mode="r") as src:
        dst = FileMap(tmp_path / "alias", mode="a")
        with pytest.raises(InvalidModeError, match="overlap"):
            nczarr.convert(src, dst, overwrite=True)
    memory = MemoryMap()
    with pytest.raises(InvalidModeError, match="overlap"):
        nczarr.convert(memory, memory, overwrite=True)
    assert snapshot(data_dir) == before


def test_s3_overlap_by_bucket_prefix_and_endpoint(s3_endpoint, s3_bucket, s3_client, stores):
    src = f"{s3_endpoint}/{s3_bucket}/ds#mode=nczarr,s3"
    nczarr.convert(str(stores["a"]), src)
    before = {
        o["Key"]: s3_client.get_object(Bucket=s3_bucket, Key=o["Key"])["Body"].read()
        for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    }
    spelled = s3_endpoint.replace("127.0.0.1", "localhost")
    for target in (
        f"{spelled}/{s3_bucket}/ds#mode=zarr,s3",  # same store, other host name
        f"{s3_endpoint}/{s3_bucket}/ds/inner#mode=zarr,s3",  # inside the source
        f"{s3_endpoint}/{s3_bucket}#mode=zarr,s3",  # the bucket root holds the source
    ):
        with pytest.raises(InvalidModeError, match="overlap"):
            nczarr.convert(src, target, overwrite=True)
    after = {
        o["Key"]: s3_client.get_object(Bucket=s3_bucket, Key=o["Key"])["Body"].read()
        for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    }
    assert after == before
    # a sibling prefix that merely starts with the same letters is another store
    report = nczarr.convert(src, f"{s3_endpoint}/{s3_bucket}/ds2#mode=zarr,s3")
    assert report.chunks_copied > 0


def test_overlap_of_locations():
    assert overlap(Location("s3", "a/b", "h:80", "bk"), Location("s3", "a", "h:80", "bk"))
    assert not overlap(Location("s3", "a/b", "h:80", "bk"), Location("s3", "a/bc", "h:80", "bk"))
    assert not overlap(Location("s3", "a", "h:80", "bk"), Location("s3", "a", "h:80", "other"))
    assert not overlap(Location("s3", "a", "", "bk"), Location("s3", "a", "h:80", "bk"))
    assert overlap(Location("s3", "", "", "bk"), Location("s3", "x/y", "", "bk"))
    assert overlap(Location("memory", "x"), Location("memory", "x/y"))


def test_migrate_keeps_objects_of_arrays_it_cannot_translate(tmp_path):
    import zipfile

    with zipfile.ZipFile(ROOT / "tests" / "data" / "ref_oldformat_v1.zip") as zf:
        zf.extractall(tmp_path)
    store = tmp_path / "oldformat.file"
    zarray = store / "g1" / "pos" / ".zarray"
    zarray.write_text(zarray.read_text().replace('"<i4"', '"<c8"'))
    before = snapshot(store / "g1" / "pos")
    chunks = {k: v for k, v in snapshot(store).items() if not Path(k).name.startswith(".")}
    everything = snapshot(store)
    refused = cli("migrate", str(store), cwd=tmp_path)  # new metadata would hide it
    assert refused.returncode == 1, refused.stderr
    assert "cannot represent /g1/pos" in refused.stderr and "--exclude" in refused.stderr
    assert snapshot(store) == everything  # refused before anything was written
    proc = cli("migrate", str(store), "--exclude", "/g1/pos", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "skipped array '/g1/pos'" in proc.stderr
    assert snapshot(store / "g1" / "pos") == before  # its metadata and chunks stay
    after = {k: v for k, v in snapshot(store).items() if not Path(k).name.startswith(".")}
    assert after == chunks  # migrate never touches a chunk


# ====================================================================== item 3: resume
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import nczarr
    from nczarr.maps.file import FileMap

    src, dst, phase, n, flag = sys.argv[1:6]
    n = int(n)
    count = [0]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    class Dying(FileMap):
        def _remove(self, key):
            count[0] += 1
            if phase == "root" and count[0] >= n:
                die()
            super()._remove(key)

        def clear(self):
            if phase == "clear":  # a clear killed after n objects are gone
                for i, key in enumerate(sorted(self)):
                    if i >= n:
                        die()
                    self._remove(key)
            super().clear()

    def progress(done, total):
        if phase == "copy" and done >= n:
            die()

    kwargs = {"overwrite": flag == "overwrite", "resume": flag == "resume"}
    nczarr.convert(src, Dying(dst, mode="a"), mode="zarr", workers=1, progress=progress, **kwargs)
    print("finished")
    """
)


def kill_convert(tmp_path: Path, src: Path, dst: Path, phase: str, n: int, flag: str) -> None:
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script), str(src), str(dst), phase, str(n), flag],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


@pytest.mark.parametrize(
    ("phase", "n"),
    [("root", 1), ("root", 2), ("clear", 1), ("clear", 9), ("copy", 3), ("copy", 12)],
)
def test_interrupted_overwrite_then_resume_yields_the_new_bytes(tmp_path, stores, phase, n):
    dst = _copy(stores["a.zarr"], tmp_path / "dst.zarr")  # an older target, same sizes
    kill_convert(tmp_path, stores["b"], dst, phase, n, "overwrite")
    proc = cli("convert", str(stores["b"]), str(dst), "--mode", "zarr", "--resume", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert tree(dst) == tree(stores["b.zarr"])
    assert not (dst / JOURNAL_KEY).exists()


def test_resume_onto_an_older_target_with_same_size_chunks_recopies(tmp_path, stores):
    dst = _copy(stores["a.zarr"], tmp_path / "dst.zarr")
    assert {k: len(v) for k, v in tree(dst).items()} == {
        k: len(v) for k, v in tree(stores["b.zarr"]).items()
    }
    report = nczarr.convert(str(stores["b"]), str(dst), mode="zarr", resume=True)
    assert tree(dst) == tree(stores["b.zarr"])
    assert report.chunks_copied == 16  # every chunk differs by value, none by size
    again = nczarr.convert(str(stores["b"]), str(dst), mode="zarr", resume=True)
    assert again.chunks_copied == 0 and tree(dst) == tree(stores["b.zarr"])


def test_resume_onto_a_foreign_interrupted_target_refuses(tmp_path, stores):
    dst = tmp_path / "dst.zarr"
    kill_convert(tmp_path, stores["c"], dst, "copy", 5, "none")
    assert (dst / JOURNAL_KEY).exists()
    before = snapshot(dst)
    proc = cli("convert", str(stores["b"]), str(dst), "--mode", "zarr", "--resume", cwd=tmp_path)
    assert_refused(proc, "cannot resume")
    assert "c.file" in proc.stderr and "--overwrite" in proc.stderr
    assert snapshot(dst) == before
    with pytest.raises(TargetExistsError, match="another plan"):
        nczarr.convert(str(stores["c"]), str(dst), mode="nczarr", resume=True)
    assert snapshot(dst) == before
    # the same convert resumes it
    nczarr.convert(str(stores["c"]), str(dst), mode="zarr", resume=True)
    fresh = tmp_path / "fresh.zarr"
    nczarr.convert(str(stores["c"]), str(fresh), mode="zarr")
    assert tree(dst) == tree(fresh)


def test_resume_onto_another_dataset_without_journal_refuses(tmp_path, stores):
    dst = tmp_path / "dst.zarr"
    nczarr.convert(str(stores["c"]), str(dst), mode="zarr")
    before = snapshot(dst)
    with pytest.raises(TargetExistsError, match="differs from what this convert writes"):
        nczarr.convert(str(stores["b"]), str(dst), mode="zarr", resume=True)
    (dst / "junk").write_bytes(b"x")
    before = snapshot(dst)
    with pytest.raises(TargetExistsError, match="'junk'"):
        nczarr.convert(str(stores["b"]), str(dst), mode="zarr", resume=True)
    assert snapshot(dst) == before


def test_resume_cleans_temporaries_of_a_killed_run(tmp_path, stores):
    dst = tmp_path / "dst.zarr"
    kill_convert(tmp_path, stores["b"], dst, "copy", 4, "none")
    (dst / "v").mkdir(exist_ok=True)
    (dst / "v" / f"{TEMP_PREFIX}a1b2c3").write_bytes(b"half a write")
    (dst / f"{TEMP_PREFIX}zz").write_bytes(b"")
    nczarr.convert(str(stores["b"]), str(dst), mode="zarr", resume=True)
    leftovers = [p for p in dst.rglob("*") if p.name.startswith(TEMP_PREFIX)]
    assert leftovers == []
    assert tree(dst) == tree(stores["b.zarr"])


def test_finished_convert_leaves_no_journal(tmp_path, stores):
    dst = tmp_path / "out.zarr"
    nczarr.convert(str(stores["a"]), str(dst), mode="zarr")
    assert JOURNAL_KEY not in tree(dst)
    import zarr

    assert zarr.open_group(str(dst), mode="r")["v"][:].tolist()[0] == [0, 1, 2, 3]


# ====================================================================== item 6: credentials
@pytest.mark.parametrize(
    "url",
    [
        "https://user:hunter2#x@host.example/bucket/key#mode=s3",
        "https://user:hunter2?x@host.example/bucket/key#mode=s3",
        "https://user:hunter2/x@host.example/bucket/key#mode=s3",
        "https://user:hunter2@x@host.example:99999/bucket/key#mode=s3",
        "s3://user:hunter2#@bucket/key",
        "simplecache::s3://user:hunter2@bucket/key",
    ],
)
def test_url_passwords_never_printed(tmp_path, url):
    with pytest.raises(InvalidURLError) as info:
        parse_url(url)
    assert "hunter2" not in str(info.value)
    proc = cli("info", url, cwd=tmp_path)
    assert proc.returncode == 1 and "hunter2" not in proc.stderr + proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1


def test_endpoint_credentials_never_in_s3_errors():
    from nczarr.maps.s3 import S3Map

    with pytest.raises(StorageError) as info:
        S3Map(
            "s3://bucket-x/k",
            "r",
            endpoint_url="http://ak:s3cr3t%2Fpw@127.0.0.1:9",
            config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 2},
            retries=1,
        )
    assert "s3cr3t" not in str(info.value)
    assert "127.0.0.1:9" in str(info.value)


# ====================================================================== item 7: JSON
V3_ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [4],
    "data_type": "int8",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "codecs": [{"name": "bytes"}],
    "fill_value": 0,
}


def _v3(**changes) -> dict[str, bytes]:
    doc = {**V3_ARRAY, **changes}
    return {
        "zarr.json": b'{"zarr_format": 3, "node_type": "group"}',
        "a/zarr.json": json.dumps(doc).encode(),
    }


def _zattrs(text: str) -> dict[str, bytes]:
    return {".zgroup": b'{"zarr_format": 2}', ".zattrs": text.encode()}


MALFORMED = {
    "huge-integer": (_zattrs('{"a": ' + "7" * 5000 + "}"), "'.zattrs'", "digits"),
    "nested-400": (_zattrs('{"a": ' + "[" * 400 + "]" * 400 + "}"), "'.zattrs'", "nested"),
    "nested-989": (_zattrs('{"a": ' + "[" * 989 + "]" * 989 + "}"), "'.zattrs'", "nested"),
    "nested-objects": (_zattrs('{"a": ' + '{"b":' * 600 + "1" + "}" * 601), "'.zattrs'", "nested"),
    "v3-root-array-grid": (
        {
            "zarr.json": json.dumps(
                {**V3_ARRAY, "chunk_grid": {"name": "regular", "configuration": 2}}
            ).encode()
        },
        "'zarr.json'",
        "chunk_grid.configuration",
    ),
}


def _directory_store(store: Path, objects: dict[str, bytes]) -> Path:
    """``objects`` written as files of a directory store at ``store``."""
    for name, value in objects.items():
        (store / name).parent.mkdir(parents=True, exist_ok=True)
        (store / name).write_bytes(value)
    return store


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_json_is_one_metadata_error_naming_the_key(case, tmp_path):
    objects, key, what = MALFORMED[case]
    with pytest.raises(MetadataError) as info:
        nczarr.read(MemoryMap(dict(objects)))
    assert key in str(info.value) and what in str(info.value)
    store = _directory_store(tmp_path / "s", objects)
    for command in (("info", str(store)), ("dump", "-h", str(store))):
        proc = cli(*command, cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and key in lines[0], proc.stderr
    proc = cli("convert", str(store), str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("objects", "what"),
    [
        (_v3(chunk_grid={"name": "regular", "configuration": [2]}), "chunk_grid.configuration"),
        (
            _v3(chunk_key_encoding={"name": "default", "configuration": "x"}),
            "chunk_key_encoding.configuration",
        ),
    ],
)
def test_a_malformed_array_document_skips_that_array_naming_the_key(objects, what, tmp_path):
    """One odd array never fails the whole store (README): it is skipped with a warning
    naming its key and what is wrong; convert refuses it unless excluded."""
    with pytest.warns(NCZarrWarning, match=rf"skipped array '/a': 'a/zarr.json'.*{what}"):
        ds = nczarr.read(MemoryMap(dict(objects)))
    assert ds.skipped == ("/a",)
    store = _directory_store(tmp_path / "s", objects)
    for command in (("info", str(store)), ("dump", "-h", str(store))):
        proc = cli(*command, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        printed = proc.stdout + proc.stderr
        assert "skipped array '/a'" in printed and what in printed
    proc = cli("convert", str(store), str(tmp_path / "out"), cwd=tmp_path)
    assert_refused(proc, "skipped array '/a'")


# ====================================================================== item 12: fill values
def _zarr_int8(path: Path, fill) -> Path:
    (path / "v").mkdir(parents=True)
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    (path / "v" / ".zarray").write_text(
        json.dumps(
            {
                "zarr_format": 2,
                "shape": [4],
                "chunks": [2],
                "dtype": "|i1",
                "compressor": None,
                "fill_value": fill,
                "order": "C",
                "filters": None,
            }
        )
    )
    (path / "v" / ".zattrs").write_text('{"_ARRAY_DIMENSIONS": ["x"]}')
    return path


@pytest.mark.parametrize("fill", [1.5, -1.5, True, False, 2.75])
def test_wrong_type_fill_value_reads_as_netcdf_c_and_warns(tmp_path, fill):
    store = _zarr_int8(tmp_path / "s.zarr", fill)
    with netCDF4.Dataset(f"file://{store}#mode=zarr,file") as ds:
        expected = int(ds["v"][:].data[0])  # no chunk written: netcdf-c's fill value
    with pytest.warns(NCZarrWarning, match=r"'v/\.zarray': fill_value .*netcdf-c"):
        ds = nczarr.read(str(store))
    assert ds.root.variables["v"].fill_value == expected
    assert any("'v/.zarray': fill_value" in w and "netcdf-c" in w for w in ds.warnings)
    proc = cli("convert", str(store), str(tmp_path / "out.zarr"), "--mode", "zarr", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nczarr: warning: 'v/.zarray': fill_value" in proc.stderr
    written = json.loads((tmp_path / "out.zarr" / "v" / ".zarray").read_text())
    assert written["fill_value"] == expected


def test_exact_fill_value_gives_no_warning(tmp_path):
    ds = nczarr.read(str(_zarr_int8(tmp_path / "s.zarr", 2.0)))
    assert ds.root.variables["v"].fill_value == 2
    assert not ds.warnings


def _unlimited(path: Path, size: int) -> Path:
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("t", None)
        v = ds.createVariable("v", "i4", ("t",), chunksizes=(1,))
        v[:] = np.arange(5)
    attrs = json.loads((path / ".zattrs").read_text())
    attrs["_nczarr_group"]["dimensions"]["t"]["size"] = size
    (path / ".zattrs").write_text(json.dumps(attrs))
    return path


def test_unlimited_dimension_shorter_than_an_array_is_refused_like_netcdf_c(tmp_path):
    store = _unlimited(tmp_path / "u.file", 2)
    with pytest.raises(OSError, match="Invalid dimension size"):
        netCDF4.Dataset(f"file://{store}#mode=nczarr,file")
    # one odd array never fails the whole store: that array is skipped, naming why
    skipped = "skipped array '/v': 'v/.zattrs': unlimited dimension '/t' has length 2, shorter"
    with pytest.warns(NCZarrWarning, match=skipped):
        ds = nczarr.read(str(store))
    assert "v" not in ds.root.variables
    proc = cli("convert", str(store), str(tmp_path / "out"), cwd=tmp_path)
    assert_refused(proc, "'v/.zattrs': unlimited dimension '/t'")


def test_unlimited_dimension_longer_than_an_array_warns(tmp_path):
    store = _unlimited(tmp_path / "u.file", 9)
    with pytest.raises(OSError, match="Invalid dimension size"):
        netCDF4.Dataset(f"file://{store}#mode=nczarr,file")
    with pytest.warns(NCZarrWarning, match="unlimited dimension '/t' has length 9"):
        ds = nczarr.read(str(store))
    assert ds.root.dimensions["t"].size == 9
    assert any("unlimited dimension '/t' has length 9" in w for w in ds.warnings)


# ====================================================================== item 13: backends
def test_gs_without_gcsfs_names_the_package(tmp_path):
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only where gcsfs happens to be installed
        pytest.skip("gcsfs is installed: nothing is missing")
    with pytest.raises(MissingDependencyError, match="gcsfs") as info:
        nczarr.read("gs://some-bucket/ds.zarr")
    assert isinstance(info.value, ImportError) and isinstance(info.value, NCZarrError)
    proc = cli("info", "gs://some-bucket/ds.zarr", cwd=tmp_path)
    assert_refused(proc, "gcsfs")
    assert "gs://some-bucket/ds.zarr" in proc.stderr


def test_ftp_error_names_the_url(tmp_path):
    proc = cli("info", "ftp://127.0.0.1:1/data/ds.zarr", cwd=tmp_path)
    assert_refused(proc, "ftp://127.0.0.1:1/data/ds.zarr")
    with pytest.raises(StorageError, match=r"ftp://127\.0\.0\.1:1/data"):
        nczarr.read("ftp://127.0.0.1:1/data/ds.zarr")


def test_chained_zip_source_inside_the_target_is_refused(tmp_path, data_dir):
    (tmp_path / "alias").symlink_to(data_dir)
    before = snapshot(data_dir)
    source = f"zip::file://{data_dir / 'src.zip'}"
    with pytest.raises(InvalidModeError, match="overlap"):
        nczarr.convert(source, str(tmp_path / "alias"), overwrite=True)
    assert snapshot(data_dir) == before
    report = nczarr.convert(source, str(tmp_path / "out.zarr"), mode="zarr")
    assert report.chunks_copied > 0
