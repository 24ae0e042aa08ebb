"""Projected cost of a generation run, from the seeds and prompts alone (no calls)."""

from __future__ import annotations

from dataclasses import dataclass

from .budget import ModelPrice
from .config import RunConfig
from .records import Seed
from .seeds import read_seeds
from .stages.context import LoadedTask
from .tokens import get_counter

__all__ = ["TaskEstimate", "estimate_task"]

_PATTERN_LINE_TOKENS = 8  # "Pattern: factualness\nAnswer: " around the answer itself
_JUDGE_REPLY_TOKENS = 4  # "Choice: 2"


@dataclass
class TaskEstimate:
    task: str
    seeds: int = 0
    bad_records: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    output_tokens_typical: int = 0
    output_tokens_max: int = 0
    cost_typical_pusd: int = 0
    cost_max_pusd: int = 0
    tokens_exact: bool = True


def estimate_task(
    cfg: RunConfig, task: LoadedTask, price: ModelPrice, files: list[str] | None = None
) -> TaskEstimate:
    """Every seed costs its sampling calls plus one filter call (an upper count: identical
    candidates skip the filter). Typical output assumes answers as long as the right one."""
    counter = get_counter(price.tokenizer)
    count = counter.count
    spec = task.spec
    est = TaskEstimate(task=spec.name, tokens_exact=counter.exact)
    seeds = read_seeds(
        files or list(cfg.seeds), spec.name, fmt=cfg.seed_format, mapping=cfg.seed_mapping
    )
    for item in seeds:
        if not isinstance(item, Seed):
            est.bad_records += 1
            continue
        if cfg.limit is not None and est.seeds >= cfg.limit:
            break
        est.seeds += 1
        answer_tokens = count(item.fields.get(spec.right_field, "")) + _PATTERN_LINE_TOKENS
        for template in task.sample_templates:
            est.prompt_tokens += template.estimate_tokens(item.fields, counter)
            est.output_tokens_typical += min(answer_tokens, cfg.sampling.max_tokens)
            est.output_tokens_max += cfg.sampling.max_tokens
            est.calls += 1
        right = item.fields.get(spec.right_field, "")
        values = spec.filter_values(item.fields, [right] * len(task.sample_templates))
        est.prompt_tokens += task.filter_template.estimate_tokens(values, counter)
        est.output_tokens_typical += min(_JUDGE_REPLY_TOKENS, cfg.judge.max_tokens)
        est.output_tokens_max += cfg.judge.max_tokens
        est.calls += 1
    est.cost_typical_pusd = price.cost(est.prompt_tokens, est.output_tokens_typical)
    est.cost_max_pusd = price.cost(est.prompt_tokens, est.output_tokens_max)
    return est
