"""Seed readers: turn dataset files into ``Seed`` records, lazily, one reader per format.

``read_seeds`` checks every path and format before it returns (so a typo fails before any
money is spent) and then reads the files one after the other as a generator, in flat memory.
``formats_by_task`` sorts a mixed list of files by the task their formats belong to, so a run
over several tasks can send each file to its task. To add a format: write its reader module,
register it in ``FORMATS`` here and give its keys and layouts to ``detect.SIGNATURES`` and
``detect.LAYOUTS``.

A file no dataset layout fits, a Parquet or Arrow file, and every file when a mapping
(``--map FIELD=COLUMN``) is given are read as a ``table`` (``table.py``): any task reads one,
its columns named as the task's seed fields or mapped. A folder given as a seed path is a
``save_to_disk`` dataset or a folder of Parquet shards (``table_files.dataset_files``). A
task folder's seeds (a task no dataset layout belongs to) are always read as a table, its
columns named by the task's fields or by its ``[seeds] map`` (``--map`` wins per field).
"""

from __future__ import annotations

import errno
import glob
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import NamedTuple

from ..errors import InputError, UsageError
from ..records import BadRecord, Seed
from ..tasks import TASK_NAMES, builtin_task
from ..tasks.base import TaskSpec
from ..tasks.catalog import TaskCatalog
from . import cnndm, halueval, hotpotqa, opendialkg, table, table_files
from .detect import accepted_formats, detect_format, detect_layout
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

ANY_TASK = ""  # the task of a format any task reads (a table, through its mapping)


class SeedFormat(NamedTuple):
    task: str  # the task whose seeds the format holds, e.g. "qa"; ANY_TASK for a table
    # path -> seeds and bad records; a table's reader takes (path, task, fields, mapping)
    reader: Callable[..., Iterator[Seed | BadRecord]]


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
    table.FORMAT: SeedFormat(ANY_TASK, table.read_table),
}

_GLOB_CHARS = frozenset("*?[")


def read_seeds(
    paths: Sequence[str],
    task: TaskSpec | str,
    *,
    fmt: str | None = None,
    mapping: Mapping[str, str] | None = None,
) -> Iterator[Seed | BadRecord]:
    """Seeds of ``task`` from ``paths`` (files, folders or glob patterns), in order, lazily.

    ``task`` is the task's declaration, or the name of a built-in task.

    ``fmt`` names the format of every file; None detects it per file from its first record
    (a file no dataset layout fits is read as a table). ``mapping`` is ``{seed field:
    column}`` for tables (``--map``); with one, every file is read as a table.
    Raises ``InputError`` / ``UsageError`` at once for a missing file, an undetectable
    format, a format of another task or a column that does not exist, and later, while
    iterating, for a file that turns out to be broken.
    """
    spec = TaskCatalog()[task] if isinstance(task, str) else task  # a name: a built-in one
    task = spec.name
    if not any(f.task == spec.name for f in FORMATS.values()):
        # a task no dataset layout belongs to (a task folder) reads its seeds as a table
        if not spec.generated:
            raise UsageError(f"the {spec.name} task is judged only: it has no seeds")
        if fmt not in (None, table.FORMAT):
            raise UsageError(
                f"the {spec.name} task reads its seeds as a {table.FORMAT} (records holding its "
                f"fields {', '.join(spec.seed_fields)}, or mapped with --map), not as {fmt}"
            )
        fmt = table.FORMAT
    if spec.seed_map:  # the task's own [seeds] map; --map wins field by field
        mapping = {**dict(spec.seed_map), **dict(mapping or {})}
    plan = _plan(paths, fmt, mapping)
    fields = spec.seed_fields if any(FORMATS[n].task == ANY_TASK for _, n, _ in plan) else ()
    for path, name, seen in plan:
        _check_task(path, name, task, given=fmt is not None)
        if FORMATS[name].task == ANY_TASK:
            _check_table(path, task, fields, mapping, seen)
    return _read([(path, name) for path, name, _ in plan], task, fields, mapping)


def formats_by_task(
    paths: Sequence[str], *, fmt: str | None = None, mapping: Mapping[str, str] | None = None
) -> dict[str, list[tuple[str, str]]]:
    """``task -> [(file, format), ...]`` for the files named by ``paths``, in their order.

    Each file's format is ``fmt`` or detected, and the file goes to the task its format
    belongs to; a table goes to the first built-in task whose seed fields are all among
    its columns. A run over several tasks reads each task's files with ``read_seeds``.
    Raises ``InputError`` / ``UsageError`` as ``read_seeds`` does, before anything is read.
    """
    if mapping:
        raise UsageError(
            "--map names the columns of one task's seed fields: run one task at a time "
            "(--task NAME) when seeds are read through a mapping"
        )
    groups: dict[str, list[tuple[str, str]]] = {}
    for path, name, seen in _plan(paths, fmt, None):
        task = FORMATS[name].task or _task_of_table(path, seen)
        groups.setdefault(task, []).append((path, name))
    return groups


