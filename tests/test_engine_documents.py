"""The engine gets the view's translated metadata as documents, not as JSON it parses again.

The view's pure-Zarr writer used to serialise every metadata object to JSON bytes on
open (in Python), and the engine parsed each array's ``.zarray``/``.zattrs`` back, copying
the view's whole metadata once per variable. Now the writer keeps documents and
serialises each object when first asked for (:mod:`nczarr.translate.lazymeta`), and the
engine takes the documents: these tests show the bytes are unchanged for whoever reads
them, the documents equal the parsed bytes, warnings are not deferred, and the engine's
open serialises no ``.zattrs`` and reads the view's metadata once, not per variable (for
an NCZarr source: not at all, and serialises no ``.zarray`` either).
"""

from __future__ import annotations

import json
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

import nczarr
from nczarr.readthrough import TranslatedView
from nczarr.translate import lazymeta, write_common
from nczarr.translate.lazymeta import LazyMetadata
from nczarr.translate.writer import write, write_with_warnings


def _store(path: Path, nvars: int = 3) -> str:
    url = f"file://{path}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("y", 4)
        ds.createDimension("x", 3)
        ds.title = "t\u00e9st"
        for i in range(nvars):
            v = ds.createVariable(f"v{i}", "f4", ("y", "x"), chunksizes=(2, 2), zlib=True)
            v[:] = np.arange(12, dtype="f4").reshape(4, 3) + i
            v.units = "K"
            v.scale_factor = np.float32(0.5)
            v.valid_range = np.array([0.1, 1e30], "f4")
        g = ds.createGroup("g")
        w = g.createVariable("w", "i2", ("x",), fill_value=-9)
        w[:2] = [1, 2]
    return url


def test_documents_equal_the_parsed_bytes(tmp_path) -> None:
    with nczarr.view(_store(tmp_path / "s")) as shown:
        keys = list(shown.metadata)
        assert any(k.endswith(".zarray") for k in keys)
        for key in keys:
            assert shown.document(key) == json.loads(shown[key]), key
        assert shown.document("nothing/.zarray") is None


def test_bytes_are_those_the_eager_writer_wrote(tmp_path) -> None:
    url = _store(tmp_path / "s")
    dataset = nczarr.read(url)
    lazy = write_with_warnings(dataset, "zarr").metadata
    assert isinstance(lazy, LazyMetadata)
    for key in lazy:  # each document serialised as netcdf-c spaces JSON
        assert lazy[key] == write_common.dumps(lazy.document(key)), key
    plain = write(dataset, "zarr")
    assert type(plain) is dict and plain == dict(lazy)
    assert list(plain) == list(lazy)  # writing order kept


def test_a_document_is_serialised_once_when_first_read(tmp_path, monkeypatch) -> None:
    calls: list[object] = []
    meta = LazyMetadata()
    meta.add("a/.zattrs", {"x": 1.5}, lambda doc: calls.append(doc) or b"X")
    assert calls == [] and "a/.zattrs" in meta and len(meta) == 1
    assert meta["a/.zattrs"] == b"X" and meta["a/.zattrs"] == b"X"
    assert calls == [{"x": 1.5}]
    copy = meta.copy()
    meta["a/.zattrs"] = b'{"y": 2}'
    assert meta.document("a/.zattrs") == {"y": 2}  # bytes stored: parsed
    assert copy.document("a/.zattrs") == {"x": 1.5}
    del meta["a/.zattrs"]
    with pytest.raises(KeyError):
        meta.document("a/.zattrs")


def test_undecoded_bytes_are_written_and_warned_about_at_once(tmp_path) -> None:
    # a char attribute netcdf-c 4.9 kept as raw bytes (read back as lone surrogates)
    dataset = nczarr.read(_store(tmp_path / "s"))
    root = dataset.root
    attr = root.attributes["title"]
    root.attributes["title"] = type(attr)(attr.name, attr.type, "a\udc80b")
    written = write_with_warnings(dataset, "zarr")
    assert any("Latin-1" in w for w in written.warnings)
    assert json.loads(written.metadata[".zattrs"])["title"] == "a\u0080b"
    assert written.metadata.document(".zattrs")["title"] == "a\u0080b"


