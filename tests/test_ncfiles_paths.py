"""The entry points the other ``.nc`` tests leave out, for every format.

``view`` in both modes, ``convert(dry_run=True)`` (plans exactly what a convert
writes, writes nothing), a convert to an S3 target (moto), and the CLI's ``dump`` of
a netCDF-4 file, each compared with netCDF4's reading of the file.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import zarr

import nczarr
from nczarr.cli import main
from nczarr.errors import NCZarrWarning
from nczarr.integrations.zarr_store import ZarrStore

from .ncfiles import assert_same_values, build_netcdf3, build_netcdf4, nc_values
from .ncoracle import describe_url, diff

STORAGE_FIELDS = ("compressor", "filters", "chunks", "warnings", "maxstrlen", "text_storage")
FORMATS = (
    "NETCDF4",
    "NETCDF4_CLASSIC",
    "NETCDF3_CLASSIC",
    "NETCDF3_64BIT_OFFSET",
    "NETCDF3_64BIT_DATA",
)


def _build(tmp_path: Path, fmt: str) -> Path:
    path = tmp_path / f"{fmt.lower()}.nc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # netCDF4: deprecated keywords of the builders
        if fmt.startswith("NETCDF4"):
            return build_netcdf4(path, fmt)
        return build_netcdf3(path, fmt)


def _quiet(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call`` with the re-encoding announcements (asserted in test_ncfiles) ignored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        return call(*args, **kwargs)


def _zarr_values(group: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(node: Any, path: str) -> None:
        for name, array in node.arrays():
            out[f"{path}/{name}"] = array[...]
        for name, sub in node.groups():
            walk(sub, f"{path}/{name}")

    walk(group, "")
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_zarr_view_holds_the_files_values(tmp_path: Path, fmt: str) -> None:
    path = _build(tmp_path, fmt)
    view = _quiet(nczarr.view, str(path), "zarr")
    try:
        got = _zarr_values(zarr.open_group(ZarrStore(view), mode="r"))
    finally:
        view.close()
    assert_same_values(nc_values(str(path)), got)


@pytest.mark.parametrize("fmt", FORMATS)
def test_nczarr_view_reads_as_the_file(tmp_path: Path, fmt: str) -> None:
    path = _build(tmp_path, fmt)
    view = _quiet(nczarr.view, str(path), "nczarr")
    try:
        shown = _quiet(nczarr.read, view)
    finally:
        view.close()
    ignore = (*STORAGE_FIELDS, "endian", "layout")
    assert diff(shown, describe_url(str(path)), ignore=ignore) == []


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target", ["nczarr", "zarr"])
def test_dry_run_plans_what_convert_writes(tmp_path: Path, fmt: str, target: str) -> None:
    path = _build(tmp_path, fmt)
    out = tmp_path / "out"
    plan = _quiet(nczarr.convert, str(path), str(out), target, dry_run=True)
    assert plan.dry_run and not out.exists()
    report = _quiet(nczarr.convert, str(path), str(out), target)
    written = {p.relative_to(out).as_posix(): p.stat().st_size for p in out.rglob("*")}
    files = {k: v for k, v in written.items() if (out / k).is_file()}
    assert sorted(plan.planned_keys) == sorted(files)
    assert plan.planned_bytes == sum(files.values())
    assert report.chunks_copied + report.chunks_reencoded == len(files) - len(
        report.metadata_written
    )


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT_DATA"])
@pytest.mark.parametrize("target", ["nczarr", "zarr"])
def test_convert_to_s3(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, fmt: str, target: str
) -> None:
    path = _build(tmp_path, fmt)
    options = {"endpoint_url": s3_endpoint}
    url = f"s3://{s3_bucket}/out#mode={target},s3"
    report = _quiet(nczarr.convert, str(path), url, target, target_options=options)
    assert report.chunks_copied > 0
    back = tmp_path / "back"  # S3 -> directory, read by netCDF4 / zarr-python
    _quiet(nczarr.convert, url, str(back), target, source_options=options)
    if target == "nczarr":
        got = nc_values(f"file://{back}#mode=nczarr,file")
    else:
        got = _zarr_values(zarr.open_group(str(back), mode="r"))
    assert_same_values(nc_values(str(path)), got)


def test_cli_dump_of_a_netcdf4_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _build(tmp_path, "NETCDF4")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        assert main(["dump", "-h", str(path)]) == 0
    cdl = capsys.readouterr().out
    for line in (
        "time = UNLIMITED ; // (3 currently)",
        "empty = UNLIMITED ; // (0 currently)",
        "string strings(lat) ;",
        "int64 v(time, x) ;",
        "group: g {",
        'string :tags = "one", "two" ;',
    ):
        assert line in cdl, line


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_names_the_format_and_netcdf_c_reads_it(tmp_path: Path, fmt: str) -> None:
    path = _build(tmp_path, fmt)
    report = _quiet(nczarr.check, str(path))
    assert report.info.format == "netcdf"
    assert report.info.layout == nczarr.detect(str(path)).layout
    assert not report.for_reader("netcdf-c 4.10+")
