"""Seed readers: turn dataset files into ``Seed`` records, lazily, one reader per format.

``read_seeds`` checks every path and format before it returns (so a typo fails before any
money is spent) and then reads the files one after the other as a generator, in flat memory.
``formats_by_task`` sorts a mixed list of files by the task their formats belong to, so a run
over several tasks can send each file to its task. A task folder's seeds (a task no format
belongs to) are JSON records holding its fields by name (``halueval.read_named``). To add a
format: write its reader module, register it in ``FORMATS`` here and give its keys and
layouts to ``detect.SIGNATURES`` and ``detect.LAYOUTS``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from ..errors import InputError, UsageError
from ..records import BadRecord, Seed
from . import cnndm, halueval, hotpotqa, opendialkg
from .detect import detect_format
from .jsonl import special_file_kind, special_file_message

__all__ = [
    "FORMATS",
    "SeedFormat",
    "detect_format",
    "expand_paths",
    "formats_by_task",
    "read_seeds",
    "task_of_format",
]


class SeedFormat(NamedTuple):
    task: str  # the task whose seeds the format holds, e.g. "qa"
    reader: Callable[[str], Iterator[Seed | BadRecord]]  # path -> seeds and bad records


FORMATS: dict[str, SeedFormat] = {
    hotpotqa.FORMAT: SeedFormat(hotpotqa.TASK, hotpotqa.read_hotpotqa),
    halueval.FORMAT: SeedFormat(halueval.TASK, halueval.read_halueval_qa),
    halueval.DIALOGUE_FORMAT: SeedFormat(halueval.DIALOGUE_TASK, halueval.read_halueval_dialogue),
    halueval.SUMMARIZATION_FORMAT: SeedFormat(
        halueval.SUMMARIZATION_TASK, halueval.read_halueval_summarization
    ),
    opendialkg.FORMAT: SeedFormat(opendialkg.TASK, opendialkg.read_opendialkg),
    opendialkg.PER_DIALOGUE_FORMAT: SeedFormat(
        opendialkg.TASK, opendialkg.read_opendialkg_per_dialogue
    ),
    cnndm.FORMAT: SeedFormat(cnndm.TASK, cnndm.read_cnndm),
    cnndm.STORY_FORMAT: SeedFormat(cnndm.TASK, cnndm.read_cnndm_story),
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
    if not any(f.task == task for f in FORMATS.values()):
        return _read_task_folder_seeds(paths, task, fmt)
    plan = _plan(paths, fmt)
    for path, name in plan:
        _check_task(path, name, task, given=fmt is not None)
    return _read(plan)


def _read_task_folder_seeds(
    paths: Sequence[str], task: str, fmt: str | None
) -> Iterator[Seed | BadRecord]:
    """Seeds of a task no dataset format belongs to: JSON records with its fields."""
    from ..tasks import get_task
    from .halueval import NAMED_FORMAT as FORMAT
    from .halueval import read_named

    spec = get_task(task)
    if not spec.generated:
        raise UsageError(f"the {task} task is judged only: it has no seeds")
    if fmt is not None and fmt != FORMAT:
        raise UsageError(
            f"the {task} task reads its seeds as {FORMAT} (JSON records with its fields "
            f"{', '.join(spec.seed_fields)}), not {fmt}"
        )
    files = expand_paths([paths] if isinstance(paths, str) else paths)
    columns = dict(spec.seed_map)
    return (item for path in files for item in read_named(path, task, spec.seed_fields, columns))


def formats_by_task(
    paths: Sequence[str], *, fmt: str | None = None
) -> dict[str, list[tuple[str, str]]]:
    """``task -> [(file, format), ...]`` for the files named by ``paths``, in their order.

    Each file's format is ``fmt`` or detected, and the file goes to the task its format
    belongs to; a run over several tasks reads each task's files with ``read_seeds``.
    Raises ``InputError`` / ``UsageError`` as ``read_seeds`` does, before anything is read.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    for path, name in _plan(paths, fmt):
        groups.setdefault(FORMATS[name].task, []).append((path, name))
    return groups


def task_of_format(name: str) -> str:
    """The task whose seeds the format ``name`` holds; ``UsageError`` for an unknown name."""
    return FORMATS[_known(name)].task


def _plan(paths: Sequence[str], fmt: str | None) -> list[tuple[str, str]]:
    if isinstance(paths, str):  # a lone path is an easy slip; it is not a list of characters
        paths = [paths]
    if fmt is not None:
        _known(fmt)
    return [(path, fmt or detect_format(path)) for path in expand_paths(paths)]


def _known(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown seed format {fmt!r} (known: {', '.join(FORMATS)})")
    return fmt


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files named by ``paths``: existing paths as given, glob patterns expanded and sorted.

    Duplicates (the same file reached twice) are dropped. ``InputError`` when a path does
    not exist, is a pipe or a device, or a pattern matches no file.
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
    kind = special_file_kind(path)
    if kind is not None:
        raise InputError(special_file_message(given, kind))
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
