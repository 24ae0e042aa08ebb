"""A recognition experiment's settings (``EvalConfig``), its outcome, and its identity: the
settings that define its output, whose hash names the run (a resumed run is the same one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import RunConfig
from ..options.table import default
from ..prompts import Template

if TYPE_CHECKING:
    from ..annotate.resolve import LabelRule

__all__ = ["EvalConfig", "EvalOutcome", "run_identity"]


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    run: RunConfig  # endpoint, model, budget, limits, store, eval seed (run_seed), resume
    task: str
    # the defaults are the settings' (options/recognition.py, options/run_*.py)
    strategy: str = default("strategy")
    data: tuple[str, ...] = default("data")  # HaluEval files; empty: the samples in the store
    gen_run: str | None = default("gen_run")  # only samples of this generation run
    scoring: str = default("scoring")  # parse | logprobs
    limit: int | None = default("limit")
    structured: str = default("structured")  # a JSON verdict: auto (when supported) | on | off
    read: str = default("read")  # strict (the reply contract only) | lenient (interprets prose)
    # the general task from the store: which annotated items count (--per-item,
    # --allow-partial); None: the default rule, which refuses items with too few labels
    labels: LabelRule | None = None


@dataclass(frozen=True)
class EvalOutcome:
    run_id: str
    status: str
    message: str
    exit_code: int
    judged: int
    notes: tuple[str, ...] = ()


def run_identity(cfg: EvalConfig, template: Template) -> dict[str, object]:
    r = cfg.run
    return {
        "task": cfg.task,
        "strategy": cfg.strategy,
        "data": list(cfg.data),
        "gen_run": cfg.gen_run,
        "scoring": cfg.scoring,
        "model": r.model,  # not the endpoint: a moved server or a fleet continues the run
        "seed": r.run_seed,
        "template": template.hash,
        # only when forced, so runs made before the option existed resume as they were
        **({"structured": cfg.structured} if cfg.structured != "auto" else {}),
        # likewise: the default reader is strict; a lenient run is another run
        **({"read": cfg.read} if cfg.read != "strict" else {}),
        # likewise: a run that took partly labelled items judged another set of items
        **_labels_identity(cfg),
    }


def _labels_identity(cfg: EvalConfig) -> dict[str, object]:
    from ..annotate.resolve import LabelRule

    labels = cfg.labels
    if cfg.task != "general" or cfg.data or labels is None or labels == LabelRule():
        return {}
    return {"labels": {"per_item": labels.per_item, "allow_partial": labels.allow_partial}}
