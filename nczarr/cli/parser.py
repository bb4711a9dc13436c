"""The ``nczarr`` command's argument parser: one function per subcommand.

Apart from :mod:`nczarr.cli.main` (what each subcommand does) so that the options a
subcommand takes are read in one place; the help is laid out at the terminal's width,
asked without importing :mod:`shutil` (a command's start-up is part of its cost).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .._version import __version__
from .options import add_storage_arguments

__all__ = ["build_parser"]


def _columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` finds it (``COLUMNS``,
    then the terminal of stdout, else 80), without importing :mod:`shutil` (which
    imports ``bz2`` and ``lzma``: milliseconds of every command, see docs/performance.md)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout at the width argparse would pick (:func:`_columns`)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or _columns() - 2)


class _Parser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` (and its subcommands' parsers) with :class:`_Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``nczarr`` command.

    Given the command line ``argv`` that starts with a subcommand's name, only that
    subcommand is added: it parses ``argv`` as the whole parser does (the others' names
    and help are shown only by ``nczarr --help`` and by a usage error before the
    subcommand, where the whole parser is built), and adding every subcommand's
    options costs as much as a tenth of a command's imports (argparse asks gettext for
    each message of each parser)."""
    parser = _Parser(
        prog="nczarr",
        description="Make netCDF's Zarr dialect (NCZarr) and pure Zarr interchangeable.",
    )
    parser.add_argument("--version", action="version", version=f"nczarr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    first = next(iter(argv), None) if argv is not None else None
    if first in _SUBCOMMANDS:
        _SUBCOMMANDS[first](sub)
    else:
        for add in _SUBCOMMANDS.values():
            add(sub)
    return parser


def _add_convert(sub: Any) -> None:
    """The ``convert`` subcommand: copy SRC (or combine several) into DST."""
    p = sub.add_parser("convert", help="copy a dataset into NCZarr or pure Zarr")
    p.add_argument(
        "src",
        metavar="SRC",
        nargs="+",
        help="source URL or path (any layout nczarr reads); several with --concat-dim",
    )
    p.add_argument("dst", metavar="DST", help="target URL or path")
    p.add_argument(
        "--mode",
        choices=("zarr", "nczarr"),
        help="output format: zarr (pure Zarr, for zarr-python and xarray) or nczarr "
        "(netCDF's dialect, for netcdf-c). Default: the #mode= word of DST's URL, else "
        "nczarr, the format that keeps every netCDF feature; DST's name (out.zarr) "
        "does not choose it",
    )
    p.add_argument("--workers", type=_positive, default=8, help="concurrent copies (8)")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="copy chunks on this dask.distributed scheduler (tcp://host:8786)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--overwrite", action="store_true", help="replace a non-empty DST")
    group.add_argument("--resume", action="store_true", help="continue an interrupted convert")
    p.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    p.add_argument("--include", nargs="+", metavar="PATH", help="variables or groups to keep")
    p.add_argument("--exclude", nargs="+", metavar="PATH", help="variables or groups to drop")
    p.add_argument(
        "--consolidated", action="store_true", default=None, help="write consolidated metadata"
    )
    p.add_argument("--noxarray", action="store_true", default=None, help="no _ARRAY_DIMENSIONS")
    p.add_argument(
        "--netcdf-scalars",
        action="store_true",
        help="pure Zarr: scalars as netcdf-c writes them (shape [1], dimension _scalar_), "
        "for netcdf-c readers; default: 0-d arrays, for zarr-python and xarray",
    )
    p.add_argument(
        "--zarr-format",
        type=int,
        choices=(2, 3),
        help="with --mode zarr: Zarr v2 or v3 (default: DST's v2/v3 mode word, else 2)",
    )
    p.add_argument(
        "--concat-dim",
        metavar="DIM",
        help="combine every SRC along dimension DIM into the new store DST",
    )
    p.add_argument(
        "--append-dim",
        metavar="DIM",
        help="append SRC to the existing store DST along dimension DIM",
    )
    p.add_argument(
        "--combine-attrs",
        choices=("identical", "override"),
        default="identical",
        help="with --concat-dim/--append-dim: attributes must be equal in every source "
        "(identical, default) or the first source's win (override)",
    )
    add_storage_arguments(p)


