"""The progress view: what it shows, zero-safe figures, plain-line pacing on a fake clock."""

from __future__ import annotations

import dataclasses
import io
import re
from dataclasses import dataclass

import pytest
from rich.console import Console

from halugen.budget import Ledger
from halugen.cost.prices import PUSD_PER_USD
from halugen.progress import ProgressView
from halugen.progress_figures import format_eta
from halugen.stats import RunStats

T0 = 1000.0


@dataclass(frozen=True, slots=True)
class FakeSnapshot:
    # the fields of halugen.stats.LimiterSnapshot (checked below)
    rpm_limit: float | None = 3000.0
    tpm_limit: float | None = None
    concurrency: int = 12
    max_concurrency: int = 64
    in_flight: int = 10
    waiting: int = 3
    cooldown_s: float = 1.5
    rate_limited: int = 4
    bound_by: str = "limit"


class FakeStats(RunStats):
    """RunStats with fixed rates (the real ones read the wall clock)."""

    def __init__(self, rpm: float = 0.0, tpm: float = 0.0, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.fixed = (rpm, tpm)

    def rates(self, window: float = 20.0) -> tuple[float, float]:
        return self.fixed


class FakeClock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def usd(x: float) -> int:
    return round(x * PUSD_PER_USD)


def text_console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=160, force_terminal=False), buf


def busy_stats() -> FakeStats:
    stats = FakeStats(rpm=1250.0, tpm=310_000.0, run_id="run-7f3a", started_at=T0)
    stats.seeds_total["qa"] = 500
    stats.admitted["qa"] = 140
    stats.already_done["qa"] = 120
    stats.sampled["qa"] = 98
    stats.rejected["qa"] = 20
    stats.failed["qa"] = 2
    stats.bad_records["qa"] = 5
    # inserted out of order: the view sorts sample before filter before anything else
    filt = stats.stage("qa", "filter")
    filt.done, filt.in_flight, filt.failed, filt.retries = 100, 4, 1, 2
    filt.prompt_tokens, filt.completion_tokens, filt.cost_pusd = 40_000, 900, usd(0.0040)
    samp = stats.stage("qa", "sample")
    samp.done, samp.in_flight, samp.failed, samp.cached, samp.retries = 260, 6, 3, 17, 9
    samp.prompt_tokens, samp.completion_tokens, samp.cost_pusd = 123_456, 54_321, usd(0.0080)
    # half the sampling prompts' tokens came from the provider's prompt cache
    samp.cached_input_tokens, samp.cache_saved_pusd = 61_728, usd(0.0046)
    return stats


def busy_ledger() -> Ledger:
    ledger = Ledger(usd(5.0), spent=usd(0.0123))
    ledger.reserved = usd(0.0040)
    return ledger


def render_text(view: ProgressView) -> str:
    console, buf = text_console()
    console.print(view.render())
    return buf.getvalue()


def make_view(stats: RunStats, ledger: Ledger, clock: FakeClock, **kw: object) -> ProgressView:
    snap = kw.pop("snapshot", FakeSnapshot())
    console = kw.pop("console", None) or text_console()[0]
    return ProgressView(
        stats=stats,
        ledger=ledger,
        limiter_snapshot=lambda: snap,
        console=console,  # type: ignore[arg-type]
        clock=clock,
        **kw,  # type: ignore[arg-type]
    )


def test_snapshot_fake_matches_the_limiter_interface() -> None:
    stats = pytest.importorskip("halugen.stats")
    real = [f.name for f in dataclasses.fields(stats.LimiterSnapshot)]
    assert real == [f.name for f in dataclasses.fields(FakeSnapshot)]


def test_render_shows_every_figure() -> None:
    clock = FakeClock(T0 + 60.0)
    out = render_text(make_view(busy_stats(), busy_ledger(), clock))

    assert "run-7f3a" in out
    # seeds: finished this session / total, and the breakdown
    assert "seeds 120/500" in out
    for figure in ("sampled 98", "rejected 20", "failed 2", "bad records 5", "already done 120"):
        assert figure in out
    # acceptance 98 / 118; cost per accepted sample: $0.012 this session / 98
    assert "acceptance 83.1%" in out
    assert "per accepted sample $0.000122" in out
    # money: spent counts what calls in flight reserved (as status and run_spend do)
    assert "spent $0.0163" in out
    assert "of which in flight $0.004000 " in out
    assert "remaining $4.9837" in out
    assert "budget $5.0000" in out
    assert "exhausted" not in out
    # rate against the limiter's limits
    assert "1,250 / 3,000 rpm" in out
    assert "310,000 tpm (no limit)" in out
    assert "concurrency 12/64" in out
    assert "in flight 10" in out
    assert "waiting 3" in out
    assert "cooldown 1.5s" in out
    assert "429s 4" in out
    assert "bound by limit" in out  # what holds the pace (llm/binding.py)
    # 120 seeds in 60 s = 2/s; 500 - 120 resumed - 120 finished = 260 left -> 130 s
    assert "ETA 2m10s" in out
    # ledger spent (incl. in flight) + 260 seeds x ($0.012 / 120)
    assert "projected total $0.0423" in out
    assert "elapsed 1m00s" in out
    # the provider's prompt cache: 61,728 of 163,456 prompt tokens, and what it saved
    assert "input served from cache 37.8%" in out
    assert "saved $0.004600" in out


