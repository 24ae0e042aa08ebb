"""How many requests one endpoint gets at once: the adaptive concurrency cap.

The cap starts at 1: until the first answer arrives nobody knows whether the server announces
rate limits, and firing the whole ``--concurrency`` at a server that quantises its limit to a
second (or serves one request at a time) is answered with 429s or a long queue. The first
answer decides the mode:

- ``announced``: the server sends ``x-ratelimit-limit-*``. Its limits are what binds; the
  limiter paces requests and tokens to them, and the cap follows what that pace needs: by
  Little's law, a pace of ``r`` requests a second answered in ``L`` seconds keeps ``r * L``
  requests in flight, so the cap is ``NEED_MARGIN * r * L + NEED_HEADROOM`` (``L`` a running
  mean of the latency), up to the maximum. A run thus reaches its limit whatever the
  latency: 30,000 requests/min answered in 5 s need 2,500 at once. Only a timeout (a
  congestion signal) or an answer slower than half the attempt's timeout lowers the cap
  below that; it then grows back by one per ``cap`` successes that found it full. A 429
  is the pacer's business.
- ``capacity``: the server announces nothing (vLLM, llama.cpp, Ollama). Its capacity is what
  binds, and the cap follows it. It grows by one per success while the cap is what holds
  requests back (TCP's slow start: doubling per round trip), and by one per ``cap`` successes
  once congestion was seen (additive increase). A 429 or a timeout halves it, once per burst:
  answers to requests admitted before the last decrease say nothing new. When the user gave
  a pace (``--rpm``/``--tpm``), the cap never exceeds what that pace needs either.

A server that says how many requests it serves at once (llama.cpp's ``GET /props``
``total_slots``: ``slots_announced``) is taken at its word while its capacity binds: the cap
goes to the slot count with the first answer and never above it, so requests wait here
rather than in its queue, where their latency grows and counts against the timeout.

The maximum is ``-j`` when given. Without it, ``LIMITS_MAXIMUM`` when a pace is known (the
server announced limits, or the user gave them) and ``CAPACITY_MAXIMUM`` when not: a server
that announces nothing and answers fast keeps growing the cap until its queue reaches the
latency tolerance (2,000 requests at once at 2,000 calls a second) without answering any
faster, and each request in flight holds memory and a socket.

Latency says when a server queues. Every success records how many requests were in flight when
it was admitted (``k``) and its latency; by Little's law ``k / latency`` is the throughput the
server delivers at that level. Levels are half octaves of ``k`` (1, 2, 3, 4-5, 6-7, 8-11, ...),
each averaging its own last ``LEVEL_MEMORY`` samples. A level keeps what it measured until it
is visited again (the additive increase keeps probing upwards), so the evidence for a knee does
not fade while the cap sits below it. When a higher level gave no more throughput
than a lower one, requests beyond the lower level only wait in the server's queue: the cap
comes down to one more than the top of the lowest level that already reached ``KNEE_SHARE``
of the best throughput (the knee), and slow start ends. A one-slot server gives the same
throughput at every level, so its cap comes down to 2; a server with 8 slots settles near 8
to 12. While throughput still grows with the level, slow start goes on; a latency that jumps
to ``BRAKE_RATIO`` times the lowest level's stops it early, before the knee is measured.
Queueing that keeps latency under ``QUEUE_TOLERANCE_S`` (or an eighth of the attempt's
timeout, ``deadline_s``, when that is shorter) is harmless, and a fast local server looks
"saturated" only because the client's own CPU is; so the cap is only lowered for latency
above it. Whatever the levels say, a success that took more than half the timeout brings the
cap down in proportion, as a queue's latency grows with the requests in it.

This module holds no clock and no asyncio: the limiter feeds it, tests drive it directly.
"""

from __future__ import annotations

import math

__all__ = [
    "ANNOUNCED",
    "CAPACITY",
    "CAPACITY_MAXIMUM",
    "KNEE_SHARE",
    "LIMITS_MAXIMUM",
    "NEED_HEADROOM",
    "NEED_MARGIN",
    "PROBING",
    "QUEUE_TOLERANCE_S",
    "ConcurrencyControl",
    "level_of",
    "level_top",
]

PROBING = "probing"  # no answer yet
ANNOUNCED = "announced"  # the server announces rate limits
CAPACITY = "capacity"  # it does not: its capacity binds

QUEUE_TOLERANCE_S = 1.0  # latency at which queueing starts to matter
KNEE_SHARE = 0.85  # a level "reaches" the best throughput at this share of it
SCALING_GAIN = 1.2  # throughput of a level over the one below that says "still scaling"
BRAKE_RATIO = 1.5  # a latency this many times the lowest level's ends slow start
MIN_WEIGHT = 2.0  # samples a level needs before its throughput is trusted
LEVEL_MEMORY = 32  # samples a level averages over: older ones fade as new ones come

