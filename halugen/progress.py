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

The figures themselves and their definitions: progress_figures.py.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .budget import Ledger
from .cost.prices import format_usd
from .cut_note import cut_note, window_phrase
from .progress_figures import NONE, RunFigures, format_eta
from .progress_figures import count_text as _int
from .progress_figures import share_text as _pct
from .stats import RunStats, StageStats

if TYPE_CHECKING:
    from .stats import LimiterSnapshot

__all__ = ["BatchRow", "ProgressView", "abandoned_message", "stopping_message"]


class BatchRow(NamedTuple):
    """One batch at a provider, as batch mode shows it (halugen/batch/)."""

    batch: str
    status: str  # validating, in_progress, finalizing, completed, expired, failed, ...
    completed: int
    failed: int
    total: int
    elapsed: float  # seconds since it was sent


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

    def _figures(self) -> RunFigures:
        return RunFigures(self._stats, self._ledger, self._snapshot(), self._clock())

    # --- rendering ---------------------------------------------------------------------------
    def render(self) -> RenderableType:
        f = self._figures()
        if self._batches is not None:
            return Group(self._header(f), self._table(f), _batch_table(self._batches()))
        return Group(self._header(f), self._table(f))

    def _header(self, f: RunFigures) -> Panel:
        width = max((len(t) for t in f.tasks), default=0)
        lines = [self._task_line(f, task, width) for task in f.tasks]
        if not f.tasks and self._batches is None:
            lines.append(Text("no seeds yet", style="dim"))
        cut = self._cut_line(f)
        if cut is not None:
            lines.append(cut)
        lines.append(self._money_line(f))
        lines.append(self._cache_line(f))
        lines.append(self._rate_line(f))
        lines.append(self._outlook_line(f))
        title = f"halugen run {f.stats.run_id}" if f.stats.run_id else "halugen run"
        room = self._console.width - 4  # the panel's borders and padding
        lines = [_wrap_pairs(line, room) for line in lines]
        return Panel(Text("\n").join(lines), title=title, title_align="left", expand=True)

    def _task_line(self, f: RunFigures, task: str, width: int) -> Text:
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

    def _cut_line(self, f: RunFigures) -> Text | None:
        """How many records were cut to fit the context window, and which window: its
        parts split by two spaces so a narrow view wraps between them (cut_note.py)."""
        cut, admitted = f.cut()
        if not cut:
            return None
        said = cut_note(cut, admitted, window_phrase(f.stats.window, f.stats.window_origin))
        line = Text("cut")
        # "cut  10 of 18 records  to fit a 2,048-token window  (...)": a narrow view wraps
        # before "to fit" and before the origin, never inside a figure
        head, _, rest = said.partition(" cut to fit")
        window, _, origin = rest.partition(" (")
        line.append(f"  {head}  to fit{window}")
        if origin:
            line.append(f"  ({origin}")
        return line

    def _money_line(self, f: RunFigures) -> Text:
        line = Text("money")
        _pairs(
            line,
            (
                ("spent", format_usd(f.spent)),
                ("of which in flight", format_usd(f.reserved)),
            ),
        )
        if f.in_flight_cap is not None:
            line.append(f" (at most {format_usd(f.in_flight_cap)})")
        if f.queued:
            _pairs(line, (("held for queued calls", format_usd(f.queued)),))
        style = f.money_style()
        line.append("  remaining ")
        line.append(format_usd(f.remaining), style=style)
        line.append(f"  budget {format_usd(f.budget)}")
        if f.exhausted:
            line.append("  budget exhausted", style="bold red")
        return line

    def _cache_line(self, f: RunFigures) -> Text:
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

    def _rate_line(self, f: RunFigures) -> Text:
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
                ("bound by", snap.bound_by or NONE),
            ),
        )
        if snap.cooldown_s > 0:
            line.append(f"  cooldown {snap.cooldown_s:.1f}s", style="yellow")
        hit = snap.rate_limited
        line.append(f"  429s {_int(hit)}", style="yellow" if hit else "")
        return line

    def _outlook_line(self, f: RunFigures) -> Text:
        line = Text("outlook")
        projected = f.projected()
        _pairs(
            line,
            (
                ("elapsed", format_eta(f.elapsed)),
                ("ETA", format_eta(f.eta())),
                ("projected total", NONE if projected is None else format_usd(projected)),
                ("per accepted sample", f.cost_per_sample_all()),
            ),
        )
        return line

    def _table(self, f: RunFigures) -> RenderableType:
        from .table_layout import fit_table
        from .tables import TableData

        columns = ("task", "stage", *_STAGE_COLUMNS)
        rows = [
            [task, stage, *_cells(s), f.stage_per_sample(task, s)] for (task, stage), s in f.rows
        ]
        totals = len(f.rows) > 1
        if totals:
            rows.append(["total", "", *_cells(f.totals), f.stage_per_sample(None, f.totals)])
        table = TableData(None, columns, rows, total_rows=int(totals))
        right = [False, False, *(True for _ in _STAGE_COLUMNS)]
        # at 80 columns the figures do not fit on one line: the table splits, keeping
        # task and stage on each part, rather than cut a figure
        parts = fit_table(table, rows, right, self._console.width, edge=False)
        spaced = [x for part in parts for x in (Text(""), part)][1:]  # a blank line between
        return Group(*spaced)

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
        cut, admitted = f.cut()
        if cut:
            phrase = window_phrase(f.stats.window, f.stats.window_origin)
            parts.append(cut_note(cut, admitted, phrase))
        parts.append(f"calls {_int(f.totals.done)} ok {_int(f.totals.failed)} failed")
        cap = "" if f.in_flight_cap is None else f", at most {format_usd(f.in_flight_cap)}"
        money = f"{format_usd(f.spent)} spent ({format_usd(f.reserved)} of it in flight{cap}), "
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


_STAGE_COLUMNS = (
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
)
_SEGMENT = re.compile(r"\S+(?: \S+)*")  # a label and its value: single spaces inside


def _wrap_pairs(line: Text, width: int) -> Text:
    """``line`` wrapped to ``width`` between its pairs (``_pairs`` parts them with two
    spaces), never inside one: "in flight 10" stays whole on one line."""
    plain_text = line.plain
    parts = [line[m.start() : m.end()] for m in _SEGMENT.finditer(plain_text)]
    if not parts or line.cell_len <= width:
        return line
    out = parts[0].copy()
    used = out.cell_len
    for part in parts[1:]:
        if used + 2 + part.cell_len <= width:
            out.append("  ")
            used += 2 + part.cell_len
        else:
            out.append("\n  ")
            used = 2 + part.cell_len
        out.append_text(part)
    return out


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
