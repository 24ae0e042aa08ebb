"""The live progress view of a run (Rich) and its one-line fallback for logs.

Presentation only: it reads ``RunStats``, the ``Ledger`` and a limiter snapshot and never
changes them. Two modes:

- live (a terminal): a Rich ``Live`` display on stderr, a header panel above a per-stage table;
- plain (CI logs, pipes): one summary line every ``plain_interval`` seconds, one at the end.

Why everything is rendered in ``tick()`` and not by Rich's refresh thread: the counters are
plain dicts and a deque that the event loop mutates without locks. Iterating them from another
thread can raise "dictionary changed size during iteration" or "deque mutated during iteration".
So the renderable is built on the loop thread (inside ``tick``) and the refresh thread only
redraws that finished, self-contained table.

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
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .budget import Ledger, format_usd
from .stats import RunStats, StageStats

if TYPE_CHECKING:
    from .llm.limiter import LimiterSnapshot

__all__ = ["BatchRow", "ProgressView", "abandoned_message", "format_eta", "stopping_message"]

_STAGE_ORDER = {"sample": 0, "filter": 1}
_LOW_MONEY = 0.10  # share of the budget under which "remaining" is highlighted
_NONE = "—"  # shown where a ratio has no denominator yet


class BatchRow(NamedTuple):
    """One batch at a provider, as batch mode shows it (halugen/batch/)."""

    batch: str
    status: str  # validating, in_progress, finalizing, completed, expired, failed, ...
    completed: int
    failed: int
    total: int
    elapsed: float  # seconds since it was sent


def format_eta(seconds: float | None) -> str:
    """45s, 2m10s, 1h02m; the dash when unknown (None, negative, infinite or NaN)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return _NONE
    total = round(seconds)
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    hours, rest = divmod(total, 3600)
    return f"{hours}h{rest // 60:02d}m"


def _int(n: float) -> str:
    return f"{n:,.0f}"


def _pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:.1f}%" if den > 0 else _NONE


def _stage_key(key: tuple[str, str]) -> tuple[str, int, str]:
    task, stage = key
    return task, _STAGE_ORDER.get(stage, len(_STAGE_ORDER)), stage


