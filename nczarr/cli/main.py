"""The ``nczarr`` command: a thin argparse layer over the library.

Subcommands: ``convert``, ``migrate``, ``ls``, ``info``, ``check``, ``dump``. Errors of nczarr
and of the operating system print one line, ``nczarr: error: <message>``, on stderr
and exit 1; usage errors exit 2 (argparse). A progress bar is shown only when stderr
is a terminal. The library's warnings (:class:`~nczarr.errors.NCZarrWarning`) are
printed once each, ``nczarr: warning: <message>`` on stderr (``info`` lists them in
its output).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, TextIO

from .._version import __version__
from ..errors import InvalidModeError, NCZarrError, NCZarrWarning, StorageError, UnsupportedError
from ..maps.credentials import redact_text
from .options import add_storage_arguments, storage_options

__all__ = ["main", "build_parser"]


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``nczarr`` command."""
    parser = _Parser(
        prog="nczarr",
        description="Make netCDF's Zarr dialect (NCZarr) and pure Zarr interchangeable.",
    )
    parser.add_argument("--version", action="version", version=f"nczarr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _SUBCOMMANDS:
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


#: One function per subcommand, adding its parser; the order is ``--help``'s.
_SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (
    _add_convert,
    _add_migrate,
    _add_ls,
    _add_info,
    _add_check,
    _add_refs,
    _add_dump,
)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.storage_options = storage_options(args)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    try:
        if args.storage_options and not _remote_locations(args):
            parser.error(
                "--storage-option/--anon apply to remote locations (S3, fsspec URLs, "
                f"zip::...), and {' and '.join(_locations(args))} is local"
            )
        with warnings.catch_warnings():
            # The commands print the library's warnings themselves, once each.
            warnings.simplefilter("ignore", NCZarrWarning)
            return _COMMANDS[args.command](args, sys.stdout)
    except BrokenPipeError:
        # The reader went away (`nczarr ls -R URL | head`): stop quietly, as cat does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (NCZarrError, OSError) as exc:
        message = redact_text(str(exc) or type(exc).__name__).strip()
        first = message.splitlines()[0] if message else type(exc).__name__
        print(f"nczarr: error: {first}", file=sys.stderr)
        return 1


# ---------------------------------------------------------------- options
def _locations(args: argparse.Namespace) -> list[str]:
    return [*args.src, args.dst] if args.command == "convert" else [args.url]


def _remote_locations(args: argparse.Namespace) -> list[str]:
    from ..maps.open import is_remote

    return [location for location in _locations(args) if is_remote(location)]


def _options_for(args: argparse.Namespace, location: str) -> dict[str, Any] | None:
    """The command's storage options if ``location`` is remote (local maps take none)."""
    if not args.storage_options:
        return None
    from ..maps.open import is_remote

    return dict(args.storage_options) if is_remote(location) else None


# ---------------------------------------------------------------- commands
def _convert(args: argparse.Namespace, out: TextIO) -> int:
    from ..conversion import convert

    with ExitStack() as stack:
        client = None
        if args.scheduler and not args.dry_run:
            client = stack.enter_context(_dask_client(args.scheduler))
        grow = args.concat_dim is not None or args.append_dim is not None
        report = convert(
            args.src if grow or len(args.src) > 1 else args.src[0],
            args.dst,
            args.mode,
            workers=args.workers,
            overwrite=args.overwrite,
            resume=args.resume,
            dry_run=args.dry_run,
            include=args.include,
            exclude=args.exclude,
            progress=not args.dry_run and sys.stderr.isatty(),
            noxarray=args.noxarray,
            consolidated=args.consolidated,
            netcdf_scalars=args.netcdf_scalars,
            zarr_format=args.zarr_format,
            source_options=_options_for(args, args.src[0]),
            target_options=_options_for(args, args.dst),
            client=client,
            **(
                {
                    "concat_dim": args.concat_dim,
                    "append_dim": args.append_dim,
                    "combine_attrs": args.combine_attrs,
                }
                if grow
                else {}
            ),
        )
    _print_report(report, out)
    return 0


def _dask_client(address: str) -> Any:
    """A ``distributed.Client`` connected to ``address``; errors name the address."""
    try:
        from distributed import Client
    except ImportError:
        raise UnsupportedError(
            "--scheduler needs dask.distributed, which is not installed: pip install nczarr[dask]"
        ) from None
    try:
        # Waits up to dask's ``distributed.comm.timeouts.connect`` (30 s by default).
        return Client(address)
    except (OSError, TimeoutError) as exc:
        raise StorageError(f"cannot connect to the dask scheduler {address!r}: {exc}") from None


def _migrate(args: argparse.Namespace, out: TextIO) -> int:
    from ..conversion import migrate

    report = migrate(
        args.url,
        to=args.to,
        dry_run=args.dry_run,
        storage_options=_options_for(args, args.url),
    )
    _print_report(report, out)
    return 0


def _print_report(report: Any, out: TextIO) -> None:
    if report.dry_run:
        for key in report.planned_keys:
            print(f"write {key}", file=out)
        for key in report.deleted_keys:
            print(f"delete {key}", file=out)
    _print_warnings(report.warnings)
    print(report.summary(), file=out)


def _print_warnings(messages: Sequence[str]) -> None:
    for warning in messages:
        print(f"nczarr: warning: {warning}", file=sys.stderr)


def _open_read(args: argparse.Namespace, stack: ExitStack) -> Any:
    from ..maps.open import open_map

    zmap = open_map(args.url, mode="r", storage_options=_options_for(args, args.url))
    stack.callback(zmap.close)
    return zmap


def _ls(args: argparse.Namespace, out: TextIO) -> int:
    with ExitStack() as stack:
        zmap = _open_read(args, stack)
        listing = sorted(zmap.keys_below(args.prefix)) if args.recursive else None
        for name in listing if listing is not None else zmap.search(args.prefix):
            print(name, file=out)
    return 0


def _info(args: argparse.Namespace, out: TextIO) -> int:
    from ..load import detect, read
    from .info import format_info

    with ExitStack() as stack:
        zmap = _open_read(args, stack)
        text = format_info(detect(zmap), read(zmap))
    print(text.rstrip("\n"), file=out)
    return 0


def _check(args: argparse.Namespace, out: TextIO) -> int:
    from ..diagnosis import check, select_readers

    try:
        select_readers(args.readers)
    except InvalidModeError as exc:
        print(f"nczarr check: {exc}", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        report = check(_open_read(args, stack), readers=args.readers)
    print(report.summary().replace(report.url, args.url), file=out)
    return 0 if report.ok else 1


def _dump(args: argparse.Namespace, out: TextIO) -> int:
    from ..load import read
    from ..maps.url import dataset_name
    from .cdl import format_cdl

    name = dataset_name(args.url.rpartition("::")[2])  # zip::s3://...: the archive's name
    with ExitStack() as stack:
        zmap = _open_read(args, stack)
        if args.header:
            dataset = read(zmap)
            text = format_cdl(dataset, name)
        else:
            dataset, data = _data_source(zmap)
            if args.variables:
                known = {v.name for v in dataset.root.all_variables()}
                known |= {v.path for v in dataset.root.all_variables()}
                unknown = [v for v in args.variables if v not in known]
                if unknown:
                    raise InvalidModeError(f"{args.url}: no variable {unknown[0]!r}")
            text = format_cdl(dataset, name, data=data, variables=args.variables)
    _print_warnings(dataset.warnings)
    print(text.rstrip("\n"), file=out)
    return 0


def _refs(args: argparse.Namespace, out: TextIO) -> int:
    from ..conversion.reference_files import write_references

    options = _options_for(args, args.url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NCZarrWarning)
        counts = write_references(
            args.url,
            args.out,
            args.mode,
            zarr_format=args.zarr_format,
            storage_options=options,
            inline_threshold=args.inline_threshold,
            exclude=args.exclude,
            record_size=args.record_size,
        )
    _print_warnings([str(w.message) for w in caught if issubclass(w.category, NCZarrWarning)])
    total = sum(counts.values())
    print(f"{args.out}: {total} references, {counts['pointers']} into {args.url}", file=out)
    return 0


def _data_source(zmap: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The dataset and a reader of each variable's values: zarr-python over the
    translated pure-Zarr view, so every layout reads as its producer wrote it."""
    import zarr

    from ..integrations.chunkerrors import read_values
    from ..integrations.zarr_store import ZarrStore
    from ..readthrough import view

    translated = view(zmap, "zarr")
    group = zarr.open_group(store=ZarrStore(translated), mode="r")

    def values(var: Any) -> Any:
        return read_values(group[var.path.strip("/")], zmap.url)

    return translated.dataset, values


_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "convert": _convert,
    "migrate": _migrate,
    "ls": _ls,
    "info": _info,
    "check": _check,
    "dump": _dump,
    "refs": _refs,
}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
