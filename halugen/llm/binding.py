"""What binds the pace of a run's calls: the provider's limit, the concurrency cap, the
server's capacity, or halugen's own CPU.

Measured, not guessed. The endpoint pool (llm/pool.py) adds up how long the head of its queue
waited, and for what (``RateLimiter.holding_back``): the provider's limits (a pace, a cooldown,
or the cap that the pace needs), the concurrency cap at its maximum (``-j``), or a cap below
the maximum that the server's capacity set. Beside it, the CPU time of the event loop's
thread and of the whole process. Over the last ``WINDOW_S`` seconds:

- the head of the queue waited at least ``WAIT_SHARE`` of the time: what it waited for most
  binds (``LIMIT``, ``CAP`` or ``SERVER``);
- else the event loop was busy at least ``CPU_SHARE`` of the time, or the process used that
  share of the cores it may run on, or the loop ran its timers ``LATE_S`` late on average
  (it is saturated, or starved by other processes; Python's threads share one interpreter,
  so a loop waiting for its turn shows as lateness, not as CPU time): halugen's CPU binds
  (``CPU``);
- else nothing binds at the endpoints: work reaches them slower than they take it (the seeds
  are read slowly, or the run is ending) and the verdict is "".

The verdict is one word for the live view; ``summary`` says which verdict held longest over
the session and for what share of it ("limit 93%"), for ``halugen status``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Callable

from .limiter import CAP, LIMIT, SERVER

__all__ = ["CPU", "CPU_SHARE", "LABELS", "LATE_S", "WAIT_SHARE", "WINDOW_S", "PaceGauge"]

CPU = "cpu"
WINDOW_S = 5.0  # seconds the verdict looks back over
WAIT_SHARE = 0.5  # of the window the queue's head must wait for the endpoints to bind
CPU_SHARE = 0.85  # of a core (the loop) or of the allowed cores (the process) for the CPU to
LATE_S = 0.005  # mean lateness of the loop's timers that says the loop cannot keep up
LABELS = {LIMIT: "limit", CAP: "-j", SERVER: "server", CPU: "CPU"}  # as people read them
_MARK_EVERY_S = 0.5  # at most this often a reading is kept
_PROBE_S = 0.05  # how often the loop's lateness is sampled


# (time, waited for LIMIT, CAP, SERVER, loop CPU, process CPU, lateness, probes)
_Reading = tuple[float, float, float, float, float, float, float, int]


def _loop_time() -> float:
    """The running loop's clock (a virtual one in tests), else the monotonic clock."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return time.monotonic()


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class PaceGauge:
    """Wait times by cause and CPU readings, turned into what binds; see the module docstring.

    ``clock``, ``loop_cpu`` and ``process_cpu`` are for tests; ``loop_cpu`` must be read on the
    event loop's thread (``verdict`` is called there, by the progress view and the run).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = _loop_time,
        loop_cpu: Callable[[], float] = time.thread_time,
        process_cpu: Callable[[], float] = time.process_time,
        cores: int | None = None,
    ) -> None:
        self._clock = clock
        self._loop_cpu = loop_cpu
        self._process_cpu = process_cpu
        self._cores = cores or _cores()
        self.waited = {LIMIT: 0.0, CAP: 0.0, SERVER: 0.0}  # seconds, since the start
        self.held = {LIMIT: 0.0, CAP: 0.0, SERVER: 0.0, CPU: 0.0, "": 0.0}  # by verdict
        self.lateness = 0.0  # seconds the loop's probe timers fired late, summed
        self.probes = 0
        self._probing: asyncio.AbstractEventLoop | None = None
        now = clock()
        self._marks: deque[_Reading] = deque([self._reading(now)])
        self._last = now
        self._verdict = ""

    def late(self, seconds: float) -> None:
        """A timer of the event loop fired ``seconds`` after it was due."""
        self.lateness += max(0.0, seconds)
        self.probes += 1

    def _probe(self) -> None:
        """Sample the loop's lateness every ``_PROBE_S`` while it runs (started by verdict)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._probing is loop:
            return
        self._probing = loop

        def fire(due: float) -> None:
            now = loop.time()
            self.late(now - due)
            loop.call_at(now + _PROBE_S, fire, now + _PROBE_S)

        due = loop.time() + _PROBE_S
        loop.call_at(due, fire, due)

    def waited_for(self, cause: str, seconds: float) -> None:
        """The head of the queue waited ``seconds`` for ``cause`` (LIMIT, CAP or SERVER)."""
        if cause in self.waited and seconds > 0:
            self.waited[cause] += seconds

    def _reading(self, now: float) -> _Reading:
        w = self.waited
        return (
            now,
            w[LIMIT],
            w[CAP],
            w[SERVER],
            self._loop_cpu(),
            self._process_cpu(),
            self.lateness,
            self.probes,
        )

    def verdict(self) -> str:
        """What binds over the last ``WINDOW_S`` seconds: LIMIT, CAP, SERVER, CPU or ""."""
        self._probe()
        now = self._clock()
        reading = self._reading(now)
        marks = self._marks
        # the latest mark at least a window old, or the oldest there is
        while len(marks) > 1 and marks[1][0] <= now - WINDOW_S:
            marks.popleft()
        base = marks[0]
        span = now - base[0]
        if now - marks[-1][0] >= _MARK_EVERY_S:
            marks.append(reading)
        verdict = self._verdict
        if span > 0:
            waits = {
                LIMIT: reading[1] - base[1],
                CAP: reading[2] - base[2],
                SERVER: reading[3] - base[3],
            }
            cause = max(waits, key=lambda c: waits[c])
            loop_share = (reading[4] - base[4]) / span
            process_share = (reading[5] - base[5]) / span / self._cores
            probes = reading[7] - base[7]
            lateness = (reading[6] - base[6]) / probes if probes else 0.0
            if sum(waits.values()) >= WAIT_SHARE * span:
                verdict = cause
            elif max(loop_share, process_share) >= CPU_SHARE or lateness >= LATE_S:
                verdict = CPU
            else:
                verdict = ""
        self.held[self._verdict] += max(0.0, now - self._last)
        self._last = now
        self._verdict = verdict
        return verdict

    def summary(self) -> str:
        """The verdict that held longest this session and its share of the time, e.g.
        "limit 93%"; "" before anything bound."""
        self.verdict()
        total = sum(self.held.values())
        bound = {c: t for c, t in self.held.items() if c}
        if total <= 0 or not bound:
            return ""
        cause = max(bound, key=lambda c: bound[c])
        if bound[cause] <= 0:
            return ""
        return f"{LABELS[cause]} {bound[cause] / total:.0%}"
