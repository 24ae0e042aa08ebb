"""How a session's pipeline calls are made: sent now, or planned for a batch.

Whoever opens a session chooses how its calls are made and hands that choice, a
``CallMode``, to ``session.call_session``: the command or API entry that runs a kind
(generation, eval, pre-selection) decides between sending now and batch mode, and batch
mode's driver (batch/run.py) opens one session per planning pass. The session keeps the
strategy the mode gives it: ``Interactive`` sends every call through the call runner;
batch mode's ``PlanningRunner`` (batch/planner.py) answers calls from the store and plans
the others for a batch, returning a failure of class ``DEFERRED`` for each. Stages call
``call`` and write through a ``StageWriter``, which gives their rows to the strategy's
``seed_rows`` first: a planning pass drops the rows that only say a seed's call was deferred,
so the seed stays pending and the store holds only real results.

Probes (llm/probe.py) and the money machinery always use the session's ``CallRunner``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, Protocol, TypedDict, Unpack

from ..records import ChatRequest, ChatResult
from ..stats import RunStats
from ..store.db import Store
from ..store.writer import StoreWriter, WriterRow
from ..tokens import TokenCounter
from .calls import CallFailure, CallRunner

__all__ = ["DEFERRED", "CallMode", "CallSite", "CallStrategy", "Interactive", "StageWriter"]

# the error class of the failure a call planned for a batch returns: the call has not failed,
# its seed (or item, or query) waits for the batch and a later pass
DEFERRED = "Deferred"


class CallSite(TypedDict):
    """Where a call is made: its stage and task, the seed, the prompt-token estimate."""

    stage: str
    task: str
    seed_key: NotRequired[str]
    est_prompt_tokens: NotRequired[int | None]


class CallStrategy(Protocol):
    @property
    def counter(self) -> TokenCounter: ...

    async def call(
        self, request: ChatRequest, **where: Unpack[CallSite]
    ) -> ChatResult | CallFailure:
        """One logical call: an answer, or a failure the stage records."""
        ...

    def seed_rows(self, rows: Sequence[WriterRow]) -> Sequence[WriterRow]:
        """The rows a stage may write now, of ``rows``."""
        ...


class CallMode(Protocol):
    """How the calls of a session are made, as the session's opener chose."""

    @property
    def sends(self) -> bool:
        """Requests leave during the session, so the servers are asked how many they take."""
        ...

    @property
    def probes(self) -> bool:
        """A probe request may settle what the endpoint accepts (else: the store or flags)."""
        ...

    @property
    def stats(self) -> RunStats | None:
        """The counters the session counts into (a batch session's, across its passes);
        None: its own."""
        ...

    def strategy(
        self, runner: CallRunner, *, store: Store, run_id: str, stats: RunStats
    ) -> CallStrategy:
        """The strategy of the session that has opened run ``run_id``; raising
        ``HalugenError`` refuses the session."""
        ...


class Interactive:
    """Every call goes to the endpoint now, through the call runner."""

    def __init__(self, runner: CallRunner) -> None:
        self.runner = runner
        self.call = runner.call

    @property
    def counter(self) -> TokenCounter:
        return self.runner.counter

    def seed_rows(self, rows: Sequence[WriterRow]) -> Sequence[WriterRow]:
        return rows


class StageWriter:
    """Where the stages of a session write: the store's writer, after the strategy's filter."""

    def __init__(self, writer: StoreWriter, strategy: CallStrategy) -> None:
        self._writer = writer
        self._strategy = strategy

    def put(self, rows: Sequence[WriterRow]) -> None:
        kept = self._strategy.seed_rows(rows)
        if kept:
            self._writer.put(kept)

    async def put_durable(self, rows: Sequence[WriterRow]) -> None:
        kept = self._strategy.seed_rows(rows)
        if kept:
            await self._writer.put_durable(kept)
