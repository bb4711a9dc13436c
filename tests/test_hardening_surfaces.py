"""Issue 16, defects 6-17: the engine, ``check``, ``dump``, re-encoding, shards, the
cluster path, S3 and zip archives never hang, crash or guess on hostile input.

Each test is the regression test of one defect: it failed on the code before the fix
(a silent fill value, a hang, a bare exception or a traceback). The stores are written
by their producers (zarr-python, numcodecs, the zipfile module) and then damaged the
way a truncated upload, a hostile archive or a stray file would damage them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

import nczarr
from nczarr.errors import CorruptChunkError, MetadataError, NCZarrError, NCZarrWarning
from nczarr.maps.memory import MemoryMap

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path, timeout: float = 120, env: dict | None = None):
    """Run the real ``nczarr`` command (this checkout) in a subprocess."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "nczarr.cli", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _quiet_zarr(path: Path, zarr_format: int = 2) -> zarr.Group:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_group(path, mode="w", zarr_format=zarr_format)


# ------------------------------------------------------------------ defect 10
def test_defect_10_check_of_deeply_nested_json_is_a_metadata_error(tmp_path: Path) -> None:
    store = {".zgroup": b"[" * 200000}
    with pytest.raises(MetadataError, match=r"\.zgroup"):
        nczarr.check(MemoryMap(dict(store), mode="r"))
    path = tmp_path / "deep.zarr"
    path.mkdir()
    (path / ".zgroup").write_bytes(b"[" * 200000)
    done = cli("check", str(path), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("nczarr: error: ") and len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------ defect 12
def _gzip_v2(path: Path) -> np.ndarray:
    group = _quiet_zarr(path)
    a = group.create_array(
        "v", shape=(6,), chunks=(2,), dtype="<i4", fill_value=-1, compressors=numcodecs.GZip()
    )
    a[:] = np.arange(6) * 3
    return np.asarray(a[...])


def test_defect_12_a_stray_file_beside_reencoded_chunks_is_skipped_with_a_warning(
    tmp_path: Path,
) -> None:
    src = tmp_path / "s.zarr"
    expected = _gzip_v2(src)
    (src / "v" / "README").write_text("not a chunk")
    out = tmp_path / "out.file"
    with pytest.warns(NCZarrWarning, match=r"skipped 'v/README': not a chunk key"):
        report = nczarr.convert(src, f"file://{out}#mode=nczarr,file", mode="nczarr")
    assert [p for p, _ in report.reencoded] == ["/v"]
    assert report.chunks_reencoded == 3
    assert any("v/README" in w for w in report.warnings)
    assert not (out / "v" / "README").exists()
    with (
        pytest.warns(NCZarrWarning, match=r"skipped 'v/README': not a chunk key"),
        nczarr.view(src, "nczarr") as shown,
    ):
        assert "v/README" not in shown and "v/README" not in set(shown.chunk_keys())
        with pytest.raises(KeyError):
            shown["v/README"]
    got = nczarr.read(out)
    assert got.find_variable("/v").shape == (6,)
    np.testing.assert_array_equal(zarr.open_array(out / "v", mode="r")[...], expected)


# ------------------------------------------------------------------ defect 14
def test_defect_14_report_lists_reencoded_arrays_for_zarr_v3_output(tmp_path: Path) -> None:
    group = _quiet_zarr(tmp_path / "sh.zarr", zarr_format=3)
    a = group.create_array(
        "sh", shape=(4, 6), chunks=(2, 3), shards=(4, 6), dtype="<i2", fill_value=-1
    )
    a[:] = np.arange(24, dtype="<i2").reshape(4, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        report = nczarr.convert(
            tmp_path / "sh.zarr", tmp_path / "o.zarr", mode="zarr", zarr_format=2
        )
        v3 = nczarr.convert(tmp_path / "sh.zarr", tmp_path / "o3.zarr", mode="zarr", zarr_format=3)
    assert report.chunks_reencoded == 4
    assert [p for p, _ in report.reencoded] == ["/sh"]
    assert "shards" in report.reencoded[0][1]
    # Zarr v3 output keeps the shard (issue 17): nothing re-encoded, nothing listed
    assert (v3.chunks_reencoded, v3.chunks_copied, v3.reencoded) == (0, 1, ())


# ------------------------------------------------------------------ defect 6
def _sharded(path: Path) -> np.ndarray:
    group = _quiet_zarr(path, zarr_format=3)
    a = group.create_array(
        "sh", shape=(4, 6), chunks=(2, 3), shards=(4, 6), dtype="<i2", fill_value=-1
    )
    a[:] = np.arange(24, dtype="<i2").reshape(4, 6)
    return np.asarray(a[...])


def _rewrite_index(shard: Path, entry: int, offset: int, *, fix_checksum: bool) -> None:
    """Point index entry ``entry`` of a shard (index at the end, bytes + crc32c) at
    ``offset``; keep the checksum valid or not."""
    import google_crc32c

    data = bytearray(shard.read_bytes())
    index = len(data) - (16 * 4 + 4)
    pairs = np.frombuffer(bytes(data[index : index + 64]), dtype="<u8").copy()
    pairs[2 * entry] = offset
    data[index : index + 64] = pairs.tobytes()
    checksum = google_crc32c.value(bytes(data[index : index + 64]))
    if not fix_checksum:
        checksum ^= 1
    data[-4:] = checksum.to_bytes(4, "little")
    shard.write_bytes(bytes(data))


def test_defect_6_a_shard_index_entry_past_the_end_is_an_error_naming_the_chunk(
    tmp_path: Path,
) -> None:
    src = tmp_path / "sh.zarr"
    _sharded(src)
    _rewrite_index(src / "sh/c/0/0", 1, 10**6, fix_checksum=True)  # inner chunk (0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        with pytest.raises(CorruptChunkError, match=r"'/sh'.*chunk \[0, 1\].*index entry 1"):
            nczarr.convert(src, tmp_path / "o.zarr", mode="zarr")
        with nczarr.view(src, "zarr") as shown, pytest.raises(CorruptChunkError, match="sh/c/0/0"):
            shown["sh/0.1"]
    done = cli("convert", str(src), str(tmp_path / "o2.zarr"), "--mode", "zarr", cwd=tmp_path)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if not line.startswith("nczarr: warn")]
    assert len(errors) == 1 and "corrupt shard" in errors[0], done.stderr


def test_defect_6_a_wrong_shard_index_checksum_is_one_clean_error(tmp_path: Path) -> None:
    src = tmp_path / "sh.zarr"
    _sharded(src)
    _rewrite_index(src / "sh/c/0/0", 0, 0, fix_checksum=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        with pytest.raises(CorruptChunkError, match=r"'/sh'.*checksum of its index is wrong"):
            nczarr.convert(src, tmp_path / "o.zarr", mode="zarr")
    done = cli("convert", str(src), str(tmp_path / "o2.zarr"), "--mode", "zarr", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if not line.startswith("nczarr: warn")]
    assert len(errors) == 1 and "checksum" in errors[0], done.stderr


# ------------------------------------------------------------------ defect 13
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"index_location": "sideways"}, "index_location must be 'start' or 'end'"),
        ({"index_codecs": "bytes"}, "index_codecs must be a non-empty list"),
        ({"index_codecs": [{"name": "gzip"}]}, "must start with the 'bytes' codec"),
        ({"index_codecs": [{"name": "bytes"}, {"name": "gzip"}]}, "may only be 'crc32c'"),
        ({"index_codecs": [{"nom": 1}]}, "codec must be a name"),
    ],
)
def test_defect_13_a_malformed_sharding_index_is_refused_when_reading_metadata(
    tmp_path: Path, change: dict, message: str
) -> None:
    src = tmp_path / "sh.zarr"
    _sharded(src)
    meta_path = src / "sh/zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["codecs"][0]["configuration"].update(change)
    meta_path.write_text(json.dumps(meta))
    # one odd array never fails the whole store: it is skipped, naming why, and
    # convert refuses it unless excluded
    for attempt in range(2):  # a second read gives the same warning, not AttributeError
        with pytest.warns(NCZarrWarning, match=rf"skipped array '/sh': 'sh/zarr\.json.*{message}"):
            assert nczarr.read(src).skipped == ("/sh",)
        with pytest.raises(NCZarrError, match=message):
            nczarr.convert(src, tmp_path / f"o{attempt}.zarr", mode="zarr")


