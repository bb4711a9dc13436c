"""``NCZARR_*`` size settings: one parser; a value nczarr cannot use is refused with
an error naming the variable and the value, at import as well as in a call."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nczarr.environment import env_bytes
from nczarr.errors import InvalidSettingError, NCZarrError

NAME = "NCZARR_TEST_SETTING_BYTES"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, 7), ("", 7), ("  ", 7), ("0", 0), ("1048576", 2**20), ("32_000", 32000)],
)
def test_sizes_read_from_the_environment(monkeypatch, raw, expected) -> None:
    if raw is None:
        monkeypatch.delenv(NAME, raising=False)
    else:
        monkeypatch.setenv(NAME, raw)
    assert env_bytes(NAME, 7) == expected


@pytest.mark.parametrize("raw", ["32MB", "1.5", "-1", "abc", "0x10"])
def test_a_value_nczarr_cannot_use_is_refused_naming_it(monkeypatch, raw) -> None:
    monkeypatch.setenv(NAME, raw)
    with pytest.raises(InvalidSettingError, match=f"{NAME}={raw!r}") as caught:
        env_bytes(NAME, 7)
    assert isinstance(caught.value, NCZarrError) and isinstance(caught.value, ValueError)


def _import_with(setting: str, value: str, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, setting: value}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("setting", "module"),
    [
        ("NCZARR_BUFFER_POOL_BYTES", "nczarr.integrations.bufferpool"),
        ("NCZARR_MAX_CHUNK_BYTES", "nczarr.inflate"),
        ("NCZARR_DECODE_BUDGET", "nczarr.inflate"),
    ],
)
def test_a_bad_setting_fails_the_import_naming_it(setting, module) -> None:
    run = _import_with(setting, "lots", f"import {module}")
    assert run.returncode != 0
    assert f"InvalidSettingError: environment variable {setting}='lots'" in run.stderr


def test_a_pool_of_zero_bytes_keeps_nothing_between_reads() -> None:
    code = (
        "from nczarr.integrations.bufferpool import POOL; print(POOL.most_bytes); "
        "POOL.give(POOL.take(1 << 20)); print(POOL.held)"
    )
    run = _import_with("NCZARR_BUFFER_POOL_BYTES", "0", code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0", "0"]  # a buffer given back is not kept
