"""``halugen estimate``: the projected cost of a generation run from its seed files.

The seeds are read as a run reads them and the templates planned as a run plans them (the
cache plan, ``tasks.loaded.plan_task``); the counting and pricing is cost/estimate.py's.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..config import RunConfig
from ..cost.estimate import TaskEstimate, estimate_variants, priced_ways
from ..cost.prices import ModelPrice
from ..errors import ConfigError
from ..prompts import Template
from ..records import BadRecord, Seed
from ..seeds import read_seeds
from ..tasks.base import TaskSpec
from ..tasks.loaded import LoadedTask, plan_task
from ..tasks.steps import lay_out_candidates
from ..tasks.templates import task_template
from ..tokens import get_counter

__all__ = ["estimate_task", "estimate_ways"]


def _seeds(cfg: RunConfig, task: LoadedTask, files: list[str] | None) -> Iterator[Seed | BadRecord]:
    return read_seeds(
        files or list(cfg.seeds), task.spec, fmt=cfg.seed_format, mapping=cfg.seed_mapping
    )


def _verify_template(cfg: RunConfig, spec: TaskSpec) -> Template | None:
    """The verify stage's template of ``spec`` when the run verifies (``--verify``) and
    the task has one; priced at the run's model (a --verify-model on the same card)."""
    if not cfg.verify:
        return None
    try:
        return task_template(spec, "verify", cfg.prompts_dir)
    except ConfigError:
        return None


def _estimate(
    cfg: RunConfig,
    variants: list[LoadedTask],
    price: ModelPrice,
    files: list[str] | None,
) -> list[TaskEstimate]:
    task = variants[0]
    return estimate_variants(
        cfg,
        variants,
        price,
        _seeds(cfg, task, files),
        lay_out=lay_out_candidates,
        checking=_verify_template(cfg, task.spec),
    )


def estimate_task(
    cfg: RunConfig, task: LoadedTask, price: ModelPrice, files: list[str] | None = None
) -> TaskEstimate:
    """The estimate of ``task``'s templates as given (``cost.estimate.estimate_variants``)."""
    return _estimate(cfg, [task], price, files)[0]


def estimate_ways(
    cfg: RunConfig, task: LoadedTask, price: ModelPrice, files: list[str] | None = None
) -> TaskEstimate:
    """``estimate_task`` with each way of paying priced on the templates that way sends: the
    cache plan's variants for interactive calls and for batch lines (cost/cache.py),
    the short ones where nothing is cached. The totals are those of an interactive run.
    The seeds are read once for the three."""
    counter = get_counter(price.tokenizer)
    interactive = plan_task(task, price, counter, batch=False)
    batch_task = plan_task(task, price, counter, batch=True)
    variants = [interactive, task, batch_task]
    est, plain, batch = _estimate(cfg, variants, price, files)
    return priced_ways(price, est, plain, batch)
