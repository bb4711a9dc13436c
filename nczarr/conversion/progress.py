"""The ``progress=`` argument of ``convert`` and ``migrate``: a callable, a bool or None.

``True`` draws a tqdm bar on ``sys.stderr`` (as looked up at call time, so the CLI's
redirections apply); ``False`` and ``None`` report nothing; a callable is called as
``progress(done, total)``. Anything else is a ``TypeError`` naming the value, before
any work is done.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

__all__ = ["Progress", "ProgressArg", "progress_callback"]

#: ``progress(done, total)``: objects handled so far and in all.
Progress = Callable[[int, int], object]

#: What ``convert(progress=...)`` and ``migrate(progress=...)`` accept.
ProgressArg = bool | Progress | None


def progress_callback(progress: ProgressArg, stack: ExitStack, *, unit: str) -> Progress | None:
    """The ``progress(done, total)`` callable for a ``progress=`` argument.

    Parameters
    ----------
    progress
        ``True``: a progress bar on ``sys.stderr``, closed by ``stack``; ``False`` or
        ``None``: no reporting; a callable: itself.
    stack
        Owns the bar.
    unit
        What is counted (``"chunk"``, ``"object"``), shown by the bar.

    Raises
    ------
    TypeError
        ``progress`` is none of these.
    """
    if progress is None or progress is False:
        return None
    if progress is True:
        return _bar(stack, unit)
    if callable(progress):
        return progress
    raise TypeError(
        f"progress must be True, False, None or a callable progress(done, total), got {progress!r}"
    )


def _bar(stack: ExitStack, unit: str) -> Progress:
    """A tqdm bar, drawn at the first report (a dry run, which copies nothing, draws
    none) and closed by ``stack``."""
    bars: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bars:
            from tqdm import tqdm

            bars.append(
                stack.enter_context(tqdm(total=total, unit=unit, file=sys.stderr, leave=False))
            )
        bar = bars[0]
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)
        if done == total:
            bar.refresh()  # tqdm throttles redraws: show the final count

    return update