def test_table_rows_sorted_by_task_then_stage_with_totals() -> None:
    stats = busy_stats()
    stats.stage("qa", "annotate").done = 1
    stats.stage("dialogue", "sample").done = 2
    out = render_text(make_view(stats, busy_ledger(), FakeClock()))
    table = out[out.index("tokens in") :]
    rows = [[c for c in line.split() if c != "│"] for line in table.splitlines() if line.strip()]
    keyed = [r[:2] for r in rows if r[0] in {"qa", "dialogue"}]
    assert keyed == [["dialogue", "sample"], ["qa", "sample"], ["qa", "filter"], ["qa", "annotate"]]
    sample = next(r for r in rows if r[:2] == ["qa", "sample"])
    # done, in flight, failed, cached, retries, tokens in, tokens out, spent, cache (share
    # of input), saved, per sample (spent / 98 accepted samples)
    assert sample[2:] == [
        "260", "6", "3", "17", "9", "123,456", "54,321", "$0.008000", "50.0%", "$0.004600",
        "$0.000082",
    ]  # fmt: skip
    filt = next(r for r in rows if r[:2] == ["qa", "filter"])
    assert filt[-3:] == ["0.0%", "$0", "$0.000041"]  # $0.004 / 98
    total = next(r for r in rows if r[0] == "total")
    assert total[1:] == [
        "363", "10", "4", "17", "11", "163,456", "55,221", "$0.0120", "37.8%", "$0.004600",
        "$0.000122",
    ]  # fmt: skip


def test_plain_line_summarises_the_run() -> None:
    view = make_view(busy_stats(), busy_ledger(), FakeClock(T0 + 60.0))
    line = view.plain_line()
    assert line.startswith("[halugen] qa: 120/500 seeds (98 sampled, 20 rejected, 2 failed, ")
    assert "5 bad records" in line and "120 already done" in line
    assert "| calls 360 ok 4 failed |" in line
    assert "$0.0163 spent ($0.004000 of it in flight), $4.9837 left" in line
    assert "| cache 37.8% of input, saved $0.004600 |" in line
    assert "1,250 rpm 310,000 tpm, bound by limit" in line
    assert "ETA 2m10s, projected $0.0423" in line
    assert "\n" not in line


def test_zero_counters_never_raise() -> None:
    stats = FakeStats(started_at=T0)
    view = make_view(
        stats, Ledger(None), FakeClock(T0), snapshot=FakeSnapshot(None, None, 1, 1, 0, 0, 0.0, 0)
    )
    out = render_text(view)
    assert "no seeds yet" in out
    assert "ETA —" in out
    assert "projected total —" in out
    assert "cooldown" not in out  # only shown while one runs
    assert "0 rpm (no limit)" in out
    line = view.plain_line()
    assert "no seeds yet" in line and "ETA —" in line

    # a task that is known but has nothing finished, with no time elapsed
    stats.seeds_total["qa"] = 10
    stats.stage("qa", "sample").in_flight = 3
    out = render_text(view)
    assert "seeds 0/10" in out
    assert "acceptance —" in out
    assert "per accepted sample —" in out
    assert "ETA —" in out
    view.plain_line()


def test_unknown_total_shows_question_mark_and_no_eta() -> None:
    stats = busy_stats()
    stats.seeds_total["qa"] = None
    view = make_view(stats, busy_ledger(), FakeClock(T0 + 60.0))
    out = render_text(view)
    assert "seeds 120/?" in out
    assert "ETA —" in out
    assert "projected total —" in out
    assert "qa: 120/? seeds" in view.plain_line()


def test_all_seeds_done_gives_zero_eta() -> None:
    stats = busy_stats()
    stats.seeds_total["qa"] = 240
    out = render_text(make_view(stats, busy_ledger(), FakeClock(T0 + 60.0)))
    assert "ETA 0s" in out
    assert "projected total $0.0163" in out  # nothing left: what was spent


def test_budget_none_shows_unlimited() -> None:
    ledger = Ledger(None, spent=usd(1.5))
    view = make_view(busy_stats(), ledger, FakeClock(T0 + 60.0))
    out = render_text(view)
    assert "remaining unlimited" in out
    assert "budget unlimited" in out
    assert "$1.5000 spent ($0 of it in flight), unlimited budget" in view.plain_line()


def test_exhausted_budget_shows_the_notice() -> None:
    ledger = busy_ledger()
    ledger.exhausted = True
    view = make_view(busy_stats(), ledger, FakeClock(T0 + 60.0))
    assert "budget exhausted" in render_text(view)
    assert view.plain_line().endswith("| budget exhausted")


