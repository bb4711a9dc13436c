"""The engine reads a plain array's chunks from the source map, not through the view.

A translated view passes most arrays' chunks through unchanged (same keys, same
bytes); reading them through the view's ``getitems`` cost a key normalisation and an
owner lookup per chunk on top of the source map's own. ``TranslatedView.chunk_map``
names the map to read an array's chunks from: the source for such arrays, the view
itself when it shows chunks under other keys (Zarr v3 sources) or re-encodes them.
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr
import zarr

import nczarr
from nczarr.readthrough import TranslatedView


def _netcdf_c_store(path: Path) -> str:
    url = f"file://{path}#mode=nczarr,file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.createDimension("y", 7)
        ds.createDimension("x", 5)
        a = ds.createVariable("a", "f4", ("y", "x"), chunksizes=(3, 2), zlib=True)
        a[:] = np.arange(35, dtype="f4").reshape(7, 5)
        b = ds.createVariable("b", "i2", ("x",), fill_value=-9)
        b[:2] = [1, 2]  # chunk 1 of b is never written: read as the fill value
    return url


def test_plain_chunks_are_read_from_the_source_map(tmp_path, monkeypatch) -> None:
    url = _netcdf_c_store(tmp_path / "s")
    through_view: list[str] = []
    real = TranslatedView.getitems

    def getitems(self, keys):
        keys = list(keys)
        through_view.extend(keys)
        return real(self, keys)

    monkeypatch.setattr(TranslatedView, "getitems", getitems)
    with (
        xr.open_dataset(url, engine="nczarr") as ds,
        xr.open_dataset(url, engine="netcdf4") as ref,
    ):
        xr.testing.assert_identical(ds.load(), ref.load())
        xr.testing.assert_identical(
            ds.isel(y=slice(1, 6, 2), x=3).load(), ref.isel(y=slice(1, 6, 2), x=3).load()
        )
    assert through_view == []


def test_chunk_map_is_the_source_only_for_arrays_passed_through(tmp_path) -> None:
    url = _netcdf_c_store(tmp_path / "s")
    with nczarr.view(url, "zarr") as shown:
        assert not shown.keys_mapped and not shown.reencoded
        assert shown.chunk_map("a") is shown.source
        assert shown.chunk_map("b") is shown.source
        assert shown.chunk_map("nosuch") is shown  # not an array of the view


def test_chunk_map_is_the_view_when_keys_are_shown_otherwise(tmp_path) -> None:
    src = tmp_path / "v3.zarr"
    group = zarr.open_group(src, mode="w", zarr_format=3)
    a = group.create_array("a", shape=(4,), chunks=(2,), dtype="i4")
    a[:] = [1, 2, 3, 4]
    with nczarr.view(src, "zarr") as shown:
        if shown.keys_mapped or shown.reencoded:
            assert shown.chunk_map("a") is shown
        else:
            assert shown.chunk_map("a") is shown.source
        np.testing.assert_array_equal(
            zarr.open_array(nczarr.ZarrStore(shown), path="a", mode="r")[...], [1, 2, 3, 4]
        )


def _selections(rng: np.random.Generator, shape: tuple[int, ...]) -> list[tuple]:
    out: list[tuple] = [tuple(slice(None) for _ in shape)]
    for _ in range(12):
        sel: list[object] = []
        for n in shape:
            kind = rng.integers(3)
            if kind == 0:
                sel.append(int(rng.integers(-n, n)))
            else:
                a, b = sorted(int(x) for x in rng.integers(-n - 1, n + 2, size=2))
                step = int(rng.integers(1, 4)) if kind == 2 else None
                sel.append(slice(a, b, step))
        out.append(tuple(sel))
    return out


def test_chunk_plan_is_the_indexers_own_iteration() -> None:
    from zarr.core.indexing import BasicIndexer
    from zarr.core.metadata.v2 import ArrayV2Metadata

    from nczarr.integrations.fastpipeline import chunk_grid, chunk_plan

    rng = np.random.default_rng(7)
    for shape, chunks, separator in [
        ((7, 5), (3, 2), "."),
        ((10,), (4,), "."),
        ((4, 6, 5), (2, 4, 5), "/"),
        ((3, 1, 8), (1, 1, 3), "."),
    ]:
        meta = ArrayV2Metadata.from_dict(
            {
                "zarr_format": 2,
                "shape": list(shape),
                "chunks": list(chunks),
                "dtype": "<f4",
                "compressor": None,
                "filters": None,
                "fill_value": 0,
                "order": "C",
                "dimension_separator": separator,
            }
        )
        for sel in _selections(rng, shape):
            indexer = BasicIndexer(sel, shape=meta.shape, chunk_grid=chunk_grid(meta))
            expected = [
                ("p/" + meta.encode_chunk_key(c), ("spec", cs, os_, whole))
                for c, cs, os_, whole in indexer
            ]
            keys, info = chunk_plan(indexer, meta, "p/", "spec")
            got = [(k, i[1:]) for k, i in zip(keys, info, strict=True)]
            assert got == expected, (shape, chunks, sel)