def task_of_format(name: str) -> str:
    """The task whose seeds the format ``name`` holds ("" for a table, which any task reads);
    ``UsageError`` for an unknown name."""
    return FORMATS[_known(name)].task


def _plan(
    paths: Sequence[str], fmt: str | None, mapping: Mapping[str, str] | None
) -> list[tuple[str, str, str | None]]:
    """``(file, format, what it starts with when detected as a table, else None)``."""
    if isinstance(paths, str):  # a lone path is an easy slip; it is not a list of characters
        paths = [paths]
    if fmt is not None:
        _known(fmt)
        if mapping and FORMATS[fmt].task != ANY_TASK:
            raise UsageError(
                f"--map reads a table's columns, but seed format {fmt} has its own fields: "
                f"leave out --seed-format (or name --seed-format {table.FORMAT})"
            )
    plan: list[tuple[str, str, str | None]] = []
    for path in expand_paths(paths):
        if fmt is not None:
            plan.append((path, fmt, None))
        elif mapping or table_files.is_binary_table(path):
            plan.append((path, table.FORMAT, None))
        else:
            name, seen = detect_layout(path)
            plan.append((path, name, None) if name else (path, table.FORMAT, seen))
    return plan


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
        files = table_files.dataset_files(path)
        if files is None:
            raise InputError(
                f"seed file {given} is a directory that holds neither Parquet shards nor a "
                f"dataset saved with save_to_disk (name the files in it, e.g. {given}/*.json)"
            )
        return files
    kind = special_file_kind(path)
    if kind is not None:
        raise InputError(special_file_message(given, kind))
    if not _GLOB_CHARS & set(given):
        raise InputError(_unreachable(given, path))
    matches = sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
    if not matches:
        raise InputError(
            f"seed file {given} not found: the pattern matches no file (check it, and quote "
            "it so the shell does not expand it first)"
        )
    return matches


def _unreachable(given: str, path: str) -> str:
    """Why ``path`` (neither a file nor a directory) cannot be read: the real cause."""
    try:
        os.stat(path)
    except OSError as err:
        cause = err.errno
    else:
        cause = None
    if cause == errno.ELOOP:
        return (
            f"seed file {given} is a symbolic link that loops (following it leads back to "
            "a link already followed); point it at the real file"
        )
    if cause == errno.ENOENT and os.path.islink(path):
        return (
            f"seed file {given} is a symbolic link to {os.readlink(path)}, which does not "
            "exist; point it at the real file"
        )
    if cause == errno.EACCES:
        return f"seed file {given} cannot be reached: permission denied on a folder of its path"
    if cause == errno.ENOTDIR:
        return f"seed file {given} cannot exist: a part of its path is a file, not a folder"
    if cause not in (None, errno.ENOENT):
        return f"seed file {given} cannot be read: {os.strerror(cause)}"
    return f"seed file {given} not found (check the path; relative paths start at {os.getcwd()})"


def _check_task(path: str, name: str, task: str, *, given: bool) -> None:
    fmt = FORMATS[name]
    if fmt.task in (task, ANY_TASK):
        return
    fitting = [n for n, f in FORMATS.items() if f.task == task]
    where = f"seed format {name}" if given else f"{path} is in the {name} format, which"
    raise InputError(
        f"{where} holds {fmt.task} seeds, not {task} seeds "
        f"(seed formats for {task}: {', '.join(fitting) or 'none yet'}); "
        f"to make {fmt.task} samples from it, add --task {fmt.task}"
    )


def _check_table(
    path: str,
    task: str,
    fields: Sequence[str],
    mapping: Mapping[str, str] | None,
    seen: str | None,
) -> None:
    try:
        table.check_table(path, task, fields, mapping)
    except InputError as err:
        if seen is None:
            raise
        # detected: the file fits no dataset layout, and as a table it lacks a field
        problem = str(err).removeprefix(f"{path} ")
        raise InputError(
            f"cannot tell the seed format of {path}: it holds {seen}. Accepted formats: "
            f"{accepted_formats()}. Read as a table, it {problem}"
        ) from None


def _task_of_table(path: str, seen: str | None) -> str:
    for task in TASK_NAMES:
        try:
            table.check_table(path, task, builtin_task(task).seed_fields, None)
        except InputError:
            continue
        return task
    raise InputError(
        f"cannot tell the seed format of {path}: it holds {seen or 'a table'}. Accepted "
        f"formats: {accepted_formats()}. A table whose columns are not one task's seed "
        "fields is read by one task at a time (--task NAME, with --map FIELD=COLUMN)"
    )


def _read(
    plan: list[tuple[str, str]],
    task: str,
    fields: Sequence[str],
    mapping: Mapping[str, str] | None,
) -> Iterator[Seed | BadRecord]:
    for path, name in plan:
        fmt = FORMATS[name]
        if fmt.task == ANY_TASK:
            yield from fmt.reader(path, task, fields, mapping)
        else:
            yield from fmt.reader(path)