def _ansi_render(ledger: Ledger) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=True, color_system="standard")
    view = make_view(busy_stats(), ledger, FakeClock(T0 + 60.0), console=console, live=False)
    console.print(view.render())
    return buf.getvalue()


def test_remaining_is_coloured_under_ten_percent() -> None:
    yellow = re.compile(r"\x1b\[33m\$0\.4000")
    low = Ledger(usd(5.0), spent=usd(4.6))
    assert yellow.search(_ansi_render(low))
    high = Ledger(usd(5.0), spent=usd(4.4))
    assert "$0.6000" in _ansi_render(high)
    assert not re.search(r"\x1b\[33m\$0\.6000", _ansi_render(high))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (59.6, "1m00s"),
        (130, "2m10s"),
        (3599, "59m59s"),
        (3720, "1h02m"),
        (26 * 3600 + 5 * 60, "26h05m"),
        (None, "—"),
        (float("inf"), "—"),
        (float("nan"), "—"),
        (-1, "—"),
    ],
)
def test_format_eta(seconds: float | None, text: str) -> None:
    assert format_eta(seconds) == text


def test_plain_mode_prints_only_after_the_interval() -> None:
    console, buf = text_console()
    clock = FakeClock(T0)
    view = make_view(busy_stats(), busy_ledger(), clock, console=console, plain_interval=5.0)
    assert not view.is_live  # no terminal: plain lines
    view.start()
    assert buf.getvalue() == ""
    clock.now = T0 + 4.9
    view.tick()
    assert buf.getvalue() == ""
    clock.now = T0 + 5.0
    view.tick()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[halugen] qa: 120/500 seeds")
    clock.now = T0 + 9.0
    view.tick()
    assert len(buf.getvalue().splitlines()) == 1
    clock.now = T0 + 10.0
    view.tick()
    assert len(buf.getvalue().splitlines()) == 2
    clock.now = T0 + 75.0
    view.stop()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[-1].startswith("[halugen] qa:")
    assert lines[-1].endswith("| elapsed 1m15s")
    view.stop()  # idempotent
    view.tick()  # after stop: silent
    assert len(buf.getvalue().splitlines()) == 3


def test_live_mode_draws_the_table_and_leaves_it_on_stop() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=160, force_terminal=True, color_system=None)
    stats = busy_stats()
    view = make_view(stats, busy_ledger(), FakeClock(T0 + 60.0), console=console)
    assert view.is_live  # live=None follows console.is_terminal
    view.start()
    stats.sampled["qa"] = 99
    view.tick()
    view.stop()
    out = buf.getvalue()
    assert "[halugen]" not in out  # no plain lines in live mode
    assert "sampled 99" in out
    assert "tokens in" in out


def test_default_console_writes_to_stderr() -> None:
    view = ProgressView(stats=RunStats(), ledger=Ledger(None), limiter_snapshot=FakeSnapshot)  # type: ignore[arg-type]
    assert view.console.stderr


def test_money_held_for_queued_calls_is_not_spent() -> None:
    # reserved 0.0040 at the provider plus 0.0030 held for calls waiting for a slot: spent
    # counts only what may be billed; the held money is shown apart and not remaining
    ledger = busy_ledger()
    ledger.reserved += usd(0.0030)
    ledger.queued = usd(0.0030)
    view = make_view(busy_stats(), ledger, FakeClock(T0 + 60.0))
    assert "$0.0163 spent ($0.004000 of it in flight), $4.9807 left" in view.plain_line()
    text = render_text(view)
    assert "held for queued calls $0.003000" in text


def test_stopping_messages_say_what_is_at_the_provider_and_what_was_queued() -> None:
    from halugen.progress import abandoned_message, stopping_message

    first = stopping_message(3, 61, 30.0)
    assert first.startswith("stopping: 3 request(s) at the provider will finish")
    assert "billed as usual" in first and "61 queued call(s) released at $0" in first
    assert "Ctrl-C again abandons the 3 at the provider: they count as spent" in first
    assert stopping_message(0, 5, 30.0).startswith("stopping: nothing is at the provider")
    assert "nothing was queued" in stopping_message(2, 0, 30.0)
    second = abandoned_message("stopping now", 3)
    assert second == (
        "stopping now: 3 request(s) at the provider abandoned; they count as spent "
        "(the provider may bill them)"
    )
    assert "queued" not in second  # the queued ones were released at the first press


def test_the_live_view_shows_how_much_calls_in_flight_may_hold() -> None:
    ledger = Ledger(usd(5.0), spent=usd(0.0123), in_flight_share=0.25)
    ledger.reserved = usd(0.0040)
    view = make_view(busy_stats(), ledger, FakeClock(T0 + 60.0))
    # a quarter of what is not spent: ($5 - $0.0123) / 4
    assert "of which in flight $0.004000 (at most $1.2469)" in render_text(view)
    assert "($0.004000 of it in flight, at most $1.2469), $4.9837 left" in view.plain_line()
