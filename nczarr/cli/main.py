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
import gc
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, TextIO

from ..errors import InvalidModeError, NCZarrError, NCZarrWarning, StorageError, UnsupportedError
from ..maps.credentials import redact_text
from .options import storage_options
from .parser import build_parser
from .startup import single_threaded_math

__all__ = ["main", "build_parser", "command"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit status.

    numpy's BLAS threads are kept to one unless the user says otherwise (nczarr does
    no linear algebra; see :mod:`nczarr.cli.startup`)."""
    single_threaded_math(os.environ)
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)  # that subcommand's options only
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


def command() -> int:
    """The ``nczarr`` process (the console script, ``python -m nczarr``): :func:`main`,
    then an exit that does not search what the imports made for garbage cycles.

    The interpreter's last collection at exit walks every object still alive, most of
    them the modules' classes and functions: ~18 M instructions (5-7 ms), a tenth of
    what the imports cost, for memory the operating system takes back anyway. Once the
    command is done, ``gc.freeze()`` leaves those objects out (the command closed its
    maps; what it left is reclaimed with the process). A program calls :func:`main`
    instead, and keeps its collector as it was."""
    status = main()
    gc.freeze()  # the process ends now: nothing left needs a search for cycles
    return status


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
        exclude=args.exclude,
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
        from numcodecs.errors import UnknownCodecError

        try:
            array = group[var.path.strip("/")]
        except UnknownCodecError:  # a codec numcodecs does not have here
            import json

            from ..translate.codecs import missing_codecs

            zarray = json.loads(translated[var.path.strip("/") + "/.zarray"])
            codecs = ", ".join(map(repr, missing_codecs(zarray)))
            raise UnsupportedError(
                f"{zmap.url}: cannot read the values of {var.path!r}: numcodecs has no codec "
                f"{codecs} here (nczarr dump -h prints the header; convert copies the "
                "chunks as they are)"
            ) from None
        return read_values(array, zmap.url)

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