# ------------------------------------------------------------------ defect 8
def _gzip_bomb(path: Path, inflated: int) -> None:
    """A v2 array of 4-value int32 chunks whose chunk 0 is a gzip stream of
    ``inflated`` zero bytes (a few kB on disk)."""
    group = _quiet_zarr(path)
    a = group.create_array(
        "v", shape=(8,), chunks=(4,), dtype="<i4", fill_value=0, compressors=numcodecs.GZip()
    )
    a[:] = np.arange(8)
    stream = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    bomb = b"".join(stream.compress(block) for _ in range(inflated >> 20)) + stream.flush()
    (path / "v" / "0").write_bytes(bomb)


def test_defect_8_a_chunk_inflating_past_its_declared_size_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "bomb.zarr"
    _gzip_bomb(src, 64 << 20)
    assert (src / "v" / "0").stat().st_size < 200_000
    out = f"file://{tmp_path / 'o.file'}#mode=nczarr,file"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        with pytest.raises(
            CorruptChunkError, match=r"'/v': chunk 'v/0'.*inflates past its declared size of 16"
        ):
            nczarr.convert(src, out, mode="nczarr")


def test_defect_8_a_chunk_larger_than_the_memory_budget_is_refused(tmp_path: Path) -> None:
    group = _quiet_zarr(tmp_path / "big.zarr")
    group.create_array(
        "v", shape=(2**29,), chunks=(2**29,), dtype="<f8", fill_value=0,
        compressors=numcodecs.GZip(),
    )  # fmt: skip
    (tmp_path / "big.zarr" / "v" / "0").write_bytes(numcodecs.GZip().encode(bytes(8)))
    out = f"file://{tmp_path / 'o.file'}#mode=nczarr,file"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        with pytest.raises(CorruptChunkError, match=r"'/v'.*more than the re-encoding budget"):
            nczarr.convert(src := tmp_path / "big.zarr", out, mode="nczarr")
    assert src.exists()


