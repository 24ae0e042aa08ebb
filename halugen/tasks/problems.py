"""A task folder's file names and what can be wrong with one: ``Problem`` is one line,
``TaskFolderError`` lists them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import UsageError

__all__ = ["PROMPTS", "TASK_FILE", "Problem", "TaskFolderError"]

TASK_FILE = "task.toml"
PROMPTS = "prompts"


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a task folder: the file, the key (or placeholder), why."""

    file: str  # relative to the folder: "task.toml", "prompts/filter.txt"
    key: str  # "fields.right", "patterns[2].definition", "{{answers}}"; "" for the file
    message: str

    def line(self, folder: str) -> str:
        where = f"{folder.rstrip('/')}/{self.file}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class TaskFolderError(UsageError):
    """A task folder that cannot be used; ``problems`` holds one entry per problem."""

    def __init__(self, folder: str, problems: Sequence[Problem]) -> None:
        self.folder = folder
        self.problems = tuple(problems)
        lines = "\n".join(p.line(folder) for p in self.problems)
        n = len(self.problems)
        super().__init__(
            f"task folder {folder} has {n} problem{'s' if n != 1 else ''} "
            f"(fix, then check with: halugen task check {folder}):\n{lines}"
        )
