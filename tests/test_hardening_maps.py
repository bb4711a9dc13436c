"""Maps under hostile input and a faulty machine (issue 8, items 2, 4, 5, 8, 9, 10).

* SIGKILL of a real subprocess during ``ZipMap.close()`` at seeded random moments:
  the old archive stays readable with all its keys (or the new one is complete).
* Eight processes writing one archive, each with its own ZipMap, plus a reader:
  no key is lost, no read fails.
* A full disk (a 2 MiB tmpfs, where this machine lets the test mount one).
* FIFOs named like keys, directories swapped for symlinks after first use,
  corrupt and bomb zip members, lone surrogates and non-UTF-8 file names.

Longer runs: ``NCZARR_STRESS=1`` multiplies the kill count and fuzz examples.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nczarr
from nczarr.errors import (
    InvalidKeyError,
    MetadataError,
    NCZarrError,
    NCZarrWarning,
    StorageError,
    StoragePermissionError,
    UnsupportedError,
)
from nczarr.keys import normalize_key
from nczarr.load import load_metadata
from nczarr.maps import lockfile
from nczarr.maps import zip as zip_module
from nczarr.maps.file import TEMP_PREFIX, FileMap
from nczarr.maps.fsspec import FsspecMap
from nczarr.maps.memory import MemoryMap
from nczarr.maps.zip import ZipMap

from .budget import examples

#: A zip local file header: signature, 5 shorts, 3 longs, name and extra lengths.
LOCAL_HEADER = struct.Struct("<4s5H3L2H")

STRESS = int(os.environ.get("NCZARR_STRESS", "0") or 0)
ROOT = Path(__file__).resolve().parent.parent


def _vector_source(src: Path, *, shape: int, chunks: int, dtype: str) -> FileMap:
    """A pure Zarr v2 store at ``src`` with one 1-D array ``v`` (no chunks yet), open."""
    m = FileMap(src, mode="w")
    m[".zgroup"] = b'{"zarr_format": 2}'
    zarray = {"zarr_format": 2, "shape": [shape], "chunks": [chunks], "dtype": dtype,
              "compressor": None, "fill_value": 0, "filters": None, "order": "C"}  # fmt: skip
    m["v/.zarray"] = json.dumps(zarray).encode()
    m["v/.zattrs"] = b'{"_ARRAY_DIMENSIONS": ["x"]}'
    return m


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _old_items(n: int = 200) -> dict[str, bytes]:
    return {f"old/{i:03d}": (f"old value {i} ".encode() * 50) for i in range(n)}


def _make_archive(path: Path, items: dict[str, bytes], **options) -> None:
    with ZipMap(path, mode="w", **options) as m:
        for key, value in items.items():
            m[key] = value


def _read_all(path: Path) -> dict[str, bytes]:
    with ZipMap(path, mode="r") as m:
        return {k: m[k] for k in m}


def _temp_files(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------- kills
KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from nczarr.maps.zip import ZipMap

    path, delay, how = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    m = ZipMap(path, mode="a")
    for i in range(40):
        m[f"new/{i:03d}"] = bytes([i]) * 300_000
    if how == "rewrite":
        for i in range(0, 200, 20):
            m[f"old/{i:03d}"] = b"overwritten"
        del m["old/199"]
    if delay >= 0:
        threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    start = time.perf_counter()
    m.close()
    print(time.perf_counter() - start, flush=True)
    if delay >= 0:
        time.sleep(5)  # the kill comes; never exit normally
    """
)


def _expected_new(how: str) -> dict[str, bytes]:
    new = _old_items()
    new.update({f"new/{i:03d}": bytes([i]) * 300_000 for i in range(40)})
    if how == "rewrite":
        for i in range(0, 200, 20):
            new[f"old/{i:03d}"] = b"overwritten"
        del new["old/199"]
    return new


