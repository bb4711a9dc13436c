"""OS-specific calls have fallbacks, and the fallbacks work (issue 9, "Not portable").

Each test removes what macOS or Windows lacks (``os.copy_file_range``, ``os.sendfile``,
``os.pread``, ``os.O_NOFOLLOW``, ``os.O_CLOEXEC``, ``os.O_DIRECTORY``,
``os.O_NONBLOCK``, ``dir_fd`` support, the kernel's name of an open directory,
``fcntl.flock``) and runs the real map operations and a real convert on Linux.

A name is removed from the ``os`` module *as nczarr's own modules see it* (each gets a
stand-in :class:`OSWithout`), never from :mod:`os` itself: the standard library keeps
what it uses (``shutil.rmtree`` opens directories with ``O_NONBLOCK`` since Python
3.13), so a test fails only when nczarr's fallback fails.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
import subprocess
import sys
import textwrap
import time
import types
import zipfile
from pathlib import Path

import pytest

import nczarr
from nczarr.errors import StorageError, StoragePermissionError
from nczarr.maps import localfs, lockfile
from nczarr.maps.file import FileMap
from nczarr.maps.zip import ZipMap

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent


class OSWithout(types.ModuleType):
    """The ``os`` module without the names ``missing`` (``replaced`` set instead);
    records which missing names were asked for."""

    def __init__(self, missing: list[str], **replaced: object) -> None:
        super().__init__("os")
        self._missing = frozenset(missing)
        self._asked: set[str] = set()
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> object:
        if name in self._missing:
            self._asked.add(name)
            raise AttributeError(f"module 'os' has no attribute {name!r}")
        return getattr(os, name)


def without(monkeypatch: pytest.MonkeyPatch, missing: list[str], **replaced: object) -> OSWithout:
    """Give every nczarr module an ``os`` lacking ``missing``, until the test ends."""
    for info in pkgutil.walk_packages(nczarr.__path__, "nczarr."):
        importlib.import_module(info.name)  # lazily imported modules too
    fake = OSWithout(missing, **replaced)
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] == "nczarr" and getattr(module, "os", None) is os:
            monkeypatch.setattr(module, "os", fake)
    return fake


def _tree(root: Path) -> dict[str, bytes]:
    with FileMap(root, mode="r") as m:
        return {k: m[k] for k in m}


def _exercise_file_map(tmp_path: Path) -> None:
    """Every FileMap operation, the leaf rule, a symlink escape and a FIFO."""
    root = tmp_path / "m.file"
    m = FileMap(root, mode="w")
    m["a"] = b"1"
    m["g/v/0.0"] = b"chunk"
    m["g/v/0.0"] = b"chunk2"  # an overwrite
    m["g/.zattrs"] = b"{}"
    assert m["g/v/0.0"] == b"chunk2" and m.getrange("g/v/0.0", 1, 3) == b"hun"
    assert m.getsize("g/v/0.0") == 6 and "g/v/0.0" in m and "g/v" not in m
    assert sorted(m) == ["a", "g/.zattrs", "g/v/0.0"]
    assert m.search("") == ["a", "g"] and m.search("g") == [".zattrs", "v"]
    assert m.getitems_capped(["g/v/0.0"], 2) == {"g/v/0.0": b"ch"}
    with pytest.raises(FileExistsError):
        m["a/b"] = b"x"
    with pytest.raises(FileExistsError):
        m["g/v"] = b"x"
    dst = FileMap(tmp_path / "copy.file", mode="w")
    assert dst.copy_file(m, "g/v/0.0", atomic=False) == 6
    assert dst.copy_file(m, "g/v/0.0") == 6 and dst["g/v/0.0"] == b"chunk2"
    del m["g/v/0.0"]
    assert sorted(m) == ["a", "g/.zattrs"] and not (root / "g" / "v").exists()
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret").write_bytes(b"s")
    (root / "g" / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(StoragePermissionError):
        m["g/link/secret"]
    with pytest.raises(StoragePermissionError):
        m["g/link/new"] = b"x"
    assert sorted(m) == ["a", "g/.zattrs"] and sorted(os.listdir(outside)) == ["secret"]
    (root / "g" / "inner").symlink_to(root / "g", target_is_directory=True)
    assert m["g/inner/.zattrs"] == b"{}"
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "fifo")
        with pytest.raises(StorageError, match="FIFO"):
            m["fifo"]
    m.clear()
    assert list(m) == []


def _convert_dir_to_dir(tmp_path: Path) -> None:
    src = tmp_path / "src.zarr"
    nczarr.convert(str(DATA / "v2uc_ncgen490.zip"), str(src), mode="zarr")
    out = tmp_path / "out.zarr"
    nczarr.convert(str(src), str(out), mode="zarr")  # chunks copied file to file
    assert _tree(out) == _tree(src)


MISSING = {
    "copy_file_range": ["copy_file_range"],
    "copy_file_range+sendfile": ["copy_file_range", "sendfile"],
    "O_NOFOLLOW": ["O_NOFOLLOW"],
    "O_CLOEXEC": ["O_CLOEXEC"],
    "O_DIRECTORY": ["O_DIRECTORY"],
    "O_NONBLOCK": ["O_NONBLOCK"],
    "everything": [
        "copy_file_range",
        "sendfile",
        "pread",
        "O_NOFOLLOW",
        "O_CLOEXEC",
        "O_DIRECTORY",
        "O_NONBLOCK",
    ],
}


@pytest.mark.parametrize("missing", sorted(MISSING))
def test_file_map_and_convert_without(tmp_path, monkeypatch, missing):
    replaced = {"supports_dir_fd": set()} if missing == "everything" else {}
    fake = without(monkeypatch, MISSING[missing], **replaced)
    if missing == "everything":
        monkeypatch.setattr(localfs, "PROC_FD", None)
    _exercise_file_map(tmp_path)
    _convert_dir_to_dir(tmp_path)
    # nczarr looked for what was removed, and took its fallback
    assert fake._asked, f"nczarr never asked for {MISSING[missing]}"


def test_names_are_removed_for_nczarr_only(tmp_path, monkeypatch):
    fake = without(monkeypatch, ["O_NONBLOCK", "pread"])
    assert localfs.os is fake and localfs.flag("O_NONBLOCK") == 0
    assert hasattr(os, "O_NONBLOCK") and hasattr(os, "pread")  # the real module is whole
    (tmp_path / "d" / "e").mkdir(parents=True)
    shutil.rmtree(tmp_path / "d")  # the standard library still works
    m = FileMap(tmp_path / "m.file", mode="w")
    m["g/v/0"] = b"x"
    m.clear()  # shutil.rmtree called from nczarr, with O_NONBLOCK gone for nczarr
    assert list(m) == [] and "O_NONBLOCK" in fake._asked


@pytest.mark.parametrize("way", ["no-dir-fd", "no-kernel-path"])
def test_file_map_and_convert_without_dir_fd_or_kernel_paths(tmp_path, monkeypatch, way):
    if way == "no-dir-fd":  # Windows: realpath containment before each use
        without(monkeypatch, [], supports_dir_fd=set())
    else:  # no /proc (BSDs): the O_NOFOLLOW walk by dir_fd
        monkeypatch.setattr(localfs, "PROC_FD", None)
        monkeypatch.delitem(sys.modules, "fcntl", raising=False)
    _exercise_file_map(tmp_path)
    _convert_dir_to_dir(tmp_path)


def test_copy_without_kernel_copies_uses_read_write(tmp_path, monkeypatch):
    without(monkeypatch, ["copy_file_range", "sendfile"])
    data = os.urandom(3 * 2**20 + 5)
    src = FileMap(tmp_path / "s", mode="w")
    src["k"] = data
    dst = FileMap(tmp_path / "d", mode="w")
    assert dst.copy_file(src, "k") == len(data) and dst["k"] == data


@pytest.mark.parametrize("missing", [["pread"], ["pread", "O_CLOEXEC", "O_NONBLOCK"]])
def test_zip_map_and_convert_without(tmp_path, monkeypatch, missing):
    fake = without(monkeypatch, missing)
    path = tmp_path / "p.zip"
    with ZipMap(path, mode="w") as m:
        m["g/v/0"] = bytes(range(200))
        m["g/.zattrs"] = b"{}"
    with ZipMap(path, mode="a") as m:
        assert m["g/v/0"] == bytes(range(200)) and m.getrange("g/v/0", 10, 5) == bytes(
            range(10, 15)
        )
        m["g/v/1"] = b"new"
        m["g/.zattrs"] = b'{"a": 1}'  # a rewrite
    with ZipMap(path, mode="r") as m:
        assert {k: m[k] for k in m} == {
            "g/v/0": bytes(range(200)),
            "g/v/1": b"new",
            "g/.zattrs": b'{"a": 1}',
        }
    out = tmp_path / "out.zip"
    nczarr.convert(str(DATA / "v2uc_ncgen490.zip"), f"file://{out}#mode=zarr,zip", mode="zarr")
    back = tmp_path / "back.zarr"
    nczarr.convert(f"file://{out}#mode=zarr,zip", str(back), mode="zarr")
    reference = tmp_path / "ref.zarr"
    nczarr.convert(str(DATA / "v2uc_ncgen490.zip"), str(reference), mode="zarr")
    assert _tree(back) == _tree(reference)
    assert "pread" in fake._asked


# ----------------------------------------------------------------- the O_EXCL lock
WRITER = textwrap.dedent(
    """
    import sys
    import fcntl
    del fcntl.flock  # as on a platform without flock: the O_EXCL lock file is used
    from nczarr.maps.zip import ZipMap
    path, who = sys.argv[1], int(sys.argv[2])
    with ZipMap(path, mode="a") as m:
        for j in range(30):
            m[f"w{who}/{j}"] = f"{who}/{j}".encode()
    """
)


def test_writers_serialise_with_the_o_excl_lock_file(tmp_path):
    path = tmp_path / "x.zip"
    ZipMap(path, mode="w").close()
    script = tmp_path / "w.py"
    script.write_text(WRITER)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path), str(w)], env=env)
        for w in range(4)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    with ZipMap(path, mode="r") as m:
        assert {k: m[k] for k in m} == {
            f"w{w}/{j}": f"{w}/{j}".encode() for w in range(4) for j in range(30)
        }
    assert not (tmp_path / ".x.zip.nczarr-lock.excl").exists()


def test_o_excl_lock_file_stale_and_held(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.delattr(fcntl, "flock")
    monkeypatch.setattr(lockfile, "LOCK_TIMEOUT", 0.3)
    path = tmp_path / "y.zip"
    ZipMap(path, mode="w").close()
    lock = tmp_path / ".y.zip.nczarr-lock.excl"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    # A lock left by a killed writer on this host is stale: taken over.
    lock.write_text(f"{lockfile.HOST} {dead} {time.time():.0f}\n")
    with ZipMap(path, mode="a") as m:
        m["a"] = b"1"
    assert not lock.exists()
    # A lock held by a live process is waited for, then the commit fails loudly.
    lock.write_text(f"{lockfile.HOST} {os.getpid()} {time.time():.0f}\n")
    m = ZipMap(path, mode="a")
    m["b"] = b"2"
    with pytest.raises(StorageError, match="another writer holds"):
        m.flush()
    # A lock older than STALE_LOCK_SECONDS is stale whoever holds it.
    old = time.time() - lockfile.STALE_LOCK_SECONDS - 10
    os.utime(lock, (old, old))
    m.close()
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["a", "b"]
