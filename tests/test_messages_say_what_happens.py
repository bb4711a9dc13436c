"""Warnings and refusals name the real reason (issue 15, defect 9).

* The Zarr v3 warning about zarr-python's ``null_terminated_bytes`` type names only
  the arrays written with it, not those written as ``string`` or
  ``fixed_length_utf32`` (types of the specification).
* An object array nczarr cannot read (numcodecs ``categorize``, ``json2``) is refused
  for what it is, an object codec nczarr does not decode, not as "no netCDF-4
  equivalent" when the target is Zarr.
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

from .ncoracle import extract_fixture


def _text_sources(path: Path) -> Path:
    """zarr-python's own text arrays: numpy unicode and variable-length strings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        u = root.create_array("u", shape=(2,), dtype="<U3", compressors=None, fill_value="")
        u[...] = ["ab", "cde"]
        u.attrs["_ARRAY_DIMENSIONS"] = ["x"]
        s = root.create_array("s", shape=(2,), dtype=str, compressors=None)
        s[...] = ["ab", "cde"]
        s.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    return path


def test_null_terminated_bytes_warning_names_only_arrays_written_so(tmp_path: Path) -> None:
    src = _text_sources(tmp_path / "src.zarr")
    out = tmp_path / "out.zarr"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(str(src), str(out), mode="zarr", zarr_format=3)
    types = {n: json.loads((out / n / "zarr.json").read_text())["data_type"] for n in "us"}
    assert types["u"]["name"] == "fixed_length_utf32" and types["s"] == "string"
    said = [str(w.message) for w in caught if issubclass(w.category, nczarr.NCZarrWarning)]
    assert not [m for m in said if "null_terminated_bytes" in m], said


def test_null_terminated_bytes_warning_still_names_bytes_arrays(tmp_path: Path) -> None:
    src = extract_fixture("current_netcdf4101.zip", tmp_path)  # netcdf-c char array /c
    out = tmp_path / "out.zarr"
    with pytest.warns(nczarr.NCZarrWarning, match=r"'/c'.*null_terminated_bytes"):
        nczarr.convert(str(src), str(out), mode="zarr", zarr_format=3, exclude=["/v"])
    doc = json.loads((out / "c" / "zarr.json").read_text())
    assert doc["data_type"]["name"] == "null_terminated_bytes"


def test_a_categorize_array_is_refused_for_what_it_is(tmp_path: Path) -> None:
    codec = numcodecs.Categorize(labels=["a", "bb"], dtype=object)
    path = tmp_path / "cat.zarr"
    (path / "o").mkdir(parents=True)
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    zarray = {
        "zarr_format": 2,
        "shape": [3],
        "chunks": [3],
        "dtype": "|O",
        "fill_value": 0,
        "order": "C",
        "compressor": None,
        "filters": [codec.get_config()],
    }
    (path / "o" / ".zarray").write_text(json.dumps(zarray))
    (path / "o" / ".zattrs").write_text('{"_ARRAY_DIMENSIONS": ["x"]}')
    (path / "o" / "0").write_bytes(codec.encode(np.array(["a", "bb", "a"], dtype=object)))
    with pytest.raises(UnsupportedTypeError) as refused:
        nczarr.convert(str(path), str(tmp_path / "out.zarr"), mode="zarr")
    message = str(refused.value)
    assert "netCDF-4" not in message
    assert "'categorize'" in message and "['a', 'bb']" in message