@pytest.mark.long  # SIGKILLed or concurrent subprocesses
@pytest.mark.parametrize("how", ["append", "rewrite"])
def test_zip_close_killed_at_random_moments_keeps_a_complete_archive(tmp_path, how):
    """SIGKILL during close(): the archive is the old one or the complete new one."""
    script = tmp_path / "victim.py"
    script.write_text(KILL_SCRIPT)
    path = tmp_path / "a.zip"
    old = _old_items()

    def run(delay: float) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(script), str(path), str(delay), how],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(),
        )

    _make_archive(path, old)
    calibration = run(-1)
    assert calibration.returncode == 0, calibration.stderr
    close_time = float(calibration.stdout.split()[-1])
    rng = random.Random(8)
    kills = 10 * (1 + 4 * STRESS)
    outcomes = {"old": 0, "new": 0}
    for _ in range(kills):
        _make_archive(path, old)
        result = run(rng.uniform(0.0, close_time * 1.3))
        assert result.returncode == -signal.SIGKILL, result.stderr
        content = _read_all(path)  # readable, whatever the moment of the kill
        if content == old:
            outcomes["old"] += 1
        else:
            assert content == _expected_new(how)
            outcomes["new"] += 1
    # Killed writers' staging files are removed by the next writer of the archive.
    ZipMap(path, mode="a").close()
    assert _temp_files(tmp_path) == []
    print(f"{how}: {kills} kills during close(): {outcomes}")
    assert outcomes["old"] > 0, outcomes  # the kills did land inside close()


@pytest.mark.long  # SIGKILLed or concurrent subprocesses
def test_killed_convert_into_zip_leaves_old_or_complete_archive_and_reruns(tmp_path):
    src = tmp_path / "src.file"
    with _vector_source(src, shape=4000, chunks=10, dtype="<i4") as m:
        for i in range(400):
            m[f"v/{i}"] = bytes(range(40))
    target = tmp_path / "out.zip"
    url = f"file://{target}#mode=zarr,zip"
    script = tmp_path / "convert.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, signal, sys, nczarr
            src, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
            def progress(done, total):
                if done >= n:
                    os.kill(os.getpid(), signal.SIGKILL)
            nczarr.convert(src, url, mode="zarr", workers=2, progress=progress)
            """
        )
    )
    for point in (1, 200, 399):
        if target.exists():
            target.unlink()
        result = subprocess.run(
            [sys.executable, str(script), str(src), url, str(point)],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(),
        )
        assert result.returncode == -signal.SIGKILL, result.stderr
        # The target is an empty (just created) archive or a complete one, never broken.
        with ZipMap(target, mode="r") as m:
            keys = set(m)
        assert keys in (
            set(),
            {".zgroup", "v/.zarray", "v/.zattrs", *(f"v/{i}" for i in range(400))},
        )
        nczarr.convert(str(src), url, mode="zarr", overwrite=True)
        with ZipMap(target, mode="r") as m, FileMap(src, mode="r") as s:
            assert all(m[f"v/{i}"] == s[f"v/{i}"] for i in range(400))


# ------------------------------------------------------------------ concurrency
WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    from nczarr.maps.zip import ZipMap
    path, who, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    m = ZipMap(path, mode="a")
    for j in range(n):
        m[f"w{who}/k{j:03d}"] = f"{who}:{j}".encode() * 100
        if j == n // 2:
            m.flush()  # two commits per writer
    m.close()
    print("ok")
    """
)

