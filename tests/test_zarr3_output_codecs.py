"""Zarr v3 output of filters zarr-python 2 archives use: carried when a v3 form
exists, refused (never silently dropped) when none does.

The sources are written by zarr-python with numcodecs, the outputs read back by
zarr-python 3, the producer's own reader.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.errors import UnsupportedTypeError

VALUES = (np.arange(8, dtype="i4") ** 2).astype("i4")


def _source(path: Path, **arrays) -> Path:
    """A Zarr v2 store, one 1-D int32 array per keyword (its ``filters``, ``compressors``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        for name, codecs in arrays.items():
            a = root.create_array(name, shape=(8,), chunks=(4,), dtype="i4", fill_value=0, **codecs)
            a[...] = VALUES
            a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    return path


def test_delta_is_carried_to_zarr_v3_byte_for_byte(tmp_path: Path) -> None:
    codecs = {"filters": [numcodecs.Delta(dtype="<i4")], "compressors": numcodecs.Zlib(level=1)}
    src = _source(tmp_path / "src.zarr", d=codecs)
    out = tmp_path / "out.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error", nczarr.NCZarrWarning)  # nothing left out, nothing said
        nczarr.convert(str(src), str(out), mode="zarr", zarr_format=3)
    doc = json.loads((out / "d" / "zarr.json").read_text())
    assert doc["codecs"][0]["name"] == "numcodecs.delta"
    assert (out / "d" / "0").read_bytes() == (src / "d" / "0").read_bytes()  # copied verbatim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's numcodecs.* wrappers are "unstable"
        np.testing.assert_array_equal(zarr.open_array(str(out / "d"), mode="r")[...], VALUES)
    back = tmp_path / "back.zarr"  # and nczarr reads its v3 form back
    nczarr.convert(str(out), str(back), mode="zarr", zarr_format=2)
    np.testing.assert_array_equal(zarr.open_array(str(back / "d"), mode="r")[...], VALUES)


def test_blosc_bitshuffle_is_carried_to_zarr_v3(tmp_path: Path) -> None:
    blosc = numcodecs.Blosc(cname="zstd", shuffle=numcodecs.Blosc.BITSHUFFLE)
    src = _source(tmp_path / "src.zarr", b={"compressors": blosc})
    out = tmp_path / "out.zarr"
    nczarr.convert(str(src), str(out), mode="zarr", zarr_format=3)
    codec = json.loads((out / "b" / "zarr.json").read_text())["codecs"][-1]
    assert codec["name"] == "blosc" and codec["configuration"]["shuffle"] == "bitshuffle"
    np.testing.assert_array_equal(zarr.open_array(str(out / "b"), mode="r")[...], VALUES)


def test_an_array_without_a_v3_form_is_refused_unless_excluded(tmp_path: Path) -> None:
    scaled = {"filters": [numcodecs.Base64()]}  # zarr-python 3 has no numcodecs.base64
    src = _source(tmp_path / "src.zarr", f=scaled, plain={"compressors": None})
    out = tmp_path / "out.zarr"
    with pytest.raises(UnsupportedTypeError, match=r"/f.*base64.*exclude=\['/f'\]"):
        nczarr.convert(str(src), str(out), mode="zarr", zarr_format=3)
    assert not (out / "zarr.json").exists()
    with pytest.warns(nczarr.NCZarrWarning, match="left out"):
        nczarr.convert(str(src), str(out), mode="zarr", zarr_format=3, exclude=["/f"])
    assert sorted(zarr.open_group(str(out), mode="r").array_keys()) == ["plain"]


def test_a_convert_that_would_leave_only_zarr_json_fails(tmp_path: Path) -> None:
    scaled = {"filters": [numcodecs.Base64()]}  # zarr-python 3 has no numcodecs.base64
    src = _source(tmp_path / "src.zarr", f=scaled)
    out = tmp_path / "out.zarr"
    with pytest.raises(UnsupportedTypeError, match="/f"):
        nczarr.convert(str(src), str(out), mode="zarr", zarr_format=3)
    assert not (out / "zarr.json").exists()
