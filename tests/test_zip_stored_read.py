"""ZipMap reads uncompressed members with pread at a cached offset; the CRC still holds."""

from __future__ import annotations

import zipfile

import pytest

from nczarr.errors import StorageError
from nczarr.maps.zip import ZipMap


def test_stored_member_read_matches_zipfile(tmp_path):
    path = tmp_path / "a.zip"
    values = {f"v/{i}": bytes(range(256)) * i for i in range(5)}
    with ZipMap(path, mode="w") as m:
        m.update(values)
    with ZipMap(path, mode="r") as m, zipfile.ZipFile(path) as zf:
        for key, value in values.items():
            assert m[key] == value == zf.read(key)
            assert m[key] == value  # second read: cached offset


def test_stored_member_with_bad_crc_is_refused(tmp_path):
    path = tmp_path / "a.zip"
    with ZipMap(path, mode="w") as m:
        m["v/0"] = b"A" * 1000
        m["v/1"] = b"B" * 10
    raw = bytearray(path.read_bytes())
    where = raw.index(b"A" * 1000)
    raw[where + 500] = ord("Z")
    path.write_bytes(bytes(raw))
    with ZipMap(path, mode="r") as m:
        assert m["v/1"] == b"B" * 10
        with pytest.raises(StorageError, match=r"cannot read 'v/0' from .*corrupt member"):
            m["v/0"]