class _Figures:
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
        self.remaining = ledger.remaining
        self.budget = ledger.budget
        self.exhausted = ledger.exhausted
        self.rows = sorted(stats.stages.items(), key=lambda kv: _stage_key(kv[0]))
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
        return _pct(sampled, sampled + self.stats.rejected.get(task, 0))

    def cost_per_sample(self, task: str) -> str:
        sampled = self.stats.sampled.get(task, 0)
        return format_usd(self.task_cost.get(task, 0) // sampled) if sampled > 0 else _NONE

    # --- whole run --------------------------------------------------------------------------
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
        return format_usd(self.totals.cost_pusd // sampled) if sampled > 0 else _NONE

    def stage_per_sample(self, task: str | None, s: StageStats) -> str:
        """A row's "spent" over the samples its task (or, for the total, the run) accepted."""
        sampled = self.sampled if task is None else self.stats.sampled.get(task, 0)
        return format_usd(s.spent_pusd // sampled) if sampled > 0 else _NONE

    def money_style(self) -> str:
        if self.exhausted:
            return "bold red"
        budget, remaining = self.budget, self.remaining
        if budget is not None and remaining is not None and remaining < budget * _LOW_MONEY:
            return "yellow"
        return ""


class ProgressView:
    """Live table of a run's progress, or a plain line every few seconds without a terminal."""

    def __init__(
        self,
        *,
        stats: RunStats,
        ledger: Ledger,
        limiter_snapshot: Callable[[], LimiterSnapshot],
        console: Console | None = None,
        live: bool | None = None,
        plain_interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        batches: Callable[[], Sequence[BatchRow]] | None = None,
    ) -> None:
        self._batches = batches
        self._stats = stats
        self._ledger = ledger
        self._snapshot = limiter_snapshot
        # stderr keeps stdout clean for data written by the CLI (e.g. query results)
        self._console = console if console is not None else Console(stderr=True)
        self._live_mode = self._console.is_terminal if live is None else live
        self._interval = plain_interval
        self._clock = clock
        self._live: Live | None = None
        self._last_line = clock()
        self._started = False
        self._stopped = False

    @property
    def console(self) -> Console:
        return self._console

    @property
    def is_live(self) -> bool:
        return self._live_mode

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._last_line = self._clock()
        if self._live_mode:
            self._live = Live(
                self.render(),
                console=self._console,
                refresh_per_second=4,
                transient=False,
                # stdout may carry data; never route it through the display
                redirect_stdout=False,
                redirect_stderr=True,
            )
            self._live.start()

    def tick(self) -> None:
        if self._stopped:
            return
        if self._live_mode:
            if self._live is not None:
                self._live.update(self.render())
            return
        now = self._clock()
        if now - self._last_line >= self._interval:
            self._last_line = now
            self._print(self.plain_line())

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._live is not None:
            self._live.update(self.render(), refresh=True)
            self._live.stop()
            self._live = None
        elif not self._live_mode:
            elapsed = max(0.0, self._clock() - self._stats.started_at)
            self._print(f"{self.plain_line()} | elapsed {format_eta(elapsed)}")

    def _print(self, line: str) -> None:
        self._console.print(line, markup=False, highlight=False, soft_wrap=True)

    def _figures(self) -> _Figures:
        return _Figures(self._stats, self._ledger, self._snapshot(), self._clock())

    # --- rendering ---------------------------------------------------------------------------
    def render(self) -> RenderableType:
        f = self._figures()
        if self._batches is not None:
            return Group(self._header(f), self._table(f), _batch_table(self._batches()))
        return Group(self._header(f), self._table(f))

    def _header(self, f: _Figures) -> Panel:
        width = max((len(t) for t in f.tasks), default=0)
        lines = [self._task_line(f, task, width) for task in f.tasks]
        if not f.tasks and self._batches is None:
            lines.append(Text("no seeds yet", style="dim"))
        lines.append(self._money_line(f))
        lines.append(self._cache_line(f))
        lines.append(self._rate_line(f))
        lines.append(self._outlook_line(f))
        title = f"halugen run {f.stats.run_id}" if f.stats.run_id else "halugen run"
        return Panel(Text("\n").join(lines), title=title, title_align="left", expand=True)

    def _task_line(self, f: _Figures, task: str, width: int) -> Text:
        s = f.stats
        total = f.total(task)
        line = Text()
        line.append(task.ljust(width), style="bold")
        w = s.words
        line.append(
            f"  {w['seeds']} {_int(f.finished(task))}/{'?' if total is None else _int(total)}"
        )
        _pairs(
            line,
            (
                (w["sampled"], _int(s.sampled.get(task, 0))),
                (w["rejected"], _int(s.rejected.get(task, 0))),
                ("failed", _int(s.failed.get(task, 0))),
                ("bad records", _int(s.bad_records.get(task, 0))),
                ("already done", _int(s.already_done.get(task, 0))),
                (w["acceptance"], f.acceptance(task)),
                (w["per"], f.cost_per_sample(task)),
            ),
        )
        return line

    def _money_line(self, f: _Figures) -> Text:
        line = Text("money")
        _pairs(
            line,
            (
                ("spent", format_usd(f.spent)),
                ("of which in flight", format_usd(f.reserved)),
            ),
        )
        if f.queued:
            _pairs(line, (("held for queued calls", format_usd(f.queued)),))
        style = f.money_style()
        line.append("  remaining ")
        line.append(format_usd(f.remaining), style=style)
        line.append(f"  budget {format_usd(f.budget)}")
        if f.exhausted:
            line.append("  budget exhausted", style="bold red")
        return line

    def _cache_line(self, f: _Figures) -> Text:
        t = f.totals
        line = Text("cache")
        _pairs(
            line,
            (
                ("input served from cache", _pct(t.cached_input_tokens, t.prompt_tokens)),
                ("saved", format_usd(t.cache_saved_pusd)),
            ),
        )
        return line

    def _rate_line(self, f: _Figures) -> Text:
        snap = f.snap
        line = Text("rate")
        line.append(f"  {_against(f.rpm, snap.rpm_limit, 'rpm')}")
        line.append(f"  {_against(f.tpm, snap.tpm_limit, 'tpm')}")
        _pairs(
            line,
            (
                ("concurrency", f"{snap.concurrency}/{snap.max_concurrency}"),
                ("in flight", _int(snap.in_flight)),
                ("waiting", _int(snap.waiting)),
                # what holds the pace: limit, -j, server or CPU (llm/binding.py)
                ("bound by", snap.bound_by or _NONE),
            ),
        )
        if snap.cooldown_s > 0:
            line.append(f"  cooldown {snap.cooldown_s:.1f}s", style="yellow")
        hit = snap.rate_limited
        line.append(f"  429s {_int(hit)}", style="yellow" if hit else "")
        return line

    def _outlook_line(self, f: _Figures) -> Text:
        line = Text("outlook")
        projected = f.projected()
        _pairs(
            line,
            (
                ("elapsed", format_eta(f.elapsed)),
                ("ETA", format_eta(f.eta())),
                ("projected total", _NONE if projected is None else format_usd(projected)),
                ("per accepted sample", f.cost_per_sample_all()),
            ),
        )
        return line

    def _table(self, f: _Figures) -> Table:
        table = Table(expand=False, show_edge=False, pad_edge=False)
        table.add_column("task")
        table.add_column("stage")
        for name in (
            "done",
            "in flight",
            "failed",
            "cached",
            "retries",
            "tokens in",
            "tokens out",
            "spent",
            "cache",
            "saved",
            "per sample",
        ):
            table.add_column(name, justify="right")
        for (task, stage), s in f.rows:
            table.add_row(task, stage, *_cells(s), f.stage_per_sample(task, s))
        if len(f.rows) > 1:
            table.add_section()
            table.add_row(
                "total", "", *_cells(f.totals), f.stage_per_sample(None, f.totals), style="bold"
            )
        return table

    def plain_line(self) -> str:
        f = self._figures()
        parts: list[str] = []
        tasks = []
        for task in f.tasks:
            s = f.stats
            total = f.total(task)
            w = s.words
            detail = [
                f"{_int(s.sampled.get(task, 0))} {w['sampled']}",
                f"{_int(s.rejected.get(task, 0))} {w['rejected']}",
                f"{_int(s.failed.get(task, 0))} failed",
            ]
            if s.bad_records.get(task, 0):
                detail.append(f"{_int(s.bad_records[task])} bad records")
            if s.already_done.get(task, 0):
                detail.append(f"{_int(s.already_done[task])} already done")
            tasks.append(
                f"{task}: {_int(f.finished(task))}/{'?' if total is None else _int(total)} "
                f"{w['seeds']} ({', '.join(detail)})"
            )
        parts.append("; ".join(tasks) if tasks else "no seeds yet")
        parts.append(f"calls {_int(f.totals.done)} ok {_int(f.totals.failed)} failed")
        money = f"{format_usd(f.spent)} spent ({format_usd(f.reserved)} of it in flight), "
        money += "unlimited budget" if f.budget is None else f"{format_usd(f.remaining)} left"
        parts.append(money)
        t = f.totals
        if t.cached_input_tokens:
            parts.append(
                f"cache {_pct(t.cached_input_tokens, t.prompt_tokens)} of input, "
                f"saved {format_usd(t.cache_saved_pusd)}"
            )
        rates = f"{_int(f.rpm)} rpm {_int(f.tpm)} tpm"
        if f.snap.bound_by:
            rates += f", bound by {f.snap.bound_by}"
        parts.append(rates)
        eta = f"ETA {format_eta(f.eta())}"
        projected = f.projected()
        if projected is not None:
            eta += f", projected {format_usd(projected)}"
        parts.append(eta)
        if f.exhausted:
            parts.append("budget exhausted")
        if self._batches is not None:
            rows = self._batches()
            parts.append(
                "batches: "
                + (
                    "; ".join(
                        f"{b.batch} {b.status} {_int(b.completed)}+{_int(b.failed)} failed"
                        f"/{_int(b.total)} {format_eta(b.elapsed)}"
                        for b in rows
                    )
                    or "none running"
                )
            )
        return "[halugen] " + " | ".join(parts)


def stopping_message(at_provider: int, released: int, wait_s: float) -> str:
    """What the first Ctrl-C does, said at once: nothing more is sent."""
    queued = (
        f"{released} queued call(s) released at $0 (never sent)"
        if released
        else "nothing was queued"
    )
    if not at_provider:
        return f"stopping: nothing is at the provider; {queued}"
    return (
        f"stopping: {at_provider} request(s) at the provider will finish (waiting at most "
        f"{wait_s:g} s) and are billed as usual; {queued}. Ctrl-C again abandons the "
        f"{at_provider} at the provider: they count as spent (the provider may bill them)"
    )


def abandoned_message(reason: str, at_provider: int) -> str:
    """What a second Ctrl-C (or the end of the wait) does to the requests at the provider."""
    if not at_provider:
        return f"{reason}: nothing was at the provider"
    return (
        f"{reason}: {at_provider} request(s) at the provider abandoned; they count as spent "
        f"(the provider may bill them)"
    )


def _batch_table(rows: Sequence[BatchRow]) -> Table:
    table = Table(title="batches", expand=False, show_edge=False, pad_edge=False)
    table.add_column("batch")
    table.add_column("status")
    for name in ("completed", "failed", "total", "elapsed"):
        table.add_column(name, justify="right")
    for b in rows:
        table.add_row(
            b.batch,
            b.status,
            _int(b.completed),
            _int(b.failed),
            _int(b.total),
            format_eta(b.elapsed),
        )
    if not rows:
        table.add_row("none running", "", "", "", "", "")
    return table


def _pairs(line: Text, pairs: Iterable[tuple[str, str]]) -> None:
    for label, value in pairs:
        line.append(f"  {label} ")
        line.append(value)


def _against(rate: float, limit: float | None, unit: str) -> str:
    """'1,234 / 3,000 rpm' against a limit, '1,234 rpm (no limit)' without one."""
    if limit is None:
        return f"{_int(rate)} {unit} (no limit)"
    return f"{_int(rate)} / {_int(limit)} {unit}"


def _cells(s: StageStats) -> list[str]:
    return [
        _int(s.done),
        _int(s.in_flight),
        _int(s.failed),
        _int(s.cached),
        _int(s.retries),
        _int(s.prompt_tokens),
        _int(s.completion_tokens),
        format_usd(s.spent_pusd),
        _pct(s.cached_input_tokens, s.prompt_tokens),
        format_usd(s.cache_saved_pusd),
    ]
