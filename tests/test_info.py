"""``nczarr info`` text: summary, dimensions, arrays with codecs, warnings."""

from __future__ import annotations

import nczarr
from nczarr.cli.info import describe_layout, format_codec, format_info
from nczarr.records import replace

from .ncoracle import fixture_path, map_from_zip


def info_of(name: str) -> str:
    zmap = map_from_zip(fixture_path(name))
    return format_info(nczarr.detect(zmap), nczarr.read(zmap))


def test_current_netcdf_c_output() -> None:
    assert info_of("current_netcdf4101.zip") == (
        "format        NCZarr (Zarr v2)\n"
        "layout        nczarr-v2: NCZarr 2.0.0, metadata in .zattrs (netcdf-c 4.9.3+, current)\n"
        "written by    netCDF 4.10.1\n"
        "consolidated  no\n"
        "xarray dims   yes (_ARRAY_DIMENSIONS)\n"
        "groups        2\n"
        "dimensions    3\n"
        "arrays        5\n"
        "\n"
        "dimensions:\n"
        "  /t    3 (unlimited)\n"
        "  /x    6\n"
        "  /g/y  3\n"
        "\n"
        "arrays:\n"
        "  path   type    shape       chunks  codecs\n"
        "  /v     double  (t=3, x=6)  (2, 4)  shuffle(elementsize=8), zlib(level=4)\n"
        "  /c     char    (x=6)       (6)     -\n"
        "  /s     string  (x=6)       (6)     -\n"
        "  /sc    int     scalar      -       -\n"
        "  /g/gv  ubyte   (y=3, x=6)  (3, 6)  -\n"
    )


def test_pure_zarr_and_legacy_summaries() -> None:
    text = info_of("ref_power_901_constants_orig.zip")
    assert "format        Zarr (Zarr v2)\n" in text
    assert "layout        zarr: pure Zarr\n" in text
    assert "written by    unknown\n" in text
    assert "blosc(blocksize=0, clevel=5, cname='lz4', shuffle=1)" in text
    legacy = info_of("v2uc_ncgen490.zip")
    assert "layout        nczarr-v2-keys: NCZarr 2.0.0, keys in .zgroup/.zarray" in legacy
    # not "read-only for netcdf-c 4.10" of every such store: 4.10 refuses 4.9.0's
    assert "misreads or refuses 4.8.1/4.9.0's upper-case ones: nczarr check" in legacy
    assert "written by    netCDF 4.9.0\n" in legacy
    assert "  /count     int64   scalar" in legacy


def test_warnings_are_listed() -> None:
    zmap = map_from_zip(fixture_path("ref_oldkeys.file.zip"))
    dataset = replace(nczarr.read(zmap), warnings=("v: something was skipped",))
    text = format_info(nczarr.detect(zmap), dataset)
    assert text.endswith("\nwarnings:\n  - v: something was skipped\n")


def test_helpers() -> None:
    assert format_codec({"id": "zlib", "level": 4}) == "zlib(level=4)"
    assert format_codec({"id": "fletcher32"}) == "fletcher32()"
    assert describe_layout("nczarr-v1").startswith("NCZarr 1.0")
    assert describe_layout("other") == "other"
