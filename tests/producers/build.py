"""Rebuild the producer fixtures in ``tests/data/producers/`` (see README.md here).

Each producer runs in a side environment this script creates (never the project's
own): a venv with zarr-python 2.18 + xarray 2024 + numcodecs < 0.16 + numpy 1.26, a
venv with the newest zarr-python 3 + xarray, a venv with the netCDF4 wheel
(libnetcdf 4.10), and Debian's GDAL (``apt-get install gdal-bin python3-gdal``) run
with the system ``python3``, and netcdf-c 4.8.0's ``ncgen``/``ncdump`` (``netcdf48``:
their folder in ``NCZARR_NETCDF48_BIN`` or on ``PATH``; this script builds nothing).
Every producer script writes its stores as directories and a JSON record of what its
own reader returns; this script zips each store
(zarr-python's zip layout: members at the top, fixed timestamps) beside its record.

    python tests/producers/build.py [--only zarr2,zarr3,netcdf,gdal,gdal312,netcdf48]
                                    [--envs DIR]
                                    [--cases NAME,...]

``--cases`` runs only the named case functions of the producer scripts (to add a
store without rebuilding, and so changing, the others).

CI never runs this: the zipped stores and records are committed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "producers"

#: producer -> (script, pip requirements or None for the system python3 with GDAL)
PRODUCERS: dict[str, tuple[str, list[str] | None]] = {
    "zarr2": (
        "make_zarr2.py",
        [
            "zarr==2.18.*",
            "numcodecs<0.16",
            "numpy==1.26.*",
            "xarray>=2024.1,<2025",
            "pandas<2.3",
            "cftime",
        ],
    ),
    "zarr3": ("make_zarr3.py", ["zarr>=3.1,<4", "xarray", "numcodecs", "pandas", "cftime"]),
    "netcdf": ("make_netcdf.py", ["netCDF4>=1.7.2", "numpy"]),
    "gdal": ("make_gdal.py", None),
    # GDAL 3.12: the libgdal in pyogrio's wheel, driven with ctypes (tests/gdalreader.py)
    "gdal312": ("make_gdal312.py", ["pyogrio>=0.13", "numpy"]),
    # netcdf-c 4.8.0's ncgen and ncdump: NCZARR_NETCDF48_BIN or PATH (never built here)
    "netcdf48": ("make_netcdf48.py", ["numpy"]),
}


def _python(name: str, requirements: list[str] | None, envs: Path) -> str:
    """The interpreter of producer ``name``'s side environment (created on first use)."""
    if requirements is None:
        # Debian's python3-gdal belongs to the system interpreter, not to a pyenv one
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
        check = subprocess.run([python, "-c", "from osgeo import gdal"], capture_output=True)
        if check.returncode != 0:
            sys.exit("GDAL's Python bindings are missing: apt-get install gdal-bin python3-gdal")
        return python
    env = envs / name
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)
    return str(python)


def _zip_store(store: Path, target: Path) -> None:
    """Zip the directory store ``store`` deterministically (members sorted, the root's
    own metadata first as zarr-python writes it, fixed time)."""
    files = [p for p in store.rglob("*") if p.is_file()]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files, key=lambda p: (p.parent != store, p.as_posix())):
            info = zipfile.ZipInfo(path.relative_to(store).as_posix(), (2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())


def build(name: str, envs: Path, cases: list[str] | None = None) -> list[str]:
    """Run producer ``name`` (only ``cases`` when given); copy its zipped stores and
    records into ``OUT``."""
    script, requirements = PRODUCERS[name]
    python = _python(name, requirements, envs)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([python, str(HERE / script), tmp, *(cases or [])], check=True, cwd=HERE)
        for record in sorted(Path(tmp).glob("*.json")):
            store = record.with_suffix("")
            _zip_store(store, OUT / f"{store.name}.zip")
            data = json.loads(record.read_text(encoding="utf-8"))
            (OUT / record.name).write_text(
                json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8"
            )
            written.append(store.name)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(PRODUCERS), help="comma-separated producers")
    parser.add_argument(
        "--envs",
        type=Path,
        default=Path(tempfile.gettempdir()) / "nczarr-producer-envs",
        help="where the side environments live (reused between runs)",
    )
    parser.add_argument("--cases", default="", help="comma-separated case functions only")
    args = parser.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    OUT.mkdir(parents=True, exist_ok=True)
    args.envs.mkdir(parents=True, exist_ok=True)
    for name in args.only.split(","):
        for store in build(name.strip(), args.envs, cases):
            print(f"{name}: {store}")


if __name__ == "__main__":
    main()
