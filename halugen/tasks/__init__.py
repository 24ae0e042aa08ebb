"""The benchmark's tasks. A task is a folder (``task.toml`` + ``prompts/``); ``get_task``
finds one by name or reads one from its path.

The built-in tasks are the folders of the top-level ``prompts/`` (found as ``budgets/`` is:
``resources.data_dir``). A user's folder is read,
checked (``folder.check_files``: every problem, one line each) and remembered by its name
for the rest of the process, so the code that meets the name later (the stages, the
store's rows, the exports) finds the same declaration. ``--task NAME|PATH`` goes through
``get_task`` wherever a command takes it.
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
    "get_task",
    "is_task_path",
    "known_tasks",
    "register",
]

BUILTIN_DIR = data_dir("prompts")
# the tasks halugen generates, in the order "--task all" runs them
TASK_NAMES = ("qa", "dialogue", "summarization")
# every built-in task, the general track (judged against human labels) included
BUILTIN_TASKS = (*TASK_NAMES, "general")


# user task folders read in this process, by name (the last one read wins)
_REGISTERED: dict[str, TaskSpec] = {}


def builtin_folder(name: str) -> Path:
    """The folder of a built-in task."""
    if name not in BUILTIN_TASKS:
        raise UsageError(f"{name!r} is not a built-in task ({', '.join(BUILTIN_TASKS)})")
    return BUILTIN_DIR / name


@cache
def _builtin(name: str) -> TaskSpec:
    return load_folder(BUILTIN_DIR / name, builtin=True)


def is_task_path(text: str) -> bool:
    """Does ``text`` name a folder (or its ``task.toml``) rather than a task's name?"""
    if os.sep in text or "/" in text or text.startswith("."):
        return True
    return (Path(text) / TASK_FILE).is_file()


def register(spec: TaskSpec) -> TaskSpec:
    """Remember a user's task by its name for the rest of the process; returns it."""
    if spec.name in BUILTIN_TASKS:
        raise UsageError(f"task {spec.name!r} is a built-in task's name: choose another")
    _REGISTERED[spec.name] = spec
    return spec


def get_task(name_or_path: str | os.PathLike[str]) -> TaskSpec:
    """The task called ``name_or_path``, or declared in the folder at that path.

    A folder is checked in full first: ``folder.TaskFolderError`` (a ``UsageError``, exit
    2) lists every problem, one line each.
    """
    text = os.fspath(name_or_path)
    if text in BUILTIN_TASKS:
        return _builtin(text)
    if text in _REGISTERED:
        return _REGISTERED[text]
    if is_task_path(text):
        path = Path(text).expanduser()
        if path.name == TASK_FILE:
            path = path.parent
        return register(load_folder(path, reserved=BUILTIN_TASKS))
    known = ", ".join((*BUILTIN_TASKS, *_REGISTERED))
    raise UsageError(
        f"unknown task {text!r}; known tasks: {known}, or the path of a task folder "
        "(a folder with task.toml; 'halugen task new NAME --like qa' writes one)"
    )


def known_tasks() -> tuple[str, ...]:
    """The names get_task finds without a path: the built-in tasks and those read so far."""
    return (*BUILTIN_TASKS, *_REGISTERED)