LIMITS_MAXIMUM = 4096  # default most in flight when a pace is known (bench/README.md)
CAPACITY_MAXIMUM = 256  # default most in flight against a server that announces no limits
NEED_MARGIN = 1.5  # in flight beyond pace x latency: latencies vary from request to request
NEED_HEADROOM = 4  # and a few more, for small figures
LATENCY_WEIGHT = 0.1  # of each new answer in the running mean of the latency
_NO_BRAKE = 1 << 62  # ssthresh before any brake or decrease: slow start is not limited


def level_of(k: int) -> int:
    """The half-octave level of an in-flight count: 1->0, 2->2, 3->3, 4-5->4, 6-7->5, 8-11->6."""
    return int(2.0 * math.log2(k))


def level_top(level: int) -> int:
    """The largest in-flight count of a level."""
    top = math.ceil(2.0 ** ((level + 1) / 2.0)) - 1
    while level_of(top + 1) == level:  # float edges
        top += 1
    return max(1, top)


class _Level:
    """Running sums over the last ``LEVEL_MEMORY`` samples of one range of in-flight counts."""

    __slots__ = ("k", "latency", "weight")

    def __init__(self) -> None:
        self.k = 0.0
        self.latency = 0.0
        self.weight = 0.0

    def add(self, k: int, latency: float) -> None:
        if self.weight >= LEVEL_MEMORY:
            f = 1.0 - 1.0 / LEVEL_MEMORY
            self.k *= f
            self.latency *= f
            self.weight *= f
        self.k += k
        self.latency += latency
        self.weight += 1.0


