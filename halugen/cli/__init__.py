"""Command line: the only place that parses arguments and prints. Errors become exit codes.

Exit codes (``errors.EXIT_CODES``): 0 done; 1 failure; 2 bad usage or input; 3 budget
exhausted; 130 interrupted.
One module per area: generation, data (the store), simulator, evaluation, audit, general,
batch, task (task folders), view.

Building the parser imports no heavy module (``bench/cli_startup.py`` measures it, a test
checks the import graph): every command imports what it needs inside its function. The
settings a command takes are resolved before it runs (``flags.resolve_settings``: flag,
environment, halugen.toml, default), so a command reads ``args.<setting>`` as it is.

A usage error is one line (with the closest flag or command), then the command's one-line
usage. Output into a pipe whose reader has gone (``| head``) is dropped quietly and the
command ends with its own exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn, TextIO, cast

from ..errors import EXIT_CODES, HalugenError
from ..version import __version__
from . import audit, batch, data, evaluation, general, generation, simulator, task, view
from .common import err, store_failure
from .flags import resolve_settings

__all__ = ["build_parser", "entry", "main"]

_AREAS = (generation, evaluation, audit, general, data, simulator, batch, task, view)
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    name: fn for area in _AREAS for name, fn in area.COMMANDS.items()
}


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors come first, on one line with a hint, then the command's
    one-line usage and where to read more; subparsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self._explain(message)}\n{self.short_usage()}\n")

    def _explain(self, message: str) -> str:
        if message.startswith("argument ") and "invalid choice: '" in message:
            wrong = message.split("invalid choice: '", 1)[1].split("'", 1)[0]
            action = next((a for a in self._actions if a.choices and _is_subparsers(a)), None)
            if action is not None and message.startswith(f"argument {action.metavar}:"):
                what = "command" if action.metavar == "COMMAND" else "action"
                names = list(action.choices or ())
                hint = _hint(wrong, names) or (
                    f" (one of {', '.join(names)})" if len(names) <= 8 else ""
                )
                return f"unknown {what} '{wrong}'{hint}"
            choices = [c for a in self._actions if a.choices for c in a.choices]
            return message + _hint(wrong, [str(c) for c in choices])
        bad = _BAD_NUMBER.fullmatch(message)
        if bad is not None:
            return self._bad_number(bad.group("flag"), bad.group("kind"), bad.group("value"))
        return message

    def _bad_number(self, flag: str, kind: str, value: str) -> str:
        flag = flag.split("/")[-1]
        wants = "a whole number" if kind == "int" else "a number"
        if not _looks_like_a_file(value):
            return f"{flag} takes {wants}, not {value!r}"
        shown = os.path.basename(value.rstrip("/\\")) or value
        takes_files = [
            o
            for a in self._actions
            if a.option_strings and _FILE_METAVAR.search(str(a.metavar or ""))
            for o in a.option_strings
            if o.startswith("--")
        ]
        close = difflib.get_close_matches(flag, takes_files, n=1, cutoff=0.0)
        if not close:
            return f"{flag} takes {wants}, not a file ({shown})"
        return f"{flag} takes {wants}, not a file ({shown}): did you mean {close[0]} {shown}?"

    def short_usage(self) -> str:
        """One line: the command, what it requires, and where its options are explained."""
        words = [self.prog]
        for a in self._actions:
            if _is_subparsers(a):
                words.append(str(a.metavar or a.dest.upper()))
            elif not a.option_strings:
                words.append(str(a.metavar or a.dest))
            elif a.required:
                words.append(f"{a.option_strings[-1]} {a.metavar or a.dest.upper()}")
        if any(a.option_strings and not a.required for a in self._actions if a.dest != "help"):
            words.append("[options]")
        return f"usage: {' '.join(words)}  ({self.prog} --help explains each)"

    def option_strings(self) -> list[str]:
        return [o for a in self._actions for o in a.option_strings]


_BAD_NUMBER = re.compile(
    r"argument (?P<flag>\S+): invalid (?P<kind>int|float) value: '(?P<value>.*)'"
)
_FILE_METAVAR = re.compile(r"FILE|DIR|PATH")
_FILE_SUFFIXES = (".json", ".jsonl", ".csv", ".gz", ".txt", ".toml", ".parquet", ".duckdb", ".md")


def _looks_like_a_file(value: str) -> bool:
    return (
        os.sep in value
        or "/" in value
        or value.lower().endswith(_FILE_SUFFIXES)
        or os.path.exists(value)
    )


def _hint(wrong: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(wrong, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _is_subparsers(action: argparse.Action) -> bool:
    return isinstance(action, argparse._SubParsersAction)


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
            assert isinstance(current, _Parser)
            return current
        current = subs[0]._name_parser_map[name]


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
    with _quiet_when_the_reader_goes():
        return _main(argv)


def entry() -> int:
    """The program (``halugen``, ``python -m halugen``): ``main``, then an exit without the
    garbage collector's last pass over every object, which the operating system frees
    anyway (about 0.3 s of CPU after a run of a few thousand calls). Not for ``main``
    itself, which tests call many times in one process."""
    code = main()
    gc.freeze()
    return code


def _main(argv: Sequence[str] | None) -> int:
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
        resolve_settings(args)  # flag, environment, halugen.toml, default
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


class _PipeGuard:
    """Stands in for stdout or stderr while a command runs. When the reader of a pipe has
    gone (``halugen sql … | head -n 1``), the rest of the output is dropped quietly and the
    command ends as it would have: ``head`` expects that, not a traceback."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self._gone = True
        # what is still buffered goes to /dev/null, so the flush at exit does not fail again
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _quiet_when_the_reader_goes() -> Iterator[None]:
    before = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _PipeGuard(sys.stdout))
    sys.stderr = cast(TextIO, _PipeGuard(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = before


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
