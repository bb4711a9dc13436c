"""numcodecs' array->array filters in Zarr v3 output: zarr-python's ``numcodecs.<id>`` codecs.

zarr-python 2 archives carry ``astype``, ``fixedscaleoffset``, ``quantize``,
``packbits`` and ``delta`` filters; zarr-python 3 reads them in Zarr v3 as the
``numcodecs.<id>`` array->array codecs. The source here is the real producer's
store (``tests/data/producers/z2_codecs.zip``, zarr-python 2.18), the v3 output is
read by zarr-python 3 and xarray and compared with what the producer's own readers
read (the recorded readings). Where no byte-identical v3 form exists the convert
refuses, naming the array and the codec.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
import zipfile
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import xarray as xr
import zarr

import nczarr
from nczarr.errors import UnsupportedError, UnsupportedTypeError
from nczarr.translate.codecs_v3 import v2_pipeline, v3_codecs

DATA = Path(__file__).parent / "data" / "producers"
_spec = importlib.util.spec_from_file_location(
    "producer_record", DATA.parent.parent / "producers" / "record.py"
)
_record = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_record)

RECORD = json.loads((DATA / "z2_codecs.json").read_text(encoding="utf-8"))
FILTERED = ["astype", "fixedscaleoffset", "quantize", "packbits", "delta"]


@pytest.fixture(scope="module")
def v3_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("filters") / "out.zarr"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nczarr.convert(str(DATA / "z2_codecs.zip"), str(out), mode="zarr", zarr_format=3)
    left_out = [str(w.message) for w in caught if "left out" in str(w.message)]
    assert left_out == []
    return out


@pytest.mark.parametrize("name", FILTERED)
def test_filter_is_written_as_its_numcodecs_v3_codec(name: str, v3_output: Path) -> None:
    codecs = json.loads((v3_output / name / "zarr.json").read_text())["codecs"]
    assert codecs[0]["name"] == f"numcodecs.{name}"
    with zipfile.ZipFile(DATA / "z2_codecs.zip") as archive:
        v2 = json.loads(archive.read(f"{name}/.zarray"))
        assert codecs[0]["configuration"] == {
            k: v for k, v in v2["filters"][0].items() if k != "id"
        }
        assert (v3_output / name / "0.0").read_bytes() == archive.read(f"{name}/0.0")  # verbatim


@pytest.mark.parametrize("name", FILTERED)
def test_zarr_python_3_reads_the_v3_output_as_the_producer_read_it(
    name: str, v3_output: Path
) -> None:
    expected = RECORD["zarr"]["arrays"][name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's numcodecs.* codecs are "not in the spec"
        array = zarr.open_array(str(v3_output / name), mode="r")
        got = array[...]
    want = _record.decode_array(expected["values"])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", FILTERED)
def test_xarray_reads_the_v3_output_as_it_read_the_producers_store(
    name: str, v3_output: Path
) -> None:
    expected = RECORD["xarray"]["variables"][name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = xr.open_zarr(str(v3_output), consolidated=False)[name].values
    want = _record.decode_array(expected["values"])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", FILTERED)
def test_nczarr_reads_its_v3_output_back_as_the_v2_filters(name: str, v3_output: Path) -> None:
    back = v3_output.parent / f"back-{name}.zarr"
    nczarr.convert(str(v3_output), str(back), mode="zarr", zarr_format=2, include=[f"/{name}"])
    with zipfile.ZipFile(DATA / "z2_codecs.zip") as archive:
        v2 = json.loads(archive.read(f"{name}/.zarray"))
    assert json.loads((back / name / ".zarray").read_text())["filters"] == v2["filters"]
    want = _record.decode_array(RECORD["zarr"]["arrays"][name]["values"])
    np.testing.assert_array_equal(zarr.open_array(str(back / name), mode="r")[...], want)


def test_zarr_python_3s_own_filtered_v3_arrays_read_as_zarr_python_reads_them(
    tmp_path: Path,
) -> None:
    """zarr-python 3 as the producer of the v3 filters: nczarr reads what it reads."""
    from zarr.codecs import numcodecs as v3

    reals = np.linspace(-3.5, 40.25, 24).reshape(4, 6)
    bits = np.array([[True, False, True, True, False, False]] * 4)
    made = {
        "fso": (reals, v3.FixedScaleOffset(offset=10, scale=100, dtype="<f8", astype="<i2")),
        "quantize": (reals, v3.Quantize(digits=2, dtype="<f8")),
        "astype": (reals, v3.AsType(encode_dtype="<f4", decode_dtype="<f8")),
        "packbits": (bits, v3.PackBits()),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(tmp_path / "z3.zarr"), mode="w", zarr_format=3)
        for name, (data, codec) in made.items():
            root.create_array(
                name, data=data, chunks=(2, 3), filters=[codec], dimension_names=["y", "x"]
            )
        read = {name: zarr.open_array(str(tmp_path / "z3.zarr" / name))[...] for name in made}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = xr.open_dataset(str(tmp_path / "z3.zarr"), engine="nczarr")
        for name in made:
            np.testing.assert_array_equal(ds[name].values, read[name])
    assert not [w for w in caught if "skipped" in str(w.message)]


# ------------------------------------------------------------------ no v3 form: refused
def _v2_source(path: Path, data: np.ndarray, filters: list, order: str = "C") -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=2)
        a = root.create_array(
            "a", shape=data.shape, chunks=data.shape, dtype=data.dtype, filters=filters, order=order
        )
        a[...] = data
    return path


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("f_order", "F-order"),
        ("quantize_astype", "astype '<f4' other than dtype '<f8'"),
        ("big_endian_input", "big-endian"),
    ],
)
def test_filters_without_a_v3_form_are_refused_naming_the_array(
    case: str, why: str, tmp_path: Path
) -> None:
    reals = np.linspace(0, 1, 6).reshape(2, 3)
    sources = {
        "f_order": (reals, [numcodecs.FixedScaleOffset(0, 10, dtype="<f8", astype="<i2")], "F"),
        "quantize_astype": (reals, [numcodecs.Quantize(2, dtype="<f8", astype="<f4")], "C"),
        "big_endian_input": (
            reals.astype(">f8"),
            [numcodecs.FixedScaleOffset(0, 10, dtype=">f8", astype=">i2")],
            "C",
        ),
    }
    data, filters, order = sources[case]
    src = _v2_source(tmp_path / "src.zarr", data, filters, order)
    with pytest.raises(UnsupportedTypeError, match=r"'/a'.*" + why.replace("(", r"\(")) as exc:
        nczarr.convert(str(src), str(tmp_path / "out.zarr"), mode="zarr", zarr_format=3)
    assert "exclude=['/a']" in str(exc.value)
    assert not (tmp_path / "out.zarr" / "zarr.json").exists()


def test_an_array_filter_after_a_bytes_filter_has_no_v3_form() -> None:
    with pytest.raises(UnsupportedError, match="'delta' after a bytes->bytes filter"):
        v3_codecs(
            order="C",
            endian="little",
            filters=[{"id": "zlib", "level": 1}, {"id": "delta", "dtype": "<i4"}],
            compressor=None,
            ndim=1,
            itemsize=4,
            data_type="int32",
        )


def test_a_filter_on_another_type_than_the_arrays_has_no_v3_form() -> None:
    with pytest.raises(UnsupportedError, match="takes <i2 but the array holds i4"):
        v3_codecs(
            order="C",
            endian="little",
            filters=[{"id": "delta", "dtype": "<i2"}],
            compressor=None,
            ndim=1,
            itemsize=4,
            data_type="int32",
        )


def test_v3_chain_whose_bytes_codec_swaps_the_filter_output_is_not_read_as_v2() -> None:
    chain = [
        {
            "name": "numcodecs.fixedscaleoffset",
            "configuration": {"dtype": "<f8", "astype": "<i4", "scale": 1, "offset": 0},
        },
        {"name": "bytes", "configuration": {"endian": "big"}},
    ]
    with pytest.raises(UnsupportedError, match="'bytes' writes big-endian"):
        v2_pipeline(chain, ndim=1, itemsize=8)
    chain[1]["configuration"]["endian"] = "little"
    pipeline = v2_pipeline(chain, ndim=1, itemsize=8)
    assert pipeline.endian == "little"
    assert pipeline.filters[0]["id"] == "fixedscaleoffset"
