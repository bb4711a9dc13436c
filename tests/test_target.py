"""One ``Target`` value, validated once; one ``WriteResult`` from every writer; a pure
``Translation`` under a thin view (issue 17)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import zarr

from nczarr.conversion.locations import target_of
from nczarr.conversion.plan import build_plan
from nczarr.errors import InvalidModeError
from nczarr.load import read_with_chunk_keys
from nczarr.maps.file import FileMap
from nczarr.readthrough import TranslatedView, view
from nczarr.translate.target import Target
from nczarr.translate.translation import draft, finish
from nczarr.translate.write_common import WriteResult
from nczarr.translate.write_nczarr import write_nczarr
from nczarr.translate.write_zarr import write_zarr
from nczarr.translate.write_zarr3 import write_zarr3
from nczarr.translate.writer import WRITERS, write_target


def _source(path: Path) -> Path:
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    for name in ("a", "b"):
        array = root.create_array(name, shape=(4,), chunks=(2,), dtype="f8", fill_value=0.0)
        array[:] = np.arange(4.0)
        array.attrs["_ARRAY_DIMENSIONS"] = ["x"]
    zarr.consolidate_metadata(str(path), zarr_format=2)
    return path


# ------------------------------------------------------------------ Target
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"format": "nczarr", "zarr_format": 3}, "zarr_format=3 is written for format 'zarr'"),
        ({"format": "zarr", "zarr_format": 3, "netcdf_scalars": True}, "netcdf_scalars is for"),
        ({"format": "hdf5"}, "invalid format 'hdf5'"),
        ({"format": "zarr", "zarr_format": 4}, "invalid zarr_format 4"),
        ({"format": "zarr", "zarr_format": True}, "invalid zarr_format True"),
    ],
)
def test_an_impossible_target_cannot_be_built(kwargs, message):
    with pytest.raises(InvalidModeError, match=message):
        Target(**kwargs)


def test_a_target_is_frozen_and_resolves_consolidated_from_the_source():
    target = Target("zarr", 3)
    with pytest.raises(AttributeError):
        target.zarr_format = 2  # type: ignore[misc]
    assert target.consolidated is None and not target.write_consolidated
    assert target.resolved(True).consolidated is True
    assert Target("zarr", consolidated=False).resolved(True).consolidated is False
    assert target.name == "zarr v3" and Target().name == "nczarr"


def test_target_of_a_convert_reads_the_url_mode_words(tmp_path):
    url = f"file://{tmp_path}/x.zarr#mode=zarr,v3,noxarray,consolidated,file"
    expected = Target("zarr", 3, noxarray=True, consolidated=True, written_copy=True)
    assert target_of(url, None) == expected
    # arguments win over the URL
    assert target_of(url, "zarr", zarr_format=2, noxarray=False).zarr_format == 2
    assert target_of(str(tmp_path / "y.zarr"), None) == Target("nczarr", written_copy=True)
    with pytest.raises(InvalidModeError, match="invalid mode 'hdf5'"):
        target_of(url, "hdf5")


# ------------------------------------------------------------------ writers
@pytest.mark.parametrize("key", sorted(WRITERS))
def test_every_writer_returns_a_write_result(tmp_path, key):
    dataset, _ = read_with_chunk_keys(FileMap(str(_source(tmp_path / "s.zarr"))))
    written = write_target(dataset, Target(*key))
    assert isinstance(written, WriteResult) and written.metadata
    assert all(isinstance(v, bytes) for v in written.metadata.values())


def test_the_writer_modules_return_write_results_too(tmp_path):
    dataset, _ = read_with_chunk_keys(FileMap(str(_source(tmp_path / "s.zarr"))))
    for result in (write_nczarr(dataset), write_zarr(dataset), write_zarr3(dataset)):
        assert isinstance(result, WriteResult)
    assert "zarr.json" in write_zarr3(dataset).metadata


# ------------------------------------------------------------------ Translation
def test_the_translation_is_what_the_view_shows(tmp_path):
    src = FileMap(str(_source(tmp_path / "s.zarr")), mode="r")
    read, keys = read_with_chunk_keys(src)
    target = Target("nczarr", consolidated=True)
    translation = finish(draft(read, keys, target))
    assert translation.complete and not translation.to_measure
    with TranslatedView.from_source(src, target) as shown:
        assert shown.translation == translation
        assert dict(translation.metadata) == shown.metadata
        assert translation.metadata[".zmetadata"]


def test_a_selected_view_pickles_with_its_target_and_selection(tmp_path):
    src = FileMap(str(_source(tmp_path / "s.zarr")), mode="r")
    with view(src, "zarr", zarr_format=3) as whole:
        kept = whole.selected(exclude=["b"])
        assert sorted(kept.chunk_keys()) == ["a/0", "a/1"]
        back = pickle.loads(pickle.dumps(kept))
        assert back == kept and back != whole
        assert back.target == Target("zarr", 3, consolidated=True)
        assert build_plan(back) == build_plan(kept)


def _sharded_source(path: Path) -> Path:
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    v = root.create_array("v", shape=(4, 6), chunks=(2, 3), shards=(4, 6), dtype="<f4")
    v[...] = np.arange(24, dtype="<f4").reshape(4, 6)
    return path


def test_keeping_shards_is_an_option_of_the_target(tmp_path):
    """One value carries it from the edge: the view keeps or unshards a Zarr v3 source's
    shards as its ``Target`` says, compares and pickles with it; no keyword elsewhere."""
    import inspect

    from nczarr.translate import translation

    assert Target("zarr", 3).keep_shards is True
    assert Target("zarr", 3, keep_shards=0).keep_shards is False  # type: ignore[arg-type]
    assert "keep_shards" not in Target("zarr", 3, keep_shards=False).options()
    for fn in (TranslatedView.from_source, TranslatedView.selected, translation.draft):
        assert "keep_shards" not in inspect.signature(fn).parameters, fn
    src = FileMap(str(_sharded_source(tmp_path / "s.zarr")), mode="r")
    kept = TranslatedView.from_source(src, Target("zarr", 3))
    split = TranslatedView.from_source(src, Target("zarr", 3, keep_shards=False))
    with kept, split:
        assert sorted(kept.chunk_keys()) == ["v/0.0"]  # the shard, as one object
        assert sorted(split.chunk_keys()) == ["v/0.0", "v/0.1", "v/1.0", "v/1.1"]
        assert kept != split and not split.translation.target.keep_shards
        back = pickle.loads(pickle.dumps(split.selected(include=["v"])))
        assert back == split.selected(include=["v"]) and back != kept
        assert sorted(back.chunk_keys()) == sorted(split.chunk_keys())
