"""The ``nczarr`` command imports what its job needs, and nothing else (issues 18 and 20).

A fresh ``nczarr convert`` pays its interpreter start and imports on top of the copy,
and for a few hundred MB that is a large part of the command (docs/performance.md,
"The command's start"). Each case runs one command in a fresh interpreter and reads
``sys.modules`` when it is done: the modules named are ones its job never uses (the
HDF5 stack for a netCDF-3 file, ``urllib.parse`` and the ``ipaddress`` it imports when no
URL is parsed or written, the Zarr v2 writer for an NCZarr target, the model for a
listing ...). Nothing is timed here; benchmarks/ncfiles.py and benchmarks/combine.py
time the command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

#: Runs the command in-process and prints the modules it left loaded, last.
SCRIPT = """\
import builtins, json, sys
compiled = []
def spy(real):
    def call(source, *args, **kwargs):
        importer = sys._getframe(1).f_globals.get("__name__", "").startswith("importlib")
        if isinstance(source, str) and not importer:  # not a module's own code
            compiled.append(source[:40])
        return real(source, *args, **kwargs)
    return call
builtins.compile, builtins.exec = spy(builtins.compile), spy(builtins.exec)
from nczarr.cli.main import main
status = main(sys.argv[1:])
jsontext = sys.modules.get("nczarr.translate.jsontext")
patterns = getattr(jsontext, "_patterns", None)  # None: compiled when it was imported
relaxed = jsontext is not None and (patterns is None or patterns.cache_info().currsize > 0)
print("RELAXED " + json.dumps(relaxed))  # netcdf-c's non-RFC JSON patterns compiled
hosts = sys.modules.get("nczarr.maps.urlhosts")
print("S3HOSTS " + json.dumps(hosts is not None and hosts._s3_patterns.cache_info().currsize > 0))
print("COMPILED " + json.dumps(compiled), file=sys.stderr)  # shown when a test fails
print("MODULES " + json.dumps(sorted([*sys.modules] + (["code-compiled"] if compiled else []))))
sys.exit(status)
"""

#: Modules no command below needs: the Zarr and remote stacks, and an event loop (and
#: the patterns of non-RFC JSON: these stores' metadata is RFC JSON).
NEVER = ["zarr", "numcodecs", "fsspec", "s3fs", "asyncio", "nczarr.maps.memory"]
NEVER += ["relaxed-json-patterns"]
#: ... and of S3 hosts: no command below has an S3 URL.
NEVER += ["s3-host-patterns"]
#: ``@dataclass`` compiles its methods at import and loads ``inspect``: nczarr's value
#: classes are records (nczarr.records), and nothing a command runs imports either.
NEVER += ["dataclasses", "inspect"]
#: ... nor anything else that compiles code as it runs (``"code-compiled"``: a call of
#: ``compile``/``exec`` on source text, e.g. a ``typing.NamedTuple`` class compiling its
#: annotations; the process's first ``compile`` costs ~10 M instructions). Not watched:
#: ``eval``, with which each ``collections.namedtuple`` makes its one-line ``__new__``.
NEVER += ["code-compiled"]
#: The HDF5 stack: only a netCDF-4 source needs it (and numpy, with it or for values).
HDF5 = ["numpy", "h5py", "nczarr.ncfile.hdf5"]
#: What only parsing or writing a URL (S3, ``file://``, a fragment) needs.
URLS = ["urllib.parse", "ipaddress"]


def _run(cwd: Path, *argv: str) -> set[str]:
    """The modules loaded by ``nczarr ARGV`` run in a fresh interpreter, with
    ``"relaxed-json-patterns"`` if it compiled the lenient JSON loader's patterns (only
    metadata that is not RFC JSON needs them) and ``"s3-host-patterns"`` if it compiled
    those of S3 hosts (only S3 URLs need them)."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv], cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    *_, relaxed, hosts, last = done.stdout.strip().splitlines()
    assert relaxed.startswith("RELAXED ") and hosts.startswith("S3HOSTS ")
    assert last.startswith("MODULES ")
    modules = set(json.loads(last.removeprefix("MODULES ")))
    modules |= {"relaxed-json-patterns"} if json.loads(relaxed[8:]) else set()
    return modules | ({"s3-host-patterns"} if json.loads(hosts[8:]) else set())


