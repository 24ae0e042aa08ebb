"""Projected cost of a generation run, from the seeds and prompts alone (no calls).

What a run is expected to cost, in each way the provider can bill it (``TaskEstimate.modes``):
interactive, interactive with prompt caching, the Batch API (with caching where the card
says batches get it), and the card's cheaper service tiers (e.g. flex, with caching), for
the whole run and per 1,000 accepted samples; beside the most it can cost, which is what
the budget reserves (every call at ``max_tokens``, nothing cached).

How the expected cache share is computed (``expected_cached``): the provider caches the
opening of a request that an earlier request of the same model sent. Every request of a
template starts with the same text: the template's messages up to its first ``{{field}}``
(``fixed_opening``), counted with the model's tokenizer, framing tokens included (one token
less where a field follows in the same message: the join may tokenise differently). From
the card's rules (``CacheRules``: 1,024 tokens at least, then whole steps of 128 at OpenAI)
that opening is served from cache on every request of the template but the first; nothing
from the seed's own text is counted, even where two requests happen to share it. This
assumes the run keeps each opening warm (a request of the template at least every few
minutes, the card's ``idle_retention_s``): any run of more than a handful of requests a
minute does. A fast run may also spill one opening over several of the provider's machines
(OpenAI: past ~15 requests a minute per opening and ``prompt_cache_key``); each of those
misses once, a few requests in thousands, which this leaves out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..config import RunConfig
from ..prompts import Template
from ..records import BadRecord, Seed
from ..tokens import get_counter
from .batch_prices import batch_cost
from .cache import cached_part, fixed_opening
from .prices import ModelPrice

__all__ = [
    "CostMode",
    "EstimatedSpec",
    "EstimatedTask",
    "TaskEstimate",
    "estimate_variants",
    "expected_cached",
    "priced_ways",
]

_PATTERN_LINE_TOKENS = 8  # "Pattern: factualness\nAnswer: " around the answer itself
_JUDGE_REPLY_TOKENS = 4  # "Choice: 2", "Verdict: No"
_MIN_VERIFY_TOKENS = 32  # stages/verify.py's MIN_VERIFY_TOKENS (not imported: a light module)


class EstimatedSpec(Protocol):
    """What the estimate reads of a task's declaration (``tasks.base.TaskSpec`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def right_field(self) -> str: ...


# the task's step that fills the filter template from a seed's fields and its candidates
# (``tasks.steps.lay_out_candidates``), passed in like the task itself
LayOut = Callable[[Any, Mapping[str, str], Sequence[str]], dict[str, str]]


class EstimatedTask(Protocol):
    """A task with the templates a run sends (``tasks.loaded.LoadedTask`` is one): passed in,
    so that cost/ stays below the tasks."""

    @property
    def spec(self) -> EstimatedSpec: ...

    @property
    def sample_templates(self) -> tuple[Template, ...]: ...

    @property
    def filter_template(self) -> Template: ...


@dataclass(frozen=True)
class CostMode:
    """One way to pay for the run: its expected cost for the whole run."""

    name: str  # interactive | interactive, cached | batch | batch, cached | flex, cached | ...
    cost_pusd: int
    cached_tokens: int  # prompt tokens expected from the provider's cache in this mode
    note: str = ""


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
    # prompt caching: per template, its requests and the tokens of its fixed opening
    openings: dict[str, tuple[int, int]] = field(default_factory=dict)
    cached_tokens: int = 0  # expected from the provider's cache over the run (0: no caching)
    modes: list[CostMode] = field(default_factory=list)

    @property
    def cache_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def expected_cached(price: ModelPrice, openings: dict[str, tuple[int, int]]) -> int:
    """Prompt tokens expected from the provider's cache: per template, its opening's
    cacheable part on every request but the first (0 when the card knows no caching)."""
    return sum(max(0, n - 1) * cached_part(price, tokens) for n, tokens in openings.values())


