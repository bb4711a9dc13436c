"""The example counts of the hypothesis searches follow their environment variables."""

from __future__ import annotations

import pytest

from .budget import long_or


@pytest.mark.parametrize("value", ["", "0"])
def test_long_searches_are_off_unless_asked(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NCZARR_LONG_TESTS", value)
    assert long_or(12) == 12


def test_long_searches_are_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCZARR_LONG_TESTS", raising=False)
    assert long_or(12) == 12


def test_long_searches_run_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCZARR_LONG_TESTS", "1")
    assert long_or(12) == 200
    assert long_or(12, long=50) == 50