def test_engine_open_serialises_no_attributes(tmp_path, monkeypatch) -> None:
    url = _store(tmp_path / "s")
    serialised: list[object] = []
    real = lazymeta._Pending.__init__

    def pending(self, doc, serialise):
        real(self, doc, lambda d: serialised.append(d) or serialise(d))

    monkeypatch.setattr(lazymeta._Pending, "__init__", pending)
    with xr.open_dataset(url, engine="nczarr") as ds, xr.open_dataset(url, engine="netcdf4") as ref:
        xr.testing.assert_identical(ds.load(), ref.load())
    # nothing: no .zattrs, no .zgroup, and no .zarray either (the sharded-v3 check asks
    # for an array's .zarray only when the source holds that array as Zarr v3)
    assert serialised == []


@pytest.mark.parametrize("nvars", [2, 12])
def test_engine_reads_the_views_metadata_once_per_open(tmp_path, monkeypatch, nvars) -> None:
    url = _store(tmp_path / "s", nvars)
    copies = [0]
    real = TranslatedView.metadata.fget

    def metadata(self):
        copies[0] += 1
        return real(self)

    monkeypatch.setattr(TranslatedView, "metadata", property(metadata))
    with xr.open_dataset(url, engine="nczarr") as ds:
        assert len(ds.data_vars) == nvars
    assert copies[0] == 0  # an NCZarr (Zarr v2) source: the sharded-v3 check needs none


_DOCS = [
    {"dtype": "<f4", "fill_value": "NaN", "compressor": {"id": "zlib", "level": 1}},
    {"dtype": ">i2", "fill_value": -9, "filters": [{"id": "shuffle", "elementsize": 2}]},
    {"dtype": "|S1", "fill_value": "AA==", "dimension_separator": "/"},
    {"dtype": "<U3", "fill_value": "abc", "order": "F"},
    {"dtype": "|b1", "fill_value": True, "unknown_key": 1},
    {"dtype": "<f8", "fill_value": None, "filters": None},
    {"dtype": "|O", "fill_value": "", "filters": [{"id": "vlen-utf8"}]},
    {"dtype": [["a", "<i4"], ["b", "<f8"]], "fill_value": None},
    {"dtype": "<i4", "fill_value": 0, "filters": []},
]


@pytest.mark.parametrize("extra", _DOCS)
def test_v2_metadata_is_zarrs_from_dict(extra) -> None:
    import warnings

    from zarr.core.metadata.v2 import ArrayV2Metadata

    from nczarr.integrations.v2arrays import v2_metadata

    zarray = {"zarr_format": 2, "shape": [4, 3], "chunks": [2, 2], "order": "C"}
    zarray.update({"compressor": None, "filters": None, **extra})
    attrs = {"units": "K", "_ARRAY_DIMENSIONS": ["y", "x"]}
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = ArrayV2Metadata.from_dict({**zarray, "attributes": attrs})
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = v2_metadata(zarray, attrs)
    assert ours.to_dict() == theirs.to_dict() and ours.dtype == theirs.dtype  # (NaN != NaN)
    assert repr(ours) == repr(theirs)
    assert [str(w.message) for w in ours_warned] == [str(w.message) for w in theirs_warned]


def test_engine_resolves_each_data_type_once(tmp_path, monkeypatch) -> None:
    from zarr.core.dtype.registry import DataTypeRegistry

    from nczarr.integrations import v2arrays

    url = _store(tmp_path / "s", 12)
    v2arrays._v2_dtype.cache_clear()
    matched: list[object] = []
    real = DataTypeRegistry.match_json

    def match_json(self, data, *args, **kwargs):
        matched.append(data)
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(DataTypeRegistry, "match_json", match_json)
    with xr.open_dataset(url, engine="nczarr") as ds, xr.open_dataset(url, engine="netcdf4") as ref:
        xr.testing.assert_identical(ds.load(), ref.load())
    assert len(matched) == 1  # 12 float32 variables: one data type


def test_nested_fast_pipeline_blocks_set_zarrs_configuration_once(monkeypatch) -> None:
    from zarr.core.config import config

    from nczarr.integrations.fastpipeline import PIPELINE_PATH, fast_pipeline

    sets = []
    real = type(config).set

    def set_(self, *args, **kwargs):
        sets.append(args)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(config), "set", set_)
    before = config.get("codec_pipeline.path")
    with fast_pipeline():
        with fast_pipeline():
            assert config.get("codec_pipeline.path") == PIPELINE_PATH
        assert config.get("codec_pipeline.path") == PIPELINE_PATH
    assert config.get("codec_pipeline.path") == before
    assert len(sets) == 1
