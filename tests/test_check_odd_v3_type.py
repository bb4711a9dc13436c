"""``nczarr check`` on a Zarr v3 array whose ``data_type`` is no name (a list, as the
surfaces fuzz drew it): reported, never a TypeError from a rule."""

from __future__ import annotations

import json

import nczarr


def test_check_reports_a_v3_data_type_that_is_a_list(tmp_path):
    store = tmp_path / "odd.zarr"
    (store / "v").mkdir(parents=True)
    (store / "zarr.json").write_text(
        json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}})
    )
    array = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [2],
        "data_type": [],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
        "dimension_names": ["x"],
    }
    (store / "v" / "zarr.json").write_text(json.dumps(array))
    report = nczarr.check(store)
    assert report.info.zarr_format == 3
