"""A task with the templates a run sends: its spec, its sampling templates, its filter template."""

from __future__ import annotations

from dataclasses import dataclass

from ..prompts import Template
from .base import TaskSpec

__all__ = ["LoadedTask"]


@dataclass(frozen=True)
class LoadedTask:
    spec: TaskSpec
    sample_templates: tuple[Template, ...]
    filter_template: Template
