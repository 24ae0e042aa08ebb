"""The two ways a session's calls are made, for its opener to choose (llm/strategy.py).

``SendNow``: every call goes to the endpoint now. A session of a run whose batches may still
complete at the provider is refused: it would pay again for requests those batches may
still answer, and would not count the money they hold.

``PlanForBatch``: a planning pass of batch mode (batch/run.py, ``batch export``): calls are
answered from the store or planned into ``plan`` for a batch; nothing is sent.

``OpenPass`` is what a kind (generation, eval, pre-selection) gives batch mode's driver: a
callable that runs one session of its pipeline with the given run settings and call mode.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, TypeVar

from rich.console import Console

from ..config import RunConfig
from ..llm.calls import CallRunner
from ..llm.strategy import CallMode, CallStrategy, Interactive
from ..llm.transport import Transport
from ..session import OnRun
from ..stats import RunStats
from ..store.db import Store
from .plan import PassPlan
from .planner import PlanningRunner, refuse_while_batches_live

__all__ = ["OpenPass", "PlanForBatch", "SendNow"]

Out = TypeVar("Out", covariant=True)  # the kind's outcome


class OpenPass(Protocol[Out]):
    """One session of a kind's pipeline: ``cfg`` its run settings, ``calls`` how its calls
    are made; returns the kind's outcome."""

    def __call__(
        self,
        cfg: RunConfig,
        calls: CallMode,
        *,
        transport: Transport,
        console: Console,
        on_run: OnRun | None,
    ) -> Awaitable[Out]: ...


class SendNow:
    """Calls are sent now (``Interactive``), once no batch of the run may still complete."""

    sends = True
    probes = True
    stats: RunStats | None = None

    def strategy(
        self, runner: CallRunner, *, store: Store, run_id: str, stats: RunStats
    ) -> CallStrategy:
        refuse_while_batches_live(store, run_id)
        return Interactive(runner)


class PlanForBatch:
    """A planning pass: the session's calls are answered from the store or planned into
    ``plan``, and its counters are those of every pass (``plan.stats``)."""

    sends = False

    def __init__(self, plan: PassPlan) -> None:
        self.plan = plan

    @property
    def probes(self) -> bool:
        return not self.plan.offline

    @property
    def stats(self) -> RunStats | None:
        return self.plan.stats

    def strategy(
        self, runner: CallRunner, *, store: Store, run_id: str, stats: RunStats
    ) -> CallStrategy:
        self.plan.run_id = run_id
        return PlanningRunner(runner, store=store, run_id=run_id, plan=self.plan, stats=stats)
