"""Selecting arrays: ``include``/``exclude`` patterns over the model (pure).

A pattern is a variable or group FQN (``/g/v``, ``/g``), the same without the leading
``/``, or a bare name (``v``: every variable or group called ``v``). Applied before
the writer runs (:func:`nczarr.translate.translation.draft`), so the metadata of a selection
is written once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence

from ..errors import InvalidModeError
from ..records import replace
from .model import Dataset, Group

__all__ = [
    "check_matched",
    "dropped_warning",
    "matched_patterns",
    "reencoded_note",
    "select_dataset",
    "selected_paths",
]


_REENCODED = "re-encoded array "


def reencoded_note(path: str, reason: str) -> str:
    """How a reader notes in ``Dataset.warnings`` that array ``path`` (``/g/v``) is
    re-encoded (a ``.nc`` file's, at open): :func:`select_dataset` drops the notes of
    the arrays it leaves out, so an excluded array is not warned about."""
    return f"{_REENCODED}{path!r}: {reason}"


def _variable_paths(group: Group) -> Iterator[str]:
    for variable in group.all_variables():
        yield variable.path


def _matches(pattern: str, path: str) -> bool:
    """Whether ``pattern`` (an FQN, a relative path or a bare name) names ``path`` or an
    ancestor group of it."""
    fqn = "/" + pattern.strip("/")
    if "/" not in pattern.strip("/") and not pattern.startswith("/"):
        # A bare name: the variable (or group) of that name anywhere.
        return pattern in path.strip("/").split("/")
    return path == fqn or path.startswith(fqn.rstrip("/") + "/") or fqn == "/"


def _valid(pattern: object) -> bool:
    """Whether ``pattern`` is a path or a name at all (not empty, ``/``, or no string)."""
    return isinstance(pattern, str) and bool(pattern.strip("/"))


def _check_form(patterns: Iterable[object]) -> None:
    """Refuse a pattern that is no path or name at all, naming it."""
    for pattern in patterns:
        if not _valid(pattern):
            raise InvalidModeError(f"invalid variable pattern {pattern!r}")


def matched_patterns(
    dataset: Dataset,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
) -> frozenset[str]:
    """The patterns of ``include`` and ``exclude`` that match a variable, a group or a
    skipped array of ``dataset`` (an invalid pattern matches nothing). A combine
    gathers them over all its sources: a pattern is then checked once against every
    source together (:func:`check_matched`), so it may name a variable only some
    sources hold."""
    patterns = [p for p in (*(include or ()), *(exclude or ())) if _valid(p)]
    if not patterns:
        return frozenset()
    paths = (
        *_variable_paths(dataset.root),
        *(g.path for g in dataset.root.walk()),
        *dataset.skipped,
    )
    return frozenset(p for p in patterns if any(_matches(p, path) for path in paths))


def check_matched(
    include: Sequence[str] | None,
    exclude: Sequence[str] | None,
    matched: Collection[str],
    where: str = "",
) -> None:
    """Refuse the first pattern of ``include``/``exclude`` that is invalid or not among
    ``matched`` (what :func:`matched_patterns` found), naming it: a typo is not a
    silent no-op. ``where``: appended to the message (which sources were searched)."""
    for pattern in (*(include or ()), *(exclude or ())):
        _check_form((pattern,))
        if pattern not in matched:
            raise InvalidModeError(
                f"variable pattern {pattern!r} matches no variable or group{where}"
            )


def select_dataset(
    dataset: Dataset,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    *,
    strict: bool = True,
) -> Dataset:
    """The dataset restricted to the variables ``include`` names minus those ``exclude`` names.

    A pattern is a variable or group FQN (``/g/v``, ``/g``), the same without the
    leading ``/``, or a bare name (``v``: every variable or group called ``v``). A
    group pattern stands for everything below it. With ``include``, only the groups
    leading to a selected variable (or named themselves) are kept; ``exclude`` alone
    keeps every group. Dimensions of kept groups are always kept.

    ``strict`` false: a pattern that matches nothing here selects nothing here (a
    source of a combine; the combine checks the patterns against all its sources
    together, :func:`matched_patterns`); an invalid pattern is still refused.

    Raises
    ------
    InvalidModeError
        A pattern matches nothing (the message names it), so a typo is not a silent
        empty conversion (unless ``strict`` is false).
    """
    include = list(include or ())
    exclude = list(exclude or ())
    if not include and not exclude:
        return dataset
    if strict:
        check_matched(include, exclude, matched_patterns(dataset, include, exclude))
    else:
        _check_form((*include, *exclude))
    paths = list(_variable_paths(dataset.root))
    group_paths = [g.path for g in dataset.root.walk()]
    keep_var = {
        p
        for p in paths
        if (not include or any(_matches(i, p) for i in include))
        and not any(_matches(e, p) for e in exclude)
    }
    keep_group = {
        g
        for g in group_paths
        if not any(_matches(e, g) for e in exclude)
        and (
            not include
            or g == "/"
            or any(_matches(i, g) for i in include)
            or any(v.startswith(g.rstrip("/") + "/") for v in keep_var)
        )
    }
    dropped = {reencoded_note(p, "") for p in paths if p not in keep_var}
    return replace(
        dataset,
        root=_prune(dataset.root, keep_var, keep_group),
        warnings=tuple(w for w in dataset.warnings if not _note_of(w, dropped)),
    )


def _note_of(warning: str, notes: set[str]) -> bool:
    """Whether ``warning`` is the :func:`reencoded_note` of one of the arrays whose
    empty notes are ``notes``."""
    return warning.startswith(_REENCODED) and any(map(warning.startswith, notes))


def selected_paths(
    paths: Iterable[str], include: Sequence[str] | None, exclude: Sequence[str] | None
) -> list[str]:
    """The FQNs among ``paths`` that ``include``/``exclude`` keep (see :func:`select_dataset`)."""
    return [
        p
        for p in paths
        if (not include or any(_matches(i, p) for i in include))
        and not any(_matches(e, p) for e in exclude or ())
    ]


def _prune(group: Group, keep_var: set[str], keep_group: set[str]) -> Group:
    return replace(
        group,
        variables={n: v for n, v in group.variables.items() if v.path in keep_var},
        groups={
            n: _prune(g, keep_var, keep_group)
            for n, g in group.groups.items()
            if g.path in keep_group
        },
    )


def dropped_warning(read: Dataset, selected: Dataset) -> tuple[str, ...]:
    """The warning naming the arrays of ``read`` that the selection left out, if any."""
    kept = frozenset(_variable_paths(selected.root))
    dropped = sorted(p.lstrip("/") for p in _variable_paths(read.root) if p not in kept)
    if not dropped:
        return ()
    return (
        f"{len(dropped)} array(s) left out by include/exclude: "
        + ", ".join("/" + d for d in dropped[:10])
        + (" ..." if len(dropped) > 10 else ""),
    )
