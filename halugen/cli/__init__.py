"""Command line: the only place that parses arguments and prints. Errors become exit codes.

Exit codes (``endings.EXIT_CODES``): 0 done; 1 failure; 2 bad usage or input; 3 budget
exhausted; 130 interrupted.
One module per area: generation, data (the store), simulator, evaluation, audit, general,
batch, task (task folders).

Building the parser imports no heavy module (``bench/cli_startup.py`` measures it, a test
checks the import graph): every command imports what it needs inside its function.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..endings import EXIT_CODES
from ..errors import HalugenError
from . import audit, batch, data, evaluation, general, generation, simulator, task
from .common import err, store_failure

__all__ = ["build_parser", "main"]

_AREAS = (generation, evaluation, audit, general, data, simulator, batch, task)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    name: fn for area in _AREAS for name, fn in area.COMMANDS.items()
}


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean" hints; subparsers are made of the same class."""

    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("argument ") and "invalid choice: '" in message:
            wrong = message.split("invalid choice: '", 1)[1].split("'", 1)[0]
            choices = [c for a in self._actions if a.choices for c in a.choices]
            message += _hint(wrong, [str(c) for c in choices])
        super().error(message)

    def option_strings(self) -> list[str]:
        return [o for a in self._actions for o in a.option_strings]


def _hint(wrong: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(wrong, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> _Parser:
    """The innermost subparser the command line picked (``annotate serve`` -> its parser)."""
    current = parser
    while True:
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name is None:
            return current  # type: ignore[return-value]
        current = subs[0].choices[name]


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    # argparse hands a subcommand's unknown flags up to the top parser, which would print
    # the top-level usage; the command's own parser reports them instead, with a hint
    args, extras = parser.parse_known_args(argv)
    if extras:
        chosen = _chosen(parser, args)
        flags = [e.split("=", 1)[0] for e in extras if e.startswith("-")]
        hint = _hint(flags[0], chosen.option_strings()) if flags else ""
        chosen.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return 2 if exc.code not in (0, None) else 0
    if not args.command:
        parser.print_help()
        return 2
    import logging

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
        return EXIT_CODES["interrupted"]
    except Exception as exc:
        if args.debug:
            raise
        known = store_failure(args, exc)
        if known is not None:  # the user's file or disk, not a bug
            err.print(f"error: {known}", markup=False)
            return known.exit_code
        err.print(
            f"error: unexpected {type(exc).__name__}: {exc} (this is a bug in halugen; "
            f"--debug shows the traceback)",
            markup=False,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
