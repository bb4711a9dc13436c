"""The budget of the long generated runs (hypothesis searches, seeded kill runs).

Tests marked ``@pytest.mark.generated`` take their example counts from
:func:`examples`: the full count by default, ``NCZARR_GENERATED_BUDGET`` times it when
that is set (``.ci/run`` uses 0.25 to keep CI within its time limit; ``=4`` for a
longer search). Nothing is skipped: every generated test runs at least one example,
and pytest's header prints the budget in force.
"""

from __future__ import annotations

import os

#: Factor applied to every generated run's example count.
BUDGET = float(os.environ.get("NCZARR_GENERATED_BUDGET", "") or 1)


def examples(full: int) -> int:
    """The example count for a run whose full count is ``full`` (at least 1)."""
    return max(1, round(full * BUDGET))


def long_or(count: int, long: int = 200) -> int:
    """``long`` examples when ``NCZARR_LONG_TESTS`` is set (not "" or "0"), else ``count``.

    For the local long searches: ``NCZARR_LONG_TESTS=1 pytest ...``.
    """
    return long if os.environ.get("NCZARR_LONG_TESTS", "") not in ("", "0") else count
