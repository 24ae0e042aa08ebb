"""Live counters of a run: what the progress view shows and the run summary prints.

Plain attribute increments on the event loop thread; the view only reads them.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

__all__ = ["LimiterSnapshot", "RunStats", "StageStats"]


@dataclass(slots=True)
class StageStats:
    started: int = 0
    done: int = 0  # finished calls that produced an answer (incl. cached)
    failed: int = 0
    cached: int = 0
    in_flight: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_pusd: int = 0  # settled and consumed (what the ledger has closed)
    reserved_pusd: int = 0  # reservations of calls in flight (counted as spent until settled)
    # the provider's prompt cache: prompt tokens it served from cache (of prompt_tokens), and
    # what they would have cost more at the full input price
    cached_input_tokens: int = 0
    cache_saved_pusd: int = 0

    @property
    def spent_pusd(self) -> int:
        return self.cost_pusd + self.reserved_pusd


@dataclass
class RunStats:
    run_id: str = ""
    started_at: float = field(default_factory=time.monotonic)
    stages: dict[tuple[str, str], StageStats] = field(default_factory=dict)  # (task, stage)
    seeds_total: dict[str, int | None] = field(default_factory=dict)  # per task, when known
    admitted: dict[str, int] = field(default_factory=dict)
    already_done: dict[str, int] = field(default_factory=dict)
    sampled: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    bad_records: dict[str, int] = field(default_factory=dict)
    truncated: dict[str, int] = field(default_factory=dict)
    # the context window records are fitted to, and where it came from (cut_note.py)
    window: int = 0
    window_origin: str = ""
    filter_calls: dict[str, int] = field(default_factory=dict)
    # why calls failed after their retries: the closing message names the most common cause
    failure_causes: dict[str, int] = field(default_factory=dict)
    # what the counters are called in the live view, per kind of run
    words: dict[str, str] = field(
        default_factory=lambda: {
            "seeds": "seeds",
            "sampled": "sampled",
            "rejected": "rejected",
            "acceptance": "acceptance",
            "per": "per accepted sample",
        }
    )
    # recent completions for rates: (monotonic time, prompt+completion tokens)
    _recent: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=200_000))

    def stage(self, task: str, stage: str) -> StageStats:
        s = self.stages.get((task, stage))
        if s is None:
            s = self.stages[(task, stage)] = StageStats()
        return s

    def bump(self, counter: dict[str, int], task: str, n: int = 1) -> None:
        counter[task] = counter.get(task, 0) + n

    def note_failure(self, cause: str) -> None:
        self.failure_causes[cause] = self.failure_causes.get(cause, 0) + 1

    def main_failure(self) -> str | None:
        """'cause (N calls)' for the most common reason calls failed, if any did."""
        if not self.failure_causes:
            return None
        cause, n = max(self.failure_causes.items(), key=lambda kv: kv[1])
        return f"{cause} ({n} call(s))"

    def record_call(self, tokens: int) -> None:
        self._recent.append((time.monotonic(), tokens))

    def rates(self, window: float = 20.0) -> tuple[float, float]:
        """(requests per minute, tokens per minute) over the last ``window`` seconds."""
        now = time.monotonic()
        recent = self._recent
        while recent and now - recent[0][0] > window:
            recent.popleft()
        span = min(window, max(1e-6, now - self.started_at))
        n = len(recent)
        tokens = sum(t for _, t in recent)
        return n * 60.0 / span, tokens * 60.0 / span

    def totals(self) -> StageStats:
        out = StageStats()
        for s in self.stages.values():
            out.started += s.started
            out.done += s.done
            out.failed += s.failed
            out.cached += s.cached
            out.in_flight += s.in_flight
            out.retries += s.retries
            out.prompt_tokens += s.prompt_tokens
            out.completion_tokens += s.completion_tokens
            out.cost_pusd += s.cost_pusd
            out.reserved_pusd += s.reserved_pusd
            out.cached_input_tokens += s.cached_input_tokens
            out.cache_saved_pusd += s.cache_saved_pusd
        return out

    def finished_seeds(self, task: str | None = None) -> int:
        tasks = [task] if task else list(self.admitted)
        return sum(
            self.sampled.get(t, 0) + self.rejected.get(t, 0) + self.failed.get(t, 0) for t in tasks
        )


@dataclass(frozen=True, slots=True)
class LimiterSnapshot:
    """The rate limiter's state as the progress line shows it (``llm/limiter.py`` takes it)."""

    rpm_limit: float | None
    tpm_limit: float | None
    concurrency: int  # current cap
    max_concurrency: int
    in_flight: int
    waiting: int
    cooldown_s: float  # seconds left of a server-imposed pause, 0 if none
    rate_limited: int  # 429s observed
    bound_by: str = ""  # what binds the pace (llm/binding.py): limit, -j, server, CPU, or ""
