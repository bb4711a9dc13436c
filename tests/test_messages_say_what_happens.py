"""Warnings and refusals name the real reason (issue 15, defect 9).

* The Zarr v3 warning about zarr-python's ``null_terminated_bytes`` type names only
  the arrays written with it, not those written as ``string`` or
  ``fixed_length_utf32`` (types of the specification).
* zarr-python 2's categoricals of strings (numcodecs ``categorize``) are plain
  strings: carried to every target (re-encoded, and said so). An object array nczarr
  cannot read (``json2``) is refused for what it is, an object codec nczarr does not
  decode, not as "no netCDF-4 equivalent" when the target is Zarr.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
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


def _object_store(path: Path, codec, values) -> Path:
    """A Zarr v2 object array as zarr-python 2 wrote it (zarr-python 3 cannot)."""
    (path / "o").mkdir(parents=True)
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    zarray = {
        "zarr_format": 2,
        "shape": [len(values)],
        "chunks": [len(values)],
        "dtype": "|O",
        "fill_value": 0,
        "order": "C",
        "compressor": None,
        "filters": [codec.get_config()],
    }
    (path / "o" / ".zarray").write_text(json.dumps(zarray))
    (path / "o" / ".zattrs").write_text('{"_ARRAY_DIMENSIONS": ["x"]}')
    (path / "o" / "0").write_bytes(codec.encode(np.array(values, dtype=object)))
    return path


LABELS = ["a", "bb", "a"]


@pytest.mark.parametrize("target", ["zarr2", "zarr3", "nczarr"])
def test_a_categorize_array_of_strings_is_carried(tmp_path: Path, target: str) -> None:
    codec = numcodecs.Categorize(labels=["a", "bb"], dtype=object)
    src = _object_store(tmp_path / "cat.zarr", codec, LABELS)
    assert list(codec.decode((src / "o" / "0").read_bytes())) == LABELS  # the producer's view
    out = tmp_path / "out.file"
    mode = "nczarr" if target == "nczarr" else "zarr"
    version = 3 if target == "zarr3" else 2
    with pytest.warns(nczarr.NCZarrWarning, match="'categorize' codes become the strings"):
        nczarr.convert(str(src), str(out), mode=mode, zarr_format=version)
    if target == "nczarr":
        with netCDF4.Dataset(f"file://{out}#mode=nczarr,file") as ds:
            assert list(ds["o"][...]) == LABELS
    else:
        assert list(zarr.open_group(str(out), mode="r")["o"][...]) == LABELS
        report = nczarr.check(str(out))
        assert report.for_reader("zarr-python 3") == report.for_reader("xarray") == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nczarr.NCZarrWarning)
        assert list(nczarr.open_zarr(str(src))["o"][...]) == LABELS  # through the view


def test_an_object_array_nczarr_cannot_read_is_refused_for_what_it_is(tmp_path: Path) -> None:
    path = _object_store(tmp_path / "j.zarr", numcodecs.JSON(), ["a", 1, None])
    with pytest.raises(UnsupportedTypeError) as refused:
        nczarr.convert(str(path), str(tmp_path / "out.zarr"), mode="zarr")
    message = str(refused.value)
    assert "netCDF-4" not in message
    assert "object codec 'json2'" in message and "vlen-utf8" in message
