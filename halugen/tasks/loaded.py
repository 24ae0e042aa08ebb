"""A task with the templates a run sends: its spec, its sampling templates, its filter
template; ``plan_task`` picks each template's variant by the cache plan (cost/cache.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..cost.cache import planned
from ..cost.prices import ModelPrice
from ..prompts import Template
from ..tokens import TokenCounter
from .base import TaskSpec

__all__ = ["LoadedTask", "plan_task"]


@dataclass(frozen=True)
class LoadedTask:
    spec: TaskSpec
    sample_templates: tuple[Template, ...]
    filter_template: Template


def plan_task(
    task: LoadedTask, price: ModelPrice, counter: TokenCounter, *, batch: bool
) -> LoadedTask:
    """``task`` with the variant of each of its templates the run sends."""
    return dataclasses.replace(
        task,
        sample_templates=tuple(
            planned(t, price, counter, batch=batch) for t in task.sample_templates
        ),
        filter_template=planned(task.filter_template, price, counter, batch=batch),
    )
