"""``ConvertReport``: what a convert or migrate did, for programs and (one line) for people."""

from __future__ import annotations

from ..records import field, record

__all__ = ["ConvertReport"]


@record(frozen=False)
class ConvertReport:
    """What a :func:`convert` or :func:`migrate` did (or, for a dry run, would do).

    Attributes
    ----------
    source, target
        The URLs of source and target (the same for ``migrate``).
    source_layout
        Layout the source was read as (``nczarr-v1``, ``nczarr-v2-keys``, ``nczarr-v2``,
        ``zarr``).
    target_format
        ``"nczarr"`` or ``"zarr"``.
    zarr_format
        2 or 3: the Zarr version of the target's metadata.
    arrays
        Number of arrays (netCDF variables) in the target.
    chunks_copied, chunks_skipped, bytes_copied
        Chunk objects copied verbatim, chunk objects skipped by ``resume`` (already
        complete), and chunk bytes written (copied or re-encoded).
    chunks_reencoded
        Chunk objects decoded and encoded again (see :mod:`nczarr.reencode`).
    reencoded
        ``(array FQN, reason)`` for every array whose chunks are re-encoded (also in
        ``warnings``, and announced as :class:`~nczarr.errors.NCZarrWarning`).
    metadata_written, deleted_keys
        Metadata keys written, and legacy keys deleted (``migrate``).
    seconds
        Wall time.
    warnings
        What the target cannot carry or netcdf-c cannot read, and arrays left out.
    dry_run, planned_keys, planned_bytes
        For a dry run: every key that would be written, in order, and the bytes that
        would be written (chunks plus metadata). Nothing is written. A dry run of a
        combine or an append also counts, in ``chunks_copied`` and
        ``chunks_reencoded``, the chunks that would be copied and re-encoded.
    operation
        ``"convert"`` or ``"migrate"``.
    """

    source: str
    target: str
    source_layout: str
    target_format: str
    arrays: int = 0
    chunks_copied: int = 0
    chunks_reencoded: int = 0
    chunks_skipped: int = 0
    bytes_copied: int = 0
    metadata_written: tuple[str, ...] = ()
    deleted_keys: tuple[str, ...] = ()
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()
    dry_run: bool = False
    planned_keys: tuple[str, ...] = field(default=(), repr=False)
    planned_bytes: int = 0
    operation: str = "convert"
    reencoded: tuple[tuple[str, str], ...] = ()
    zarr_format: int = 2

    @property
    def _target_name(self) -> str:
        return f"{self.target_format} v3" if self.zarr_format == 3 else self.target_format

    def summary(self) -> str:
        """One line for humans (what the CLI prints)."""
        if self.operation == "migrate":
            what = "would write" if self.dry_run else "wrote"
            gone = "would delete" if self.dry_run else "deleted"
            written = self.planned_keys if self.dry_run else self.metadata_written
            return (
                f"{'dry run: ' if self.dry_run else ''}migrate {self.source} "
                f"({self.source_layout}) to {self.target_format}: {self.arrays} arrays, "
                f"{what} {len(written)} metadata objects, {gone} {len(self.deleted_keys)} "
                f"legacy objects in {self.seconds:.2f} s"
                + (f" ({len(self.warnings)} warnings)" if self.warnings else "")
            )
        if self.dry_run:
            return (
                f"dry run: {self.source} ({self.source_layout}) -> {self.target} "
                f"({self._target_name}): {self.arrays} arrays, {len(self.planned_keys)} keys "
                f"to write, {self.planned_bytes} bytes"
                + (f", {len(self.deleted_keys)} keys to delete" if self.deleted_keys else "")
            )
        return (
            f"{self.source} ({self.source_layout}) -> {self.target} ({self._target_name}): "
            f"{self.arrays} arrays, {self.chunks_copied} chunks copied, "
            + (f"{self.chunks_reencoded} re-encoded, " if self.chunks_reencoded else "")
            + f"{self.chunks_skipped} skipped, {self.bytes_copied} bytes, "
            f"{len(self.metadata_written)} metadata objects written"
            + (f", {len(self.deleted_keys)} deleted" if self.deleted_keys else "")
            + f" in {self.seconds:.2f} s"
            + (f" ({len(self.warnings)} warnings)" if self.warnings else "")
        )
