"""zlib chunks inflated by libdeflate (the ``fast`` extra): zlib's values and zlib's errors.

:func:`nczarr.inflate.fast_inflate` uses imagecodecs' libdeflate binding when it is
installed (a test dependency, so CI runs both ways). Every test here runs twice:
with the library, and with it taken away (``_decode`` set to "not installed"), and
compares with numcodecs' ``Zlib.decode`` (the standard library's ``zlib``): the same
bytes, or the same exception type and message, for valid streams, streams with
trailing bytes, corrupt streams, bad Adler-32 checksums, truncated streams, a preset
dictionary, a smaller declared window, single damaged bytes anywhere, and streams
inflating past their declared size (the bound of :func:`nczarr.inflate.decompress`).
"""

from __future__ import annotations

import zlib

import numcodecs
import numpy as np
import pytest

from nczarr import inflate
from nczarr.errors import CorruptChunkError
from nczarr.integrations.chunkcodec import inflate_zlib


@pytest.fixture(params=["libdeflate", "zlib"])
def fast(request, monkeypatch) -> bool:
    """True: libdeflate is used; False: it is taken away (as if not installed)."""
    if request.param == "zlib":
        monkeypatch.setattr(inflate, "_decode", False)
        assert not inflate.fast_available()
        return False
    monkeypatch.setattr(inflate, "_decode", None)  # loaded afresh
    assert inflate.fast_available()  # imagecodecs is a test dependency
    return True


def _raw(n: int = 300_000) -> bytes:
    values = np.round(np.random.default_rng(5).normal(size=n // 4) * 10, 2).astype("<f4")
    return bytes(numcodecs.Shuffle(4).encode(values))


def _outcome(call, *args):
    try:
        return ("ok", bytes(call(*args)))
    except Exception as exc:  # the outcome compared: type and message
        return ("error", type(exc), str(exc))


def _set_fcheck(cmf: int, flg: int) -> bytes:
    """A zlib header with its check bits fixed (CMF * 256 + FLG divisible by 31)."""
    flg &= 0xE0
    return bytes([cmf, flg + (31 - (cmf * 256 + flg) % 31) % 31])


def _streams() -> dict[str, tuple[bytes, int]]:
    """Named zlib streams and the size each is declared to inflate to."""
    raw = _raw()
    good = zlib.compress(raw, 1)
    n = len(raw)
    bad_adler = good[:-1] + bytes([good[-1] ^ 1])
    corrupt = good[:200] + bytes(64) + good[264:]
    # a preset dictionary (FDICT): zlib needs the dictionary, refuses here
    dictionary = _set_fcheck(0x78, 0x20) + good[2:]
    # repeats 3000 bytes back under a header declaring a 1 KiB window (CINFO 2):
    # neither zlib nor libdeflate hold a stream to its declared window
    block = np.random.default_rng(1).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    far = zlib.compress(block * 4, 9)
    small_window = _set_fcheck(0x28, far[1]) + far[2:]
    return {
        "good": (good, n),
        "good level 9": (zlib.compress(raw, 9), n),
        "trailing garbage": (good + b"garbage", n),
        "shorter than declared": (zlib.compress(raw[:1000]), n),
        "longer than declared": (good, n - 1),
        "bad adler-32": (bad_adler, n),
        "truncated": (good[:-10], n),
        "header only": (good[:2], n),
        "corrupt": (corrupt, n),
        "preset dictionary": (dictionary, n),
        "small window, far distance": (small_window, len(block) * 4),
        "small window, near": (zlib.compressobj(1, zlib.DEFLATED, 9).compress(raw[:5000]), 5000),
        "empty": (b"", n),
        "empty stream": (zlib.compress(b""), 0),
        "not zlib": (b"\x00" * 40, n),
    }


STREAMS = _streams()


@pytest.mark.parametrize("name", list(STREAMS))
def test_inflate_zlib_is_numcodecs_zlib_decode(fast, name) -> None:
    data, size = STREAMS[name]
    expected = _outcome(numcodecs.Zlib().decode, data)
    assert _outcome(inflate_zlib, data, size) == expected
    buffer = np.full(size + 3, 7, dtype=np.uint8)
    assert _outcome(inflate_zlib, data, size, buffer) == expected


def test_libdeflate_is_used_when_installed(fast, monkeypatch) -> None:
    data, size = STREAMS["good"]
    calls = []
    real = zlib.decompress
    monkeypatch.setattr(zlib, "decompress", lambda *a: calls.append(1) or real(*a))
    assert inflate_zlib(data, size) == real(data)
    assert calls == ([] if fast else [1])
    out = np.empty(size, dtype=np.uint8)
    got = inflate_zlib(data, size, out)
    if fast:  # inflated into the caller's buffer
        assert np.shares_memory(got, out)


@pytest.mark.parametrize("name", list(STREAMS))
def test_bounded_decompress_same_with_and_without(fast, monkeypatch, name) -> None:
    """:func:`nczarr.inflate.decompress` (convert's re-encoding): the outcome without
    libdeflate is the outcome with it, the declared size bound included."""
    data, size = STREAMS[name]
    codec = numcodecs.Zlib()
    got = _outcome(inflate.decompress, codec, data, size)
    monkeypatch.setattr(inflate, "_decode", False)
    assert got == _outcome(inflate.decompress, codec, data, size)


def test_a_bomb_stops_at_the_declared_size(fast, monkeypatch) -> None:
    bomb = zlib.compress(bytes(64 << 20), 9)  # 64 MiB of zeros in ~64 KB
    asked = []
    if fast:
        real = inflate._load()

        def spy(data, out):
            asked.append(out if isinstance(out, int) else len(out))
            return real(data, out=out)

        monkeypatch.setattr(inflate, "_decode", spy)
    with pytest.raises(CorruptChunkError, match="inflates past its declared size of 4096"):
        inflate.decompress(numcodecs.Zlib(), bomb, 4096)
    assert asked == ([4096] if fast else [])


def test_random_damage_is_refused_or_read_as_zlib_does(fast) -> None:
    """Single damaged bytes anywhere in a stream: whatever zlib answers (an error, or
    values when the damage hits nothing checked), the fast path answers the same."""
    raw = _raw(40_000)
    good = zlib.compress(raw, 1)
    rng = np.random.default_rng(11)
    for _ in range(300):
        damaged = bytearray(good)
        pos = int(rng.integers(0, len(good)))
        damaged[pos] ^= int(rng.integers(1, 256))
        data = bytes(damaged)
        expected = _outcome(zlib.decompress, data)
        assert _outcome(inflate_zlib, data, len(raw)) == expected, pos
        bounded = _outcome(inflate.decompress, numcodecs.Zlib(), data, len(raw))
        assert bounded == _outcome(_stdlib, data, len(raw)), pos


def _stdlib(data: bytes, limit: int) -> bytes:
    """:func:`nczarr.inflate.decompress` for zlib without libdeflate."""
    saved = inflate._decode
    inflate._decode = False
    try:
        return inflate.decompress(numcodecs.Zlib(), data, limit)
    finally:
        inflate._decode = saved


def test_turned_off_by_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("NCZARR_FAST_INFLATE", "0")
    monkeypatch.setattr(inflate, "_decode", None)
    assert not inflate.fast_available()
    data, size = STREAMS["good"]
    assert inflate.fast_inflate(data, size) is None
    assert inflate_zlib(data, size) == zlib.decompress(data)


@pytest.mark.parametrize("size", [0, 1, 7, 4096, 300_001])
def test_crc32_is_zlibs(fast, size) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    assert inflate.crc32(data) == zlib.crc32(data)
    assert inflate.crc32(memoryview(data)) == zlib.crc32(data)


def test_zip_members_checked_with_the_fast_crc(fast, monkeypatch, tmp_path) -> None:
    """A zip read checks every member's CRC-32 with :func:`nczarr.inflate.crc32`
    (libdeflate's when installed); a damaged member is refused either way."""
    from nczarr.errors import StorageError
    from nczarr.maps.zip import ZipMap

    path = tmp_path / "a.zip"
    with ZipMap(path, mode="w") as m:
        m["v/0"] = b"A" * 5000
        m["v/1"] = _raw(20_000)
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"A" * 5000) + 2500] = ord("Z")
    path.write_bytes(bytes(raw))
    seen = []
    if fast:
        inflate._load()
        real = inflate._crc32
        monkeypatch.setattr(inflate, "_crc32", lambda d: seen.append(len(d)) or real(d))
    with ZipMap(path, mode="r") as m:
        assert m["v/1"] == _raw(20_000)
        with pytest.raises(StorageError, match=r"'v/0' .*Bad CRC-32"):
            m["v/0"]
    assert seen == ([20_000, 5000] if fast else [])


