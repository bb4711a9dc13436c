"""The command keeps numpy's BLAS/OpenMP runtimes to one thread unless the user set
their thread count (issue 18: a ``.nc`` convert's start-up; nczarr does no linear
algebra), and the library import and a program that already loaded numpy are left
alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import netCDF4
import numpy as np

from nczarr.cli.startup import MATH_THREAD_VARIABLES, single_threaded_math

SCRIPT = """
import json, os, sys
from nczarr.cli.main import main
before = "numpy" in sys.modules
status = main(["convert", "--mode", "zarr", sys.argv[1], sys.argv[2]])
names = sys.argv[3].split(",")
print(json.dumps({"status": status, "numpy_before": before,
                  "numpy_after": "numpy" in sys.modules,
                  "env": {n: os.environ.get(n) for n in names}}))
"""


def _netcdf4(path):
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 4)
        v = ds.createVariable("v", "f4", ("x",), compression="zlib", chunksizes=(2,))
        v[:] = np.arange(4, dtype="f4")
        # strings are re-encoded through h5py, which loads numpy (a file of numbers alone
        # is read without either)
        ds.createVariable("s", str, ("x",))[0] = "text"
    return path


def _run(tmp_path, env_extra, name):
    env = {k: v for k, v in os.environ.items() if k not in MATH_THREAD_VARIABLES}
    env.update(env_extra)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(_netcdf4(tmp_path / f"{name}.nc")),
            str(tmp_path / name),
            ",".join(MATH_THREAD_VARIABLES),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_the_command_sets_one_math_thread_before_numpy_is_loaded(tmp_path):
    seen = _run(tmp_path, {}, "plain")
    assert seen["status"] == 0
    assert not seen["numpy_before"] and seen["numpy_after"]  # h5py loaded it, after
    assert seen["env"] == {name: "1" for name in MATH_THREAD_VARIABLES}


def test_a_users_own_thread_setting_wins(tmp_path):
    seen = _run(tmp_path, {"OPENBLAS_NUM_THREADS": "3", "OMP_NUM_THREADS": ""}, "user")
    assert seen["status"] == 0
    assert seen["env"]["OPENBLAS_NUM_THREADS"] == "3"
    assert seen["env"]["OMP_NUM_THREADS"] == ""  # set, even empty: the user's
    assert seen["env"]["MKL_NUM_THREADS"] == "1"


def test_importing_the_library_sets_nothing():
    env = {k: v for k, v in os.environ.items() if k not in MATH_THREAD_VARIABLES}
    code = "import os, sys, nczarr, nczarr.cli; print(sorted(set(sys.argv[1:]) & set(os.environ)))"
    done = subprocess.run(
        [sys.executable, "-c", code, *MATH_THREAD_VARIABLES],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert done.stdout.strip() == "[]"


def test_nothing_is_set_once_numpy_is_loaded():
    environ: dict[str, str] = {}
    assert single_threaded_math(environ, {"numpy"}) == []
    assert environ == {}
    assert single_threaded_math(environ, set()) == list(MATH_THREAD_VARIABLES)
    assert environ == {name: "1" for name in MATH_THREAD_VARIABLES}
