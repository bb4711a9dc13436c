"""convert(): every input kind to both formats, through file, zip and S3 maps.

Oracles are the real libraries: netCDF4 (libnetcdf 4.10) opens every NCZarr result
(directory form, the only one its wheel supports); zarr-python and xarray open every
Zarr result without nczarr. Zip and S3 results are checked to hold exactly the keys
and bytes of the directory result, and every chunk is checked byte for byte against
the source.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import nczarr
from nczarr.errors import InvalidModeError, NCZarrWarning, TargetExistsError
from nczarr.maps.memory import MemoryMap

from .ncoracle import describe, diff, extract_fixture, file_tree

DATA = Path(__file__).parent / "data"

# --------------------------------------------------------------------------- inputs


def _write_netcdf(path: Path, fmt: str) -> Path:
    """A small dataset written by libnetcdf 4.10 itself, in NCZarr or pure Zarr form."""
    url = f"file://{path}#mode={fmt},file"
    with netCDF4.Dataset(url, "w") as ds:
        ds.title = "written by netCDF4"
        ds.counts = np.array([1, 2, 3], dtype="i4")
        ds.createDimension("x", 4)
        ds.createDimension("y", 3)
        v = ds.createVariable("v", "i4", ("x", "y"), chunksizes=(2, 2), zlib=True)
        v.units = "m"
        v.factor = np.float64(0.5)
        v[:] = np.arange(12, dtype="i4").reshape(4, 3) * 7 - 5
        t = ds.createVariable("t", "f8", ("x",), fill_value=-999.0)
        t[:] = [1.5, -2.25, 3.0, 4.75]
        sc = ds.createVariable("sc", "f4", ())
        sc[...] = 2.5
        g = ds.createGroup("g")
        gv = g.createVariable("gv", "u1", ("y",))
        gv[:] = [7, 8, 255]
        gv.long_name = "in a group"
        ds.createDimension("nchar", 5)
        code = ds.createVariable("code", "S1", ("x", "nchar"))
        code[:] = netCDF4.stringtochar(np.array(["alpha", "beta", "", "delta"], dtype="S5"))
        label = ds.createVariable("label", str, ("y",))
        label[:] = np.array(["one", "twenty-two", "\u00e9t\u00e9"], dtype=object)
    return path


def _zarr_python(path: Path) -> Path:
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    root.attrs["title"] = "zarr-python"
    a = root.create_array("a", shape=(6, 4), chunks=(4, 3), dtype="i2", fill_value=-1)
    a[:] = np.arange(24, dtype="i2").reshape(6, 4)
    a.attrs["_ARRAY_DIMENSIONS"] = ["rows", "cols"]
    sub = root.create_group("sub")
    b = sub.create_array("b", shape=(5,), chunks=(2,), dtype="f4", fill_value=0.0)
    b[:] = np.linspace(0, 1, 5, dtype="f4")
    b.attrs["_ARRAY_DIMENSIONS"] = ["n"]
    return path


def _xarray(path: Path) -> Path:
    import xarray as xr

    ds = xr.Dataset(
        {"temp": (("time", "lat"), np.arange(20.0).reshape(5, 4))},
        coords={"time": np.arange(5), "lat": [10.0, 20.0, 30.0, 40.0]},
        attrs={"source": "xarray"},
    )
    ds["temp"].attrs["units"] = "K"
    ds.to_zarr(str(path), zarr_format=2, consolidated=False, mode="w")
    return path


INPUTS = {
    "netcdf-nczarr": lambda tmp: _write_netcdf(tmp / "src.file", "nczarr"),
    "netcdf-zarr": lambda tmp: _write_netcdf(tmp / "src.file", "zarr"),
    "v2uc-4.9.0": lambda tmp: extract_fixture("v2uc_ncgen490.zip", tmp / "src"),
    "oldkeys-4.9.2": lambda tmp: extract_fixture("ref_oldkeys.file.zip", tmp / "src"),
    "v1": lambda tmp: extract_fixture("ref_oldformat_v1.zip", tmp / "src"),
    "current-4.10.1": lambda tmp: extract_fixture("current_netcdf4101.zip", tmp / "src"),
    "zarr-python": lambda tmp: _zarr_python(tmp / "src.zarr"),
    "xarray": lambda tmp: _xarray(tmp / "src.zarr"),
}


def _zip_content(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        names = [i.filename for i in zf.infolist() if not i.is_dir()]
        tops = {n.split("/", 1)[0] for n in names}
        strip = len(tops) == 1 and all("/" in n for n in names)
        return {(n.split("/", 1)[1] if strip else n): zf.read(n) for n in names}


def _s3_content(client, bucket: str, prefix: str) -> dict[str, bytes]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            body = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"].removeprefix(prefix)] = body
    return out


def _is_metadata(key: str) -> bool:
    name = key.rsplit("/", 1)[-1]
    return name.startswith(".z") or name.startswith(".ncz") or name == ".nczarr"


# --------------------------------------------------------------------------- oracles


def _nc_snapshot(path: Path, fmt: str) -> dict:
    """Everything netCDF4 sees: dims, variables (type, dims, values, attrs), group attrs."""
    out: dict = {}
    with netCDF4.Dataset(f"file://{path}#mode={fmt},file", "r") as ds:
        groups = [ds]
        while groups:
            g = groups.pop()
            gp = g.path
            out[("group", gp)] = {k: _plain(g.getncattr(k)) for k in g.ncattrs()}
            for name, d in g.dimensions.items():
                if name != "_scalar_":
                    out[("dim", gp, name)] = len(d)
            for name, v in g.variables.items():
                v.set_auto_mask(False)
                data = np.asarray(v[...])
                dims = v.dimensions
                if dims == ("_scalar_",):
                    # netcdf-c's pure-Zarr reading of a scalar: shape (1,) on `_scalar_`
                    data, dims = data.reshape(()), ()
                out[("var", gp, name)] = (
                    str(v.dtype),
                    dims,
                    data.tolist(),
                    {k: _plain(v.getncattr(k)) for k in v.ncattrs()},
                )
            groups.extend(g.groups.values())
    return out


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _check_zarr_result(path: Path, expected_values: dict[str, np.ndarray], dims: dict) -> None:
    """zarr-python and xarray, without nczarr, see the values and dimension names."""
    import xarray as xr
    import zarr

    group = zarr.open_group(str(path), mode="r")
    for fqn, values in expected_values.items():
        arr = group[fqn.strip("/")]
        got = np.asarray(arr[...])
        np.testing.assert_array_equal(_text(got.reshape(values.shape)), _text(values), err_msg=fqn)
    for gpath in {fqn.rsplit("/", 1)[0] or "/" for fqn in expected_values}:
        with xr.open_zarr(
            str(path),
            group=gpath.strip("/") or None,
            consolidated=False,
            mask_and_scale=False,
            concat_characters=False,  # compare char arrays as stored, like netCDF4
        ) as ds:
            for fqn, values in expected_values.items():
                parent, name = fqn.rsplit("/", 1)
                if (parent or "/") != gpath or fqn not in dims or values.ndim == 0:
                    continue
                assert ds[name].dims == dims[fqn], fqn
                np.testing.assert_array_equal(_text(ds[name].values), _text(values), err_msg=fqn)


def _text(values: np.ndarray) -> np.ndarray:
    """Strings and chars as ``str`` (netCDF4 gives ``str``, zarr-python ``bytes``), else as is."""
    if values.dtype.kind not in "OSU":
        return values
    flat = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values.ravel()]
    return np.array(flat, dtype=object).reshape(values.shape)


def _values_from_nc(snapshot: dict) -> tuple[dict[str, np.ndarray], dict[str, tuple]]:
    values, dims = {}, {}
    for key, val in snapshot.items():
        if key[0] == "var":
            fqn = (key[1].rstrip("/") + "/" + key[2]) if key[1] != "/" else "/" + key[2]
            text = val[0] in ("object", str(str))
            values[fqn] = np.asarray(val[2], dtype=object if text else val[0])
            dims[fqn] = tuple(val[1])
    return values, dims


def _values_from_zarr_source(path: Path) -> tuple[dict[str, np.ndarray], dict[str, tuple]]:
    import zarr

    values, dims = {}, {}
    root = zarr.open_group(str(path), mode="r")
    for name, arr in root.arrays():
        values["/" + name] = np.asarray(arr[...])
        dims["/" + name] = tuple(arr.attrs.get("_ARRAY_DIMENSIONS", ()))
    for gname, group in root.groups():
        for name, arr in group.arrays():
            values[f"/{gname}/{name}"] = np.asarray(arr[...])
            dims[f"/{gname}/{name}"] = tuple(arr.attrs.get("_ARRAY_DIMENSIONS", ()))
    return values, dims


# --------------------------------------------------------------------------- the matrix


@pytest.mark.parametrize("fmt", ["nczarr", "zarr"])
@pytest.mark.parametrize("kind", list(INPUTS))
def test_convert_every_input_to_both_formats(
    kind, fmt, tmp_path, s3_endpoint, s3_bucket, s3_client
):
    src = INPUTS[kind](tmp_path)
    before = file_tree(src)
    out = tmp_path / f"out.{fmt}"
    report = nczarr.convert(str(src), str(out), mode=fmt)
    assert file_tree(src) == before, "source modified"
    result = file_tree(out)

    # chunk objects: the same keys and bytes as the source's
    src_chunks = {k: v for k, v in before.items() if not _is_metadata(k)}
    out_chunks = {k: v for k, v in result.items() if not _is_metadata(k)}
    assert out_chunks == {k: src_chunks[k] for k in out_chunks}
    assert report.chunks_copied == len(out_chunks)
    assert report.bytes_copied == sum(map(len, out_chunks.values()))
    assert report.target_format == fmt
    assert report.chunks_skipped == 0
    assert report.arrays >= 1

    source_is_netcdf = kind in ("netcdf-nczarr", "netcdf-zarr", "current-4.10.1")
    if fmt == "nczarr":
        seen = _nc_snapshot(out, "nczarr")
        if source_is_netcdf:
            src_fmt = "zarr" if kind == "netcdf-zarr" else "nczarr"
            expected = _nc_snapshot(src, src_fmt)
            assert {k: v for k, v in seen.items() if k[0] == "var"} == {
                k: v for k, v in expected.items() if k[0] == "var"
            }
            if src_fmt == "nczarr":
                # (netcdf-c's pure-Zarr reading puts xarray dims in the array's own group;
                # nczarr resolves them to an ancestor's dimension of the same name and size)
                assert {k: v for k, v in seen.items() if k[0] == "dim"} == {
                    k: v for k, v in expected.items() if k[0] == "dim"
                }
        model = nczarr.read(str(src))
        # what libnetcdf sees in the result is exactly what nczarr read from the source
        # (netCDF4 cannot show a string variable's NCZarr maxstrlen; values compared above)
        assert diff(describe(out), model, ignore=("layout", "warnings", "maxstrlen")) == []
        assert sorted(k[2] for k in seen if k[0] == "var" and k[1] == "/") == sorted(
            model.root.variables
        )
        values, dims = _values_from_nc(seen)
        assert values
    else:
        # what netCDF4 (source) or an NCZarr round trip says the values are
        if source_is_netcdf:
            src_fmt = "zarr" if kind == "netcdf-zarr" else "nczarr"
            values, dims = _values_from_nc(_nc_snapshot(src, src_fmt))
        elif kind in ("zarr-python", "xarray"):
            values, dims = _values_from_zarr_source(src)
        else:
            back = tmp_path / "back.file"
            nczarr.convert(str(src), str(back), mode="nczarr")
            values, dims = _values_from_nc(_nc_snapshot(back, "nczarr"))
        _check_zarr_result(out, values, dims)

    # zip and S3 targets hold exactly what the directory target holds
    prefix = f"conv/{kind}/{fmt}"
    s3_url = f"{s3_endpoint}/{s3_bucket}/{prefix}#mode={fmt},s3"
    nczarr.convert(str(src), s3_url, mode=fmt)
    assert _s3_content(s3_client, s3_bucket, prefix + "/") == result
    zip_out = tmp_path / "out.zip"
    nczarr.convert(str(src), f"file://{zip_out}#mode={fmt},zip", mode=fmt)
    assert _zip_content(zip_out) == result


def test_zip_and_s3_sources_convert_like_directories(tmp_path, s3_endpoint, s3_bucket):
    reference = tmp_path / "ref.zarr"
    nczarr.convert(str(DATA / "v2uc_ncgen490.zip"), str(reference), mode="zarr")
    s3_src = f"{s3_endpoint}/{s3_bucket}/src#mode=nczarr,s3"
    nczarr.convert(str(DATA / "v2uc_ncgen490.zip"), s3_src, mode="nczarr")
    s3_out = f"{s3_endpoint}/{s3_bucket}/out#mode=zarr,s3"
    report = nczarr.convert(s3_src, s3_out)  # mode from the fragment
    assert report.target_format == "zarr"
    again = tmp_path / "again.zarr"
    nczarr.convert(s3_out, str(again), mode="zarr")
    assert file_tree(again) == file_tree(reference)


# --------------------------------------------------------------------------- options


def _current(tmp_path: Path) -> Path:
    return extract_fixture("current_netcdf4101.zip", tmp_path / "src")


def test_mode_defaults_to_nczarr_and_comes_from_fragment(tmp_path):
    src = _current(tmp_path)
    assert nczarr.convert(str(src), str(tmp_path / "a")).target_format == "nczarr"
    report = nczarr.convert(str(src), f"file://{tmp_path / 'b'}#mode=zarr,file")
    assert report.target_format == "zarr"
    root = json.loads((tmp_path / "b" / ".zattrs").read_bytes() or b"{}")
    assert not any(k.startswith("_nczarr") for k in root)


def test_bad_mode_is_refused(tmp_path):
    with pytest.raises(InvalidModeError, match="invalid mode 'hdf5'"):
        nczarr.convert(str(_current(tmp_path)), str(tmp_path / "x"), mode="hdf5")
    assert not (tmp_path / "x").exists()


def test_existing_target_refused_unchanged(tmp_path):
    src = _current(tmp_path)
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "keep.txt").write_bytes(b"precious")
    with pytest.raises(TargetExistsError, match=f"target {str(dst)!r} exists and is not empty"):
        nczarr.convert(str(src), str(dst))
    assert file_tree(dst) == {"keep.txt": b"precious"}


def test_existing_zip_and_s3_targets_refused_unchanged(tmp_path, s3_endpoint, s3_bucket, s3_client):
    src = _current(tmp_path)
    z = tmp_path / "t.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x/.zgroup", b"{}")
    before = z.read_bytes()
    with pytest.raises(TargetExistsError, match="exists and is not empty"):
        nczarr.convert(str(src), str(z))
    assert z.read_bytes() == before
    s3_client.put_object(Bucket=s3_bucket, Key="t/.zgroup", Body=b"{}")
    with pytest.raises(TargetExistsError, match=f"/{s3_bucket}/t"):
        nczarr.convert(str(src), f"{s3_endpoint}/{s3_bucket}/t#mode=nczarr,s3")
    assert _s3_content(s3_client, s3_bucket, "t/") == {".zgroup": b"{}"}


def test_overwrite_replaces_everything(tmp_path):
    src = _current(tmp_path)
    dst = tmp_path / "dst"
    nczarr.convert(str(src), str(dst), mode="zarr")
    (dst / "stale").mkdir()
    (dst / "stale" / "junk").write_bytes(b"x")
    nczarr.convert(str(src), str(dst), mode="nczarr", overwrite=True)
    fresh = tmp_path / "fresh"
    nczarr.convert(str(src), str(fresh), mode="nczarr")
    assert file_tree(dst) == file_tree(fresh)


def test_overwrite_and_resume_exclude_each_other(tmp_path):
    with pytest.raises(InvalidModeError, match="overwrite=True and resume=True"):
        nczarr.convert(str(_current(tmp_path)), str(tmp_path / "d"), overwrite=True, resume=True)


def test_source_and_target_must_not_overlap(tmp_path):
    src = _current(tmp_path)
    with pytest.raises(InvalidModeError, match="overlap; use migrate"):
        nczarr.convert(str(src), str(src), overwrite=True)
    with pytest.raises(InvalidModeError, match="overlap"):
        nczarr.convert(str(src), str(src / "inner"))
    assert (src / ".zattrs").exists()


def test_dry_run_plans_and_writes_nothing(tmp_path):
    src = _current(tmp_path)
    dst = tmp_path / "dry"
    report = nczarr.convert(str(src), str(dst), mode="zarr", dry_run=True)
    assert not dst.exists()
    real = nczarr.convert(str(src), str(tmp_path / "real"), mode="zarr")
    tree = file_tree(tmp_path / "real")
    assert report.dry_run
    assert sorted(report.planned_keys) == sorted(tree)
    assert report.planned_bytes == sum(map(len, tree.values()))
    assert report.planned_keys[-1] == ".zgroup"
    assert report.chunks_copied == 0 and real.chunks_copied > 0
    assert "dry run" in report.summary()


def test_write_order_chunks_then_arrays_then_root_last(tmp_path):
    src = _current(tmp_path)
    order: list[str] = []

    class Recording(MemoryMap):
        def _store(self, key, value):
            order.append(key)
            super()._store(key, value)

    dst = Recording()
    nczarr.convert(str(src), dst, mode="nczarr", workers=1)
    meta_start = next(i for i, k in enumerate(order) if _is_metadata(k))
    assert all(not _is_metadata(k) for k in order[:meta_start])
    assert all(_is_metadata(k) for k in order[meta_start:])
    root = [i for i, k in enumerate(order) if "/" not in k and _is_metadata(k)]
    assert root == list(range(len(order) - len(root), len(order)))
    assert order[-1] == ".zgroup"
    assert order.index("g/gv/.zarray") < order.index("g/.zattrs")


def test_include_exclude(tmp_path):
    import zarr

    src = _current(tmp_path)
    out = tmp_path / "inc"
    with pytest.warns(NCZarrWarning, match="left out by include/exclude"):
        report = nczarr.convert(str(src), str(out), mode="zarr", include=["/g/gv"])
    group = zarr.open_group(str(out), mode="r")
    assert [n for n, _ in group.arrays()] == []
    assert [n for n, _ in group["g"].arrays()] == ["gv"]
    assert report.arrays == 1
    assert any("left out by include/exclude" in w for w in report.warnings)
    assert all(k.startswith("g/") or "/" not in k for k in file_tree(out))
    out2 = tmp_path / "exc"
    with pytest.warns(NCZarrWarning, match="left out by include/exclude"):
        nczarr.convert(str(src), str(out2), mode="nczarr", exclude=["v", "/g"])
    seen = _nc_snapshot(out2, "nczarr")
    names = sorted(k[2] for k in seen if k[0] == "var")
    assert "v" not in names and "gv" not in names and names
    assert not (out2 / "v").exists()


def test_progress_callback_counts_chunks(tmp_path):
    src = _current(tmp_path)
    calls: list[tuple[int, int]] = []
    report = nczarr.convert(
        str(src), str(tmp_path / "p"), progress=lambda d, t: calls.append((d, t))
    )
    n = report.chunks_copied
    assert calls == [(i, n) for i in range(1, n + 1)]


def test_resume_skips_complete_chunks(tmp_path):
    src = _current(tmp_path)
    dst = tmp_path / "r"
    full = nczarr.convert(str(src), str(tmp_path / "full"), mode="zarr")
    reference = file_tree(tmp_path / "full")
    # an interrupted run: some chunks, no metadata
    chunks = sorted(k for k in reference if not _is_metadata(k))
    for key in chunks[:2]:
        (dst / key).parent.mkdir(parents=True, exist_ok=True)
        (dst / key).write_bytes(reference[key])
    report = nczarr.convert(str(src), str(dst), mode="zarr", resume=True)
    assert report.chunks_skipped == 2
    assert report.chunks_copied == full.chunks_copied - 2
    assert file_tree(dst) == reference


def test_server_side_copy_moves_no_chunk_bytes_through_client(s3_endpoint, s3_bucket, tmp_path):
    import zarr

    from nczarr.integrations.zarr_store import ZarrStore
    from nczarr.maps.s3 import S3Map

    src = S3Map(f"s3://{s3_bucket}/big", mode="a", endpoint_url=s3_endpoint)
    g = zarr.open_group(store=ZarrStore(src), mode="w", zarr_format=2)
    arr = g.create_array("big", shape=(20, 50_000), chunks=(1, 50_000), dtype="u1", fill_value=0)
    arr.attrs["_ARRAY_DIMENSIONS"] = ["r", "c"]
    arr[:] = np.repeat(np.arange(1, 21, dtype="u1")[:, None], 50_000, axis=1)
    chunk_sizes = {k: src.getsize(k) for k in src if k.startswith("big/") and ".z" not in k}
    dst = S3Map(f"s3://{s3_bucket}/copy", mode="a", endpoint_url=s3_endpoint)
    loaded = {"bytes": 0}
    real_load = src._load

    def counting_load(key):
        data = real_load(key)
        loaded["bytes"] += len(data)
        return data

    src._load = counting_load
    report = nczarr.convert(src, dst, mode="nczarr")
    assert report.chunks_copied == 20
    assert report.bytes_copied == sum(chunk_sizes.values())
    assert loaded["bytes"] < 2_000  # metadata only: no chunk byte read by this process
    for key in chunk_sizes:
        assert dst[key] == real_load(key)


def test_new_zip_target_layout_follows_the_format(tmp_path):
    src = _current(tmp_path)
    nczarr.convert(str(src), str(tmp_path / "nc.zip"), mode="nczarr")
    with zipfile.ZipFile(tmp_path / "nc.zip") as zf:
        assert {n.split("/", 1)[0] for n in zf.namelist()} == {"nc"}  # netcdf-c's layout
        assert "nc/.zattrs" in zf.namelist()
    nczarr.convert(str(src), str(tmp_path / "z.zip"), mode="zarr")
    with zipfile.ZipFile(tmp_path / "z.zip") as zf:
        assert ".zgroup" in zf.namelist()  # zarr-python's ZipStore layout
    import zarr

    with zarr.storage.ZipStore(tmp_path / "z.zip", mode="r") as store:
        group = zarr.open_group(store, mode="r")
        assert sorted(n for n, _ in group.arrays()) == ["c", "s", "sc", "v"]


def test_progress_bar_only_on_a_tty(tmp_path, monkeypatch):
    import io

    from nczarr.cli import main

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    assert main(["convert", str(_current(tmp_path)), str(tmp_path / "bar")]) == 0
    assert "100%" in err.getvalue() and "8/8" in err.getvalue()
