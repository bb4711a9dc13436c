"""The ``nczarr`` command: main(argv) in-process, and the installed console script once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import nczarr
from nczarr.cli import main

from .ncoracle import extract_fixture, file_tree

DATA = Path(__file__).parent / "data"


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"nczarr {nczarr.__version__}"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["convert", "only-src"],
        ["convert", "a", "b", "--mode", "hdf5"],
        ["convert", "a", "b", "--workers", "0"],
        ["convert", "a", "b", "--overwrite", "--resume"],
        ["migrate", "x", "--to", "netcdf"],
        ["dump", "-h"],
        ["check"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: nczarr" in capsys.readouterr().err


def test_convert_prints_one_line_summary(tmp_path, capsys):
    out = tmp_path / "out.zarr"
    code = main(["convert", str(DATA / "v2uc_ncgen490.zip"), str(out), "--mode", "zarr"])
    assert code == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1
    assert "(nczarr-v2-keys) ->" in lines[0]
    assert "(zarr): 5 arrays, 5 chunks copied, 0 skipped" in lines[0]
    # no progress bar (stderr is not a terminal): warnings only (its char 'id' read
    # back as strings by netCDF readers, its int64 scalar 'count' without _FillValue:
    # xarray reads the Zarr v2 copy as float64, and netcdf-c 4.10 leaves the 0-d array out)
    err = captured.err.splitlines()
    assert [line.split(":")[:2] for line in err] == [["nczarr", " warning"]] * 3
    assert "array '/id': netCDF char is written as 1-byte fixed-width bytes" in err[0]
    assert "'/count'" in err[1] and "float64" in err[1]
    assert "array '/count': a netCDF scalar, written as a 0-d Zarr array" in err[2]
    assert json.loads((out / ".zgroup").read_bytes()) == {"zarr_format": 2}


def test_convert_options_reach_the_library(tmp_path, capsys):
    src = extract_fixture("current_netcdf4101.zip", tmp_path)
    out = tmp_path / "o"
    argv = ["convert", str(src), str(out), "--mode", "zarr", "--include", "/g/gv", "c"]
    assert main([*argv, "--consolidated", "--noxarray", "--workers", "2"]) == 0
    tree = file_tree(out)
    assert ".zmetadata" in tree
    assert sorted(k for k in tree if k.endswith(".zarray")) == ["c/.zarray", "g/gv/.zarray"]
    assert not any(b"_ARRAY_DIMENSIONS" in v for k, v in tree.items() if ".z" in k)
    assert "left out by include/exclude" in capsys.readouterr().err


def test_convert_dry_run_lists_the_plan(tmp_path, capsys):
    out = tmp_path / "dry"
    assert main(["convert", str(DATA / "v2uc_ncgen490.zip"), str(out), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not out.exists()
    assert lines[-1].startswith("dry run: ")
    writes = [line for line in lines if line.startswith("write ")]
    assert writes[-1] == "write .zgroup"
    assert "write pressure/0.0" in writes


def test_existing_target_is_one_line_error_exit_1(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "x").write_bytes(b"x")
    assert main(["convert", str(DATA / "v2uc_ncgen490.zip"), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"nczarr: error: target {str(out)!r} exists and is not empty")


def test_missing_source_is_one_line_error(tmp_path, capsys):
    missing = tmp_path / "nope.zip"
    assert main(["info", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nczarr: error: ") and str(missing) in err
    assert err.count("\n") == 1


def test_resume_flag(tmp_path, capsys):
    out = tmp_path / "o"
    src = str(DATA / "v2uc_ncgen490.zip")
    assert main(["convert", src, str(out)]) == 0
    assert main(["convert", src, str(out), "--resume"]) == 0
    assert "0 chunks copied, 5 skipped" in capsys.readouterr().out.splitlines()[-1]
    assert main(["convert", src, str(out), "--overwrite"]) == 0


def test_migrate_and_dry_run(tmp_path, capsys):
    store = extract_fixture("ref_oldformat_v1.zip", tmp_path)
    before = file_tree(store)
    assert main(["migrate", str(store), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "delete .nczarr" in out
    assert file_tree(store) == before
    assert main(["migrate", str(store)]) == 0
    assert not (store / ".nczarr").exists()
    assert nczarr.detect(str(store)).layout == "nczarr-v2"
    assert main(["migrate", str(store), "--to", "zarr"]) == 0
    assert nczarr.detect(str(store)).layout == "zarr"


def test_ls(tmp_path, capsys):
    src = str(DATA / "v2uc_ncgen490.zip")
    assert main(["ls", src]) == 0
    assert capsys.readouterr().out.split() == [
        ".zattrs",
        ".zgroup",
        "code",
        "count",
        "id",
        "pressure",
        "sub",
    ]
    assert main(["ls", src, "sub"]) == 0
    assert capsys.readouterr().out.split() == [".zgroup", "t"]
    assert main(["ls", src, "sub", "-R"]) == 0
    assert capsys.readouterr().out.split() == [
        "sub/.zgroup",
        "sub/t/.zarray",
        "sub/t/.zattrs",
        "sub/t/0.0",
    ]


def test_info_and_dump(tmp_path, capsys):
    from nczarr.cli.cdl import format_cdl
    from nczarr.cli.info import format_info

    src = str(DATA / "v2uc_ncgen490.zip")
    assert main(["info", src]) == 0
    expected = format_info(nczarr.detect(src), nczarr.read(src)).rstrip("\n")
    assert capsys.readouterr().out == expected + "\n"
    assert main(["dump", "-h", src]) == 0
    out = capsys.readouterr().out
    assert out == format_cdl(nczarr.read(src), "v2uc_ncgen490").rstrip("\n") + "\n"
    assert out.startswith("netcdf v2uc_ncgen490 {")


def test_console_script_end_to_end(tmp_path):
    exe = shutil.which("nczarr")
    assert exe is not None, "the console script is part of the install (pip install -e .)"
    out = tmp_path / "out.zarr"
    done = subprocess.run(
        [exe, "convert", str(DATA / "v2uc_ncgen490.zip"), str(out), "--mode", "zarr"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    info = subprocess.run([exe, "info", str(out)], capture_output=True, text=True, check=False)
    assert info.returncode == 0 and "zarr" in info.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "nczarr.cli", "convert", str(DATA / "v2uc_ncgen490.zip"), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith("nczarr: error: target ")


def test_listing_into_a_closed_pipe_is_quiet(tmp_path):
    """`nczarr ls -R URL | head -1` prints one line and no broken-pipe traceback or error."""
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # a listing far larger than a pipe buffer
        for i in range(8000):
            zf.writestr(f"v/{i}.0.0", b"")
    script = (
        f"import sys; from nczarr.cli import main; sys.exit(main(['ls', '-R', {str(archive)!r}]))"
    )
    producer = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    first = producer.stdout.readline()
    producer.stdout.close()  # the reader goes away, as `head -1` does
    _, err = producer.communicate(timeout=60)
    assert first.startswith(b"v/")
    assert err == b""