def _loaded(modules: set[str], names: list[str]) -> list[str]:
    return [name for name in names if name in modules]


@pytest.fixture
def netcdf3(tmp_path: Path) -> Path:
    """A netCDF-3 (64-bit offset) file with a record variable and an attribute."""
    path = tmp_path / "small3.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 4)
        var = ds.createVariable("v", "f4", ("time", "x"))
        var.units = "m"
        var[0:3] = np.arange(12, dtype="f4").reshape(3, 4)
    return path


def _nczarr_store(path: Path, day: int = 0) -> Path:
    """An NCZarr directory store written by netcdf-c (one time step, one chunk)."""
    with netCDF4.Dataset(f"file://{path}#mode=nczarr,file", "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 4)
        var = ds.createVariable("temp", "f4", ("time", "x"), zlib=True, chunksizes=(1, 4))
        var[0:1] = np.arange(4, dtype="f4").reshape(1, 4) + day
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return _nczarr_store(tmp_path / "store.zarr")


def test_convert_netcdf3_to_nczarr_imports_no_hdf5_url_or_zarr_writer(
    tmp_path: Path, netcdf3: Path
) -> None:
    out = tmp_path / "out.zarr"
    modules = _run(tmp_path, "convert", str(netcdf3), str(out))
    assert (out / ".zgroup").exists()
    assert "nczarr.ncfile.classic" in modules  # the case reads what it should
    assert _loaded(modules, [*NEVER, *HDF5, *URLS]) == []
    # the Zarr v2 writer and its naming rules: only for a pure-Zarr target
    assert _loaded(modules, ["nczarr.translate.write_zarr", "nczarr.translate.zarr_names"]) == []


def test_convert_netcdf3_to_zarr_imports_no_nczarr_writer(tmp_path: Path, netcdf3: Path) -> None:
    out = tmp_path / "out.zarr"
    modules = _run(tmp_path, "convert", "--mode", "zarr", str(netcdf3), str(out))
    assert (out / ".zgroup").exists()
    assert "nczarr.translate.write_zarr" in modules
    assert _loaded(modules, [*NEVER, *HDF5, *URLS, "nczarr.translate.write_nczarr"]) == []


def test_convert_nczarr_store_imports_no_hdf5_or_zarr_writer(tmp_path: Path, store: Path) -> None:
    out = tmp_path / "out.zarr"
    modules = _run(tmp_path, "convert", str(store), str(out))
    assert (out / "temp" / "0.0").exists()
    assert _loaded(modules, [*NEVER, *HDF5, "nczarr.ncfile"]) == []
    assert _loaded(modules, ["nczarr.translate.write_zarr", "nczarr.translate.zarr_names"]) == []


def test_combine_imports_no_hdf5_or_zarr_writer(tmp_path: Path) -> None:
    days = [str(_nczarr_store(tmp_path / f"day{n}.zarr", n)) for n in range(3)]
    out = tmp_path / "year.zarr"
    modules = _run(tmp_path, "convert", *days, str(out), "--concat-dim", "time")
    assert sorted(p.name for p in (out / "temp").iterdir() if not p.name.startswith(".")) == [
        "0.0",
        "1.0",
        "2.0",
    ]
    assert "nczarr.conversion.combine" in modules
    assert _loaded(modules, [*NEVER, *HDF5, "nczarr.ncfile"]) == []
    assert _loaded(modules, ["nczarr.translate.write_zarr", "nczarr.translate.zarr_names"]) == []


def test_info_imports_no_writer_or_conversion(tmp_path: Path, store: Path) -> None:
    modules = _run(tmp_path, "info", str(store))
    assert "nczarr.load" in modules
    assert _loaded(modules, [*NEVER, *HDF5, "nczarr.conversion"]) == []
    # reading a store needs the model, not the writers
    assert _loaded(modules, ["nczarr.translate.writer", "nczarr.translate.write_nczarr"]) == []


def test_ls_imports_no_model_url_or_conversion(tmp_path: Path, store: Path) -> None:
    modules = _run(tmp_path, "ls", str(store))
    assert "nczarr.maps.file" in modules
    assert _loaded(modules, [*NEVER, *HDF5, *URLS]) == []
    assert _loaded(modules, ["nczarr.translate", "nczarr.load", "nczarr.conversion"]) == []


#: Runs ``python -m nczarr ARGV`` and says, at exit, whether the objects alive then were
#: left out of the interpreter's last garbage collection (``gc.freeze``).
FROZEN_AT_EXIT = """\
import atexit, gc, runpy, sys
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0))
sys.argv = ["nczarr", *sys.argv[1:]]
runpy.run_module("nczarr", run_name="__main__")
"""


def test_the_command_exits_without_searching_its_imports_for_cycles(
    tmp_path: Path, store: Path
) -> None:
    """The process (``python -m nczarr``, the console script) freezes what is left once
    the command is done: the last collection at exit would walk every class and
    function the imports made."""
    done = subprocess.run(
        [sys.executable, "-c", FROZEN_AT_EXIT, "ls", str(store)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == ".zattrs"  # the listing, then the exit
    assert done.stdout.splitlines()[-1] == "frozen True"
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    assert 'nczarr = "nczarr.cli:command"' in pyproject.read_text(encoding="utf-8")


def test_main_in_a_program_leaves_the_collector_alone(store: Path, capsys) -> None:
    import gc

    from nczarr.cli import main

    before = gc.get_freeze_count()
    assert main(["ls", str(store)]) == 0
    assert gc.get_freeze_count() == before
    assert ".zattrs" in capsys.readouterr().out


COMMAND_LINES = [
    ["convert", "a.nc", "b.zarr"],
    ["convert", "d0", "d1", "year", "--concat-dim", "time", "--workers", "2", "--mode", "zarr"],
    ["convert", "a.nc", "s3://b/k", "--storage-option", 'endpoint_url="http://h"', "--anon"],
    ["ls", "store", "-R"],
    ["info", "store"],
    ["dump", "-h", "-v", "a,b", "store"],
    ["check", "store", "--reader", "gdal"],
    ["refs", "store", "out.json", "--inline-threshold", "10"],
    ["migrate", "store", "--to", "zarr", "--dry-run"],
]


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=lambda argv: " ".join(argv[:2]))
def test_the_parser_of_one_subcommand_reads_its_line_as_the_whole_parser(
    argv: list[str],
) -> None:
    """The command builds only its subcommand's options (argparse's gettext lookups for
    every message of every subcommand cost a tenth of the imports); what it parses,
    and that subcommand's help, are the whole parser's."""
    from nczarr.cli.main import build_parser

    whole = build_parser()
    one = build_parser(argv)
    subparsers = next(a for a in one._actions if a.dest == "command")
    assert list(subparsers.choices) == [argv[0]]  # only that subcommand was built
    assert one.parse_args(argv) == whole.parse_args(argv)
    whole_sub = next(a for a in whole._actions if a.dest == "command").choices[argv[0]]
    assert subparsers.choices[argv[0]].format_help() == whole_sub.format_help()


@pytest.mark.parametrize("argv", [[], ["--help"], ["bogus"], ["--version", "convert"], ["-h"]])
def test_a_line_without_a_subcommand_first_gets_the_whole_parser(argv: list[str]) -> None:
    from nczarr.cli.main import build_parser

    one = build_parser(argv)
    assert one.format_help() == build_parser().format_help()
    subparsers = next(a for a in one._actions if a.dest == "command")
    assert list(subparsers.choices) == ["convert", "migrate", "ls", "info", "check", "refs", "dump"]
