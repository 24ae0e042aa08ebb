"""The tasks one command works with: the built-in ones and the task folders it was given.

A command reads its ``--task`` arguments once, where it starts (``read_tasks``), and a
command over a store adds the task folders that store keeps (``stored.recall``). The
``TaskCatalog`` that results is passed down as an argument: a row naming a task finds its
declaration there, and the same name means the same declaration for the whole command.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..errors import UsageError
from . import BUILTIN_TASKS, builtin_task, is_task_path, read_task_folder
from .base import TaskSpec

__all__ = ["TaskCatalog", "read_task", "read_tasks"]


@dataclass(frozen=True)
class TaskCatalog:
    """The built-in tasks and the user's task folders ``folders`` (by name)."""

    folders: tuple[TaskSpec, ...] = ()

    def __post_init__(self) -> None:
        for spec in self.folders:
            if spec.name in BUILTIN_TASKS:
                raise UsageError(f"task {spec.name!r} is a built-in task's name: choose another")

    def with_tasks(self, specs: Iterable[TaskSpec]) -> TaskCatalog:
        """This catalog with ``specs`` added; a user's task of a name already held replaces
        it (the one read last wins)."""
        added = [s for s in specs if not s.builtin]
        names = {s.name for s in added}
        kept = tuple(s for s in self.folders if s.name not in names)
        return TaskCatalog((*kept, *dict((s.name, s) for s in added).values()))

    @property
    def names(self) -> tuple[str, ...]:
        """The names of its tasks: the built-in ones first."""
        return (*BUILTIN_TASKS, *(s.name for s in self.folders))

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __getitem__(self, name: str) -> TaskSpec:
        """The task called ``name``; a ``UsageError`` naming the known ones when none is."""
        if name in BUILTIN_TASKS:
            return builtin_task(name)
        for spec in self.folders:
            if spec.name == name:
                return spec
        raise UsageError(
            f"unknown task {name!r}; known tasks: {', '.join(self.names)}, or the path of a "
            "task folder (a folder with task.toml; 'halugen task new NAME --like qa' writes "
            "one)"
        )

    def get(self, name: str) -> TaskSpec | None:
        """The task called ``name``, or None."""
        if name not in self.names:
            return None
        return self[name]


def read_task(text: str | os.PathLike[str], catalog: TaskCatalog) -> TaskSpec:
    """The task a ``--task`` argument names: one of ``catalog``'s by name, else the task
    folder at that path (read and checked in full)."""
    value = os.fspath(text)
    if value in catalog:
        return catalog[value]
    if is_task_path(value):
        return read_task_folder(value)
    return catalog[value]  # the error naming the known tasks


def read_tasks(
    texts: Iterable[str | os.PathLike[str]], catalog: TaskCatalog | None = None
) -> tuple[tuple[TaskSpec, ...], TaskCatalog]:
    """The tasks ``texts`` (names or task folders' paths) name, in order, and ``catalog``
    (default: the built-in tasks) with the folders among them added."""
    catalog = TaskCatalog() if catalog is None else catalog
    specs = []
    for text in texts:
        spec = read_task(text, catalog)
        catalog = catalog.with_tasks([spec])
        specs.append(spec)
    return tuple(specs), catalog
