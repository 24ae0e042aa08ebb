"""Seed readers: turn dataset files into ``Seed`` records, lazily, one reader per format.

``read_seeds`` checks every path and format before it returns (so a typo fails before any
money is spent) and then reads the files one after the other as a generator, in flat memory.
To add a format (dialogue, summarization, ...): write its reader module, register it in
``FORMATS`` here and give its keys to ``detect.SIGNATURES``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from ..errors import InputError, UsageError
from ..records import BadRecord, Seed
from . import halueval, hotpotqa
from .detect import detect_format

__all__ = ["FORMATS", "SeedFormat", "detect_format", "expand_paths", "read_seeds"]


class SeedFormat(NamedTuple):
    task: str  # the task whose seeds the format holds, e.g. "qa"
    reader: Callable[[str], Iterator[Seed | BadRecord]]  # path -> seeds and bad records


FORMATS: dict[str, SeedFormat] = {
    hotpotqa.FORMAT: SeedFormat(hotpotqa.TASK, hotpotqa.read_hotpotqa),
    halueval.FORMAT: SeedFormat(halueval.TASK, halueval.read_halueval_qa),
}

_GLOB_CHARS = frozenset("*?[")


def read_seeds(
    paths: Sequence[str], task: str, *, fmt: str | None = None
) -> Iterator[Seed | BadRecord]:
    """Seeds of ``task`` from ``paths`` (files or glob patterns), in order, lazily.

    ``fmt`` names the format of every file; None detects it per file from its first record.
    Raises ``InputError`` at once for a missing file, an undetectable format or a format of
    another task, and later, while iterating, for a file that turns out to be broken.
    """
    if isinstance(paths, str):  # a lone path is an easy slip; it is not a list of characters
        paths = [paths]
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown seed format {fmt!r} (known: {', '.join(FORMATS)})")
    files = expand_paths(paths)
    plan = [(path, fmt or detect_format(path)) for path in files]
    for path, name in plan:
        _check_task(path, name, task, given=fmt is not None)
    return _read(plan)


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files named by ``paths``: existing paths as given, glob patterns expanded and sorted.

    Duplicates (the same file reached twice) are dropped. ``InputError`` when a path does
    not exist or a pattern matches no file.
    """
    if not paths:
        raise InputError("no seed files given (name one or more files or glob patterns)")
    files: list[str] = []
    seen: set[str] = set()
    for given in paths:
        for path in _expand_one(given):
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                files.append(path)
    return files


def _expand_one(given: str) -> list[str]:
    path = os.path.expanduser(given)
    # A file literally named with glob characters wins over the pattern reading of its name.
    if os.path.isfile(path):
        return [path]
    if os.path.isdir(path):
        raise InputError(
            f"seed file {given} is a directory (name the files in it, e.g. {given}/*.json)"
        )
    if not _GLOB_CHARS & set(given):
        raise InputError(
            f"seed file {given} not found (check the path; relative paths start at {os.getcwd()})"
        )
    matches = sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
    if not matches:
        raise InputError(
            f"seed file {given} not found: the pattern matches no file (check it, and quote "
            "it so the shell does not expand it first)"
        )
    return matches


def _check_task(path: str, name: str, task: str, *, given: bool) -> None:
    fmt = FORMATS[name]
    if fmt.task == task:
        return
    fitting = [n for n, f in FORMATS.items() if f.task == task]
    where = f"seed format {name}" if given else f"{path} is in the {name} format, which"
    raise InputError(
        f"{where} holds {fmt.task} seeds, not {task} seeds "
        f"(seed formats for {task}: {', '.join(fitting) or 'none yet'})"
    )


def _read(plan: list[tuple[str, str]]) -> Iterator[Seed | BadRecord]:
    for path, name in plan:
        yield from FORMATS[name].reader(path)
