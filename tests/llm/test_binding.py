"""What binds the pace, from wait times and CPU readings on fake clocks (llm/binding.py)."""

from __future__ import annotations

from halugen.llm.binding import CPU, WINDOW_S, PaceGauge
from halugen.llm.limiter import CAP, LIMIT, SERVER


class Readings:
    """A fake clock and fake CPU counters that tests move by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.loop = 0.0
        self.process = 0.0

    def gauge(self, cores: int = 2) -> PaceGauge:
        return PaceGauge(
            clock=lambda: self.now,
            loop_cpu=lambda: self.loop,
            process_cpu=lambda: self.process,
            cores=cores,
        )

    def spend(self, seconds: float, *, loop: float = 0.0, process: float | None = None) -> None:
        self.now += seconds
        self.loop += loop * seconds
        self.process += (loop if process is None else process) * seconds


def run(r: Readings, gauge: PaceGauge, seconds: float, **waits: float) -> list[str]:
    """``seconds`` in steps of a quarter second, the head waiting ``waits[cause]`` of each."""
    verdicts = []
    for _ in range(int(seconds * 4)):
        r.spend(0.25, loop=0.1)
        for cause, share in waits.items():
            gauge.waited_for(cause, 0.25 * share)
        verdicts.append(gauge.verdict())
    return verdicts


def test_what_the_queue_waits_for_most_binds() -> None:
    r = Readings()
    gauge = r.gauge()
    assert run(r, gauge, 10, **{LIMIT: 0.9, CAP: 0.05})[-1] == LIMIT
    assert run(r, gauge, 10, **{CAP: 0.95})[-1] == CAP
    assert run(r, gauge, 10, **{SERVER: 0.7, LIMIT: 0.2})[-1] == SERVER


def test_the_verdict_looks_at_the_last_window_only() -> None:
    r = Readings()
    gauge = r.gauge()
    run(r, gauge, 30, **{LIMIT: 1.0})
    verdicts = run(r, gauge, 2 * WINDOW_S, **{CAP: 1.0})
    assert verdicts[0] == LIMIT and verdicts[-1] == CAP


def test_a_busy_loop_with_nobody_waiting_is_the_cpu_and_an_idle_one_nothing() -> None:
    r = Readings()
    gauge = r.gauge()
    for _ in range(40):
        r.spend(0.25, loop=0.95)
        busy = gauge.verdict()
    assert busy == CPU
    for _ in range(40):
        r.spend(0.25, loop=0.2)
        idle = gauge.verdict()
    assert idle == ""
    for _ in range(40):  # the loop itself is not busy, the process's threads fill both cores
        r.spend(0.25, loop=0.5, process=1.8)
        threads = gauge.verdict()
    assert threads == CPU


def test_short_waits_do_not_bind() -> None:
    r = Readings()
    gauge = r.gauge()
    assert run(r, gauge, 10, **{LIMIT: 0.3, CAP: 0.1})[-1] == ""


def test_the_summary_says_what_held_longest_and_for_what_share() -> None:
    r = Readings()
    gauge = r.gauge()
    assert gauge.summary() == ""
    run(r, gauge, 60, **{LIMIT: 1.0})
    run(r, gauge, 20, **{CAP: 1.0})
    summary = gauge.summary()
    assert summary.startswith("limit ")
    share = int(summary.split()[1].rstrip("%"))
    assert 65 <= share <= 80  # about 60 + a window of 80 s


def test_a_loop_whose_timers_run_late_is_the_cpu_even_when_its_own_time_is_low() -> None:
    # Python's threads share one interpreter: a loop waiting for its turn (the store's and the
    # seeds' threads busy) shows as lateness, not as CPU time of its own
    r = Readings()
    gauge = r.gauge()
    for _ in range(40):
        r.spend(0.25, loop=0.5)
        for _ in range(5):
            gauge.late(0.02)
        verdict = gauge.verdict()
    assert verdict == CPU
    for _ in range(40):
        r.spend(0.25, loop=0.5)
        for _ in range(5):
            gauge.late(0.001)
        verdict = gauge.verdict()
    assert verdict == ""
