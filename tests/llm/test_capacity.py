"""The concurrency controller driven directly: probing, modes, AIMD, the knee, the deadline."""

from __future__ import annotations

import math

import pytest

from halugen.llm.capacity import (
    ANNOUNCED,
    CAPACITY,
    CAPACITY_MAXIMUM,
    LIMITS_MAXIMUM,
    NEED_HEADROOM,
    NEED_MARGIN,
    PROBING,
    QUEUE_TOLERANCE_S,
    ConcurrencyControl,
    level_of,
    level_top,
)


def grown(maximum: int, cap: int) -> ConcurrencyControl:
    """A controller in capacity mode whose cap slow-started to ``cap``."""
    control = ConcurrencyControl(maximum)
    while control.cap < cap:
        control.success(control.admitted())  # no latency: nothing learned but growth
    assert control.mode == CAPACITY and control.cap == cap
    return control


def test_levels_are_half_octaves() -> None:
    assert [level_of(k) for k in (1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 15, 16, 22, 23)] == [
        0,
        2,
        3,
        4,
        4,
        5,
        5,
        6,
        6,
        7,
        7,
        8,
        8,
        9,
    ]
    for level in (0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13):
        top = level_top(level)
        assert level_of(top) == level and level_of(top + 1) > level


def test_one_request_until_the_first_answer_then_the_mode_decides() -> None:
    control = ConcurrencyControl(64)
    assert (control.mode, control.cap) == (PROBING, 1)
    control.announced()  # the headers of the first answer; its latency comes next
    assert (control.mode, control.cap) == (ANNOUNCED, 1)
    control.success(None)  # an answer without a latency: no need known, open to the maximum
    assert (control.mode, control.cap) == (ANNOUNCED, 64)

    control = ConcurrencyControl(64)
    control.success(control.admitted())
    assert (control.mode, control.cap) == (CAPACITY, 2)


def test_slow_start_grows_by_one_per_binding_success_only() -> None:
    control = grown(64, 5)
    control.success(control.admitted(), binding=False)  # the cap held nobody back
    assert control.cap == 5
    control.success(control.admitted(), binding=True)
    assert control.cap == 6


def test_429_halves_in_capacity_mode_once_per_burst_and_growth_is_then_additive() -> None:
    control = grown(64, 16)
    in_flight = [control.admitted() for _ in range(16)]
    for seq in in_flight:  # a burst of 429s for requests admitted before the first decrease
        control.rate_limited(seq)
    assert control.cap == 8
    control.rate_limited(control.admitted())  # admitted after it: news
    assert control.cap == 4
    caps = []
    for _ in range(4 + 5):
        control.success(control.admitted())
        caps.append(control.cap)
    assert caps == [4, 4, 4, 5, 5, 5, 5, 5, 6]  # +1 per cap successes


def test_announced_limits_leave_the_cap_to_timeouts() -> None:
    control = ConcurrencyControl(64)
    control.announced()
    control.success(None)
    control.rate_limited(control.admitted())
    assert control.cap == 64  # a 429 is the pacer's business there
    control.congested(control.admitted())
    assert control.cap == 32


def test_a_server_error_restarts_the_additive_run() -> None:
    control = grown(8, 4)
    control.congested(control.admitted())  # cap 2, additive from here
    caps = []
    for event in ("ok", "5xx", "ok", "ok", "ok", "ok"):
        if event == "ok":
            control.success(control.admitted())
        else:
            control.server_error()
        caps.append(control.cap)
    assert caps == [2, 2, 2, 3, 3, 3]


def fifo_latency(k: int, capacity: int, service: float) -> float:
    """A FIFO server in steady state: latency grows with the requests ahead past its slots."""
    return service * max(1.0, k / capacity)


@pytest.mark.parametrize(("capacity", "settles"), [(1, (2, 4)), (4, (4, 7)), (8, (8, 13))])
def test_latency_rising_with_concurrency_brings_the_cap_to_the_knee(
    capacity: int, settles: tuple[int, int]
) -> None:
    control = ConcurrencyControl(64)
    service = 2.0  # seconds: queueing here matters
    caps = []
    for _ in range(600):
        k = control.cap  # a backlogged client keeps the cap full
        control.success(control.admitted(), k, fifo_latency(k, capacity, service))
        caps.append(control.cap)
    low, high = settles
    assert max(caps) <= 64
    assert all(low <= c <= high for c in caps[-200:]), sorted(set(caps[-200:]))


def test_a_server_that_scales_keeps_the_cap_growing_to_the_maximum() -> None:
    control = ConcurrencyControl(64)
    for _ in range(300):
        k = control.cap
        control.success(control.admitted(), k, fifo_latency(k, 256, 3.0))
    assert control.cap == 64


def test_queueing_under_the_tolerance_does_not_lower_the_cap() -> None:
    control = ConcurrencyControl(64)
    service = QUEUE_TOLERANCE_S / 100  # a fast local server: 64 queued is still short
    for _ in range(300):
        k = control.cap
        control.success(control.admitted(), k, fifo_latency(k, 1, service))
    assert control.cap == 64


