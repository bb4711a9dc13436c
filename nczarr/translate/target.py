"""``Target``: what a convert, a view or a writer produces, as one validated value.

The output format (current NCZarr, pure Zarr v2, pure Zarr v3) and its options
(``noxarray``, ``consolidated``, ``netcdf_scalars``, ``keep_shards``) used to be
threaded by hand through every layer as keyword arguments, and the impossible pairs (NCZarr over
Zarr v3; netcdf-c scalars in Zarr v3, which netcdf-c does not read) were refused at
three call sites. A :class:`Target` is checked once, when it is built at the edge
(``convert``, ``view``, ``migrate``, ``write``), and then passed whole: a writer, the
translation and the view read their options from it and never validate again.

Pure: no I/O, no import above ``translate/``.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import InvalidModeError
from ..records import record, replace
from .conventions import FORMATS

__all__ = ["Target", "check_zarr_format"]


def _check_format(format: Any) -> None:
    if format not in FORMATS:
        raise InvalidModeError(
            f"invalid format {format!r}: expected one of {', '.join(map(repr, FORMATS))}"
        )


def check_zarr_format(format: str, zarr_format: Any, *, netcdf_scalars: bool = False) -> int:
    """Validate a ``(format, zarr_format)`` pair; return the Zarr format (2 or 3).

    Raises
    ------
    InvalidModeError
        ``zarr_format`` is not 2 or 3; ``format`` is ``"nczarr"`` with 3 (NCZarr is
        defined over Zarr v2; netcdf-c's v3 drafts are not a stable format); or
        ``netcdf_scalars`` with 3 (it is for netcdf-c, which reads no Zarr v3).
    """
    if isinstance(zarr_format, bool) or zarr_format not in (2, 3):
        raise InvalidModeError(f"invalid zarr_format {zarr_format!r}: expected 2 or 3")
    if zarr_format == 3 and format != "zarr":
        _check_format(format)
        raise InvalidModeError(
            f"zarr_format=3 is written for format 'zarr' only, not {format!r}: NCZarr is "
            "Zarr v2 (netcdf-c reads no stable NCZarr over Zarr v3)"
        )
    if zarr_format == 3 and netcdf_scalars:
        raise InvalidModeError(
            "netcdf_scalars is for netcdf-c readers, which do not read Zarr v3: "
            "use it with zarr_format=2"
        )
    return int(zarr_format)


@record
class Target:
    """An output format and its options, valid by construction.

    Attributes
    ----------
    format : {"nczarr", "zarr"}
        ``"nczarr"``: the netcdf-c 4.9.3+ layout; ``"zarr"``: pure Zarr.
    zarr_format : {2, 3}
        The Zarr version of pure Zarr output (NCZarr is Zarr v2 only).
    noxarray : bool
        Omit ``_ARRAY_DIMENSIONS`` (``dimension_names`` in Zarr v3).
    consolidated : bool or None
        Write consolidated metadata (``.zmetadata``, or the Zarr v3 root's
        ``consolidated_metadata``). ``None``: as the source has it (a view or a
        convert decides with :meth:`resolved`; a writer reads it as ``False``).
    netcdf_scalars : bool
        Pure Zarr v2 only: scalars as netcdf-c writes them (shape ``[1]``,
        ``_ARRAY_DIMENSIONS: ["_scalar_"]``) instead of 0-d arrays.
    keep_shards : bool
        Zarr v3 only: a sharded source array keeps its shards (copied verbatim, the
        writer describes them). False where chunks are assembled one inner chunk at a
        time (combine, append): every sharded array is shown unsharded, its inner
        chunks re-encoded. Not a writer keyword (:meth:`options` leaves it out).
    written_copy : bool
        The metadata describes a copy written to storage (``convert``, ``migrate``),
        not a view read through (``view``, the xarray engine, ``open_zarr``) nor the
        metadata of a combine or an append. Where the source's metadata says another
        value than the one its producer's reader reads, a written copy says the value
        read: netcdf-c's ``9.96921e+36`` for the default double fill is written as
        NC_FILL_DOUBLE, with a warning (:func:`~nczarr.translate.zarr2_fills.exact_default_fills`).
        A view keeps the source's value, so the engine reads what netCDF4 reads. Not a
        writer keyword (:meth:`options` leaves it out).

    Raises
    ------
    InvalidModeError
        An unknown format, a Zarr version other than 2 or 3, or Zarr v3 with NCZarr
        or with ``netcdf_scalars``.

    Examples
    --------
    >>> Target("zarr", zarr_format=3).zarr_format
    3
    >>> Target("nczarr", zarr_format=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nczarr.errors.InvalidModeError: zarr_format=3 is written for format 'zarr' only, ...
    """

    format: Literal["nczarr", "zarr"] = "nczarr"
    zarr_format: int = 2
    noxarray: bool = False
    consolidated: bool | None = None
    netcdf_scalars: bool = False
    keep_shards: bool = True
    written_copy: bool = False

    def __post_init__(self) -> None:
        version = check_zarr_format(
            self.format, self.zarr_format, netcdf_scalars=bool(self.netcdf_scalars)
        )
        _check_format(self.format)
        object.__setattr__(self, "zarr_format", version)
        object.__setattr__(self, "noxarray", bool(self.noxarray))
        object.__setattr__(self, "netcdf_scalars", bool(self.netcdf_scalars))
        object.__setattr__(self, "keep_shards", bool(self.keep_shards))
        object.__setattr__(self, "written_copy", bool(self.written_copy))
        if self.consolidated is not None:
            object.__setattr__(self, "consolidated", bool(self.consolidated))

    @property
    def stored(self) -> bool:
        """Whether these metadata describe objects written to storage, which netCDF
        readers may read, rather than a view read through by zarr-python and xarray:
        a written copy (``written_copy``) or a part of a combine or an append
        (``keep_shards`` false: its chunks are assembled into a written store). The
        one place that tells the two apart for the warnings a copy's readers need."""
        return self.written_copy or not self.keep_shards

    @property
    def write_consolidated(self) -> bool:
        """Whether a writer writes consolidated metadata (``None`` reads as no)."""
        return bool(self.consolidated)

    def resolved(self, source_consolidated: bool) -> Target:
        """This target with ``consolidated=None`` decided by the source: consolidated
        metadata is written iff the source has it."""
        if self.consolidated is not None:
            return self
        return replace(self, consolidated=bool(source_consolidated))

    def options(self) -> dict[str, Any]:
        """The options (all but the format, ``keep_shards`` and ``written_copy``), as
        the keywords of ``view``/``write``."""
        return {
            "noxarray": self.noxarray,
            "consolidated": self.consolidated,
            "netcdf_scalars": self.netcdf_scalars,
            "zarr_format": self.zarr_format,
        }

    @property
    def name(self) -> str:
        """``"nczarr"``, ``"zarr"`` or ``"zarr v3"``: the target in messages."""
        return f"{self.format} v3" if self.zarr_format == 3 else self.format