def _add_migrate(sub: Any) -> None:
    """The ``migrate`` subcommand: rewrite a store's metadata in place."""
    p = sub.add_parser("migrate", help="rewrite a store's metadata in place")
    p.add_argument("url", metavar="URL")
    p.add_argument("--to", choices=("nczarr", "zarr"), default="nczarr")
    p.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    p.add_argument(
        "--exclude",
        nargs="+",
        metavar="PATH",
        help="arrays the new metadata may leave out (their objects stay)",
    )
    add_storage_arguments(p)


def _add_ls(sub: Any) -> None:
    """The ``ls`` subcommand: the names (or, with ``-R``, keys) below a prefix."""
    p = sub.add_parser("ls", help="list the names below a prefix (the zmap search)")
    p.add_argument("url", metavar="URL")
    p.add_argument("prefix", metavar="PREFIX", nargs="?", default="")
    p.add_argument("-R", dest="recursive", action="store_true", help="every key below PREFIX")
    add_storage_arguments(p)


def _add_info(sub: Any) -> None:
    """The ``info`` subcommand: detected layout and a summary."""
    p = sub.add_parser("info", help="detected layout and a summary of the dataset")
    p.add_argument("url", metavar="URL")
    add_storage_arguments(p)


def _add_check(sub: Any) -> None:
    """The ``check`` subcommand: what each judged reader would get wrong."""
    p = sub.add_parser(
        "check",
        help="what each reader (netcdf-c, zarr-python, xarray, GDAL) would get wrong",
        description="Exit 0 when every judged reader gets the store right, 1 when any would "
        "fail or misread it, 2 on usage errors. Judged by default: netcdf-c 4.10+, "
        "zarr-python 3, xarray, GDAL 3.12+; older netcdf-c releases are notes.",
    )
    p.add_argument("url", metavar="URL")
    p.add_argument(
        "--reader",
        dest="readers",
        action="append",
        metavar="NAME",
        help="judge by this reader (repeatable; e.g. 'netcdf-c 4.9', netcdf-c-4.8, gdal, "
        "xarray); default: the current readers",
    )
    add_storage_arguments(p)


def _add_refs(sub: Any) -> None:
    """The ``refs`` subcommand: a reference set of the translated dataset."""
    p = sub.add_parser(
        "refs",
        help="write a reference set (fsspec/kerchunk JSON or Parquet) of the translated dataset",
        description="Write OUT, a reference set (fsspec version 1 JSON, or fsspec's Parquet "
        "layout when OUT ends in .parq) showing URL as "
        "'nczarr view' shows it, its chunks pointing into URL's own objects (nothing copied "
        "but what cannot be pointed at, announced). Read it with fsspec's reference:// "
        "filesystem, xarray or zarr, without nczarr.",
    )
    p.add_argument("url", metavar="SRC", help="source URL or path (any layout nczarr reads)")
    p.add_argument(
        "out", metavar="OUT", help="the JSON file, or Parquet directory (.parq), to write"
    )
    p.add_argument(
        "--record-size",
        type=int,
        default=10_000,
        metavar="N",
        help="chunk entries per Parquet record file (default 10000)",
    )
    p.add_argument("--mode", choices=("zarr", "nczarr"), default="zarr")
    p.add_argument("--zarr-format", type=int, choices=(2, 3), default=2)
    p.add_argument(
        "--inline-threshold",
        type=int,
        default=0,
        metavar="N",
        help="copy chunks smaller than N bytes into the set (default 0: none)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        metavar="VAR",
        help="leave this array or group out (repeatable)",
    )
    add_storage_arguments(p)


def _add_dump(sub: Any) -> None:
    """The ``dump`` subcommand: the dataset as CDL (``-h`` is ncdump's header-only flag)."""
    # -h is ncdump's header-only flag, so dump answers only the long --help.
    p = sub.add_parser("dump", help="print the dataset as CDL (like ncdump)", add_help=False)
    p.add_argument("--help", action="help", help="show this help message and exit")
    p.add_argument("-h", dest="header", action="store_true", help="header only, no data")
    p.add_argument(
        "-v",
        dest="variables",
        metavar="VAR,...",
        type=lambda text: [v for v in text.split(",") if v],
        help="data of these variables only (names or paths)",
    )
    p.add_argument("url", metavar="URL")
    add_storage_arguments(p)


#: One function per subcommand, adding its parser, by name; the order is ``--help``'s.
_SUBCOMMANDS: dict[str, Callable[[Any], None]] = {
    "convert": _add_convert,
    "migrate": _add_migrate,
    "ls": _add_ls,
    "info": _add_info,
    "check": _add_check,
    "refs": _add_refs,
    "dump": _add_dump,
}


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value
