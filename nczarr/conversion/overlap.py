"""Where convert's source and target live, and whether they overlap: the rules are
the maps' own (:mod:`nczarr.maps.overlap`), shared with ``to_nczarr``; re-exported
here for convert and its callers."""

from __future__ import annotations

from ..maps.overlap import (
    DistinctTarget,
    Location,
    RealPaths,
    check_distinct,
    check_distinct_all,
    location_of,
    overlap,
)

__all__ = [
    "DistinctTarget",
    "Location",
    "RealPaths",
    "check_distinct",
    "check_distinct_all",
    "location_of",
    "overlap",
]
