"""How a test gets a task's declaration.

A command reads its ``--task`` once, where it starts, and passes the task down
(``halugen.tasks.catalog``); a test that needs a task reads it here the same way: a
built-in task by its name, a user's task folder by its path.
"""

from __future__ import annotations

import os

from halugen.tasks.base import TaskSpec
from halugen.tasks.catalog import TaskCatalog, read_task

__all__ = ["task_spec"]


def task_spec(name_or_path: str | os.PathLike[str]) -> TaskSpec:
    """The built-in task ``name_or_path``, or the task folder at that path."""
    return read_task(name_or_path, TaskCatalog())