READER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from nczarr.maps.zip import ZipMap
    path, seconds = sys.argv[1], float(sys.argv[2])
    reads = failures = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with ZipMap(path, mode="r") as m:
                for k in m:
                    who, j = k[1:].split("/k")
                    assert m[k] == f"{int(who)}:{int(j)}".encode() * 100, k
            reads += 1
        except Exception as exc:
            failures += 1
            print(repr(exc), file=sys.stderr)
    print(reads, failures)
    """
)


@pytest.mark.long  # SIGKILLed or concurrent subprocesses
def test_eight_writers_with_their_own_zipmaps_lose_no_key(tmp_path):
    path = tmp_path / "shared.zip"
    ZipMap(path, mode="w").close()
    (tmp_path / "w.py").write_text(WRITER_SCRIPT)
    (tmp_path / "r.py").write_text(READER_SCRIPT)
    writers, per_writer = 8, 60
    reader = subprocess.Popen(
        [sys.executable, str(tmp_path / "r.py"), str(path), "6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    procs = [
        subprocess.Popen(
            [sys.executable, str(tmp_path / "w.py"), str(path), str(w), str(per_writer)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for w in range(writers)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err
    out, err = reader.communicate(timeout=300)
    reads, failures = map(int, out.split())
    assert failures == 0, err
    assert reads > 0
    content = _read_all(path)
    assert len(content) == writers * per_writer
    for w in range(writers):
        for j in range(per_writer):
            assert content[f"w{w}/k{j:03d}"] == f"{w}:{j}".encode() * 100
    with zipfile.ZipFile(path) as zf:
        assert len(zf.namelist()) == len(set(zf.namelist()))  # no duplicate members


def test_two_maps_in_one_process_merge_writes_and_deletes(tmp_path):
    path = tmp_path / "m.zip"
    _make_archive(path, {"keep": b"1", "gone": b"2", "both": b"0"})
    first, second = ZipMap(path, mode="a"), ZipMap(path, mode="a")
    first["a/1"] = b"first"
    first["both"] = b"first"
    second["b/1"] = b"second"
    del second["gone"]
    first.close()
    second["both"] = b"second"  # the last commit wins for the same key
    second.close()
    assert _read_all(path) == {"keep": b"1", "a/1": b"first", "b/1": b"second", "both": b"second"}


def test_a_held_lock_fails_loudly_and_changes_nothing(tmp_path, monkeypatch):
    fcntl = pytest.importorskip("fcntl")  # the OS lock; the O_EXCL fallback: test_portability
    path = tmp_path / "l.zip"
    _make_archive(path, {"a": b"1"})
    monkeypatch.setattr(lockfile, "LOCK_TIMEOUT", 0.2)
    m = ZipMap(path, mode="a")
    m["b"] = b"2"
    with open(tmp_path / ".l.zip.nczarr-lock", "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # another writer committing
        with pytest.raises(StorageError, match="another writer holds"):
            m.flush()
        assert _read_all(path) == {"a": b"1"}
    m.flush()  # the changes were kept: a retry succeeds
    m.close()
    assert _read_all(path) == {"a": b"1", "b": b"2"}


def test_autoflush_spills_to_a_staging_file_not_the_archive(tmp_path, monkeypatch):
    monkeypatch.setattr(zip_module, "AUTOFLUSH_BYTES", 1000)
    path = tmp_path / "s.zip"
    _make_archive(path, {"a": b"1"})
    before = path.read_bytes()
    m = ZipMap(path, mode="a")
    for i in range(20):
        m[f"k/{i}"] = bytes([i]) * 500
    m["a"] = b"overwritten"  # forces a full rewrite of the staging archive
    assert path.read_bytes() == before  # nothing committed yet
    assert m["k/3"] == bytes([3]) * 500 and m["a"] == b"overwritten"
    assert len(_temp_files(tmp_path)) == 1
    m.close()
    assert _read_all(path) == {
        "a": b"overwritten",
        **{f"k/{i}": bytes([i]) * 500 for i in range(20)},
    }
    assert _temp_files(tmp_path) == []


# --------------------------------------------------------------------------- disk full
@pytest.fixture
def small_disk(tmp_path) -> Path:
    """A 2 MiB tmpfs mounted for the test (skipped, with the reason, where the machine
    does not allow mounting)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if not shutil.which("mount") or not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.skip(f"this machine does not allow mounting a tmpfs: {result.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_zip_on_a_full_disk_fails_and_keeps_the_archive(small_disk):
    path = small_disk / "d.zip"
    old = {f"k/{i}": os.urandom(4000) for i in range(200)}  # ~800 KB
    _make_archive(path, old)
    m = ZipMap(path, mode="a")
    m["big/1"] = os.urandom(900_000)  # the copy plus this does not fit in 2 MiB
    with pytest.raises(StorageError, match="No space left"):
        m.flush()
    assert _read_all(path) == old
    assert m["big/1"] and m["k/3"] == old["k/3"]  # the map still holds its writes
    with pytest.raises(StorageError, match="No space left"):
        m.close()
    assert _read_all(path) == old
    assert _temp_files(small_disk) == []  # a failed close holds no disk space
    # A rewrite (overwrite) on the full disk fails the same way.
    m = ZipMap(path, mode="a")
    m["k/0"] = os.urandom(1_200_000)
    with pytest.raises(StorageError, match="No space left"):
        m.close()
    assert _read_all(path) == old


def test_file_map_on_a_full_disk_fails_and_keeps_the_data(small_disk):
    root = small_disk / "d.file"
    m = FileMap(root, mode="w")
    m["g/a"] = b"a" * 1000
    m["g/b"] = b"b" * 500_000
    with pytest.raises(StorageError, match="No space left"):
        m["g/b"] = os.urandom(3_000_000)  # an overwrite that does not fit
    with pytest.raises(StorageError, match="No space left"):
        m["h/c"] = os.urandom(3_000_000)
    assert m["g/b"] == b"b" * 500_000 and m["g/a"] == b"a" * 1000
    assert sorted(m) == ["g/a", "g/b"]
    assert not [p for p in root.rglob("*") if p.name.startswith(TEMP_PREFIX)]


# --------------------------------------------------------------------------- FIFOs
CLI = "import sys; from nczarr.cli import main; sys.exit(main())"


def _in_thread(fn, timeout: float = 20.0):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it blocks."""
    box: dict[str, object] = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked on a FIFO"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_named_like_a_key_is_an_error_naming_it(tmp_path):
    root = tmp_path / "f.file"
    m = FileMap(root, mode="w")
    m["g/.zarray"] = b"{}"
    os.mkfifo(root / ".zgroup")
    os.mkfifo(root / "g" / ".zattrs")
    for call in (
        lambda: m[".zgroup"],
        lambda: m["g/.zattrs"],
        lambda: m.getrange(".zgroup", 0, 4),
        lambda: m.getsize("g/.zattrs"),
        lambda: m.getitems([".zgroup"]),
        lambda: FileMap(tmp_path / "o.file", mode="w").copy_file(m, ".zgroup"),
        lambda: load_metadata(m),
    ):
        with pytest.raises(StorageError, match=r"zgroup|zattrs") as info:
            _in_thread(call)
        assert "FIFO" in str(info.value) and str(root) in str(info.value)
    assert _in_thread(lambda: sorted(m)) == ["g/.zarray"]
    assert _in_thread(lambda: m.search("g")) == [".zarray"]
    assert ".zgroup" not in m


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_nczarr_info_on_a_fifo_does_not_hang(tmp_path):
    root = tmp_path / "f.file"
    root.mkdir()
    os.mkfifo(root / ".zgroup")
    pipe_zip = tmp_path / "p.zip"
    os.mkfifo(pipe_zip)
    for target in (root, pipe_zip):
        result = subprocess.run(
            [sys.executable, "-c", CLI, "info", str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(),
        )
        assert result.returncode == 1, result
        assert "regular file" in result.stderr and "Traceback" not in result.stderr
    with pytest.raises(StorageError, match="not a regular file"):
        _in_thread(lambda: ZipMap(pipe_zip, mode="r"))
    fs_map = FsspecMap(f"file://{root}", mode="r")
    with pytest.raises(StorageError, match="regular file"):
        _in_thread(lambda: fs_map[".zgroup"])


# ------------------------------------------------------------------ swapped directories


def _swap_for_link(directory: Path, target: Path) -> None:
    shutil.rmtree(directory)
    directory.symlink_to(target, target_is_directory=True)


def test_directory_swapped_for_a_symlink_after_use_is_refused(tmp_path, strategy):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a").write_bytes(b"secret")
    (outside / "x").mkdir()
    (outside / "x" / "y").write_bytes(b"deep secret")
    root = tmp_path / "r.file"
    m = FileMap(root, mode="w")
    m["g/a"] = b"mine"
    m["g/x/y"] = b"mine too"
    m["h/x/y"] = b"nested"
    assert m["g/a"] == b"mine" and m["g/x/y"] == b"mine too"  # directories known now
    assert sorted(m.keys_below("g")) == ["g/a", "g/x/y"]
    _swap_for_link(root / "g", outside)
    _swap_for_link(root / "h" / "x", outside / "x")
    for call in (
        lambda: m["g/a"],
        lambda: m["g/x/y"],
        lambda: m["h/x/y"],
        lambda: m.getsize("g/a"),
        lambda: m.getrange("g/x/y", 0, 2),
    ):
        with pytest.raises(StoragePermissionError, match="outside the map's root"):
            call()
    with pytest.raises(StoragePermissionError):
        m["g/new"] = b"x"
    with pytest.raises(StoragePermissionError):
        m["h/x/new"] = b"x"
    with pytest.raises(StoragePermissionError):
        del m["g/a"]
    with pytest.raises(StoragePermissionError):
        list(m.keys_below("g"))
    with pytest.raises(StoragePermissionError):
        m.search("g")
    with pytest.raises(StoragePermissionError):
        m.search("h/x")
    assert "g/a" not in sorted(m) and sorted(m) == []
    assert m.search("") == [] and m.search("h") == []
    assert sorted(p.name for p in outside.iterdir()) == ["a", "x"]
    assert (outside / "a").read_bytes() == b"secret"
    assert (outside / "x" / "y").read_bytes() == b"deep secret"


def test_directory_moved_out_and_linked_back_is_refused(tmp_path, strategy):
    """The same directory (same inode) moved outside the root, a link left in its place."""
    root = tmp_path / "r.file"
    m = FileMap(root, mode="w")
    m["g/v/0"] = b"mine"
    m["g/v/1"] = b"mine"
    assert m["g/v/0"] == b"mine"  # verified once
    moved = tmp_path / "elsewhere"
    os.rename(root / "g" / "v", moved)
    (root / "g" / "v").symlink_to(moved, target_is_directory=True)
    with pytest.raises(StoragePermissionError, match="outside the map's root"):
        m["g/v/0"]
    with pytest.raises(StoragePermissionError):
        m["g/v/2"] = b"x"
    with pytest.raises(StoragePermissionError):
        del m["g/v/1"]
    assert sorted(os.listdir(moved)) == ["0", "1"]


def test_links_inside_the_root_still_work_with_every_strategy(tmp_path, strategy):
    root = tmp_path / "r.file"
    m = FileMap(root, mode="w")
    m["real/k"] = b"1"
    m["real/sub/j"] = b"2"
    (root / "alias").symlink_to(root / "real")
    (root / "leaf").symlink_to(root / "real" / "k")
    assert m["alias/k"] == b"1" and m["alias/sub/j"] == b"2" and m["leaf"] == b"1"
    assert sorted(m) == ["alias/k", "alias/sub/j", "leaf", "real/k", "real/sub/j"]
    assert m.search("alias") == ["k", "sub"]
    m["alias/sub/new"] = b"3"
    assert (root / "real" / "sub" / "new").read_bytes() == b"3"
    del m["alias/sub/new"]
    assert not (root / "real" / "sub" / "new").exists()


# ------------------------------------------------------------------ corrupt members
def _member_archive(path: Path, method: int, value: bytes, name: str = "v/0") -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(".zgroup", b'{"zarr_format": 2}')
        zf.writestr(zipfile.ZipInfo(name), value, compress_type=method)


def _corrupt_data(path: Path, name: str, at: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    header = LOCAL_HEADER.unpack_from(data, info.header_offset)
    start = info.header_offset + LOCAL_HEADER.size + header[9] + header[10]
    for i in range(start + int(info.compress_size * at), start + info.compress_size, 7):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


METHODS = {
    "deflated": zipfile.ZIP_DEFLATED,
    "bzip2": zipfile.ZIP_BZIP2,
    "lzma": zipfile.ZIP_LZMA,
    "stored": zipfile.ZIP_STORED,
}


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("at", [0.0, 0.5])
def test_corrupt_member_is_a_storage_error_naming_key_and_archive(tmp_path, method, at):
    path = tmp_path / "c.zip"
    _member_archive(path, METHODS[method], os.urandom(2000) + bytes(20000))
    _corrupt_data(path, "v/0", at)
    with ZipMap(path, mode="r") as m:
        with pytest.raises(StorageError, match=r"'v/0'.*c\.zip.*corrupt"):
            m["v/0"]
        assert m[".zgroup"] == b'{"zarr_format": 2}'


def test_unknown_method_and_truncated_archives(tmp_path):
    path = tmp_path / "u.zip"
    _member_archive(path, zipfile.ZIP_DEFLATED, b"x" * 1000)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("v/0")
    central = data.rindex(b"PK\x01\x02")  # the last central entry is v/0
    data[central + 10 : central + 12] = (99).to_bytes(2, "little")
    data[info.header_offset + 8 : info.header_offset + 10] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with ZipMap(path, mode="r") as m, pytest.raises(UnsupportedError, match="'v/0'"):
        m["v/0"]
    whole = (tmp_path / "u.zip").read_bytes()
    for cut in (10, len(whole) // 2, len(whole) - 5):
        (tmp_path / "t.zip").write_bytes(whole[:cut])
        with pytest.raises(StorageError, match=r"t\.zip"):
            ZipMap(tmp_path / "t.zip", mode="r")


@pytest.mark.generated
@settings(
    max_examples=examples(150) * (1 + 9 * STRESS),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_fuzzed_archives_give_right_values_or_nczarr_errors(tmp_path, data):
    method = data.draw(st.sampled_from(sorted(METHODS)))
    noise = random.Random(data.draw(st.integers(0, 2**32)))
    values = {f"g/{i}": bytes([i]) * (50 + 300 * i) + noise.randbytes(20) for i in range(4)}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for key, value in values.items():
            zf.writestr(key, value, compress_type=METHODS[method])
    raw = bytearray(buffer.getvalue())
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    path = tmp_path / "fuzz.zip"
    path.write_bytes(bytes(raw))
    try:
        with ZipMap(path, mode="r") as m:
            for key in list(m):
                try:
                    got = m[key]
                except NCZarrError:
                    continue
                if key in values:
                    assert got == values[key]
    except NCZarrError:
        pass


# ------------------------------------------------------------------ bombs and caps
def _bomb(path: Path, name: str, size: int, declared: int | None, method: int) -> None:
    """A member of ``size`` zero bytes; with ``declared``, its headers claim that size."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(".zgroup", b'{"zarr_format": 2}')
        info = zipfile.ZipInfo(name)
        info.compress_type = method
        with zf.open(info, "w", force_zip64=False) as f:
            block = bytes(1 << 20)
            for _ in range(size >> 20):
                f.write(block)
    if declared is None:
        return
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    local = info.header_offset
    data[local + 22 : local + 26] = declared.to_bytes(4, "little")
    central = data.rindex(b"PK\x01\x02")
    data[central + 24 : central + 28] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("method", ["deflated", "bzip2", "lzma"])
def test_zip_bomb_member_stops_at_its_declared_size(tmp_path, method):
    path = tmp_path / "bomb.zip"
    # 64 MiB inflated: 4x the peak allowed below, so inflating it whole still fails the
    # test; 200 MiB showed the same and cost seconds of compression per method
    _bomb(path, "v/0", 64 << 20, declared=100, method=METHODS[method])
    assert path.stat().st_size < 2 << 20
    with ZipMap(path, mode="r") as m:
        tracemalloc.start()
        try:
            with pytest.raises(StorageError, match=r"'v/0'.*(beyond its declared|CRC)"):
                m["v/0"]
            with pytest.raises(StorageError, match="'v/0'"):
                m.getitems(["v/0"])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 16 << 20, peak


@pytest.mark.parametrize("limit", [None, 1 << 20])
def test_metadata_objects_are_capped_without_inflating_them(tmp_path, limit):
    path = tmp_path / "big.zip"
    size = (80 if limit is None else 8) << 20
    _bomb(path, ".zattrs", size, declared=None, method=zipfile.ZIP_DEFLATED)
    with ZipMap(path, mode="r") as m:
        tracemalloc.start()
        try:
            with pytest.raises(MetadataError, match=r"'\.zattrs'.*max_metadata_size"):
                load_metadata(m, max_metadata_size=limit)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    cap = nczarr.load.MAX_METADATA_SIZE if limit is None else limit
    assert peak < 2 * cap + (8 << 20), peak  # the decoder joins its output once
    root = tmp_path / "big.file"
    with FileMap(root, mode="w") as m:
        m[".zgroup"] = b'{"zarr_format": 2}'
        m[".zattrs"] = b'{"a": "' + b"x" * (2 << 20) + b'"}'
    with pytest.raises(MetadataError, match=r"'\.zattrs'"):
        load_metadata(FileMap(root), max_metadata_size=1 << 20)
    assert set(load_metadata(FileMap(root))) == {".zgroup", ".zattrs"}


def test_capped_reads_of_every_map(tmp_path):
    value = bytes(range(256)) * 40
    for m in (
        MemoryMap(mode="w"),
        FileMap(tmp_path / "c.file", mode="w"),
        ZipMap(tmp_path / "c.zip", mode="w", compression=zipfile.ZIP_DEFLATED),
    ):
        m["k/v"] = value
        m.flush()
        assert m.getitems_capped(["k/v", "nope"], 100) == {"k/v": value[:100]}
        assert m.getitems_capped(["k/v"], 10**9) == {"k/v": value}


# ------------------------------------------------------------------ names
@pytest.mark.parametrize("key", ["a/\udcff", "\ud800", "g/x\udfffy/.zarray"])
def test_lone_surrogates_are_invalid_keys(tmp_path, key):
    with pytest.raises(InvalidKeyError, match="surrogate"):
        normalize_key(key)
    z = ZipMap(tmp_path / "s.zip", mode="w")
    for m in (MemoryMap(mode="w"), FileMap(tmp_path / "s.file", mode="w"), z):
        m["before"] = b"1"
        with pytest.raises(InvalidKeyError):
            m[key] = b"x"
        m["after"] = b"2"
    z.close()
    assert _read_all(tmp_path / "s.zip") == {"before": b"1", "after": b"2"}


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="needs non-UTF-8 file names")
def test_non_utf8_file_name_is_skipped_with_a_warning_in_a_convert_to_zip(tmp_path):
    src = tmp_path / "src.file"
    with _vector_source(src, shape=4, chunks=2, dtype="|u1") as m:
        m["v/0"] = b"\x01\x02"
        m["v/1"] = b"\x03\x04"
    bad = os.fsencode(src / "v") + b"/stray-\xff\xfe"
    with open(bad, "wb") as f:
        f.write(b"junk")
    with pytest.warns(NCZarrWarning, match=r"stray-.*not valid UTF-8"):
        keys = sorted(FileMap(src))
    assert keys == [".zgroup", "v/.zarray", "v/.zattrs", "v/0", "v/1"]
    out = tmp_path / "out.zip"
    with pytest.warns(NCZarrWarning, match="stray-"):
        nczarr.convert(str(src), f"file://{out}#mode=zarr,zip", mode="zarr")
    with ZipMap(out, mode="r") as m:
        assert m["v/0"] == b"\x01\x02" and m["v/1"] == b"\x03\x04"
    assert os.path.exists(bad)  # the source is untouched