class ConcurrencyControl:
    """The cap on requests in flight for one endpoint; see the module docstring."""

    def __init__(
        self,
        maximum: int | None = None,
        *,
        deadline_s: float | None = None,
        room: int | None = None,
    ) -> None:
        """``maximum``: most in flight (``-j``); None: automatic (see the module docstring).
        ``room``: connections the open-file limit leaves for this endpoint (llm/sockets.py)."""
        self.explicit = maximum
        self.room = room
        self.deadline_s = deadline_s  # the attempt timeout: latency must stay well under it
        self.tolerance_s = QUEUE_TOLERANCE_S
        if deadline_s is not None:
            self.tolerance_s = min(QUEUE_TOLERANCE_S, deadline_s / 8)
        self.cap = 1
        self.mode = PROBING
        self.ssthresh = _NO_BRAKE  # slow start (cap + 1 per success) below this
        self.pace_rps: float | None = None  # requests a second the known limits allow
        self.latency_s: float | None = None  # running mean of the answers' latency
        self._answered = False  # a success was seen (with or without its latency)
        self._successes = 0  # towards the next additive +1
        self._next_seq = 0
        self._epoch = 0  # first sequence number admitted after the last decrease
        self._levels: dict[int, _Level] = {}
        self.slots: int | None = None  # requests the server says it serves at once

    @property
    def maximum(self) -> int:
        """The most in flight: ``-j``, else the automatic maximum for what is known (the
        server's slots while its capacity binds); never more than the room for connections."""
        if self.explicit is not None:
            most = self.explicit
        else:
            most = LIMITS_MAXIMUM if self.pace_rps is not None else CAPACITY_MAXIMUM
            if self.slots is not None and self.mode != ANNOUNCED:
                most = min(most, self.slots)
        return most if self.room is None else max(1, min(most, self.room))

    def slots_announced(self, slots: int) -> None:
        """The server serves ``slots`` requests at once (see the module docstring)."""
        if slots < 1:
            return
        self.slots = slots
        if self.mode == CAPACITY:
            self.cap = self.maximum
        self._settle()

    @property
    def need(self) -> int | None:
        """In flight that the known pace needs at the latency seen; None while either is unknown."""
        if self.pace_rps is None or self.latency_s is None:
            return None
        return math.ceil(NEED_MARGIN * self.pace_rps * self.latency_s) + NEED_HEADROOM

    # -- events --------------------------------------------------------------------------------

    def admitted(self) -> int:
        """A request starts; returns its sequence number."""
        seq = self._next_seq
        self._next_seq += 1
        return seq

    def announced(self) -> None:
        """The server announced rate limits: they bind, not its capacity."""
        if self.mode != ANNOUNCED:
            self.mode = ANNOUNCED
            self._levels.clear()
            self._settle()

    def paced(self, rps: float | None) -> None:
        """The known limits allow ``rps`` requests a second (None: no pace is known)."""
        self.pace_rps = rps if rps is not None and rps > 0 and math.isfinite(rps) else None
        self._settle()

    def success(
        self, seq: int | None, k: int = 0, latency: float = 0.0, *, binding: bool = True
    ) -> None:
        """An answer arrived for request ``seq``, admitted with ``k`` in flight (itself included).

        ``binding``: the cap is what holds requests back (someone waits, or the cap is full);
        a cap that is not used is not grown, or it would flood the server when work arrives.
        """
        if self.mode == PROBING:
            self.mode = CAPACITY
            if self.slots is not None:
                self.cap = self.maximum  # the server said how many it serves at once
        self._answered = True
        if latency > 0:
            last = self.latency_s
            self.latency_s = latency if last is None else last + LATENCY_WEIGHT * (latency - last)
        if seq is not None and k > 0 and latency > 0:
            if self.mode == CAPACITY:
                self._record(k, latency)
                # the fit only acts on latency above the tolerance, or to undo a brake
                if latency > self.tolerance_s or self.ssthresh != _NO_BRAKE:
                    self._fit()
            self._keep_under_deadline(k, latency)
        if binding and self.cap < self.maximum:
            self._grow()
        self._settle()

    def _grow(self) -> None:
        if self.mode == ANNOUNCED:
            if self.ssthresh == _NO_BRAKE:
                return  # the pace decides (_settle)
            # after congestion: the ceiling comes back by one per ``cap`` successes
            self._successes += 1
            if self._successes >= self.cap:
                self._successes = 0
                self.ssthresh += 1
                if self.ssthresh >= self.maximum:
                    self.ssthresh = _NO_BRAKE
            return
        if self.cap < self.ssthresh:
            self.cap += 1
            return
        self._successes += 1
        if self._successes >= self.cap:
            self._successes = 0
            self.cap += 1

    def _settle(self) -> None:
        """Keep the cap within the maximum and, when a pace is known, what it needs."""
        if self.mode == PROBING:
            return  # one request until the first answer
        need = self.need
        if self.mode == ANNOUNCED:
            if not self._answered:
                return  # the latency comes with the first answer's success, right after
            # no need known (an answer without its latency, or no tokens seen yet under a
            # tokens-only limit): up to the maximum
            ceiling = min(self.maximum, self.ssthresh)
            self.cap = max(1, ceiling if need is None else min(ceiling, need))
            return
        ceiling = self.maximum if need is None else min(self.maximum, need)
        if self.cap > ceiling:
            self.cap = max(1, ceiling)

    def rate_limited(self, seq: int | None) -> None:
        """A 429. Announced limits: the pacer slows down, the cap stays. Otherwise: halve."""
        if self.mode == PROBING:
            self.mode = CAPACITY
        if self.mode == CAPACITY:
            self._decrease(seq)

    def congested(self, seq: int | None) -> None:
        """A timeout or a connection dropped after sending: halve, in every mode."""
        self._decrease(seq)

    def server_error(self) -> None:
        """A 5xx: the server struggles, so this run of successes does not grow the cap."""
        self._successes = 0

    # -- internals -----------------------------------------------------------------------------

    def _decrease(self, seq: int | None) -> None:
        if seq is not None and seq < self._epoch:
            return  # admitted before the last decrease: already accounted for
        self.cap = max(1, self.cap // 2)
        self.ssthresh = self.cap
        self._successes = 0
        self._epoch = self._next_seq
        self._settle()

    def _keep_under_deadline(self, k: int, latency: float) -> None:
        if self.deadline_s is None or latency <= self.deadline_s / 2:
            return
        fit = max(1, int(k * (self.deadline_s / 2) / latency))
        if fit < self.cap:
            self.cap = fit
            self.ssthresh = fit
            self._successes = 0

    def _record(self, k: int, latency: float) -> None:
        index = level_of(k)
        level = self._levels.get(index)
        if level is None:
            level = self._levels[index] = _Level()
        level.add(k, latency)
        if self.cap < self.ssthresh and latency > self.tolerance_s:
            lowest = self._lowest_latency()
            if lowest is not None and latency > BRAKE_RATIO * lowest:
                self.ssthresh = self.cap  # latency doubled on the way up: stop doubling

    def _lowest_latency(self) -> float | None:
        means = [lv.latency / lv.weight for lv in self._levels.values() if lv.weight > 0]
        return min(means) if means else None

    def _fit(self) -> None:
        known: dict[int, tuple[float, float]] = {}  # level -> (throughput, mean latency)
        for index, lv in self._levels.items():
            if lv.weight >= MIN_WEIGHT and lv.latency > 0:
                known[index] = (lv.k / lv.latency, lv.latency / lv.weight)
        if not known:
            return
        best = max(x for x, _ in known.values())
        top = max(known)
        knee = min(i for i, (x, _) in known.items() if x >= KNEE_SHARE * best)
        if knee == top:
            below = known.get(top - 1)
            if below is not None and known[top][0] >= SCALING_GAIN * below[0]:
                self.ssthresh = _NO_BRAKE  # still scaling: a false brake is undone
            return
        # one more than the knee's top: a request waiting behind the server's slots hides the
        # round trip between an answer and the next request
        ceiling = level_top(knee) + 1
        if self.cap > ceiling and known[top][1] > self.tolerance_s:
            self.cap = max(1, ceiling)
            self.ssthresh = self.cap
            self._successes = 0