def test_a_small_zip_read_does_not_load_libdeflate(monkeypatch, tmp_path) -> None:
    """A process that only checks a few zip members' CRCs keeps zlib's (importing
    imagecodecs, ~0.2 s, would cost a small command more than it saves); past
    ``FAST_CRC_AFTER`` bytes it loads libdeflate, with the same values either way."""
    from nczarr.maps.zip import ZipMap

    path = tmp_path / "s.zip"
    with ZipMap(path, mode="w") as m:
        m["v/0"] = _raw(20_000)
    monkeypatch.setattr(inflate, "_decode", None)
    monkeypatch.setattr(inflate, "_crc32", None)
    monkeypatch.setattr(inflate, "_crc_zlib_bytes", 0)
    with ZipMap(path, mode="r") as m:
        assert m["v/0"] == _raw(20_000)
    assert inflate._decode is None  # not loaded
    monkeypatch.setattr(inflate, "FAST_CRC_AFTER", 30_000)
    with ZipMap(path, mode="r") as m:
        assert m["v/0"] == _raw(20_000)  # 40,000 bytes checked by zlib now
        assert m["v/0"] == _raw(20_000)
    assert inflate._decode is not None  # loaded (False only without the extra)
    assert inflate.fast_available()  # the test extra installs imagecodecs


def test_a_command_copying_a_small_zip_does_not_import_imagecodecs(tmp_path) -> None:
    import subprocess
    import sys

    from nczarr.maps.zip import ZipMap

    src = tmp_path / "src.zip"
    with ZipMap(src, mode="w") as m:
        m[".zgroup"] = b'{"zarr_format": 2}'
        m[".zattrs"] = b"{}"
    code = (
        "import sys, nczarr; nczarr.convert(sys.argv[1], sys.argv[2], 'zarr'); "
        "assert 'imagecodecs' not in sys.modules, 'imagecodecs imported'"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, f"file://{src}#mode=zarr,zip", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
