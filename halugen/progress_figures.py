"""The figures of a run's progress, read once per render from its counters.

Definitions used for the figures (all per session unless said otherwise):

- finished seeds of a task = sampled + rejected + failed in this session; ``already_done`` seeds
  were finished by an earlier session of the same run;
- seeds left = total - already done - finished (``stats.seeds_total`` counts every seed of the
  input, so resumed ones are part of it);
- ETA = seeds left / (finished / time since ``stats.started_at``);
- projected total = money spent by the run so far (the ledger, cumulative across resumes)
  + seeds left x (this session's cost / seeds finished this session). On a fresh run this is
  the session's cost per seed times the total;
- cache = the share of this session's billed prompt tokens the provider served from its
  prompt cache (``usage.prompt_tokens_details.cached_tokens``), and saved = what those tokens
  would have cost more at the full input price (the batch price for batch lines);
- per sample (a stage's row) = what the stage spent this session / samples the task accepted
  this session, so a task's stages add up to its "per accepted sample".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .budget import Ledger
from .cost.prices import format_usd
from .stats import RunStats, StageStats

if TYPE_CHECKING:
    from .stats import LimiterSnapshot

__all__ = ["NONE", "RunFigures", "count_text", "format_eta", "share_text", "stage_sort_key"]

_STAGE_ORDER = {"sample": 0, "filter": 1}
_LOW_MONEY = 0.10  # share of the budget under which "remaining" is highlighted
NONE = "—"  # shown where a ratio has no denominator yet


def format_eta(seconds: float | None) -> str:
    """45s, 2m10s, 1h02m; the dash when unknown (None, negative, infinite or NaN)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return NONE
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    hours, rest = divmod(total, 3600)
    return f"{hours}h{rest // 60:02d}m"


def count_text(n: float) -> str:
    return f"{n:,.0f}"


def share_text(num: int, den: int) -> str:
    return f"{100.0 * num / den:.1f}%" if den > 0 else NONE


def stage_sort_key(key: tuple[str, str]) -> tuple[str, int, str]:
    task, stage = key
    return task, _STAGE_ORDER.get(stage, len(_STAGE_ORDER)), stage


class RunFigures:
    """One consistent reading of every counter, taken once per render."""

    def __init__(self, stats: RunStats, ledger: Ledger, snap: LimiterSnapshot, now: float) -> None:
        self.stats = stats
        self.snap = snap
        self.elapsed = max(0.0, now - stats.started_at)
        self.rpm, self.tpm = stats.rates()
        # one definition of spent everywhere (live view, status, run_spend): closed money
        # plus what requests at the provider have reserved, which it may bill. Money held
        # for queued calls is not spent: they have sent nothing, Ctrl-C gives it back
        self.spent = ledger.spent + ledger.at_provider
        self.reserved = ledger.at_provider
        self.queued = ledger.queued
        # the most calls in flight may hold at once (--in-flight-share of the budget left)
        self.in_flight_cap = ledger.in_flight_cap
        self.remaining = ledger.remaining
        self.budget = ledger.budget
        self.exhausted = ledger.exhausted
        self.rows = sorted(stats.stages.items(), key=lambda kv: stage_sort_key(kv[0]))
        self.totals = stats.totals()
        self.task_cost: dict[str, int] = {}
        for (task, _stage), s in self.rows:
            self.task_cost[task] = self.task_cost.get(task, 0) + s.spent_pusd
        self.tasks = sorted(
            set(stats.seeds_total)
            | set(stats.admitted)
            | set(stats.already_done)
            | set(stats.sampled)
            | set(stats.rejected)
            | set(stats.failed)
            | set(self.task_cost)
        )

    # --- per task -------------------------------------------------------------------------
    def finished(self, task: str) -> int:
        s = self.stats
        return s.sampled.get(task, 0) + s.rejected.get(task, 0) + s.failed.get(task, 0)

    def total(self, task: str) -> int | None:
        return self.stats.seeds_total.get(task)

    def left(self, task: str) -> int | None:
        total = self.total(task)
        if total is None:
            return None
        return max(0, total - self.stats.already_done.get(task, 0) - self.finished(task))

    def acceptance(self, task: str) -> str:
        sampled = self.stats.sampled.get(task, 0)
        return share_text(sampled, sampled + self.stats.rejected.get(task, 0))

    def cost_per_sample(self, task: str) -> str:
        sampled = self.stats.sampled.get(task, 0)
        return format_usd(self.task_cost.get(task, 0) // sampled) if sampled > 0 else NONE

    # --- whole run --------------------------------------------------------------------------
    def cut(self) -> tuple[int, int]:
        """(records cut to fit the context window, records admitted) this session."""
        return self._sum(self.stats.truncated), self._sum(self.stats.admitted)

    def _sum(self, counter: dict[str, int]) -> int:
        return sum(counter.get(t, 0) for t in self.tasks)

    @property
    def sampled(self) -> int:
        return self._sum(self.stats.sampled)

    @property
    def finished_all(self) -> int:
        return sum(self.finished(t) for t in self.tasks)

    def left_all(self) -> int | None:
        lefts = [self.left(t) for t in self.tasks]
        if not lefts or any(x is None for x in lefts):
            return None
        return sum(x for x in lefts if x is not None)

    def eta(self) -> float | None:
        left = self.left_all()
        if left is None:
            return None
        if left == 0:
            return 0.0
        done = self.finished_all
        if done <= 0 or self.elapsed <= 0:
            return None
        return left / (done / self.elapsed)

    def projected(self) -> int | None:
        left = self.left_all()
        done = self.finished_all
        if left is None or done <= 0:
            return None
        return self.spent + left * self.totals.cost_pusd // done

    def cost_per_sample_all(self) -> str:
        sampled = self.sampled
        return format_usd(self.totals.cost_pusd // sampled) if sampled > 0 else NONE

    def stage_per_sample(self, task: str | None, s: StageStats) -> str:
        """A row's "spent" over the samples its task (or, for the total, the run) accepted."""
        sampled = self.sampled if task is None else self.stats.sampled.get(task, 0)
        return format_usd(s.spent_pusd // sampled) if sampled > 0 else NONE

    def money_style(self) -> str:
        if self.exhausted:
            return "bold red"
        budget, remaining = self.budget, self.remaining
        if budget is not None and remaining is not None and remaining < budget * _LOW_MONEY:
            return "yellow"
        return ""