def test_zip_reads_do_not_reinflate_through_zipfile(tmp_path, monkeypatch):
    """Deflate, bzip2 and LZMA members are decoded by the bounded decoders (a
    regression guard: ZipFile.read would inflate unbounded pieces)."""
    path = tmp_path / "d.zip"
    values = {}
    with zipfile.ZipFile(path, "w") as zf:
        for name, method in METHODS.items():
            values[name] = os.urandom(100) + bytes(5000)
            zf.writestr(name, values[name], compress_type=method)

    def refuse(*args, **kwargs):
        raise AssertionError("ZipFile.read used")

    monkeypatch.setattr(zipfile.ZipFile, "read", refuse)
    with ZipMap(path, mode="r") as m:
        assert {k: m[k] for k in m} == values
        assert m.getrange("deflated", 100, 10) == bytes(10)


def test_stale_staging_files_of_dead_writers_are_removed(tmp_path):
    path = tmp_path / "st.zip"
    _make_archive(path, {"a": b"1"})
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    stale = tmp_path / f".st.zip.nczarr-{lockfile.HOST}-{dead}-abcdef.tmp"
    live = tmp_path / f".st.zip.nczarr-{lockfile.HOST}-{os.getpid()}-abcdef.tmp"
    other = tmp_path / ".st.zip.nczarr-otherhost-1-abcdef.tmp"
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    ZipMap(path, mode="r").close()
    assert stale.exists()  # readers never clean up
    ZipMap(path, mode="a").close()
    assert not stale.exists() and live.exists() and other.exists()


@pytest.mark.parametrize("prefix", ["", "ds/"])
def test_an_empty_member_name_is_an_error_naming_the_archive(tmp_path: Path, prefix: str) -> None:
    # zipfile writes it; ZipInfo.is_dir() fails on it with an IndexError
    path = tmp_path / "ds.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{prefix}.zgroup", b"{}")
        z.writestr(zipfile.ZipInfo(""), b"x")
    with pytest.raises(StorageError, match=r"archive member '' of .*ds\.zip.* is not a valid key"):
        ZipMap(path, mode="r")