def estimate_variants(
    cfg: RunConfig,
    variants: Sequence[EstimatedTask],
    price: ModelPrice,
    seeds: Iterable[Seed | BadRecord],
    *,
    lay_out: LayOut,
    checking: Template | None = None,
) -> list[TaskEstimate]:
    """The estimate of several variants of one task (the templates each way of paying
    sends), in one pass over the seeds: a seed file of millions of records is read once.

    Every seed costs its sampling calls plus one filter call (an upper count: identical
    candidates skip the filter), and with ``--verify`` two verify calls (as if every seed
    gave a sample). Typical output assumes answers as long as the right one. ``lay_out``
    fills the filter template's fields from a seed and its candidates (the task's step);
    ``checking`` is the verify stage's template when the run verifies."""
    counter = get_counter(price.tokenizer)
    count = counter.count
    spec = variants[0].spec
    ests = [TaskEstimate(task=spec.name, tokens_exact=counter.exact) for _ in variants]
    verify_out = max(cfg.judge.max_tokens, _MIN_VERIFY_TOKENS)
    n_seeds = bad = 0
    for item in seeds:
        if not isinstance(item, Seed):
            bad += 1
            continue
        if cfg.limit is not None and n_seeds >= cfg.limit:
            break
        n_seeds += 1
        answer_tokens = count(item.fields.get(spec.right_field, "")) + _PATTERN_LINE_TOKENS
        right = item.fields.get(spec.right_field, "")
        for task, est in zip(variants, ests, strict=True):
            for template in task.sample_templates:
                est.prompt_tokens += template.estimate_tokens(item.fields, counter)
                est.output_tokens_typical += min(answer_tokens, cfg.sampling.max_tokens)
                est.output_tokens_max += cfg.sampling.max_tokens
                est.calls += 1
            values = lay_out(spec, item.fields, [right] * len(task.sample_templates))
            est.prompt_tokens += task.filter_template.estimate_tokens(values, counter)
            est.output_tokens_typical += min(_JUDGE_REPLY_TOKENS, cfg.judge.max_tokens)
            est.output_tokens_max += cfg.judge.max_tokens
            est.calls += 1
            if checking is not None:  # run --verify: two questions per sample (at most)
                for text in (right, right):  # a hallucination is about as long as the right text
                    values = {**item.fields, "text": text}
                    est.prompt_tokens += checking.estimate_tokens(values, counter)
                    est.output_tokens_typical += min(_JUDGE_REPLY_TOKENS, verify_out)
                    est.output_tokens_max += verify_out
                    est.calls += 1
    for task, est in zip(variants, ests, strict=True):
        est.seeds, est.bad_records = n_seeds, bad
        for template in (*task.sample_templates, task.filter_template):
            # a template used twice in a task (it is not, today) shares one opening
            n, _ = est.openings.get(template.name, (0, 0))
            est.openings[template.name] = (n + n_seeds, fixed_opening(template, counter))
        if checking is not None:
            est.openings[checking.name] = (2 * n_seeds, fixed_opening(checking, counter))
        est.cached_tokens = expected_cached(price, est.openings)
        est.cost_typical_pusd = price.cost(est.prompt_tokens, est.output_tokens_typical)
        est.cost_max_pusd = price.cost(est.prompt_tokens, est.output_tokens_max)
        est.modes = cost_modes(
            price, est.prompt_tokens, est.output_tokens_typical, est.cached_tokens
        )
    return ests


def priced_ways(
    price: ModelPrice, est: TaskEstimate, plain: TaskEstimate, batch: TaskEstimate
) -> TaskEstimate:
    """``est`` (of the templates interactive calls send) with each way of paying priced on
    the templates that way sends: ``plain`` (the short ones) where nothing is cached,
    ``batch`` (the variants batch lines send) for the Batch API. The totals are those of an
    interactive run."""
    # the run's typical cost is what an interactive run pays, its cache included
    est.cost_typical_pusd = est.modes[1 if price.caches else 0].cost_pusd
    in_batch = {m.name: m for m in batch.modes if m.name.startswith("batch")}
    est.modes = [
        plain.modes[0] if m.name == "interactive" else in_batch.get(m.name, m) for m in est.modes
    ]
    return est


def cost_modes(price: ModelPrice, prompt: int, output: int, cached: int) -> list[CostMode]:
    """The run's expected cost in each way the card says the provider bills it."""
    modes = [CostMode("interactive", price.cost(prompt, output), 0, "nothing cached")]
    if price.caches:
        modes.append(CostMode("interactive, cached", price.cost(prompt, output, cached), cached))
    if price.batch_discount:
        if price.batch_caches:
            cost = batch_cost(price, price.cost(prompt, output, cached))
            modes.append(CostMode("batch, cached", cost, cached))
        else:
            note = "the provider does not cache batch lines of this model" if price.caches else ""
            modes.append(CostMode("batch", batch_cost(price, price.cost(prompt, output)), 0, note))
    for tier in price.tiers:
        tier_cached = cached if price.caches else 0
        name = f"{tier.name}, cached" if tier_cached else tier.name
        modes.append(CostMode(name, tier.cost(prompt, output, tier_cached), tier_cached))
    return modes
