"""Command line: the only place that parses arguments and prints. Errors become exit codes.

Exit codes: 0 done; 1 failure; 2 bad usage or input; 3 budget exhausted; 130 interrupted.
One module per area: generation, data (the store), simulator, evaluation, general.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..errors import HalugenError
from . import batch, data, evaluation, general, generation, simulator
from .common import err

__all__ = ["build_parser", "main"]

_AREAS = (generation, evaluation, general, data, simulator, batch)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    name: fn for area in _AREAS for name, fn in area.COMMANDS.items()
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="halugen",
        description="Build and run hallucination benchmarks for LLMs (HaluEval-style), "
        "budgeted, rate-limited and resumable.",
    )
    parser.add_argument("--version", action="version", version=f"halugen {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for area in _AREAS:
        area.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return 2 if exc.code not in (0, None) else 0
    if not args.command:
        parser.print_help()
        return 2
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except HalugenError as exc:
        if args.debug:
            raise
        err.print(f"error: {exc}", markup=False)
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as exc:
        if args.debug:
            raise
        err.print(
            f"error: unexpected {type(exc).__name__}: {exc} (this is a bug in halugen; "
            f"--debug shows the traceback)",
            markup=False,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
