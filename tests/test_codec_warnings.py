"""Converting to NCZarr warns, per variable, when netcdf-c cannot decode a codec."""

from __future__ import annotations

import netCDF4
import numpy as np
import pytest
import zarr
from numcodecs import GZip, Zlib

import nczarr
from nczarr import NCZarrWarning


@pytest.fixture
def source(tmp_path):
    """A zarr-python v2 store: one gzip array (no netcdf-c filter), one zlib array."""
    path = tmp_path / "src.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    for name, codec in (("gz", GZip(level=5)), ("zl", Zlib(level=5))):
        a = root.create_array(name, shape=(8,), chunks=(4,), dtype="<i4", compressors=codec)
        a[:] = np.arange(8, dtype="<i4") * 3
        a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
    return path


def test_convert_to_nczarr_reencodes_only_the_codec_netcdf_c_lacks(source, tmp_path):
    out = tmp_path / "out.file"
    with pytest.warns(NCZarrWarning, match=r"array '/gz': chunks re-encoded \(codec 'gzip'"):
        report = nczarr.convert(str(source), str(out), mode="nczarr")
    assert [w for w in report.warnings if "netcdf-c" in w] == [
        "array '/gz': chunks re-encoded (codec 'gzip' has no netcdf-c filter; written with 'zlib')"
    ]
    assert report.reencoded == (
        ("/gz", "codec 'gzip' has no netcdf-c filter; written with 'zlib'"),
    )
    # netcdf-c reads both: /zl verbatim, /gz re-encoded with zlib
    with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
        np.testing.assert_array_equal(ds["zl"][:], np.arange(8) * 3)
        np.testing.assert_array_equal(ds["gz"][:], np.arange(8) * 3)


def test_zarr_output_has_no_netcdf_c_codec_warning(source, tmp_path):
    report = nczarr.convert(str(source), str(tmp_path / "out.zarr"), mode="zarr")
    assert not [w for w in report.warnings if "netcdf-c" in w]
