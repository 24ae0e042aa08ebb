"""What a planning pass found: the requests to send in a batch, and what the passes know.

The planning pass (batch/planner.py) fills a ``PassPlan``; the driver (batch/run.py) sends
its ``Planned`` requests (batch/jobs.py), and the batch book (batch/book.py) records them
as batch lines. The plan is plain data, so each of them reads it without the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..llm.calls import CallFailure
from ..stats import RunStats

__all__ = ["PassPlan", "Planned"]


@dataclass(frozen=True, slots=True)
class Planned:
    """A request to send in a batch: its key, its body and what it may cost at most."""

    key: str
    stage: str
    task: str
    seed_key: str
    model: str
    body: bytes
    est_prompt_tokens: int
    max_output_tokens: int


@dataclass
class PassPlan:
    """What one planning pass found. ``failures`` come from the driver (known for good)."""

    failures: dict[str, CallFailure] = field(default_factory=dict)
    reported: set[str] = field(default_factory=set)  # failures a pass has already written
    returned: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (task, seed)
    requests: dict[str, Planned] = field(default_factory=dict)
    deferred_seeds: set[tuple[str, str]] = field(default_factory=set)
    answered: int = 0  # calls answered from the store
    waiting: int = 0  # calls whose batch may still complete
    run_id: str = ""
    # the counters of every pass of the session, so the last one reports the session's work
    stats: RunStats | None = None
    # no server can be asked (a batch export for an offline engine): capabilities come from
    # the store or the flags, never from a probe
    offline: bool = False