# ------------------------------------------------------------------ defect 7
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_defect_7_guessing_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    store = tmp_path / "s.zarr"
    store.mkdir()
    os.mkfifo(store / ".zattrs")  # opening it for reading blocks until a writer comes
    (store / ".zgroup").write_text('{"zarr_format": 2}')
    code = (
        "import sys\n"
        "from nczarr.integrations.xarray_backend import NCZarrBackendEntrypoint\n"
        "print(NCZarrBackendEntrypoint().guess_can_open(sys.argv[1]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(store)], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    # a real NCZarr root in .zgroup is still recognised beside the FIFO
    (store / ".zgroup").write_text('{"zarr_format": 2, "_nczarr_superblock": {"version": "3"}}')
    done = subprocess.run(
        [sys.executable, "-c", code, str(store)], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "True", done.stderr


# ------------------------------------------------------------------ defect 17
def test_defect_17_a_zip_member_declaring_more_than_the_cap_is_refused_unread(
    tmp_path: Path,
) -> None:
    import tracemalloc
    import zipfile

    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr(".zgroup", '{"zarr_format": 2}')
        with zf.open(".zattrs", "w", force_zip64=True) as member:
            member.write(b'{"a": "')
            block = b" " * (1 << 20)
            for _ in range(200):
                member.write(block)
            member.write(b'"}')
    assert path.stat().st_size < 400_000
    for call in (nczarr.read, nczarr.check, nczarr.view):
        tracemalloc.start()
        try:
            with pytest.raises(MetadataError, match=r"'\.zattrs' (declares|is larger)") as info:
                call(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 16 * 2**20, (call, peak)  # before: 64 MiB inflated, then refused
        assert "declares 2097" in str(info.value)


# ------------------------------------------------------------------ defect 16
def test_defect_16_an_unreachable_s3_endpoint_fails_in_seconds_naming_it(tmp_path: Path) -> None:
    import time

    credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    start = time.monotonic()
    done = cli(
        "ls", "http://127.0.0.1:1/bucket/key#mode=zarr,s3", cwd=tmp_path, timeout=50,
        env=credentials,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "S3 endpoint http://127.0.0.1:1" in done.stderr
    assert elapsed < 40  # before: more than 60 s (botocore's 10 retries with backoff)


def test_defect_16_a_users_own_connect_timeout_and_retries_win(monkeypatch) -> None:
    from nczarr.errors import StorageError
    from nczarr.maps.s3 import S3Map

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    # no probe of ours: botocore's own error, after the user's (single) attempt
    mine = {"connect_timeout": 1, "retries": {"max_attempts": 0}}
    with pytest.raises(StorageError, match=r"127\.0\.0\.1:1.*EndpointConnectionError"):
        S3Map("s3://bucket/key", endpoint_url="http://127.0.0.1:1", config_kwargs=mine)
    with pytest.raises(
        StorageError, match=r"cannot connect to the S3 endpoint http://127\.0\.0\.1:1"
    ):
        S3Map("s3://bucket/key", endpoint_url="http://127.0.0.1:1")


# ------------------------------------------------------------------ defect 11
def _truncated(path: Path) -> None:
    group = _quiet_zarr(path)
    a = group.create_array(
        "v", shape=(4, 6), chunks=(2, 3), dtype="<f8", fill_value=0, compressors=numcodecs.Zlib()
    )
    a[:] = np.random.default_rng(1).random((4, 6))
    group.attrs["title"] = "t"
    chunk = path / "v" / "1.0"
    chunk.write_bytes(chunk.read_bytes()[:20])


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if not line.startswith("nczarr: warn")]
    assert len(errors) == 1 and errors[0].startswith("nczarr: error: "), done.stderr
    return errors[0]


def test_defect_11_a_truncated_chunk_is_an_error_naming_key_and_store(tmp_path: Path) -> None:
    import xarray as xr

    src = tmp_path / "t.zarr"
    _truncated(src)
    line = _one_error_line(cli("dump", str(src), cwd=tmp_path))
    assert "'v/1.0'" in line and "t.zarr" in line
    ds = xr.open_dataset(src, engine="nczarr")
    try:
        with pytest.raises(CorruptChunkError, match=r"t\.zarr.*'/v'.*chunk 'v/1\.0'"):
            ds["v"].load()
        np.testing.assert_array_equal(ds["v"][:2].values.shape, (2, 6))  # the rest reads
    finally:
        ds.close()
    ds = xr.open_dataset(src, engine="nczarr", chunks={})
    try:
        with pytest.raises(NCZarrError, match=r"chunk 'v/1\.0'"):
            ds["v"].load()
    finally:
        ds.close()


def _huge(path: Path, shape: list[int], chunks: list[int]) -> None:
    path.mkdir()
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    (path / "v").mkdir()
    zarray = {
        "zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": "|i1",
        "compressor": {"id": "zlib", "level": 1}, "filters": None, "fill_value": 0,
        "order": "C",
    }  # fmt: skip
    (path / "v" / ".zarray").write_text(json.dumps(zarray))
    (path / "v" / "0").write_bytes(zlib.compress(bytes(16)))


def test_defect_11_a_shape_of_2_64_is_refused_at_read(tmp_path: Path) -> None:
    import xarray as xr

    src = tmp_path / "big.zarr"
    _huge(src, [2**64], [1])
    # one odd array never fails the whole store: that array is skipped, naming why
    skipped = r"skipped array '/v': 'v/\.zarray'.*\[18446744073709551616\]"
    with pytest.warns(NCZarrWarning, match=skipped):
        assert nczarr.read(src).skipped == ("/v",)
    with pytest.warns(NCZarrWarning, match=skipped):
        assert "v" not in xr.open_dataset(src, engine="nczarr")
    done = cli("dump", str(src), cwd=tmp_path)
    assert done.returncode == 0 and "18446744073709551616" in done.stderr
    assert "Traceback" not in done.stderr
    line = _one_error_line(cli("convert", str(src), str(tmp_path / "o.zarr"), cwd=tmp_path))
    assert "18446744073709551616" in line


def test_defect_11_a_chunk_of_2_40_elements_in_dump_is_a_clean_error(tmp_path: Path) -> None:
    src = tmp_path / "big.zarr"
    _huge(src, [2**40], [2**40])
    line = _one_error_line(cli("dump", str(src), cwd=tmp_path))
    assert "'/v'" in line and "1099511627776 bytes" in line
    header = cli("dump", "-h", str(src), cwd=tmp_path)
    assert header.returncode == 0 and "v(" in header.stdout


# ------------------------------------------------------------------ defect 9
def test_defect_9_a_store_declaring_2_40_chunks_is_refused_before_any_graph(
    tmp_path: Path,
) -> None:
    import xarray as xr

    from nczarr.errors import UnsupportedError

    src = tmp_path / "many.zarr"
    _huge(src, [2**40], [1])
    with pytest.raises(UnsupportedError, match=r"'/v' declares 1099511627776 chunks"):
        xr.open_dataset(src, engine="nczarr", chunks={})  # before: MemoryError
    with pytest.raises(UnsupportedError, match="task graph"):
        xr.open_dataset(src, engine="nczarr")
    assert nczarr.read(src).find_variable("/v").shape == (2**40,)  # metadata still reads


def test_defect_8_reencoding_threads_share_one_memory_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nczarr.reencode
    from nczarr.inflate import MemoryBudget

    group = _quiet_zarr(tmp_path / "g.zarr")
    a = group.create_array(
        "v", shape=(64, 256), chunks=(1, 256), dtype="<f8", fill_value=0,
        compressors=numcodecs.GZip(),
    )  # fmt: skip
    a[:] = np.arange(64 * 256, dtype="<f8").reshape(64, 256)
    chunk = 256 * 8
    budget = MemoryBudget(3 * 2 * chunk)  # three chunks in flight, whatever the workers
    monkeypatch.setattr(nczarr.reencode, "DECODE_BUDGET", budget)
    out = tmp_path / "o.file"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        report = nczarr.convert(
            tmp_path / "g.zarr", f"file://{out}#mode=nczarr,file", mode="nczarr", workers=16
        )
    assert report.chunks_reencoded == 64
    assert 2 * chunk <= budget.peak <= budget.total
    np.testing.assert_array_equal(zarr.open_array(out / "v", mode="r")[...], a[...])


def test_defect_13_a_failed_shard_read_fails_the_same_way_the_second_time(tmp_path: Path) -> None:
    src = tmp_path / "sh.zarr"
    _sharded(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NCZarrWarning)
        shown = nczarr.view(src, "zarr")
    meta = src / "sh" / "zarr.json"
    meta.write_text(meta.read_text().replace('"sharding_indexed"', '"no_such_codec"'))
    with shown:
        for _ in range(2):  # before: zarr's error, then AttributeError in reencode.py
            with pytest.raises(NCZarrError, match=r"sh/zarr\.json"):
                shown["sh/0.0"]
        meta.unlink()
        with pytest.raises(MetadataError, match=r"sh/zarr\.json"):
            shown["sh/0.1"]  # not a KeyError: a missing chunk would read as fill values
