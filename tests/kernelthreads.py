"""Test helpers: how many cores and what chunk size the kernel copiers see
(:func:`nczarr.maps.kernelcopy.copy_threads`), set for one test."""

from __future__ import annotations

import pytest

from nczarr.maps import kernelcopy

#: ``(cores, threshold)`` cases where kernel copies stay in the calling thread.
serial_cases = pytest.mark.parametrize(
    ("cores", "threshold"),
    [(2, kernelcopy.THREADED_COPY_BYTES), (1, 8)],
    ids=["small-chunks", "one-core"],
)


def machine(monkeypatch: pytest.MonkeyPatch, cores: int, threshold: int) -> None:
    """Make this process see ``cores`` cores and chunks of ``threshold`` bytes or more
    as large (8: every chunk of a test's tiny stores)."""
    monkeypatch.setattr(kernelcopy, "usable_cores", lambda: cores)
    monkeypatch.setattr(kernelcopy, "THREADED_COPY_BYTES", threshold)