def test_a_success_slower_than_half_the_deadline_brings_the_cap_down_in_proportion() -> None:
    control = grown(64, 20)
    control.deadline_s = 10.0
    control.success(control.admitted(), 20, 8.0)  # 20 in flight took 8 s: 12 fit in 5 s
    assert control.cap == 12
    control.success(control.admitted(), 12, 4.0)  # under half the deadline: left alone
    assert control.cap >= 12


# -- with known limits the cap follows what the pace needs ---------------------------------------


def need(rps: float, latency: float) -> int:
    return math.ceil(NEED_MARGIN * rps * latency) + NEED_HEADROOM


def test_with_announced_limits_the_cap_is_what_the_pace_needs_at_the_latency_seen() -> None:
    control = ConcurrencyControl()  # no -j: automatic
    control.paced(500.0)  # 30,000 requests/min
    control.announced()
    assert control.cap == 1  # until the first answer says how long answers take
    control.success(control.admitted(), 1, 5.0)
    assert control.cap == need(500.0, 5.0) > 64
    assert control.maximum == LIMITS_MAXIMUM
    for _ in range(200):  # answers get faster: the cap comes down with the need
        control.success(control.admitted(), control.cap, 1.0)
    assert control.cap == pytest.approx(need(500.0, 1.0), abs=2)
    control.paced(50.0)  # the headers announce a lower limit
    assert control.cap == pytest.approx(need(50.0, 1.0), abs=1)


def test_j_caps_what_the_pace_needs() -> None:
    control = ConcurrencyControl(100)
    control.paced(500.0)
    control.announced()
    control.success(control.admitted(), 1, 5.0)
    assert control.cap == 100


def test_the_automatic_maximum_depends_on_whether_a_pace_is_known() -> None:
    control = ConcurrencyControl()
    assert control.maximum == CAPACITY_MAXIMUM
    control.paced(10.0)
    assert control.maximum == LIMITS_MAXIMUM
    control.paced(None)
    assert control.maximum == CAPACITY_MAXIMUM
    assert ConcurrencyControl(7).maximum == 7
    assert ConcurrencyControl(room=300).maximum == CAPACITY_MAXIMUM
    assert ConcurrencyControl(5000, room=300).maximum == 300  # the open-file limit's room


def test_after_a_timeout_the_cap_grows_back_to_the_need_one_per_cap_successes() -> None:
    control = ConcurrencyControl()
    control.paced(20.0)
    control.announced()
    control.success(control.admitted(), 1, 2.0)
    full = need(20.0, 2.0)
    assert control.cap == full
    control.congested(control.admitted())
    assert control.cap == full // 2
    caps: list[int] = []
    while control.cap < full and len(caps) < 10_000:
        control.success(control.admitted(), control.cap, 2.0)  # the halved cap is full
        caps.append(control.cap)
    assert control.cap == full
    assert caps.count(full // 2) == full // 2 - 1  # the cap-th success adds one
    control.success(control.admitted(), control.cap, 2.0)
    assert control.cap == full  # and no further than the need


def test_a_users_pace_bounds_the_capacity_cap_too() -> None:
    control = ConcurrencyControl()
    control.paced(2.0)  # --rpm 120 against a server that announces nothing
    for _ in range(300):
        k = control.cap
        control.success(control.admitted(), k, 0.5)  # a server with room
    assert control.mode == CAPACITY
    assert control.cap == need(2.0, 0.5)


def test_announced_slots_are_the_cap_from_the_first_answer_and_never_exceeded() -> None:
    control = ConcurrencyControl(None)
    control.slots_announced(2)  # llama.cpp's /props total_slots
    assert (control.mode, control.cap) == (PROBING, 1)  # one until the first answer
    control.success(control.admitted())
    assert (control.mode, control.cap, control.maximum) == (CAPACITY, 2, 2)
    for _ in range(50):  # binding successes no longer grow it past the slots
        control.success(control.admitted())
    assert control.cap == 2
    grown = ConcurrencyControl(None)  # the same answers without the announcement
    for _ in range(50):
        grown.success(grown.admitted())
    assert grown.cap > 2


def test_slots_said_after_the_first_answer_take_effect_at_once() -> None:
    control = ConcurrencyControl(None)
    control.success(control.admitted())
    assert control.cap == 2
    control.slots_announced(4)
    assert control.cap == 4 == control.maximum


def test_announced_limits_and_a_users_j_are_not_bounded_by_slots() -> None:
    control = ConcurrencyControl(8)  # -j 8: the user's word
    control.slots_announced(2)
    control.success(control.admitted())
    assert control.maximum == 8
    control = ConcurrencyControl(None)
    control.slots_announced(2)
    control.announced()  # rate limits bind, not a capacity
    assert control.maximum == CAPACITY_MAXIMUM
