"""The benchmark's tasks. A task is a folder (``task.toml`` + ``prompts/``).

The built-in tasks are the folders of the top-level ``prompts/`` (found as ``budgets/`` is:
``resources.data_dir``); ``builtin_task`` reads one. A user's folder is read and checked
(``folder.check_files``: every problem, one line each) by ``read_task_folder``. Which tasks
a command works with is decided once, where the command starts: ``catalog.TaskCatalog``
holds them and is passed down; nothing here remembers a task between calls.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from ..errors import UsageError
from ..resources import data_dir
from .base import TaskSpec
from .folder import load_folder
from .problems import TASK_FILE

__all__ = [
    "BUILTIN_DIR",
    "BUILTIN_TASKS",
    "TASK_NAMES",
    "builtin_folder",
    "builtin_task",
    "is_task_path",
    "read_task_folder",
]

BUILTIN_DIR = data_dir("prompts")
# the tasks halugen generates, in the order "--task all" runs them
TASK_NAMES = ("qa", "dialogue", "summarization")
# every built-in task, the general track (judged against human labels) included
BUILTIN_TASKS = (*TASK_NAMES, "general")


def builtin_folder(name: str) -> Path:
    """The folder of a built-in task."""
    if name not in BUILTIN_TASKS:
        raise UsageError(f"{name!r} is not a built-in task ({', '.join(BUILTIN_TASKS)})")
    return BUILTIN_DIR / name


@cache  # the package's own files: the same declaration every time they are read
def builtin_task(name: str) -> TaskSpec:
    """The built-in task ``name`` (one of ``BUILTIN_TASKS``)."""
    return load_folder(builtin_folder(name), builtin=True)


def is_task_path(text: str) -> bool:
    """Does ``text`` name a folder (or its ``task.toml``) rather than a task's name?"""
    if os.sep in text or "/" in text or text.startswith("."):
        return True
    return (Path(text) / TASK_FILE).is_file()


def read_task_folder(path: str | os.PathLike[str]) -> TaskSpec:
    """The user's task declared in the folder at ``path`` (or that folder's ``task.toml``).

    The folder is checked in full first: ``folder.TaskFolderError`` (a ``UsageError``, exit
    2) lists every problem, one line each.
    """
    folder = Path(path).expanduser()
    if folder.name == TASK_FILE:
        folder = folder.parent
    return load_folder(folder, reserved=BUILTIN_TASKS)
