"""The benchmark's tasks. Each module builds one ``TaskSpec``; ``get_task`` finds it by name."""

from __future__ import annotations

from importlib import import_module

from ..errors import UsageError
from .base import TaskSpec

__all__ = ["TASK_NAMES", "get_task"]

# name -> module defining the spec; the spec object is the module's upper-case task name
_MODULES = {
    "qa": ("qa", "QA"),
    "dialogue": ("dialogue", "DIALOGUE"),
    "summarization": ("summarization", "SUMMARIZATION"),
}
TASK_NAMES = tuple(_MODULES)


def get_task(name: str) -> TaskSpec:
    try:
        module, attr = _MODULES[name]
    except KeyError:
        raise UsageError(f"unknown task {name!r}; known tasks: {', '.join(TASK_NAMES)}") from None
    return getattr(import_module(f"{__name__}.{module}"), attr)
